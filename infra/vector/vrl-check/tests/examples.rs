//! The schema's examples, the contract's shared test vectors, through the whole pipeline.

mod common;

use serde_json::Value as Json;
use vrl::value::Value;

#[test]
fn every_valid_agent_record_goes_to_its_topic_as_sent() {
    let topology = common::setup();
    let mut played = 0;
    for record in common::agent_records() {
        for line in common::examples(&record, "valid") {
            common::assert_routed_as_sent(&topology, &line);
            played += 1;
        }
    }
    assert!(played >= common::agent_records().len());
}

#[test]
fn site_labels_join_the_records_that_carry_labels_and_the_agents_own_win() {
    let topology = common::setup();
    let labelled: Vec<String> = common::agent_records().into_iter().filter(|r| common::has_labels(r)).collect();
    assert!(!labelled.is_empty(), "some agent record has labels");
    for record in labelled {
        let mut sample: Json = serde_json::from_str(&common::examples(&record, "valid")[0]).unwrap();
        sample["labels"] = serde_json::json!({"rack": "r12"});
        let out = topology.play_line("agent", &sample.to_string());
        let (_, kafka) = &common::kafka_records(&topology, &out)[0];
        assert_eq!(kafka.payload["labels"]["rack"], "r12", "{record}: the agent's rack wins");
        assert_eq!(kafka.payload["labels"]["cluster"], common::site_labels()["cluster"], "{record}");
    }
}

/// Each invalid example holds one fault in the field it names: Vector refuses it to the dead
/// letter with a reason naming that field, unless JSON Schema cannot express the fault
/// (schema_can_express false), which only the stream jobs' decoder refuses.
#[test]
fn every_invalid_agent_record_is_a_dead_letter_naming_its_fault() {
    let topology = common::setup();
    let mut refused = 0;
    for record in common::agent_records() {
        for case in common::examples(&record, "invalid") {
            let case: Json = serde_json::from_str(&case).unwrap();
            let line = case["record"].to_string();
            if case.get("schema_can_express") == Some(&Json::Bool(false)) {
                common::assert_routed_as_sent(&topology, &line);
                continue;
            }
            let out = topology.play_line("agent", &line);
            let sent = common::kafka_records(&topology, &out);
            let letters = common::dead_letters(&topology, &out);
            assert_eq!((sent.len(), letters.len()), (1, 1), "{}: {line}", case["why"]);
            let letter = &letters[0].payload;
            let field = case["field"].as_str().unwrap();
            let last = field.rsplit('.').next().unwrap();
            let reason = letter["reason"].as_str().unwrap();
            assert!(reason.contains(last), "{}: the reason names {field}: {reason}", case["why"]);
            // A batch one entry over its bound can outgrow the dead letter's raw, which keeps its start.
            let max_raw_chars = common::max_length("io.deadletter.v1", "raw");
            assert_eq!(letter["raw"], Json::from(line.chars().take(max_raw_chars).collect::<String>()));
            assert_eq!(letter["raw_truncated"], Json::Bool(line.chars().count() > max_raw_chars));
            assert_eq!(letter["stage"], "vector/validate");
            refused += 1;
        }
    }
    assert!(refused > 0);
}

#[test]
fn records_the_agent_does_not_send_are_refused() {
    let topology = common::setup();
    let agent = common::agent_records();
    for record in common::all_records().into_iter().filter(|r| !agent.contains(r)) {
        for line in common::examples(&record, "valid") {
            let out = topology.play_line("agent", &line);
            let letters = common::dead_letters(&topology, &out);
            assert_eq!(common::kafka_records(&topology, &out).len(), 1, "{line}");
            assert_eq!(letters.len(), 1, "{record} is not the agent's to send");
            assert!(letters[0].payload["reason"].as_str().unwrap().contains(&record));
        }
    }
}

#[test]
fn malformed_lines_become_valid_dead_letters_counted_by_stage() {
    let topology = common::setup();
    let long_line = format!("{{\"schema\":\"io.event.v1\",\"comm\":\"{}", "x".repeat(5000));
    // Its reason quotes the schema it names: cut to the dead letter's bound.
    let long_schema = format!("{{\"schema\":\"{}\"}}", "y".repeat(5000));
    let malformed = ["not json at all", "[1,2,3]", "{\"schema\":\"io.diskstats.v1\",", "", "null", &long_line, &long_schema];
    let max_raw_chars = common::max_length("io.deadletter.v1", "raw");
    for line in malformed {
        let out = topology.play_line("agent", line);
        let letters = common::dead_letters(&topology, &out);
        assert_eq!((common::kafka_records(&topology, &out).len(), letters.len()), (1, 1), "{line:?}");
        let letter = &letters[0];
        assert_eq!(common::schema_errors("io.deadletter.v1", &letter.payload), None, "{}", letter.payload);
        assert_eq!(letter.key.as_deref(), letter.payload["source"].as_str(), "keyed by its source");
        assert!(letter.headers.is_empty(), "dead letters go unsigned: {:?}", letter.headers);
        let raw = letter.payload["raw"].as_str().unwrap();
        let cut = line.chars().count() > max_raw_chars;
        assert_eq!(letter.payload["raw_truncated"], Json::Bool(cut));
        assert_eq!(raw, line.chars().take(max_raw_chars).collect::<String>());

        let metrics = &out.by_sink["prometheus"];
        assert_eq!(metrics.len(), 1, "one count per dead letter");
        let metric = metrics[0].to_json();
        assert_eq!(metric["name"], "iopipe_vector_deadletter_records_total");
        assert_eq!(metric["tags"]["stage"], letter.payload["stage"]);
    }
}

#[test]
fn a_valid_record_is_not_counted_as_a_dead_letter() {
    let topology = common::setup();
    let line = &common::examples("io.hist.v1", "valid")[0];
    let out = topology.play_line("agent", line);
    assert!(out.by_sink.get("prometheus").is_none_or(Vec::is_empty));
    assert!(out.by_output.get("validate.dropped").is_none_or(Vec::is_empty));
}

#[test]
fn a_runtime_error_is_rerouted_like_an_abort() {
    // drop_on_error: a failing program sends the original line to the dead letter too,
    // never onward half-processed. Played on the same remap with its program swapped.
    let mut topology = common::setup();
    let failing = vrl_check::program::compile(". = parse_json!(.message)\n.x = parse_int!(\"not a number\")", "a failing program").unwrap();
    let vrl_check::topology::Transform::Remap(validate) = topology.transforms.get_mut("validate").unwrap() else { panic!() };
    validate.program = failing;
    let out = topology.play_line("agent", r#"{"a":1}"#);
    let dropped = &out.by_output["validate.dropped"];
    assert_eq!(dropped.len(), 1);
    assert_eq!(dropped[0].get(".metadata.dropped.reason"), Some(&Value::from("error")));
    assert!(out.by_output.get("validate").is_none_or(Vec::is_empty));
}
