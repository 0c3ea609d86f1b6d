//! A host without IOPIPE_LABELS: every record goes out exactly as the agent sent it. Its
//! own test binary, as the environment is the process's.

mod common;

use std::collections::HashMap;
use vrl_check::repo_root;
use vrl_check::topology::Topology;

#[test]
fn without_site_labels_every_valid_record_goes_out_as_sent() {
    std::env::set_current_dir(repo_root()).unwrap();
    common::set_credentials();
    for unset in [None, Some(""), Some(" , ")] {
        match unset {
            None => std::env::remove_var("IOPIPE_LABELS"),
            Some(blank) => std::env::set_var("IOPIPE_LABELS", blank),
        }
        let vars: HashMap<String, String> = std::env::vars().collect();
        let topology = Topology::load(&repo_root().join("infra/vector/vector.yaml"), &repo_root(), &vars).unwrap();
        for record in common::agent_records() {
            for line in common::examples(&record, "valid") {
                let out = topology.play_line("agent", &line);
                let sent = common::kafka_records(&topology, &out);
                let as_sent: serde_json::Value = serde_json::from_str(&line).unwrap();
                assert_eq!(sent.len(), 1, "{line}");
                assert_eq!(sent[0].1.payload, as_sent, "IOPIPE_LABELS {unset:?}");
            }
        }
    }
}
