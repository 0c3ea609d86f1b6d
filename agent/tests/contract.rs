//! The agent's output honours the contract in schema/: every record validates against
//! its JSON Schema, and a fixture host gives the golden records.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn run_agent_on_fixture(host_dir: &str) -> (Vec<Value>, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(host_dir);
    let out = Command::new(env!("CARGO_BIN_EXE_iopipe-agent"))
        .args(["run", "--count", "1", "--host", "fixture-host"])
        .arg("--proc-root")
        .arg(root.join("proc"))
        .arg("--sys-root")
        .arg(root.join("sys"))
        .output()
        .expect("agent runs");
    assert!(out.status.success(), "agent failed: {}", String::from_utf8_lossy(&out.stderr));
    let records = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    (records, String::from_utf8(out.stderr).unwrap())
}

fn validator(record: &str) -> jsonschema::Validator {
    let path = repo().join("schema/records").join(format!("{record}.schema.json"));
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("schema compiles")
}

#[test]
fn every_diskstats_record_validates_against_the_schema() {
    let validator = validator("io.diskstats.v1");
    let (records, _) = run_agent_on_fixture("host-a");
    assert!(!records.is_empty());
    for record in &records {
        let errors: Vec<String> = validator.iter_errors(record).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{record}: {errors:?}");
    }
}

#[test]
fn schema_examples_are_the_vectors_the_validator_agrees_with() {
    let validator = validator("io.diskstats.v1");
    let examples = repo().join("schema/examples");
    for line in std::fs::read_to_string(examples.join("io.diskstats.v1.valid.ndjson")).unwrap().lines() {
        assert!(validator.is_valid(&serde_json::from_str(line).unwrap()), "{line}");
    }
    for line in std::fs::read_to_string(examples.join("io.diskstats.v1.invalid.ndjson")).unwrap().lines() {
        let case: Value = serde_json::from_str(line).unwrap();
        assert!(!validator.is_valid(&case["record"]), "should be invalid: {}", case["why"]);
    }
}

#[test]
fn fixture_host_gives_the_golden_records() {
    let (mut records, stderr) = run_agent_on_fixture("host-a");
    for record in &mut records {
        assert!(record["ts_ns"].as_u64().unwrap() > 1_600_000_000_000_000_000, "ts_ns is wall-clock ns");
        record.as_object_mut().unwrap().remove("ts_ns");
    }
    let golden_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/host-a/golden.ndjson");
    let golden: Vec<Value> = std::fs::read_to_string(golden_path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records, golden);
    assert!(stderr.contains("line 8"), "the malformed line is reported by number: {stderr}");
}
