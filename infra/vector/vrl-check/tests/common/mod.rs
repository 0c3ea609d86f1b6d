//! What every test reads: the pipeline as Vector would load it, and the contract under
//! schema/ (topics, schemas, examples, signing), read, never retyped.
#![allow(dead_code)]

use hmac::{Hmac, Mac};
use serde_json::Value as Json;
use sha2::Sha256;
use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Once;
use vrl::value::Value;
use vrl_check::topology::{KafkaRecord, Outputs, Topology};
use vrl_check::{program, repo_root, Event};

/// The host labels the tests give Vector; "rack" is one the agent's own examples set too.
pub const SITE_LABELS: &str = "rack=r99,cluster=c7";

/// Vector runs from the root of the deployed files, where vector.yaml's `file:` paths and
/// validate.vrl's schema paths resolve; here that is the repository.
pub fn setup() -> Topology {
    prepare();
    let vars: HashMap<String, String> = std::env::vars().collect();
    Topology::load(&repo_root().join("infra/vector/vector.yaml"), &repo_root(), &vars).unwrap_or_else(|e| panic!("{e}"))
}

/// The working directory and environment every test shares, set once.
fn prepare() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::env::set_current_dir(repo_root()).expect("cd to the repository root");
        std::env::set_var("IOPIPE_LABELS", SITE_LABELS);
        set_credentials();
    });
}

/// What vector.yaml requires of every host: its agent principal's credentials, and its
/// host key (here the contract's example key) in signing.key of IOPIPE_SIGNING_KEY_DIR.
pub fn set_credentials() {
    std::env::set_var("IOPIPE_KAFKA_USERNAME", "agent-web-17");
    std::env::set_var("IOPIPE_KAFKA_PASSWORD", "from-the-environment");
    std::env::set_var("IOPIPE_SIGNING_KEY_DIR", key_dir("example", &format!("{}\n", host_key_hex())));
}

/// The pipeline as Vector would load it with signing.key in `key_dir`: an error is Vector's
/// refusal to start.
pub fn load_with_key_dir(key_dir: &Path) -> Result<Topology, String> {
    prepare();
    let mut vars: HashMap<String, String> = std::env::vars().collect();
    vars.insert("IOPIPE_SIGNING_KEY_DIR".into(), key_dir.display().to_string());
    Topology::load(&repo_root().join("infra/vector/vector.yaml"), &repo_root(), &vars)
}

/// schema/signing.json, the contract of the signature.
pub fn signing_json() -> Json {
    serde_json::from_str(&std::fs::read_to_string(repo_root().join("schema/signing.json")).unwrap()).unwrap()
}

/// The host key the tests sign with: the contract's first example's.
pub fn host_key_hex() -> String {
    signing_json()["examples"][0]["host_key_hex"].as_str().unwrap().to_string()
}

/// A directory holding signing.key with `contents`, private to its owner as a key file should
/// be; `name` keeps directories of different contents apart.
pub fn key_dir(name: &str, contents: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("signing").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("signing.key");
    std::fs::write(&file, contents).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    dir
}

/// The headers that sign `value` with the host key `key_hex` (schema/signing.json), made
/// here with the hmac crate, apart from the VRL that signs in the pipeline.
pub fn signed(key_hex: &str, value: &str) -> BTreeMap<String, String> {
    let contract = signing_json();
    let key: Vec<u8> = (0..key_hex.len()).step_by(2).map(|i| u8::from_str_radix(&key_hex[i..i + 2], 16).unwrap()).collect();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(value.as_bytes());
    let digest: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    let header = contract["header"].as_str().unwrap().to_string();
    BTreeMap::from([(header, format!("{}={digest}", contract["version"].as_str().unwrap()))])
}

pub fn site_labels() -> BTreeMap<String, String> {
    SITE_LABELS.split(',').map(|pair| pair.split_once('=').unwrap()).map(|(k, v)| (k.into(), v.into())).collect()
}

pub fn topics_json() -> Json {
    serde_json::from_str(&std::fs::read_to_string(repo_root().join("schema/topics.json")).unwrap()).unwrap()
}

/// Topic of each record, from schema/topics.json.
pub fn topic_of(record: &str) -> String {
    topics_json()["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["record"] == record)
        .map(|t| t["name"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("schema/topics.json has no topic for {record}"))
}

/// The records the agent sends (producer "agent" in schema/topics.json).
pub fn agent_records() -> Vec<String> {
    topics_json()["topics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["producer"] == "agent")
        .map(|t| t["record"].as_str().unwrap().to_string())
        .collect()
}

pub fn all_records() -> Vec<String> {
    topics_json()["topics"].as_array().unwrap().iter().map(|t| t["record"].as_str().unwrap().to_string()).collect()
}

pub fn schema_file(record: &str) -> PathBuf {
    repo_root().join(format!("schema/records/{record}.schema.json"))
}

/// The maxLength of a record's field in its schema.
pub fn max_length(record: &str, field: &str) -> usize {
    let schema: Json = serde_json::from_str(&std::fs::read_to_string(schema_file(record)).unwrap()).unwrap();
    schema["properties"][field]["maxLength"].as_u64().unwrap_or_else(|| panic!("{record}.{field} has no maxLength")) as usize
}

/// Whether a record's schema has a `labels` field, where host labels go.
pub fn has_labels(record: &str) -> bool {
    let schema: Json = serde_json::from_str(&std::fs::read_to_string(schema_file(record)).unwrap()).unwrap();
    schema["properties"].get("labels").is_some()
}

pub fn examples(record: &str, kind: &str) -> Vec<String> {
    let path = repo_root().join(format!("schema/examples/{record}.{kind}.ndjson"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// Checks a JSON value against a record's schema with VRL's validate_json_schema, the
/// validator validate.vrl uses.
pub fn schema_errors(record: &str, json: &Json) -> Option<String> {
    let source = format!("validate_json_schema!(encode_json(.), {:?})", format!("schema/records/{record}.schema.json"));
    let check = program::compile(&source, "a schema check").unwrap();
    let mut event = Event::new(Value::from(json.clone()));
    match program::run(&check, &mut event) {
        Ok(Value::Boolean(true)) => None,
        Ok(other) => Some(format!("{other}")),
        Err(e) => Some(format!("{e:?}")),
    }
}

/// What reached the Kafka sinks, as the records they would produce, by sink.
pub fn kafka_records(topology: &Topology, out: &Outputs) -> Vec<(String, KafkaRecord)> {
    let mut records = Vec::new();
    for (sink, events) in &out.by_sink {
        let sink_config = topology.sink(sink);
        if sink_config.kind == "kafka" {
            records.extend(events.iter().map(|e| (sink.clone(), sink_config.kafka_record(e))));
        }
    }
    records
}

/// The Kafka key the agent gives a record (agent/src/record.rs disk_key, run.rs for
/// io.agent.v1): host/disk, or the host for a record without a disk.
pub fn agent_key(record: &Json) -> String {
    let host = record["host"].as_str().unwrap();
    match record.get("disk").and_then(Json::as_str) {
        Some(disk) => format!("{host}/{disk}"),
        None => host.to_string(),
    }
}

/// The record as Vector should send it: unchanged, but for the site's labels merged into
/// `labels` where its schema has that field, the record's own labels winning.
pub fn labelled(record: &Json) -> Json {
    let mut expected = record.clone();
    let name = record["schema"].as_str().unwrap();
    if has_labels(name) {
        let mut labels: serde_json::Map<String, Json> =
            site_labels().into_iter().map(|(k, v)| (k, Json::from(v))).collect();
        if let Some(own) = record.get("labels").and_then(Json::as_object) {
            labels.extend(own.clone());
        }
        expected["labels"] = Json::Object(labels);
    }
    expected
}

/// A line the agent sends must come out once, on its topic, keyed as the agent keys it,
/// unchanged but for the site's labels, signed with the host key over the value exactly as
/// sent; nothing of it in the dead letter.
pub fn assert_routed_as_sent(topology: &Topology, line: &str) {
    let record: Json = serde_json::from_str(line).unwrap();
    let name = record["schema"].as_str().unwrap();
    let out = topology.play_line("agent", line);
    let sent = kafka_records(topology, &out);
    assert_eq!(sent.len(), 1, "{line}\nwent to {:?}", sent.iter().map(|(s, r)| (s, &r.topic)).collect::<Vec<_>>());
    let (_, kafka) = &sent[0];
    assert_eq!(kafka.topic, topic_of(name), "{line}");
    assert_eq!(kafka.key.as_deref(), Some(agent_key(&record).as_str()), "{line}");
    assert_eq!(kafka.payload, labelled(&record), "{line}");
    assert_eq!(kafka.headers, signed(&host_key_hex(), &kafka.value), "{line}");
    assert_eq!(schema_errors(name, &kafka.payload), None, "what Vector sends is still valid: {line}");
}

/// The dead letters a line became, as the Kafka records of the dead-letter topic.
pub fn dead_letters(topology: &Topology, out: &Outputs) -> Vec<KafkaRecord> {
    let deadletter_topic = topic_of("io.deadletter.v1");
    kafka_records(topology, out).into_iter().map(|(_, r)| r).filter(|r| r.topic == deadletter_topic).collect()
}
