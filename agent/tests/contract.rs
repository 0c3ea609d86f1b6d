//! The agent's output honours the contract in schema/: every record validates against
//! its JSON Schema, and a fixture host gives the golden records.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// The agent's source directory, as cargo gives it at run time: the path compiled in names
/// where this binary was built, and a target directory shared by several checkouts may
/// have built it in another.
fn agent_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

fn repo() -> PathBuf {
    agent_dir().parent().unwrap().to_path_buf()
}

fn run_agent_on_fixture(host_dir: &str) -> (Vec<Value>, String) {
    run_agent_samples(host_dir, 1)
}

fn run_agent_samples(host_dir: &str, count: u32) -> (Vec<Value>, String) {
    let root = agent_dir().join("tests/fixtures").join(host_dir);
    let out = Command::new(env!("CARGO_BIN_EXE_iopipe-agent"))
        .args(["run", "--no-trace", "--interval-ms", "10", "--host", "fixture-host", "--label", "rack=r12"])
        .args(["--count", &count.to_string()])
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

fn of_schema<'a>(records: &'a [Value], schema: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["schema"] == schema).collect()
}

#[test]
fn every_record_validates_against_its_schema() {
    let (records, _) = run_agent_on_fixture("host-a");
    for schema in ["io.diskstats.v1", "io.agent.v1"] {
        let validator = validator(schema);
        assert!(!of_schema(&records, schema).is_empty(), "no {schema} record");
        for record in of_schema(&records, schema) {
            let errors: Vec<String> = validator.iter_errors(record).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{record}: {errors:?}");
        }
    }
    assert_eq!(records.len(), of_schema(&records, "io.diskstats.v1").len() + of_schema(&records, "io.agent.v1").len());
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
    let (records, stderr) = run_agent_on_fixture("host-a");
    let mut records: Vec<Value> = of_schema(&records, "io.diskstats.v1").into_iter().cloned().collect();
    for record in &mut records {
        assert!(record["ts_ns"].as_u64().unwrap() > 1_600_000_000_000_000_000, "ts_ns is wall-clock ns");
        record.as_object_mut().unwrap().remove("ts_ns");
    }
    let golden_path = agent_dir().join("tests/fixtures/host-a/golden.ndjson");
    let golden: Vec<Value> = std::fs::read_to_string(golden_path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records, golden);
    assert!(stderr.contains("line 8"), "the malformed line is reported by number: {stderr}");
}

#[test]
fn a_malformed_line_is_reported_once_and_counted_every_sample() {
    let (records, stderr) = run_agent_samples("host-a", 3);
    assert_eq!(of_schema(&records, "io.diskstats.v1").len(), 3 * 5);
    assert_eq!(stderr.matches("diskstats line 8").count(), 1, "{stderr}");
    let last_report = of_schema(&records, "io.agent.v1").pop().expect("the agent reports its counters");
    assert_eq!(last_report["counters"]["diskstats_bad_lines"], 3, "{last_report}");
    assert_eq!(last_report["counters"]["diskstats_records"], 15, "{last_report}");
    assert_eq!(last_report["tracing"], "off");
    assert!(stderr.contains("3 samples; diskstats_records 15, diskstats_bad_lines 3"), "{stderr}");
}

fn convert_fixture(format: &str, file: &str, extra: &[&str]) -> (Vec<Value>, String, bool) {
    let path = agent_dir().join("tests/fixtures/captures").join(file);
    let out = Command::new(env!("CARGO_BIN_EXE_iopipe-agent"))
        .args(["convert", "--from", format, "--start-ns", "1763700000000000000"])
        .args(extra)
        .arg(path)
        .output()
        .expect("agent runs");
    let records = String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (records, String::from_utf8(out.stderr).unwrap(), out.status.success())
}

#[test]
fn every_converted_event_validates_against_the_schema() {
    let validator = validator("io.event.v1");
    let cases: [(&str, &str, &[&str], usize); 9] = [
        ("biosnoop", "biosnoop-dusty-disk.txt", &[], 39),
        ("biosnoop", "biosnoop-lid-pressed.txt", &[], 19),
        ("biosnoop-bt", "biosnoop-bt-kprobes.txt", &[], 5),
        ("biosnoop-bt", "biosnoop-bt-tracepoints.txt", &[], 4),
        ("blkparse", "blkparse-sdf-fio.txt", &[], 1),
        ("blkparse", "blkparse-sdf-dd.txt", &[], 1),
        ("iosnoop", "iosnoop-ts.txt", &[], 5),
        ("iosnoop", "iosnoop-ts.txt", &["--queued"], 5),
        ("msr-csv", "msr-hm.csv", &[], 4),
    ];
    for (format, file, flags, expected) in cases {
        let (records, stderr, ok) = convert_fixture(format, file, &[&["--host", "seed-host"], flags].concat());
        assert!(ok, "{file}: {stderr}");
        assert_eq!(records.len(), expected, "{file}: {stderr}");
        for record in &records {
            let errors: Vec<String> = validator.iter_errors(record).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{file}: {record}: {errors:?}");
        }
    }
}

#[test]
fn a_capture_of_a_disk_of_known_class_adds_up_to_diskstats_that_validate_in_time_order() {
    let samples = validator("io.diskstats.v1");
    let events = validator("io.event.v1");
    let (records, stderr, ok) =
        convert_fixture("biosnoop", "biosnoop-lid-pressed.txt",
                        &["--host", "seed-host", "--rotational", "true", "--model", "ST4000NM", "--rpm", "7200"]);
    assert!(ok, "{stderr}");
    let diskstats = of_schema(&records, "io.diskstats.v1");
    assert_eq!(of_schema(&records, "io.event.v1").len(), 19, "{stderr}");
    assert!(stderr.contains(&format!("19 events, {} diskstats samples counted from them", diskstats.len())), "{stderr}");
    for record in &records {
        let validator = if record["schema"] == "io.event.v1" { &events } else { &samples };
        let errors: Vec<String> = validator.iter_errors(record).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{record}: {errors:?}");
    }
    assert!(diskstats.iter().all(|d| d["rotational"] == true && d["model"] == "ST4000NM" && d["rpm"] == 7200
        && d["derived_from_events"] == true));
    let time = |r: &Value| r["ts_ns"].as_u64().or(r["complete_ns"].as_u64()).unwrap();
    assert!(records.windows(2).all(|pair| time(&pair[0]) <= time(&pair[1])), "one stream in time order, as an agent sends");
    let reads: u64 = diskstats.iter().filter(|d| d["disk"] == "sdb").map(|d| d["reads_completed"].as_u64().unwrap()).max().unwrap();
    assert_eq!(reads as usize, of_schema(&records, "io.event.v1").iter().filter(|e| e["disk"] == "sdb" && e["op"] == "R").count());
    let (records, stderr, ok) = convert_fixture("biosnoop", "biosnoop-lid-pressed.txt", &["--host", "seed-host"]);
    assert!(ok && of_schema(&records, "io.diskstats.v1").is_empty(), "{stderr}");
    assert!(stderr.contains("pass --rotational"), "{stderr}");
    let (_, stderr, ok) = convert_fixture("biosnoop", "biosnoop-lid-pressed.txt",
                                          &["--host", "seed-host", "--rotational", "true", "--output", "kafka"]);
    assert!(!ok && stderr.contains("use --output stdout"), "two topics would lose the time order: {stderr}");
    let (_, stderr, ok) = convert_fixture("biosnoop", "biosnoop-lid-pressed.txt",
                                          &["--host", "seed-host", "--rotational", "false", "--rpm", "7200"]);
    assert!(!ok && stderr.contains("pass --rotational true"), "flash does not rotate: {stderr}");
}

#[test]
fn converted_telemetry_windows_validate_against_the_schema() {
    let validator = validator("io.window.v1");
    let (records, stderr, ok) = convert_fixture("perseus", "perseus-host.csv", &["--host", "a22"]);
    assert!(ok, "{stderr}");
    assert_eq!(records.len(), 4, "{stderr}");
    for record in &records {
        let errors: Vec<String> = validator.iter_errors(record).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{record}: {errors:?}");
    }
    assert!(stderr.contains("perseus-host.csv line 3: latency is NA"), "{stderr}");
    assert!(stderr.contains("4 windows, 1 malformed lines skipped"), "{stderr}");
    let (_, stderr, ok) = convert_fixture("perseus", "perseus-host.csv", &[]);
    assert!(!ok && stderr.contains("pass --host"), "{stderr}");
}

#[test]
fn a_capture_with_bad_lines_is_converted_whole_and_the_lines_are_named() {
    let (records, stderr, ok) = convert_fixture("iosnoop", "iosnoop-ts.txt", &["--host", "web-3"]);
    assert!(ok);
    assert_eq!(records.len(), 5);
    assert!(stderr.contains("iosnoop-ts.txt line 8"), "{stderr}");
    assert!(stderr.contains("5 events, 1 malformed lines skipped"), "{stderr}");
}

#[test]
fn a_capture_that_does_not_name_its_host_asks_for_one() {
    let (records, stderr, ok) = convert_fixture("biosnoop", "biosnoop-lid-pressed.txt", &[]);
    assert!(!ok && records.is_empty());
    assert!(stderr.contains("pass --host"), "{stderr}");
}

/// Runs the agent for Kafka with `key_text` as its signing key file, passed by `--signing-key`
/// or by IOPIPE_SIGNING_KEY; nothing listens at the brokers, so it must stop before sending.
fn run_for_kafka_with_key(key_text: &str, by_env: bool) -> (String, String, bool) {
    let key = std::env::temp_dir().join(format!("iopipe-agent-{}-{by_env}-signing.key", std::process::id()));
    std::fs::write(&key, key_text).unwrap();
    let root = agent_dir().join("tests/fixtures/host-a");
    let mut agent = Command::new(env!("CARGO_BIN_EXE_iopipe-agent"));
    agent.args(["run", "--no-trace", "--count", "1", "--host", "fixture-host", "--output", "kafka", "--brokers", "127.0.0.1:9"]);
    agent.arg("--proc-root").arg(root.join("proc")).arg("--sys-root").arg(root.join("sys"));
    if by_env {
        agent.env("IOPIPE_SIGNING_KEY", &key);
    } else {
        agent.env_remove("IOPIPE_SIGNING_KEY").arg("--signing-key").arg(&key);
    }
    let out = agent.output().expect("agent runs");
    std::fs::remove_file(&key).unwrap();
    (key.display().to_string(), String::from_utf8(out.stderr).unwrap(), out.status.success())
}

#[test]
fn a_malformed_signing_key_stops_the_agent_naming_the_file_not_the_key() {
    let secret = "5ec2e7d1";
    for by_env in [false, true] {
        let (path, stderr, ok) = run_for_kafka_with_key(&format!("{}\n", secret.repeat(9)), by_env);
        assert!(!ok, "{stderr}");
        assert!(stderr.contains(&format!("--signing-key {path} holds 72 characters")), "{stderr}");
        assert!(!stderr.contains(secret), "{stderr}");
    }
}
