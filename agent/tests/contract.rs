//! The agent's output honours the contract in schema/: every record validates against
//! its JSON Schema, batched (the default) or one by one (--records single), and a fixture
//! host gives the golden records.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The agent's source directory, as cargo gives it at run time: the path compiled in names
/// where this binary was built, and a target directory shared by several checkouts may
/// have built it in another.
fn agent_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

fn repo() -> PathBuf {
    agent_dir().parent().unwrap().to_path_buf()
}

fn run_agent_on_fixture(host_dir: &str, extra: &[&str]) -> (Vec<Value>, String) {
    run_agent_samples(host_dir, 1, extra)
}

/// The agent run on a fixture host without tracing, every `interval_ms`, `count` times (0:
/// until stopped).
fn fixture_run(host_dir: &str, interval_ms: u32, count: u32, extra: &[&str]) -> Command {
    let root = agent_dir().join("tests/fixtures").join(host_dir);
    let mut agent = Command::new(env!("CARGO_BIN_EXE_iopipe-agent"));
    agent
        .args(["run", "--no-trace", "--host", "fixture-host", "--label", "rack=r12"])
        .args(["--interval-ms", &interval_ms.to_string(), "--count", &count.to_string()])
        .args(extra)
        .arg("--proc-root")
        .arg(root.join("proc"))
        .arg("--sys-root")
        .arg(root.join("sys"));
    agent
}

fn run_agent_samples(host_dir: &str, count: u32, extra: &[&str]) -> (Vec<Value>, String) {
    let out = fixture_run(host_dir, 10, count, extra).output().expect("agent runs");
    assert!(out.status.success(), "agent failed: {}", String::from_utf8_lossy(&out.stderr));
    (json_lines(&out.stdout), String::from_utf8(out.stderr).unwrap())
}

fn json_lines(ndjson: &[u8]) -> Vec<Value> {
    std::str::from_utf8(ndjson).unwrap().lines().map(|line| serde_json::from_str(line).expect("each line is JSON")).collect()
}

fn validator(record: &str) -> jsonschema::Validator {
    let path = repo().join("schema/records").join(format!("{record}.schema.json"));
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("schema compiles")
}

fn of_schema<'a>(records: &'a [Value], schema: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["schema"] == schema).collect()
}

/// Checks each record against the schema it names, and that `expected` are the schemas named.
fn assert_valid_records_of(records: &[Value], expected: &[&str]) {
    let mut named: Vec<&str> = records.iter().map(|r| r["schema"].as_str().expect("a record names its schema")).collect();
    named.sort_unstable();
    named.dedup();
    assert_eq!(named, expected);
    for schema in expected {
        let validator = validator(schema);
        for record in of_schema(records, schema) {
            let errors: Vec<String> = validator.iter_errors(record).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{record}: {errors:?}");
        }
    }
}

#[test]
fn every_record_validates_against_its_schema() {
    let (batched, _) = run_agent_on_fixture("host-a", &[]);
    assert_valid_records_of(&batched, &["io.agent.v1", "io.interval.v1"]);
    let (single, _) = run_agent_on_fixture("host-a", &["--records", "single"]);
    assert_valid_records_of(&single, &["io.agent.v1", "io.diskstats.v1"]);
}

#[test]
fn schema_examples_are_the_vectors_the_validator_agrees_with() {
    let examples = repo().join("schema/examples");
    for record in ["io.diskstats.v1", "io.interval.v1", "io.eventbatch.v1"] {
        let validator = validator(record);
        for line in std::fs::read_to_string(examples.join(format!("{record}.valid.ndjson"))).unwrap().lines() {
            assert!(validator.is_valid(&serde_json::from_str(line).unwrap()), "{line}");
        }
        for line in std::fs::read_to_string(examples.join(format!("{record}.invalid.ndjson"))).unwrap().lines() {
            let case: Value = serde_json::from_str(line).unwrap();
            if case.get("schema_can_express") != Some(&Value::Bool(false)) {
                assert!(!validator.is_valid(&case["record"]), "should be invalid: {}", case["why"]);
            }
        }
    }
}

/// The golden records: the fixture host's intervals, less their clock fields.
fn golden() -> Vec<Value> {
    let golden_path = agent_dir().join("tests/fixtures/host-a/golden.ndjson");
    json_lines(&std::fs::read(golden_path).unwrap())
}

/// `records` of `schema`, less the fields that hold the time they were read.
fn without_clock(records: &[Value], schema: &str) -> Vec<Value> {
    let mut records: Vec<Value> = of_schema(records, schema).into_iter().cloned().collect();
    for record in &mut records {
        let ts_ns = record["ts_ns"].as_u64().unwrap();
        assert!(ts_ns > 1_600_000_000_000_000_000, "ts_ns is wall-clock ns");
        let fields = record.as_object_mut().unwrap();
        fields.remove("ts_ns");
        // Without tracing an interval has no histograms, and spans its sample's instant.
        for span in ["start_ns", "end_ns"] {
            if let Some(at) = fields.remove(span) {
                assert_eq!(at, ts_ns, "{span}");
            }
        }
    }
    records
}

#[test]
fn fixture_host_gives_the_golden_records() {
    let (records, stderr) = run_agent_on_fixture("host-a", &[]);
    assert_eq!(without_clock(&records, "io.interval.v1"), golden());
    assert!(stderr.contains("line 8"), "the malformed line is reported by number: {stderr}");
}

#[test]
fn one_by_one_the_fixture_host_gives_the_golden_intervals_as_diskstats() {
    let (records, _) = run_agent_on_fixture("host-a", &["--records", "single"]);
    let samples: Vec<Value> = golden()
        .into_iter()
        .map(|mut interval| {
            let fields = interval.as_object_mut().unwrap();
            fields.retain(|name, _| !name.starts_with("hist_"));
            fields.insert("schema".into(), "io.diskstats.v1".into());
            interval
        })
        .collect();
    assert_eq!(without_clock(&records, "io.diskstats.v1"), samples);
}

#[test]
fn a_malformed_line_is_reported_once_and_counted_every_sample() {
    let (records, stderr) = run_agent_samples("host-a", 3, &[]);
    assert_eq!(of_schema(&records, "io.interval.v1").len(), 3 * 5);
    assert_eq!(stderr.matches("diskstats line 8").count(), 1, "{stderr}");
    let last_report = of_schema(&records, "io.agent.v1").pop().expect("the agent reports its counters");
    assert_eq!(last_report["counters"]["diskstats_bad_lines"], 3, "{last_report}");
    assert_eq!(last_report["counters"]["interval_records"], 15, "{last_report}");
    assert_eq!(last_report["counters"]["diskstats_records"], 0, "{last_report}");
    assert_eq!(last_report["tracing"], "off");
    assert!(stderr.contains("3 samples; diskstats_records 0, interval_records 15, diskstats_bad_lines 3"), "{stderr}");
}

#[test]
fn a_stop_sends_the_interval_it_cut_short_as_any_other() {
    let mut agent = fixture_run("host-a", 600_000, 0, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agent runs");
    let mut stdout = BufReader::new(agent.stdout.take().unwrap());
    let mut first = Vec::new();
    // The first interval's records, up to its io.agent.v1; then a stop, ten minutes early.
    while first.last().is_none_or(|r: &Value| r["schema"] != "io.agent.v1") {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the agent ended before its first report");
        first.push(serde_json::from_str(&line).unwrap());
    }
    // SAFETY: kill sends a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(agent.id() as libc::pid_t, libc::SIGTERM) }, 0);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(agent.wait().unwrap().success());
    let last = json_lines(rest.as_bytes());
    let schemas = |records: &[Value]| records.iter().map(|r| r["schema"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(schemas(&last), schemas(&first), "the interval cut short: every disk's interval, then the counters");
    assert_eq!(without_clock(&last, "io.interval.v1"), golden());
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
