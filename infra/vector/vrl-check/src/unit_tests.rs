//! The configuration's `tests:` blocks, evaluated as `vector test` evaluates them (Vector
//! v0.50.0, src/config/unit_test/): inputs given to their `insert_at` transform; each
//! `outputs` condition must hold for at least one event of its outputs; an output in
//! `no_outputs_from` must stay empty.

use crate::config;
use crate::program;
use crate::topology::{condition_source, Topology};
use crate::Event;
use serde_yaml::{Mapping, Value as Yaml};
use vrl::value::Value;

pub struct TestReport {
    pub name: String,
    pub errors: Vec<String>,
}

pub fn run_all(topology: &Topology) -> Vec<TestReport> {
    topology.config.tests.iter().map(|test| run(topology, test)).collect()
}

fn run(topology: &Topology, test: &Yaml) -> TestReport {
    let name = test.get("name").and_then(Yaml::as_str).unwrap_or("(unnamed)").to_string();
    let mut errors = Vec::new();
    let mut outputs = crate::topology::Outputs::default();
    for input in test.get("inputs").and_then(Yaml::as_sequence).into_iter().flatten() {
        let input = input.as_mapping().expect("a test input is a mapping");
        match input_event(input) {
            Ok(event) => {
                let insert_at = config::text(input, "insert_at").expect("a test input has insert_at");
                let played = topology.play_at(insert_at, vec![event]);
                for (output, events) in played.by_output {
                    outputs.by_output.entry(output).or_default().extend(events);
                }
            }
            Err(e) => errors.push(e),
        }
    }
    for (i, expected) in test.get("outputs").and_then(Yaml::as_sequence).into_iter().flatten().enumerate() {
        let from = names(expected.get("extract_from"));
        let events: Vec<&Event> = from.iter().flat_map(|o| outputs.by_output.get(o).into_iter().flatten()).collect();
        if events.is_empty() {
            errors.push(format!("outputs[{i}] {from:?}: no events received"));
            continue;
        }
        for (j, condition) in expected.get("conditions").and_then(Yaml::as_sequence).into_iter().flatten().enumerate() {
            let Some(source) = condition_source(condition) else {
                errors.push(format!("outputs[{i}] condition[{j}]: only VRL conditions are played"));
                continue;
            };
            let failures: Vec<String> = match program::compile(&source, &format!("{name}: outputs[{i}] condition[{j}]")) {
                Ok(condition) => events.iter().map(|e| program::check(&condition, e)).filter_map(Result::err).collect(),
                Err(e) => vec![e],
            };
            if failures.len() == events.len() {
                let seen: Vec<String> = events.iter().map(|e| e.to_json().to_string()).collect();
                errors.push(format!("outputs[{i}] {from:?} condition[{j}]: {}; events: {seen:?}", failures.join("; ")));
            }
        }
    }
    for output in names(test.get("no_outputs_from")) {
        if let Some(events) = outputs.by_output.get(&output).filter(|events| !events.is_empty()) {
            errors.push(format!("{output} emitted {} events, expected none", events.len()));
        }
    }
    TestReport { name, errors }
}

/// One name or a list of them.
fn names(value: Option<&Yaml>) -> Vec<String> {
    match value {
        Some(Yaml::String(one)) => vec![one.clone()],
        Some(Yaml::Sequence(many)) => many.iter().filter_map(Yaml::as_str).map(str::to_string).collect(),
        _ => vec![],
    }
}

/// A test input as Vector's build_input_event makes it: `raw` (the default) a line in
/// `message`; `log` its log_fields set by path on an empty message; `vrl` what its program
/// makes of an empty event.
fn input_event(input: &Mapping) -> Result<Event, String> {
    match config::text(input, "type").unwrap_or("raw") {
        "raw" => Ok(Event::from_raw(config::text(input, "value").ok_or("input type 'raw' requires the field 'value'")?)),
        "log" => {
            let fields = input.get("log_fields").and_then(Yaml::as_mapping).ok_or("input type 'log' requires 'log_fields'")?;
            let mut event = Event::from_raw("");
            for (path, value) in fields {
                let path = path.as_str().ok_or("a log_fields path is not a string")?;
                let json: serde_json::Value = serde_yaml::from_value(value.clone()).map_err(|e| e.to_string())?;
                event.insert(path, Value::from(json));
            }
            Ok(event)
        }
        "vrl" => {
            let source = config::text(input, "source").ok_or("input type 'vrl' requires 'source'")?;
            let program = program::compile(source, "a vrl test input")?;
            let mut event = Event::new(Value::Object(Default::default()));
            program::run(&program, &mut event).map_err(|e| format!("a vrl test input failed: {e:?}"))?;
            Ok(event)
        }
        other => Err(format!("unrecognized input type '{other}', expected one of: 'raw', 'log', 'vrl' or 'metric'")),
    }
}
