//! Which records carry a disk's diskstats samples, histograms and sampled I/Os
//! (`--records`). Batched, the default: at each interval's close, one io.interval.v1 per
//! disk of the diskstats sample (its sample and its histograms of the interval), and the
//! I/Os read from the kernel since the last close in io.eventbatch.v1 records of one disk
//! each. Single: io.diskstats.v1, io.hist.v1 and io.event.v1 one by one, as agents sent
//! before the batches, events as soon as they are read. iopipe/record_batches.py documents
//! the batched records; the v1 records they batch stay valid.
//!
//! A disk's histograms with no diskstats sample of the disk in their interval go out as
//! io.hist.v1 records, batched or not: when the read of /proc/diskstats failed, when the
//! sample does not list the disk (one removed, whose last counts the kernel hands over
//! after its line left /proc/diskstats; one whose first I/O completed after the sample was
//! read), and for the moments between a --count run's last sample and its exit. An
//! interval carries its disk's sample; no histogram waits for a later one, or is dropped.
//!
//! A disk's events wait at most until the interval's close: a batch that fills up
//! (EVENTS_PER_BATCH) goes at once, so a disk holds at most one batch of events.

use crate::iotrace::DiskId;
use crate::output::Sink;
use crate::record::{
    DiskstatsRecord, EventBatchRecord, EventRecord, HistRecord, IntervalRecord, SampleReason, DISKSTATS_SCHEMA,
    EVENT_BATCH_SCHEMA, EVENT_SCHEMA, EVENTS_PER_BATCH, HIST_SCHEMA, INTERVAL_SCHEMA,
};
use crate::telemetry::Counter;
use crate::topics;
use crate::tracer::{DiskHistograms, IntervalHistograms};
use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeMap;

/// `--records`: how the disk records go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RecordMode {
    /// io.interval.v1 and io.eventbatch.v1.
    Batched,
    /// io.diskstats.v1, io.hist.v1 and io.event.v1, one by one.
    Single,
}

/// What was sent, counted by record and by what records carry.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SentCounts {
    pub diskstats_records: u64,
    pub interval_records: u64,
    pub hist_records: u64,
    /// Histograms carried by io.interval.v1 records.
    pub interval_hists: u64,
    pub event_records: u64,
    pub eventbatch_records: u64,
    /// Events sent, alone or in batches, by why they were sampled: outlier, uniform, recorder.
    pub events_by_reason: [u64; 3],
}

/// Sends one host's disk records in the chosen mode, holding each disk's events until the
/// interval closes when batched.
pub struct DiskRecordSender {
    mode: RecordMode,
    host: String,
    topics: Topics,
    /// Batched: each disk's events read since the last close, by the events' disk name.
    events: BTreeMap<String, Vec<EventRecord>>,
    /// Whether the agent traces: without it, no histogram or event counters to report.
    tracing: bool,
    pub sent: SentCounts,
}

struct Topics {
    diskstats: String,
    hist: String,
    event: String,
    interval: String,
    eventbatch: String,
}

impl DiskRecordSender {
    pub fn new(mode: RecordMode, host: &str, tracing: bool) -> Self {
        DiskRecordSender {
            mode,
            host: host.to_string(),
            topics: Topics {
                diskstats: topics::topic_for(DISKSTATS_SCHEMA),
                hist: topics::topic_for(HIST_SCHEMA),
                event: topics::topic_for(EVENT_SCHEMA),
                interval: topics::topic_for(INTERVAL_SCHEMA),
                eventbatch: topics::topic_for(EVENT_BATCH_SCHEMA),
            },
            events: BTreeMap::new(),
            tracing,
            sent: SentCounts::default(),
        }
    }

    /// A sampled I/O just read: sent now (single), or kept for its disk's batch, which goes
    /// now if this event fills it.
    pub fn event(&mut self, event: EventRecord, sink: &mut dyn Sink) -> Result<()> {
        if self.mode == RecordMode::Single {
            send(sink, &self.topics.event, &event.key(), &event)?;
            self.sent.event_records += 1;
            self.count_events(std::slice::from_ref(&event));
            return Ok(());
        }
        if !self.events.contains_key(&event.disk) {
            self.events.insert(event.disk.clone(), Vec::new());
        }
        let events = self.events.get_mut(&event.disk).expect("inserted above");
        events.push(event);
        if events.len() >= *EVENTS_PER_BATCH {
            let full = std::mem::take(events);
            self.send_batch(&full[0].disk, &full, sink)?;
        }
        Ok(())
    }

    /// Closes an interval: `samples`, each disk's diskstats sample (none when it could not
    /// be read, or for the moments after the last sample), and `histograms`, the interval's
    /// (none without tracing). Batched, each sampled disk's interval, then the histograms
    /// of disks without a sample as io.hist.v1, then the events kept; single, the samples
    /// then the histograms.
    pub fn close_interval(
        &mut self,
        samples: &[DiskstatsRecord],
        histograms: Option<&IntervalHistograms>,
        sink: &mut dyn Sink,
    ) -> Result<()> {
        match self.mode {
            RecordMode::Batched => {
                let unsampled = self.send_intervals(samples, histograms, sink)?;
                if let Some(histograms) = histograms {
                    for disk in unsampled {
                        self.send_hists(disk, histograms, sink)?;
                    }
                }
                self.send_event_batches(sink)?;
            }
            RecordMode::Single => {
                for sample in samples {
                    send(sink, &self.topics.diskstats, &sample.key(), sample)?;
                    self.sent.diskstats_records += 1;
                }
                for disk in histograms.iter().flat_map(|h| &h.disks) {
                    self.send_hists(disk, histograms.expect("iterated"), sink)?;
                }
            }
        }
        sink.flush()
    }

    /// One io.interval.v1 per sample; returns the disks whose histograms found no sample.
    fn send_intervals<'h>(
        &mut self,
        samples: &[DiskstatsRecord],
        histograms: Option<&'h IntervalHistograms>,
        sink: &mut dyn Sink,
    ) -> Result<Vec<&'h DiskHistograms>> {
        let mut unsampled: BTreeMap<DiskId, &DiskHistograms> =
            histograms.iter().flat_map(|h| &h.disks).map(|disk| (disk.disk, disk)).collect();
        for sample in samples {
            let disk = DiskId { major: sample.counters.major, minor: sample.counters.minor };
            let hists = unsampled.remove(&disk).map_or(&[][..], |disk| disk.hists.as_slice());
            // Without tracing there are no histograms: the interval spans its sample's instant.
            let (start_ns, end_ns) = histograms.map_or((sample.ts_ns, sample.ts_ns), |h| (h.start_ns, h.end_ns));
            let record = IntervalRecord::new(sample, start_ns, end_ns, hists);
            send(sink, &self.topics.interval, &record.key(), &record)?;
            self.sent.interval_records += 1;
            self.sent.interval_hists += hists.len() as u64;
        }
        Ok(unsampled.into_values().collect())
    }

    fn send_hists(&mut self, disk: &DiskHistograms, interval: &IntervalHistograms, sink: &mut dyn Sink) -> Result<()> {
        for hist in &disk.hists {
            let record = HistRecord::new(&self.host, &disk.name, interval.start_ns, interval.end_ns, hist);
            send(sink, &self.topics.hist, &record.key(), &record)?;
            self.sent.hist_records += 1;
        }
        Ok(())
    }

    /// Every disk's events kept, in batches of at most EVENTS_PER_BATCH.
    fn send_event_batches(&mut self, sink: &mut dyn Sink) -> Result<()> {
        for (disk, events) in std::mem::take(&mut self.events) {
            for batch in events.chunks(*EVENTS_PER_BATCH) {
                self.send_batch(&disk, batch, sink)?;
            }
        }
        Ok(())
    }

    fn send_batch(&mut self, disk: &str, events: &[EventRecord], sink: &mut dyn Sink) -> Result<()> {
        let record = EventBatchRecord { host: &self.host, disk, events };
        send(sink, &self.topics.eventbatch, &record.key(), &record)?;
        self.sent.eventbatch_records += 1;
        self.count_events(events);
        Ok(())
    }

    fn count_events(&mut self, events: &[EventRecord]) {
        for event in events {
            let reason = match event.sample_reason {
                SampleReason::Outlier => 0,
                SampleReason::Uniform => 1,
                SampleReason::Recorder => 2,
                // Convert's reason: never the tracer's.
                SampleReason::All => continue,
            };
            self.sent.events_by_reason[reason] += 1;
        }
    }

    /// What was sent, as the agent's counters: each record kind's records, and what they
    /// carry where that is not one each.
    pub fn counters(&self) -> Vec<Counter> {
        let s = &self.sent;
        let mut counters = vec![
            Counter::new("diskstats_records", s.diskstats_records, "io.diskstats.v1 records sent (--records single)"),
            Counter::new("interval_records", s.interval_records, "io.interval.v1 records sent: each one disk's diskstats sample with its histograms of one interval (--records batched)"),
        ];
        if !self.tracing {
            return counters;
        }
        let [outlier, uniform, recorder] = s.events_by_reason;
        counters.extend([
            Counter::new("hist_records", s.hist_records, "io.hist.v1 records sent: every histogram with --records single; batched, those of a disk without a diskstats sample in their interval"),
            Counter::new("interval_hists", s.interval_hists, "histograms sent inside io.interval.v1 records"),
            Counter::new("event_records", s.event_records, "io.event.v1 records sent, one event each (--records single)"),
            Counter::new("eventbatch_records", s.eventbatch_records, "io.eventbatch.v1 records sent, each a disk's events of one interval (--records batched)"),
            Counter::new("events_sent_outlier", outlier, "outlier events sent, alone or in batches"),
            Counter::new("events_sent_uniform", uniform, "uniformly sampled events sent, alone or in batches"),
            Counter::new("events_sent_recorder", recorder, "flight-recorder events sent, alone or in batches"),
        ]);
        counters
    }
}

/// Serializes `record` once, into the payload the sink sends (and signs).
fn send(sink: &mut dyn Sink, topic: &str, key: &str, record: &impl Serialize) -> Result<()> {
    sink.send(topic, key, &serde_json::to_string(record)?)
}

#[cfg(test)]
mod tests;
