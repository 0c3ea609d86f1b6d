//! The agent's real output through the pipeline: every record it writes must be accepted
//! and routed. The agent is $IOPIPE_AGENT_BIN (make test-vector builds it), by default
//! $CARGO_TARGET_DIR/release/iopipe-agent.

mod common;

use serde_json::Value as Json;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use vrl_check::repo_root;

fn agent_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("IOPIPE_AGENT_BIN") {
        return bin.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or(repo_root().join("agent/target"));
    target.join("release/iopipe-agent")
}

fn agent_lines(args: &[&str]) -> Vec<String> {
    let bin = agent_bin();
    let output = Command::new(&bin)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {} (make agent builds it): {e}", bin.display()));
    assert!(output.status.success(), "{} {args:?}: {}", bin.display(), String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().lines().map(str::to_string).collect()
}

fn assert_all_routed(lines: &[String]) -> BTreeSet<String> {
    let topology = common::setup();
    for line in lines {
        common::assert_routed_as_sent(&topology, line);
    }
    lines.iter().map(|l| serde_json::from_str::<Json>(l).unwrap()["schema"].as_str().unwrap().to_string()).collect()
}

#[test]
fn every_record_of_a_running_agent_is_routed() {
    // Intervals of this machine's disks and the agent's own counters, three intervals: as
    // the agent sends them by default (batched), and one by one.
    for (records, sample) in [("batched", "io.interval.v1"), ("single", "io.diskstats.v1")] {
        let lines = agent_lines(&["run", "--no-trace", "--output", "stdout", "--count", "3", "--interval-ms", "200",
                                  "--label", "zone=z1", "--records", records]);
        let schemas = assert_all_routed(&lines);
        let expected: BTreeSet<String> = [sample, "io.agent.v1"].map(String::from).into();
        assert_eq!(schemas, expected, "{records}: {} lines", lines.len());
    }
}

#[test]
fn every_record_of_a_converted_capture_is_routed() {
    // A dusty disk's biosnoop capture (agent/tests/fixtures), with the diskstats it adds up to.
    let capture = repo_root().join("agent/tests/fixtures/captures/biosnoop-dusty-disk.txt");
    let lines = agent_lines(&[
        "convert", "--from", "biosnoop", "--host", "seed-host", "--rotational", "true",
        "--start-ns", "1763700000000000000", capture.to_str().unwrap(),
    ]);
    let schemas = assert_all_routed(&lines);
    assert!(schemas.contains("io.event.v1"), "{schemas:?}");
    assert!(lines.len() > 10, "{} lines", lines.len());
}
