//! Records the agent emits, shaped exactly as schema/records/*.schema.json.

use crate::diskstats::DiskCounters;
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::LazyLock;

pub const DISKSTATS_SCHEMA: &str = "io.diskstats.v1";

/// The Kafka key of every per-disk record: one disk always lands in one partition.
pub fn disk_key(host: &str, disk: &str) -> String {
    format!("{host}/{disk}")
}

/// An io.diskstats.v1 record: the disk's name and counters as the parser read them
/// (their field names are DiskCounters'), and what the agent knows of the disk. Borrows
/// all it holds, so an io.interval.v1 takes it whole under its own schema name.
#[derive(Debug, Clone, Copy, Serialize)]
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

/// One histogram of a disk's interval: every I/O of one op, timed one way (device, queue or
/// total). io.hist.v1's own fields, less the disk and span of the record that carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub op: Op,
    pub latency: &'static str,
    pub buckets_log2_us: Vec<u64>,
    pub count: u64,
    pub sum_us: u64,
    pub max_us: u64,
    pub errors: u64,
}

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

impl<'a> HistRecord<'a> {
    pub fn new(host: &'a str, disk: &'a str, start_ns: u64, end_ns: u64, hist: &'a Histogram) -> Self {
        HistRecord {
            schema: HIST_SCHEMA,
            host,
            disk,
            op: hist.op,
            start_ns,
            end_ns,
            latency: hist.latency,
            buckets_log2_us: &hist.buckets_log2_us,
            count: hist.count,
            sum_us: hist.sum_us,
            max_us: hist.max_us,
            errors: hist.errors,
        }
    }

    pub fn key(&self) -> String {
        disk_key(self.host, self.disk)
    }
}

pub const INTERVAL_SCHEMA: &str = "io.interval.v1";

/// A disk's interval, shaped as io.interval.v1: its diskstats sample's fields, and its
/// histograms of the interval (start_ns to end_ns) as parallel hist_ arrays
/// (iopipe/record_batches.py documents the batched records).
#[derive(Debug, Serialize)]
pub struct IntervalRecord<'a> {
    #[serde(flatten)]
    sample: DiskstatsRecord<'a>,
    start_ns: u64,
    end_ns: u64,
    #[serde(flatten)]
    histograms: HistColumns<'a>,
}

impl<'a> IntervalRecord<'a> {
    pub fn new(sample: &DiskstatsRecord<'a>, start_ns: u64, end_ns: u64, histograms: &'a [Histogram]) -> Self {
        IntervalRecord {
            sample: DiskstatsRecord { schema: INTERVAL_SCHEMA, ..*sample },
            start_ns,
            end_ns,
            histograms: HistColumns(histograms),
        }
    }

    pub fn key(&self) -> String {
        self.sample.key()
    }
}

/// Histograms as io.interval.v1's hist_ arrays, written straight from them.
#[derive(Debug)]
struct HistColumns<'a>(&'a [Histogram]);

impl Serialize for HistColumns<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let hists = self.0;
        let mut columns = serializer.serialize_struct("HistColumns", 7)?;
        columns.serialize_field("hist_op", &column(hists, |h| h.op))?;
        columns.serialize_field("hist_latency", &column(hists, |h| h.latency))?;
        columns.serialize_field("hist_buckets_log2_us", &column(hists, |h| h.buckets_log2_us.as_slice()))?;
        columns.serialize_field("hist_count", &column(hists, |h| h.count))?;
        columns.serialize_field("hist_sum_us", &column(hists, |h| h.sum_us))?;
        columns.serialize_field("hist_max_us", &column(hists, |h| h.max_us))?;
        columns.serialize_field("hist_errors", &column(hists, |h| h.errors))?;
        columns.end()
    }
}

pub const EVENT_BATCH_SCHEMA: &str = "io.eventbatch.v1";
const EVENT_BATCH_SCHEMA_JSON: &str = include_str!("../../schema/records/io.eventbatch.v1.schema.json");

/// Events one io.eventbatch.v1 holds at most: the bound its schema sets on its arrays.
pub static EVENTS_PER_BATCH: LazyLock<usize> = LazyLock::new(|| {
    let schema: serde_json::Value = serde_json::from_str(EVENT_BATCH_SCHEMA_JSON).expect("io.eventbatch.v1's schema is JSON");
    let bounds = schema["properties"].as_object().expect("io.eventbatch.v1's schema has properties").values();
    let most = bounds.filter_map(|field| field["maxItems"].as_u64()).min().expect("io.eventbatch.v1 bounds its arrays");
    usize::try_from(most).expect("a batch's bound fits in memory")
});

/// Sampled I/Os of one disk, shaped as io.eventbatch.v1: each field of io.event.v1 as an
/// array, timed_from given for every event. At most EVENTS_PER_BATCH events.
#[derive(Debug)]
pub struct EventBatchRecord<'a> {
    pub host: &'a str,
    pub disk: &'a str,
    pub events: &'a [EventRecord],
}

impl EventBatchRecord<'_> {
    pub fn key(&self) -> String {
        disk_key(self.host, self.disk)
    }
}

impl Serialize for EventBatchRecord<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let events = self.events;
        let mut batch = serializer.serialize_struct("EventBatchRecord", 16)?;
        batch.serialize_field("schema", EVENT_BATCH_SCHEMA)?;
        batch.serialize_field("host", self.host)?;
        batch.serialize_field("disk", self.disk)?;
        batch.serialize_field("op", &column(events, |e| e.op))?;
        batch.serialize_field("bytes", &column(events, |e| e.bytes))?;
        batch.serialize_field("sector", &column(events, |e| e.sector))?;
        batch.serialize_field("issue_ns", &column(events, |e| e.issue_ns))?;
        batch.serialize_field("complete_ns", &column(events, |e| e.complete_ns))?;
        batch.serialize_field("queue_ns", &column(events, |e| e.queue_ns))?;
        batch.serialize_field("inflight", &column(events, |e| e.inflight))?;
        batch.serialize_field("error", &column(events, |e| e.error))?;
        batch.serialize_field("comm", &column(events, |e| e.comm.as_str()))?;
        batch.serialize_field("pid", &column(events, |e| e.pid))?;
        batch.serialize_field("sample_reason", &column(events, |e| e.sample_reason))?;
        batch.serialize_field("sample_weight", &column(events, |e| e.sample_weight))?;
        batch.serialize_field("timed_from", &column(events, |e| e.timed_from))?;
        batch.end()
    }
}

/// One field of each of `items` as a JSON array (a batch's column), written as it is read:
/// no column is built in memory.
struct Column<'a, T, F>(&'a [T], F);

fn column<'a, T, V: Serialize, F: Fn(&'a T) -> V>(items: &'a [T], field: F) -> Column<'a, T, F> {
    Column(items, field)
}

impl<'a, T, V: Serialize, F: Fn(&'a T) -> V> Serialize for Column<'a, T, F> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let items: &'a [T] = self.0;
        serializer.collect_seq(items.iter().map(&self.1))
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
        assert_eq!(INTERVAL_SCHEMA, contract::record_name(contract::INTERVAL));
        assert_eq!(EVENT_BATCH_SCHEMA, contract::record_name(contract::EVENT_BATCH));
        assert_eq!(crate::convert::perseus::WINDOW_SCHEMA, contract::record_name(contract::WINDOW));
        assert_eq!(crate::telemetry::AGENT_SCHEMA, contract::record_name(contract::AGENT));
    }
}
