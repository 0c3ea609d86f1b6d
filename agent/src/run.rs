//! `iopipe-agent run`: every interval, a diskstats sample, the kernel's histograms and the
//! agent's own counters; sampled events as they come, or with their interval's close when
//! batched (batching.rs).

use crate::batching::{DiskRecordSender, RecordMode};
use crate::output::Sink;
use crate::record::DiskstatsRecord;
use crate::restart::PositionKeeper;
use crate::sampler::{self, Sample, Sampler};
use crate::sysfs::{self, Identity};
use crate::telemetry::{self, AgentRecord, Counter, MetricsEndpoint, AGENT_SCHEMA};
use crate::topics;
use crate::tracer::Tracer;
use anyhow::{Context, Result};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct Run {
    pub host: String,
    pub labels: BTreeMap<String, String>,
    pub sampler: Sampler,
    pub tracer: Option<Tracer>,
    pub sink: Box<dyn Sink>,
    pub metrics: Option<MetricsEndpoint>,
    /// Where each disk's count stands as of the records delivered, with --state-file.
    pub positions: Option<PositionKeeper>,
    pub interval: Duration,
    /// Samples to take; 0: until SIGINT/SIGTERM.
    pub count: u64,
    /// Which records carry the disks' samples, histograms and events (--records).
    pub records: RecordMode,
}

impl Run {
    pub fn execute(mut self) -> Result<()> {
        let stop = Arc::new(AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(signal, stop.clone()).context("installing signal handlers")?;
        }
        let mut diskstats = DiskstatsRecords::new(self.host.clone(), self.labels.clone(), self.sampler.sys_root.clone());
        let mut sender = DiskRecordSender::new(self.records, &self.host, self.tracer.is_some());
        let mut report = SelfReport::new(&self.host, &self.labels, self.tracer.as_ref());
        let started = Instant::now();
        let mut taken = 0u64;
        while !stop.load(Ordering::Relaxed) && (self.count == 0 || taken < self.count) {
            self.close_interval(&mut diskstats, &mut sender)?;
            report.emit(&diskstats, &sender, self.tracer.as_ref(), self.positions.as_ref(), self.sink.as_mut(), self.metrics.as_ref())?;
            self.keep_position();
            taken += 1;
            if self.count != 0 && taken >= self.count {
                break;
            }
            let deadline = started + self.interval * u32::try_from(taken).unwrap_or(u32::MAX);
            let sink = self.sink.as_mut();
            let mut positions = self.positions.as_mut();
            match self.tracer.as_mut() {
                Some(tracer) => wait_until(deadline, &stop, |step| {
                    forward_events(tracer, step, &mut sender, sink)?;
                    // The brokers acknowledge an interval's records after it was sent.
                    if let Some(positions) = positions.as_mut() {
                        positions.settled(sink.records_settled());
                    }
                    Ok(())
                })?,
                None => wait_until(deadline, &stop, |step| {
                    std::thread::sleep(step);
                    Ok(())
                })?,
            }
        }
        if let Some(tracer) = self.tracer.as_mut() {
            forward_events(tracer, Duration::ZERO, &mut sender, self.sink.as_mut())?;
        }
        if stop.load(Ordering::Relaxed) {
            // The interval a stop cut short is sent as any other, its diskstats with its
            // histograms: a stream job windows histograms with the diskstats of their time.
            self.close_interval(&mut diskstats, &mut sender)?;
        } else if let Some(tracer) = self.tracer.as_mut() {
            // What completed since the last sample, which has no sample of its own.
            let histograms = tracer.read_interval()?;
            sender.close_interval(&[], Some(&histograms), self.sink.as_mut())?;
        }
        report.emit(&diskstats, &sender, self.tracer.as_ref(), self.positions.as_ref(), self.sink.as_mut(), self.metrics.as_ref())?;
        let closed = self.sink.close();
        self.keep_position();
        let counters = report.counters(&diskstats, &sender, self.tracer.as_ref(), self.positions.as_ref(), self.sink.as_ref());
        eprintln!("iopipe-agent: {taken} samples; {}", counters.iter().map(|c| format!("{} {}", c.name, c.value)).collect::<Vec<_>>().join(", "));
        closed
    }

    /// Samples the diskstats, reads the histograms of the interval that ends, and sends
    /// them (with the events kept, when batched).
    fn close_interval(&mut self, diskstats: &mut DiskstatsRecords, sender: &mut DiskRecordSender) -> Result<()> {
        let sample = match self.sampler.sample() {
            Ok(sample) => {
                diskstats.count_bad_lines(&sample);
                Some(sample)
            }
            Err(err) => {
                diskstats.read_errors += 1;
                eprintln!("iopipe-agent: reading {}: {err}", self.sampler.diskstats_path().display());
                None
            }
        };
        // After the sample: the histograms read later can only hold more (reconcile.rs).
        let histograms = self.tracer.as_mut().map(Tracer::read_interval).transpose()?;
        let samples = sample.as_ref().map(|sample| diskstats.records(sample)).unwrap_or_default();
        sender.close_interval(&samples, histograms.as_ref(), self.sink.as_mut())?;
        if let (Some(tracer), Some(sample)) = (self.tracer.as_mut(), &sample) {
            tracer.reconcile(sample);
        }
        Ok(())
    }

    /// Takes the position as of the records sent so far, and writes the newest one whose
    /// records the output has settled.
    fn keep_position(&mut self) {
        if let (Some(positions), Some(tracer)) = (self.positions.as_mut(), self.tracer.as_ref()) {
            positions.sent(self.sink.records_handed(), tracer.positions());
            positions.settled(self.sink.records_settled());
        }
    }
}

/// Hands the events the tracer reads within `timeout` to the sender.
fn forward_events(tracer: &mut Tracer, timeout: Duration, sender: &mut DiskRecordSender, sink: &mut dyn Sink) -> Result<()> {
    for event in tracer.poll(timeout)? {
        sender.event(event, sink)?;
    }
    Ok(())
}

/// Each sample's disks in the shape of io.diskstats.v1, with their identity and the host's
/// labels; malformed lines and failed reads counted.
struct DiskstatsRecords {
    host: String,
    labels: BTreeMap<String, String>,
    sys_root: PathBuf,
    identities: HashMap<String, (Identity, Instant)>,
    warned_unknown_rotational: HashSet<String>,
    reported_bad_lines: HashSet<String>,
    bad_lines: u64,
    read_errors: u64,
}

/// A disk's identity is read again this often: a swapped disk may keep its name.
const IDENTITY_TTL: Duration = Duration::from_secs(60);

impl DiskstatsRecords {
    fn new(host: String, labels: BTreeMap<String, String>, sys_root: PathBuf) -> Self {
        DiskstatsRecords {
            host,
            labels,
            sys_root,
            identities: HashMap::new(),
            warned_unknown_rotational: HashSet::new(),
            reported_bad_lines: HashSet::new(),
            bad_lines: 0,
            read_errors: 0,
        }
    }

    /// The records of `sample`'s disks, in its order.
    fn records<'a>(&'a mut self, sample: &'a Sample) -> Vec<DiskstatsRecord<'a>> {
        for disk in &sample.disks {
            self.refresh_identity(&disk.counters.name);
            if disk.rotational.is_none() && self.warned_unknown_rotational.insert(disk.counters.name.clone()) {
                eprintln!("iopipe-agent: sysfs has no queue/rotational for {}: reporting it as non-rotational", disk.counters.name);
            }
        }
        let this: &'a Self = self;
        sample
            .disks
            .iter()
            .map(|disk| {
                let rotational = disk.rotational.unwrap_or(false);
                let identity = &this.identities[&disk.counters.name].0;
                let mut record = DiskstatsRecord::new(&this.host, sample.ts_ns, rotational, &disk.counters);
                record.model = identity.model.as_deref();
                record.serial = identity.serial.as_deref();
                record.rpm = identity.rpm.filter(|_| rotational);
                record.labels = (!this.labels.is_empty()).then_some(&this.labels);
                record
            })
            .collect()
    }

    fn count_bad_lines(&mut self, sample: &Sample) {
        for bad in &sample.bad_lines {
            self.bad_lines += 1;
            // A malformed line usually stays malformed while its other counters move on:
            // say so once per device and problem, keep counting.
            let device = bad.line.split_whitespace().nth(2).unwrap_or_default();
            if self.reported_bad_lines.insert(format!("{device}: {}", bad.reason)) {
                eprintln!("iopipe-agent: skipped {bad} (reported once; counted every time)");
            }
        }
    }

    fn refresh_identity(&mut self, name: &str) {
        let stale = self.identities.get(name).is_none_or(|(_, read)| read.elapsed() > IDENTITY_TTL);
        if stale {
            self.identities.insert(name.to_string(), (sysfs::identity(&self.sys_root, name), Instant::now()));
        }
    }
}

/// The agent's own counters, every interval: an io.agent.v1 record and the metrics endpoint.
struct SelfReport {
    host: String,
    labels: BTreeMap<String, String>,
    topic: String,
    started_ns: u64,
    tracing: &'static str,
    records: u64,
}

impl SelfReport {
    fn new(host: &str, labels: &BTreeMap<String, String>, tracer: Option<&Tracer>) -> Self {
        SelfReport {
            host: host.to_string(),
            labels: labels.clone(),
            topic: topics::topic_for(AGENT_SCHEMA),
            started_ns: sampler::wall_clock_ns(),
            tracing: tracer.map_or("off", Tracer::attachment_name),
            records: 0,
        }
    }

    fn counters(
        &self,
        diskstats: &DiskstatsRecords,
        sender: &DiskRecordSender,
        tracer: Option<&Tracer>,
        positions: Option<&PositionKeeper>,
        sink: &dyn Sink,
    ) -> Vec<Counter> {
        let mut counters = sender.counters();
        counters.extend([
            Counter::new("diskstats_bad_lines", diskstats.bad_lines, "malformed /proc/diskstats lines skipped"),
            Counter::new("diskstats_read_errors", diskstats.read_errors, "samples lost because /proc/diskstats could not be read"),
            Counter::new("agent_records", self.records, "io.agent.v1 records sent"),
        ]);
        if let Some(tracer) = tracer {
            counters.extend(tracer.counters());
            match tracer.kernel_counters() {
                Ok(kernel) => counters.extend(kernel.iter().map(|(name, value, help)| Counter::new(name, *value, help))),
                Err(err) => eprintln!("iopipe-agent: reading the BPF counters: {err:#}"),
            }
        }
        if let Some(positions) = positions {
            counters.push(Counter::new("state_write_errors", positions.write_errors, "failed writes of the --state-file (a restart then counts from the last position written)"));
        }
        counters.extend(sink.counters());
        counters
    }

    fn emit(
        &mut self,
        diskstats: &DiskstatsRecords,
        sender: &DiskRecordSender,
        tracer: Option<&Tracer>,
        positions: Option<&PositionKeeper>,
        sink: &mut dyn Sink,
        metrics: Option<&MetricsEndpoint>,
    ) -> Result<()> {
        self.records += 1;
        let counters = self.counters(diskstats, sender, tracer, positions, sink);
        if let Some(metrics) = metrics {
            metrics.publish(telemetry::prometheus_text(&self.host, &counters));
        }
        let record = AgentRecord {
            schema: AGENT_SCHEMA,
            host: &self.host,
            ts_ns: sampler::wall_clock_ns(),
            started_ns: self.started_ns,
            version: env!("CARGO_PKG_VERSION"),
            tracing: self.tracing,
            labels: &self.labels,
            counters: counters.iter().map(|c| (c.name, c.value)).collect(),
            untraced_by_disk: tracer.map(Tracer::untraced_by_disk).unwrap_or_default(),
            lost_restart_by_disk: tracer.map(Tracer::lost_restart_by_disk).unwrap_or_default(),
        };
        sink.send(&self.topic, &self.host, &serde_json::to_string(&record)?)?;
        sink.flush()
    }
}

/// Waits until `deadline` in short steps, each spent in `wait` (sleeping, or sending
/// sampled events as they come), so a signal stops the agent promptly.
fn wait_until(deadline: Instant, stop: &AtomicBool, mut wait: impl FnMut(Duration) -> Result<()>) -> Result<()> {
    const STEP: Duration = Duration::from_millis(50);
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        wait((deadline - now).min(STEP))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lines::LineError;

    fn sample_with_bad_line(line: &str) -> Sample {
        let reason = "6 fields, expected at least 14 (major minor name and 11 counters)";
        Sample { ts_ns: 1, disks: Vec::new(), bad_lines: vec![LineError::new("diskstats", 8, reason, line)] }
    }

    #[test]
    fn a_bad_line_whose_counters_move_on_is_reported_once_and_counted_each_time() {
        let mut diskstats = DiskstatsRecords::new("h".into(), BTreeMap::new(), PathBuf::from("/nonexistent"));
        diskstats.count_bad_lines(&sample_with_bad_line("8 16 sdb 1 2 3"));
        diskstats.count_bad_lines(&sample_with_bad_line("8 16 sdb 9 9 9"));
        diskstats.count_bad_lines(&sample_with_bad_line("8 32 sdc 1 2 3"));
        assert_eq!(diskstats.bad_lines, 3);
        assert_eq!(diskstats.reported_bad_lines.len(), 2, "{:?}", diskstats.reported_bad_lines);
    }
}
