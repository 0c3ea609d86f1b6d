use super::*;
use crate::contract;
use crate::diskstats::{self, DiskCounters};
use crate::record::{Histogram, Op, TimedFrom};
use serde_json::Value;

const HOST: &str = "db-7";
/// The interval the tests close: a second, read after its sample.
const SAMPLED_NS: u64 = 1_763_700_000_900_000_000;
const START_NS: u64 = 1_763_699_999_950_000_000;
const END_NS: u64 = 1_763_700_000_950_000_000;
const SDA: DiskId = DiskId { major: 8, minor: 0 };
const SDB: DiskId = DiskId { major: 8, minor: 16 };

/// Every record sent, as (topic, key, record), and the flushes.
#[derive(Default)]
struct Recorded {
    sent: Vec<(String, String, Value)>,
    flushes: usize,
}

impl Recorded {
    fn of_schema(&self, schema: &str) -> Vec<&Value> {
        self.sent.iter().map(|(_, _, record)| record).filter(|r| r["schema"] == schema).collect()
    }
}

impl Sink for Recorded {
    fn send(&mut self, topic: &str, key: &str, payload: &str) -> Result<()> {
        self.sent.push((topic.into(), key.into(), serde_json::from_str(payload)?));
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        self.flushes += 1;
        Ok(())
    }
    fn close(&mut self) -> Result<()> {
        Ok(())
    }
    fn counters(&self) -> Vec<Counter> {
        Vec::new()
    }
    fn records_handed(&self) -> u64 {
        self.sent.len() as u64
    }
    fn records_settled(&self) -> u64 {
        self.sent.len() as u64
    }
}

fn counters(major: u32, minor: u32, name: &str) -> DiskCounters {
    diskstats::parse_line(&format!("{major} {minor} {name} 1000 20 256000 400 50 5 800 90 2 100 600 0 0 0 0 3 4")).unwrap()
}

fn sample<'a>(disk: &'a DiskCounters, rotational: bool) -> DiskstatsRecord<'a> {
    DiskstatsRecord::new(HOST, SAMPLED_NS, rotational, disk)
}

fn histogram(op: Op, latency: &'static str, count: u64) -> Histogram {
    let mut buckets_log2_us = vec![0; 27];
    buckets_log2_us[7] = count;
    Histogram { op, latency, buckets_log2_us, count, sum_us: 150 * count, max_us: 250, errors: u64::from(op == Op::W) }
}

fn disk_histograms(disk: DiskId, name: &str) -> DiskHistograms {
    let hists = vec![histogram(Op::R, "device", 40), histogram(Op::R, "total", 40), histogram(Op::W, "device", 3)];
    DiskHistograms { disk, name: name.into(), hists }
}

fn interval(disks: Vec<DiskHistograms>) -> IntervalHistograms {
    IntervalHistograms { start_ns: START_NS, end_ns: END_NS, disks }
}

fn event(disk: &str, n: u64) -> EventRecord {
    EventRecord {
        schema: EVENT_SCHEMA,
        host: HOST.into(),
        disk: disk.into(),
        op: if n % 2 == 0 { Op::R } else { Op::W },
        bytes: 4096,
        sector: 8 * n,
        issue_ns: START_NS + 1_000 * n,
        complete_ns: START_NS + 1_000 * n + 800,
        queue_ns: 40,
        inflight: 2,
        error: if n % 7 == 0 { -5 } else { 0 },
        comm: "postgres".into(),
        pid: 4242,
        sample_reason: [SampleReason::Outlier, SampleReason::Uniform, SampleReason::Recorder][(n % 3) as usize],
        sample_weight: 1.0,
        timed_from: TimedFrom::Dispatch,
    }
}

fn assert_valid(record: &Value) {
    let schema = match record["schema"].as_str().unwrap() {
        INTERVAL_SCHEMA => contract::INTERVAL,
        EVENT_BATCH_SCHEMA => contract::EVENT_BATCH,
        DISKSTATS_SCHEMA => contract::DISKSTATS,
        HIST_SCHEMA => contract::HIST,
        EVENT_SCHEMA => contract::EVENT,
        other => panic!("the sender sent {other}"),
    };
    let violations = contract::violations(schema, record);
    assert!(violations.is_empty(), "{record}: {violations:?}");
}

/// The io.diskstats.v1, io.hist.v1 and io.event.v1 records a batch holds, as
/// iopipe/record_batches.py unfolds them.
fn unfold(record: &Value) -> Vec<Value> {
    let fields = record.as_object().unwrap();
    let column = |name: &str| fields[name].as_array().unwrap().clone();
    match record["schema"].as_str().unwrap() {
        INTERVAL_SCHEMA => {
            let mut sample: serde_json::Map<String, Value> = fields
                .iter()
                .filter(|(name, _)| !name.starts_with("hist_") && *name != "start_ns" && *name != "end_ns")
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            sample.insert("schema".into(), DISKSTATS_SCHEMA.into());
            let mut out = vec![Value::Object(sample)];
            for i in 0..column("hist_op").len() {
                let mut hist = serde_json::Map::new();
                hist.insert("schema".into(), HIST_SCHEMA.into());
                for shared in ["host", "disk", "start_ns", "end_ns"] {
                    hist.insert(shared.into(), record[shared].clone());
                }
                for (name, _) in fields.iter().filter(|(name, _)| name.starts_with("hist_")) {
                    hist.insert(name["hist_".len()..].into(), column(name)[i].clone());
                }
                out.push(Value::Object(hist));
            }
            out
        }
        EVENT_BATCH_SCHEMA => (0..column("op").len())
            .map(|i| {
                let mut event = serde_json::Map::new();
                event.insert("schema".into(), EVENT_SCHEMA.into());
                for (name, value) in fields.iter().filter(|(name, _)| *name != "schema") {
                    event.insert(name.clone(), value.as_array().map_or_else(|| value.clone(), |values| values[i].clone()));
                }
                event
            })
            .map(Value::Object)
            .collect(),
        _ => vec![record.clone()],
    }
}

/// A v1 record as a batch gives it back: timed_from, which io.event.v1 leaves out at its
/// default, always said.
fn with_defaults(mut record: Value) -> Value {
    if record["schema"] == EVENT_SCHEMA && record.get("timed_from").is_none() {
        record["timed_from"] = "dispatch".into();
    }
    record
}

/// One interval of two sampled disks (sda busy, dm-0 without histograms) and a traced
/// disk the sample does not list (sdb), with events of sda and sdb, in `mode`.
fn one_interval(mode: RecordMode) -> (Recorded, DiskRecordSender) {
    let (sda, dm0) = (counters(8, 0, "sda"), counters(253, 0, "dm-0"));
    let samples = [sample(&sda, true), sample(&dm0, false)];
    let histograms = interval(vec![disk_histograms(SDA, "sda"), disk_histograms(SDB, "sdb")]);
    let mut sender = DiskRecordSender::new(mode, HOST, true);
    let mut sink = Recorded::default();
    for n in 0..5 {
        sender.event(event(if n < 3 { "sda" } else { "sdb" }, n), &mut sink).unwrap();
    }
    sender.close_interval(&samples, Some(&histograms), &mut sink).unwrap();
    (sink, sender)
}

#[test]
fn each_sampled_disk_gets_one_interval_of_its_sample_and_its_histograms() {
    let (sink, _) = one_interval(RecordMode::Batched);
    let intervals = sink.of_schema(INTERVAL_SCHEMA);
    assert_eq!(intervals.len(), 2);
    let (sda, dm0) = (intervals[0], intervals[1]);
    assert_eq!((&sda["disk"], &sda["major"], &sda["reads_completed"], &sda["ts_ns"]), (&"sda".into(), &8.into(), &1000.into(), &SAMPLED_NS.into()));
    assert_eq!((&sda["start_ns"], &sda["end_ns"]), (&START_NS.into(), &END_NS.into()));
    assert_eq!(sda["hist_op"], serde_json::json!(["R", "R", "W"]));
    assert_eq!(sda["hist_latency"], serde_json::json!(["device", "total", "device"]));
    assert_eq!(sda["hist_errors"], serde_json::json!([0, 0, 1]));
    assert_eq!(sda["hist_buckets_log2_us"][2][7], 3);
    // A disk without I/O (or, like dm-0, never traced) in the sample: its interval, empty.
    assert_eq!((&dm0["disk"], &dm0["hist_count"], &dm0["start_ns"]), (&"dm-0".into(), &serde_json::json!([]), &START_NS.into()));
    for (topic, key, record) in &sink.sent {
        assert_valid(record);
        assert_eq!(key, &format!("{HOST}/{}", record["disk"].as_str().unwrap()));
        assert_eq!(topic, &topics::topic_for(record["schema"].as_str().unwrap()));
    }
}

#[test]
fn batched_records_carry_exactly_the_records_single_sends() {
    let (single, _) = one_interval(RecordMode::Single);
    let (batched, _) = one_interval(RecordMode::Batched);
    let mut sent_single: Vec<Value> = single.sent.into_iter().map(|(_, _, r)| with_defaults(r)).collect();
    let mut unfolded: Vec<Value> = batched.sent.iter().flat_map(|(_, _, r)| unfold(r)).collect();
    let order = |r: &Value| r.to_string();
    sent_single.sort_by_key(order);
    unfolded.sort_by_key(order);
    assert_eq!(unfolded, sent_single);
}

#[test]
fn single_sends_the_v1_records_events_as_they_come() {
    let (sink, sender) = one_interval(RecordMode::Single);
    let schemas: Vec<&str> = sink.sent.iter().map(|(_, _, r)| r["schema"].as_str().unwrap()).collect();
    let mut expected = vec![EVENT_SCHEMA; 5];
    expected.extend([DISKSTATS_SCHEMA; 2]);
    expected.extend([HIST_SCHEMA; 6]);
    assert_eq!(schemas, expected);
    assert_eq!((sender.sent.diskstats_records, sender.sent.hist_records, sender.sent.event_records), (2, 6, 5));
    for (_, _, record) in &sink.sent {
        assert_valid(record);
    }
}

#[test]
fn histograms_of_a_disk_the_sample_does_not_list_go_as_hist_records() {
    let (sink, sender) = one_interval(RecordMode::Batched);
    let hists = sink.of_schema(HIST_SCHEMA);
    assert_eq!(hists.len(), 3);
    assert!(hists.iter().all(|h| h["disk"] == "sdb" && h["start_ns"] == START_NS && h["end_ns"] == END_NS), "{hists:?}");
    assert_eq!((sender.sent.interval_hists, sender.sent.hist_records), (3, 3));
}

#[test]
fn when_diskstats_cannot_be_read_every_histogram_goes_as_a_hist_record() {
    let mut sender = DiskRecordSender::new(RecordMode::Batched, HOST, true);
    let mut sink = Recorded::default();
    let histograms = interval(vec![disk_histograms(SDA, "sda"), disk_histograms(SDB, "sdb")]);
    sender.close_interval(&[], Some(&histograms), &mut sink).unwrap();
    assert_eq!(sink.of_schema(HIST_SCHEMA).len(), 6);
    assert_eq!(sink.sent.len(), 6, "no interval without a sample");
}

#[test]
fn events_wait_for_their_interval_and_go_in_one_batch_per_disk() {
    let mut sender = DiskRecordSender::new(RecordMode::Batched, HOST, true);
    let mut sink = Recorded::default();
    for n in 0..5 {
        sender.event(event(if n < 3 { "sda" } else { "sdb" }, n), &mut sink).unwrap();
    }
    assert!(sink.sent.is_empty(), "kept until the interval closes");
    sender.close_interval(&[], None, &mut sink).unwrap();
    let batches = sink.of_schema(EVENT_BATCH_SCHEMA);
    assert_eq!(batches.iter().map(|b| (b["disk"].as_str().unwrap(), b["op"].as_array().unwrap().len())).collect::<Vec<_>>(), [("sda", 3), ("sdb", 2)]);
    assert_eq!(batches[0]["timed_from"], serde_json::json!(["dispatch", "dispatch", "dispatch"]), "given for every event");
    assert_eq!(batches[0]["sample_reason"], serde_json::json!(["outlier", "uniform", "recorder"]));
    assert_eq!(sender.sent.events_by_reason, [2, 2, 1]);
    sender.close_interval(&[], None, &mut sink).unwrap();
    assert_eq!(sink.of_schema(EVENT_BATCH_SCHEMA).len(), 2, "each event is sent once");
}

#[test]
fn a_batch_holds_as_many_events_as_its_schema_allows_and_a_full_one_goes_at_once() {
    let most = contract::max_items(contract::EVENT_BATCH, "op");
    assert_eq!(*EVENTS_PER_BATCH, most);
    let mut sender = DiskRecordSender::new(RecordMode::Batched, HOST, true);
    let mut sink = Recorded::default();
    let events = 2 * most as u64 + 5;
    for n in 0..events {
        sender.event(event("sda", n), &mut sink).unwrap();
    }
    assert_eq!(sink.sent.len(), 2, "two full batches before the close");
    sender.close_interval(&[], None, &mut sink).unwrap();
    let batches = sink.of_schema(EVENT_BATCH_SCHEMA);
    let sizes: Vec<usize> = batches.iter().map(|b| b["op"].as_array().unwrap().len()).collect();
    assert_eq!(sizes, [most, most, 5]);
    let sectors: Vec<u64> = batches.iter().flat_map(|b| b["sector"].as_array().unwrap().iter().map(|s| s.as_u64().unwrap())).collect();
    assert_eq!(sectors, (0..events).map(|n| 8 * n).collect::<Vec<_>>(), "every event once, in the order read");
    for batch in batches {
        assert_valid(batch);
    }
}

#[test]
fn after_the_last_sample_histograms_go_as_hist_records_and_events_in_batches() {
    // A --count run's end: what completed since the last sample has no sample of its own.
    let mut sender = DiskRecordSender::new(RecordMode::Batched, HOST, true);
    let mut sink = Recorded::default();
    sender.event(event("sda", 1), &mut sink).unwrap();
    sender.close_interval(&[], Some(&interval(vec![disk_histograms(SDA, "sda")])), &mut sink).unwrap();
    let schemas: Vec<&str> = sink.sent.iter().map(|(_, _, r)| r["schema"].as_str().unwrap()).collect();
    assert_eq!(schemas, [HIST_SCHEMA, HIST_SCHEMA, HIST_SCHEMA, EVENT_BATCH_SCHEMA]);
    assert_eq!(sink.flushes, 1);
}

#[test]
fn without_tracing_an_interval_spans_its_samples_instant() {
    let sda = counters(8, 0, "sda");
    let mut sender = DiskRecordSender::new(RecordMode::Batched, HOST, false);
    let mut sink = Recorded::default();
    sender.close_interval(&[sample(&sda, true)], None, &mut sink).unwrap();
    let interval = sink.of_schema(INTERVAL_SCHEMA)[0];
    assert_eq!((&interval["start_ns"], &interval["end_ns"]), (&SAMPLED_NS.into(), &SAMPLED_NS.into()));
    assert_valid(interval);
    let names: Vec<&str> = sender.counters().iter().map(|c| c.name).collect();
    assert_eq!(names, ["diskstats_records", "interval_records"], "no histogram or event counters without tracing");
}

#[test]
fn the_record_counters_add_up_to_the_records_handed_to_the_output() {
    for mode in [RecordMode::Batched, RecordMode::Single] {
        let (sink, sender) = one_interval(mode);
        let records: u64 = sender.counters().iter().filter(|c| c.name.ends_with("_records")).map(|c| c.value).sum();
        assert_eq!(records, sink.records_handed(), "{mode:?}");
        let events: u64 = sender.counters().iter().filter(|c| c.name.starts_with("events_sent_")).map(|c| c.value).sum();
        assert_eq!(events, 5, "{mode:?}: events, not the records carrying them");
    }
}
