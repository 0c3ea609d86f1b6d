//! Records the agent emits, shaped exactly as schema/records/*.schema.json.

use crate::diskstats::DiskCounters;
use serde::Serialize;
use std::collections::BTreeMap;

pub const DISKSTATS_SCHEMA: &str = "io.diskstats.v1";

/// The Kafka key of every per-disk record: one disk always lands in one partition.
pub fn disk_key(host: &str, disk: &str) -> String {
    format!("{host}/{disk}")
}

/// An io.diskstats.v1 record: the disk's name and counters as the parser read them
/// (their field names are DiskCounters'), and what the agent knows of the disk.
#[derive(Debug, Serialize)]
pub struct DiskstatsRecord<'a> {
    pub schema: &'static str,
    pub host: &'a str,
    #[serde(flatten)]
    pub counters: &'a DiskCounters,
    pub ts_ns: u64,
    pub rotational: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpm: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<&'a BTreeMap<String, String>>,
    /// Counted by `convert` from a capture of every I/O, not read from /proc/diskstats.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub derived_from_events: Option<bool>,
}

impl<'a> DiskstatsRecord<'a> {
    pub fn new(host: &'a str, ts_ns: u64, rotational: bool, counters: &'a DiskCounters) -> Self {
        DiskstatsRecord {
            schema: DISKSTATS_SCHEMA,
            host,
            counters,
            ts_ns,
            rotational,
            model: None,
            serial: None,
            rpm: None,
            labels: None,
            derived_from_events: None,
        }
    }

    /// Kafka key: one disk always lands in one partition.
    pub fn key(&self) -> String {
        disk_key(self.host, &self.counters.name)
    }
}

pub const EVENT_SCHEMA: &str = "io.event.v1";

/// Operation of a block I/O, as in io.event.v1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Op {
    R,
    W,
    D,
    F,
    /// A capture that does not say (bpftrace's biosnoop.bt): events only, never histograms.
    #[serde(rename = "?")]
    Unknown,
}

impl Op {
    /// From a blktrace-style rwbs string ("R", "WS", "FWS", "D", "RA", "FN"...):
    /// discard before write before read; a flush that carries no data is a flush.
    pub fn from_rwbs(rwbs: &str) -> Option<Op> {
        if rwbs.contains('D') {
            Some(Op::D)
        } else if rwbs.contains('W') {
            Some(Op::W)
        } else if rwbs.contains('R') {
            Some(Op::R)
        } else if rwbs.starts_with('F') {
            Some(Op::F)
        } else {
            None
        }
    }
}

/// Why an event was emitted: sampled in the kernel, or one of every I/O of a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SampleReason {
    Outlier,
    Uniform,
    Recorder,
    All,
}

/// What an event's issue_ns marks: its dispatch to the device, or (for tools that start
/// their clock there) its entry to the block layer, which leaves its device time unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimedFrom {
    #[default]
    Dispatch,
    Queue,
}

impl TimedFrom {
    fn is_dispatch(&self) -> bool {
        *self == TimedFrom::Dispatch
    }
}

/// One block I/O, shaped exactly as schema/records/io.event.v1.schema.json.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventRecord {
    pub schema: &'static str,
    pub host: String,
    pub disk: String,
    pub op: Op,
    pub bytes: u64,
    pub sector: u64,
    pub issue_ns: u64,
    pub complete_ns: u64,
    pub queue_ns: u64,
    pub inflight: u32,
    pub error: i32,
    pub comm: String,
    pub pid: u32,
    pub sample_reason: SampleReason,
    pub sample_weight: f64,
    /// Left out when it is the dispatch: what the agent and most tools record.
    #[serde(skip_serializing_if = "TimedFrom::is_dispatch")]
    pub timed_from: TimedFrom,
}

impl EventRecord {
    pub fn key(&self) -> String {
        disk_key(&self.host, &self.disk)
    }
}

/// The kernel's TASK_COMM_LEN is 16 with the terminating NUL: 15 visible bytes.
pub fn kernel_comm(name: &str) -> String {
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

pub const HIST_SCHEMA: &str = "io.hist.v1";

/// Every I/O of one disk and op in one interval, shaped as io.hist.v1.
#[derive(Debug, Serialize)]
pub struct HistRecord<'a> {
    pub schema: &'static str,
    pub host: &'a str,
    pub disk: &'a str,
    pub op: Op,
    pub start_ns: u64,
    pub end_ns: u64,
    pub latency: &'static str,
    pub buckets_log2_us: &'a [u64],
    pub count: u64,
    pub sum_us: u64,
    pub max_us: u64,
    pub errors: u64,
}

impl HistRecord<'_> {
    pub fn key(&self) -> String {
        disk_key(self.host, self.disk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{self, Members};
    use crate::diskstats;
    use serde_json::Value;

    fn names<T: Serialize>(values: &[T]) -> Vec<String> {
        values.iter().map(|v| serde_json::to_value(v).unwrap().as_str().unwrap().to_string()).collect()
    }

    #[test]
    fn diskstats_records_carry_the_schemas_counters_read_in_the_kernels_column_order() {
        let counters = contract::diskstats_counters();
        let columns: Vec<String> = (1..=counters.len()).map(|column| column.to_string()).collect();
        let disk = diskstats::parse_line(&format!("8 16 sdb {}", columns.join(" "))).unwrap();
        let written = serde_json::to_string(&DiskstatsRecord::new("fixture-host", 1, true, &disk)).unwrap();
        let written: Members = serde_json::from_str(&written).unwrap();
        let counted: Vec<(String, Value)> = written.0.into_iter().filter(|(name, _)| counters.contains(name)).collect();
        let expected: Vec<(String, Value)> =
            counters.iter().zip(1u64..).map(|(counter, column)| (counter.clone(), Value::from(column))).collect();
        assert_eq!(counted, expected);
    }

    #[test]
    fn ops_sample_reasons_and_timed_from_are_the_schemas_enums() {
        assert_eq!(names(&[Op::R, Op::W, Op::D, Op::F]), contract::allowed(contract::HIST, "op"));
        assert_eq!(names(&[Op::R, Op::W, Op::D, Op::F, Op::Unknown]), contract::allowed(contract::EVENT, "op"));
        let reasons = [SampleReason::Outlier, SampleReason::Uniform, SampleReason::Recorder, SampleReason::All];
        assert_eq!(names(&reasons), contract::allowed(contract::EVENT, "sample_reason"));
        assert_eq!(names(&[TimedFrom::Dispatch, TimedFrom::Queue]), contract::allowed(contract::EVENT, "timed_from"));
    }

    #[test]
    fn record_names_are_their_schemas() {
        assert_eq!(DISKSTATS_SCHEMA, contract::record_name(contract::DISKSTATS));
        assert_eq!(HIST_SCHEMA, contract::record_name(contract::HIST));
        assert_eq!(EVENT_SCHEMA, contract::record_name(contract::EVENT));
        assert_eq!(crate::convert::perseus::WINDOW_SCHEMA, contract::record_name(contract::WINDOW));
        assert_eq!(crate::telemetry::AGENT_SCHEMA, contract::record_name(contract::AGENT));
    }
}
