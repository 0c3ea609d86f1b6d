//! What the agent's own tables must agree with, as its tests read it: the record schemas
//! of schema/records/, schema/pipeline.json and the enums of src/bpf/iotrace.h, compiled in.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use std::fmt;

pub const DISKSTATS: &str = include_str!("../../schema/records/io.diskstats.v1.schema.json");
pub const HIST: &str = include_str!("../../schema/records/io.hist.v1.schema.json");
pub const EVENT: &str = include_str!("../../schema/records/io.event.v1.schema.json");
pub const WINDOW: &str = include_str!("../../schema/records/io.window.v1.schema.json");
pub const INTERVAL: &str = include_str!("../../schema/records/io.interval.v1.schema.json");
pub const EVENT_BATCH: &str = include_str!("../../schema/records/io.eventbatch.v1.schema.json");
pub const AGENT: &str = include_str!("../../schema/records/io.agent.v1.schema.json");
pub const PIPELINE: &str = include_str!("../../schema/pipeline.json");
const IOTRACE_H: &str = include_str!("bpf/iotrace.h");

/// A JSON object's members in the order written (serde_json's own map sorts them).
pub struct Members(pub Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(InOrder)
    }
}

fn schema(text: &str) -> Value {
    serde_json::from_str(text).expect("a record schema is JSON")
}

/// The /proc/diskstats counters in the kernel's column order: the fields of
/// io.diskstats.v1 whose schema is its counter definition, as it lists them.
pub fn diskstats_counters() -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Schema {
        properties: Members,
    }
    let schema: Schema = serde_json::from_str(DISKSTATS).expect("io.diskstats.v1's schema is JSON");
    schema.properties.0.into_iter().filter(|(_, spec)| spec["$ref"] == "#/$defs/counter").map(|(name, _)| name).collect()
}

/// The values a field of a record may take: its schema's enum, in order.
pub fn allowed(record_schema: &str, field: &str) -> Vec<String> {
    let values = schema(record_schema)["properties"][field]["enum"].clone();
    serde_json::from_value(values).unwrap_or_else(|e| panic!("{field} has no enum of strings: {e}"))
}

/// The most entries an array field of a record may hold: its schema's maxItems.
pub fn max_items(record_schema: &str, field: &str) -> usize {
    let most = schema(record_schema)["properties"][field]["maxItems"].as_u64();
    usize::try_from(most.unwrap_or_else(|| panic!("{field} has no maxItems"))).expect("a bound fits in memory")
}

/// Whether `record` keeps every rule of `record_schema`, and if not, which it breaks.
pub fn violations(record_schema: &str, record: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(&schema(record_schema)).expect("a record schema compiles");
    validator.iter_errors(record).map(|e| format!("{}: {e}", e.instance_path())).collect()
}

/// The record a schema is of: its `schema` field's constant.
pub fn record_name(record_schema: &str) -> String {
    schema(record_schema)["properties"]["schema"]["const"].as_str().expect("a record names its schema").to_string()
}

/// The constants of a C enum of iotrace.h, in order, with their values.
pub fn c_enum(name: &str) -> Vec<(String, u64)> {
    let opening = format!("enum {name} {{");
    let start = IOTRACE_H.find(&opening).unwrap_or_else(|| panic!("iotrace.h has no enum {name}")) + opening.len();
    let body = &IOTRACE_H[start..start + IOTRACE_H[start..].find("};").expect("an enum ends")];
    let mut next = 0;
    let mut constants = Vec::new();
    for item in without_comments(body).split(',').map(str::trim).filter(|item| !item.is_empty()) {
        let (constant, value) = match item.split_once('=') {
            Some((constant, value)) => (constant.trim(), value.trim().parse().expect("an enum value is a number")),
            None => (item, next),
        };
        constants.push((constant.to_string(), value));
        next = value + 1;
    }
    constants
}

/// The value of a `#define` of iotrace.h.
pub fn c_define(name: &str) -> usize {
    IOTRACE_H
        .lines()
        .find_map(|line| line.strip_prefix("#define ")?.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("iotrace.h defines no number {name}"))
}

fn without_comments(c: &str) -> String {
    let mut kept = String::new();
    let mut rest = c;
    while let Some(start) = rest.find("/*") {
        kept.push_str(&rest[..start]);
        rest = &rest[start + rest[start..].find("*/").expect("a comment ends") + 2..];
    }
    kept + rest
}
