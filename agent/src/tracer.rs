//! Block I/O tracing: the kernel's histograms of each interval, by disk; its sampled
//! events as io.event.v1; and each disk's sampling settings kept up to date from its own
//! recent distribution. Which records carry them is batching.rs's business.

use crate::iotrace::{disk_table_size, status_errno, Attachment, DiskId, FlushSequences, IntervalHist, IoTrace, RawEvent, SamplingConfig, OPS};
use crate::iotrace::types;
use crate::recent::RecentLatency;
use crate::reconcile::Reconciler;
use crate::restart::{DiskPosition, Resumed};
use crate::sampler::{DiskSelection, Sample, SampledDisk};
use crate::telemetry::Counter;
use crate::record::{kernel_comm, EventRecord, Histogram, Op, SampleReason, TimedFrom, EVENT_SCHEMA};
use crate::{sampler, sysfs};
use anyhow::Result;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

const LATENCY_KINDS: [&str; 3] = ["device", "queue", "total"];
const DEVICE: usize = types::latency_kind::LATENCY_DEVICE.0 as usize;
/// Flushes are left out of the reconciliation: diskstats counts them apart, by other rules.
const FLUSH: usize = types::io_op::IO_FLUSH.0 as usize;
const OP_NAMES: [Op; OPS] = [Op::R, Op::W, Op::D, Op::F];
/// In the order of enum sample_reason.
const REASONS: [SampleReason; 3] = [SampleReason::Outlier, SampleReason::Uniform, SampleReason::Recorder];
// The tables follow enums of iotrace.h, whose values reach here through the skeleton's
// types: a table of another length does not compile (the tests check names and order).
const _: () = assert!(LATENCY_KINDS.len() == types::latency_kind::LATENCY_KINDS.0 as usize);
const _: () = assert!(OP_NAMES.len() == types::io_op::IO_FLUSH.0 as usize + 1);
const _: () = assert!(REASONS.len() == types::sample_reason::SAMPLE_RECORDER.0 as usize + 1);

/// Every histogram of one interval of the disks reported, by disk.
#[derive(Debug)]
pub struct IntervalHistograms {
    /// The interval's span: the previous read of the histograms (or the programs'
    /// attachment) to this one.
    pub start_ns: u64,
    pub end_ns: u64,
    /// In disk order; a disk without I/O in the interval has none.
    pub disks: Vec<DiskHistograms>,
}

/// One disk's histograms of an interval: at most one per op and latency kind, in that order.
#[derive(Debug)]
pub struct DiskHistograms {
    pub disk: DiskId,
    /// As sysfs names the device (its name in /proc/diskstats), or its numbers.
    pub name: String,
    pub hists: Vec<Histogram>,
}

pub struct Tracer {
    trace: IoTrace,
    host: String,
    sys_root: PathBuf,
    disk_names: HashMap<DiskId, String>,
    interval_start_ns: u64,
    sampling: SamplingConfig,
    outlier_quantile: f64,
    recent: HashMap<(DiskId, usize), RecentLatency>,
    /// Reads, writes and discards in each disk's histograms since the agent attached.
    traced: HashMap<DiskId, u64>,
    /// Each disk's writes in flush sequences since the agent attached: the kernel counts
    /// them when their sequence ends, the histograms when their data completes.
    flush_sequences: HashMap<DiskId, FlushSequences>,
    reconciler: Reconciler,
    /// Each disk's name in /proc/diskstats, which a restarted agent checks it by.
    diskstats_names: HashMap<DiskId, String>,
    /// Leave the dispatching task's name and pid out of events.
    without_tasks: bool,
    /// The disks reported (--disk): the programs see every disk's I/O, the others' are
    /// left out here.
    selection: DiskSelection,
    pub stats: TracerStats,
}

#[derive(Debug, Default, Clone)]
pub struct TracerStats {
    pub ios_completed: u64,
    /// Writes whose flush sequence ended (see FlushSequences).
    pub flush_sequence_ends: u64,
    /// Events of disks not selected, left out.
    pub events_unselected: u64,
    /// Flight recordings the agent started because a disk's latency shape shifted.
    pub shape_shifts: u64,
}

impl Tracer {
    /// `before_tracing`: a reading of /proc/diskstats taken before the programs attach,
    /// what each disk's missing completions are counted from (reconcile.rs), unless it is
    /// `resumed` from where a previous agent's delivered records left it (restart.rs).
    pub fn attach(
        host: &str,
        sys_root: &Path,
        sampling: SamplingConfig,
        outlier_quantile: f64,
        only_raw_tp: bool,
        before_tracing: &Sample,
        resumed: &[Resumed],
    ) -> Result<Self> {
        let disk_table = disk_table_size(sampling.max_disks, sysfs::request_queues(sys_root));
        let trace = IoTrace::attach(&sampling, disk_table, only_raw_tp)?;
        eprintln!("iopipe-agent: tracing block I/O ({:?}, request queues numbered below {disk_table})", trace.attachment);
        let mut reconciler = Reconciler::starting_from(before_tracing.disks.iter().map(|d| (disk_id(d), completions(d))));
        for disk in resumed {
            reconciler.resume(disk.disk, disk.accounted, disk.kernel);
        }
        Ok(Tracer {
            trace,
            host: host.to_string(),
            sys_root: sys_root.to_path_buf(),
            disk_names: HashMap::new(),
            interval_start_ns: sampler::wall_clock_ns(),
            sampling,
            outlier_quantile,
            recent: HashMap::new(),
            traced: HashMap::new(),
            flush_sequences: HashMap::new(),
            reconciler,
            diskstats_names: before_tracing.disks.iter().map(|d| (disk_id(d), d.counters.name.clone())).collect(),
            without_tasks: false,
            selection: DiskSelection::default(),
            stats: TracerStats::default(),
        })
    }

    /// Events leave out the name and pid of the task that dispatched the I/O (--no-comm).
    pub fn without_tasks(mut self) -> Self {
        self.without_tasks = true;
        self
    }

    /// Histograms and events of the disks `selection` names only (--disk).
    pub fn only(mut self, selection: DiskSelection) -> Self {
        self.selection = selection;
        self
    }

    fn selects(&mut self, disk: DiskId) -> bool {
        let name = self.disk_name(disk);
        self.selection.selects(&name)
    }

    /// Waits up to `timeout` for sampled events and returns those of the disks reported.
    pub fn poll(&mut self, timeout: Duration) -> Result<Vec<EventRecord>> {
        let events = self.trace.poll_events(timeout)?;
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let wall_minus_monotonic = wall_minus_monotonic_ns();
        let mut records = Vec::with_capacity(events.len());
        for raw in &events {
            if self.selects(raw.disk) {
                records.push(self.event_record(raw, wall_minus_monotonic));
            } else {
                self.stats.events_unselected += 1;
            }
        }
        Ok(records)
    }

    /// The histograms of the interval that ends now, which from here on count as sent
    /// (the caller sends them before it takes a position: restart.rs); updates each disk's
    /// sampling settings.
    pub fn read_interval(&mut self) -> Result<IntervalHistograms> {
        let (mut hists, mut flush_sequences) = self.trace.read_interval()?;
        hists.retain(|hist| self.selects(hist.disk));
        flush_sequences.retain(|disk, _| self.selects(*disk));
        let start_ns = self.interval_start_ns;
        let end_ns = sampler::wall_clock_ns();
        self.interval_start_ns = end_ns;
        self.stats.ios_completed += hists.iter().filter(|h| h.kind == DEVICE).map(|h| h.count).sum::<u64>();
        for hist in hists.iter().filter(|h| h.kind == DEVICE && h.op != FLUSH) {
            *self.traced.entry(hist.disk).or_default() += hist.count;
        }
        for (disk, interval) in flush_sequences {
            let total = self.flush_sequences.entry(disk).or_default();
            total.data += interval.data;
            total.ends += interval.ends;
            self.stats.flush_sequence_ends += interval.ends;
        }
        self.update_settings(&hists, end_ns.saturating_sub(start_ns) as f64 / 1e9)?;
        Ok(IntervalHistograms { start_ns, end_ns, disks: self.by_disk(hists) })
    }

    /// Histograms sorted by disk, op and kind, as each disk's.
    fn by_disk(&mut self, hists: Vec<IntervalHist>) -> Vec<DiskHistograms> {
        let mut disks: Vec<DiskHistograms> = Vec::new();
        for hist in hists {
            if disks.last().is_none_or(|last| last.disk != hist.disk) {
                let name = self.disk_name(hist.disk);
                disks.push(DiskHistograms { disk: hist.disk, name, hists: Vec::new() });
            }
            let histogram = Histogram {
                op: OP_NAMES[hist.op],
                latency: LATENCY_KINDS[hist.kind],
                buckets_log2_us: hist.buckets,
                count: hist.count,
                sum_us: hist.sum_us,
                max_us: hist.max_us,
                errors: hist.errors,
            };
            disks.last_mut().expect("pushed above").hists.push(histogram);
        }
        disks
    }

    /// Outlier thresholds from each disk's recent device times; a flight recording when
    /// its shape shifts.
    fn update_settings(&mut self, hists: &[IntervalHist], seconds: f64) -> Result<()> {
        let now_ktime = monotonic_ns();
        let mut shifted: Vec<DiskId> = Vec::new();
        let mut ios: HashMap<DiskId, u64> = HashMap::new();
        for hist in hists.iter().filter(|h| h.kind == DEVICE) {
            if self.recent.entry((hist.disk, hist.op)).or_default().add_interval(&hist.buckets) {
                shifted.push(hist.disk);
            }
            *ios.entry(hist.disk).or_default() += hist.count;
        }
        let mut disks: Vec<DiskId> = self.recent.keys().map(|(disk, _)| *disk).collect();
        disks.sort();
        disks.dedup();
        for disk in disks {
            let mut settings = self.trace.settings(disk).unwrap_or_default();
            for op in 0..OPS {
                let recent = self.recent.get(&(disk, op));
                settings.outlier_ns[op] = recent.and_then(|r| r.outlier_threshold_ns(self.outlier_quantile)).unwrap_or(0);
            }
            // A busy disk has outliers every second by definition of a quantile: a cluster
            // is ten times what its rate makes expected.
            let rate = ios.get(&disk).copied().unwrap_or(0) as f64 / seconds.max(1e-3);
            let expected = (1.0 - self.outlier_quantile) * rate;
            settings.cluster_outliers = self.sampling.cluster_outliers.max((10.0 * expected).ceil() as u64);
            if shifted.contains(&disk) {
                settings.recorder_until_ns = now_ktime + self.sampling.recorder_ns;
                self.stats.shape_shifts += 1;
            }
            self.trace.configure(disk, settings)?;
        }
        Ok(())
    }

    fn event_record(&mut self, raw: &RawEvent, wall_minus_monotonic: i128) -> EventRecord {
        let to_wall = |ns: u64| u64::try_from((i128::from(ns) + wall_minus_monotonic).max(0)).unwrap_or(u64::MAX);
        EventRecord {
            schema: EVENT_SCHEMA,
            host: self.host.clone(),
            disk: self.disk_name(raw.disk),
            op: OP_NAMES[raw.op.min(OPS - 1)],
            bytes: u64::from(raw.bytes),
            // Flushes carry sector 2^64-1 in the kernel.
            sector: if raw.sector == u64::MAX { 0 } else { raw.sector },
            issue_ns: to_wall(raw.issue_ns),
            complete_ns: to_wall(raw.complete_ns),
            queue_ns: raw.queue_ns,
            inflight: raw.inflight,
            error: status_errno(raw.status),
            comm: if self.without_tasks { String::new() } else { kernel_comm(&raw.comm) },
            pid: if self.without_tasks { 0 } else { raw.pid },
            sample_reason: REASONS.get(usize::from(raw.reason)).copied().unwrap_or(SampleReason::Outlier),
            sample_weight: f64::from(raw.weight.max(1)),
            timed_from: TimedFrom::Dispatch,
        }
    }

    /// Holds each disk's completions in `sample` (read before this interval's
    /// histograms) against those its histograms counted. Partitions are never in the
    /// histograms (their I/O is their disk's), so they are never reported.
    pub fn reconcile(&mut self, sample: &Sample) {
        let accounted = self.accounted_by_histograms();
        for disk in &sample.disks {
            let id = disk_id(disk);
            self.reconciler.observe(id, completions(disk), accounted.get(&id).copied().unwrap_or(0));
            if self.diskstats_names.get(&id) != Some(&disk.counters.name) {
                self.diskstats_names.insert(id, disk.counters.name.clone());
            }
        }
    }

    /// Each disk's completions diskstats counted that its histograms lack (see reconcile.rs).
    pub fn untraced_by_disk(&self) -> BTreeMap<String, u64> {
        self.by_name(self.reconciler.untraced())
    }

    /// Each disk's completions lost to the restart this agent resumed from (restart.rs).
    pub fn lost_restart_by_disk(&self) -> BTreeMap<String, u64> {
        self.by_name(self.reconciler.lost_to_restart())
    }

    /// Named as its histograms are, or as diskstats names it where it has none yet (a
    /// resumed disk still idle).
    fn by_name(&self, counts: impl Iterator<Item = (DiskId, u64)>) -> BTreeMap<String, u64> {
        counts
            .map(|(disk, n)| {
                let name = self.disk_names.get(&disk).or_else(|| self.diskstats_names.get(&disk));
                (name.cloned().unwrap_or_else(|| numbered(disk)), n)
            })
            .collect()
    }

    /// Where each traced disk's count stands as of the histograms sent so far and the
    /// missing last reported: what a restarted agent resumes from (restart.rs).
    pub fn positions(&self) -> Vec<DiskPosition> {
        self.reconciler
            .positions(&self.accounted_by_histograms())
            .into_iter()
            .filter_map(|(disk, kernel, accounted)| {
                Some(DiskPosition {
                    name: self.diskstats_names.get(&disk)?.clone(),
                    major: disk.major,
                    minor: disk.minor,
                    diskstats_completions: kernel,
                    accounted_completions: accounted,
                })
            })
            .collect()
    }

    /// Each disk's completions, as /proc/diskstats counts reads, writes and discards, that
    /// its histograms account for: a write in a flush sequence counts when the sequence
    /// ends (with or without data, which the histograms hold if it had any).
    fn accounted_by_histograms(&self) -> HashMap<DiskId, u64> {
        let mut accounted = self.traced.clone();
        for (disk, sequences) in &self.flush_sequences {
            let traced = accounted.entry(*disk).or_default();
            *traced = sequences.accounted(*traced);
        }
        accounted
    }

    /// A disk that vanished keeps its numbers as its name: its I/O is still reported.
    fn disk_name(&mut self, disk: DiskId) -> String {
        let sys_root = &self.sys_root;
        self.disk_names
            .entry(disk)
            .or_insert_with(|| {
                sysfs::device_name(sys_root, disk.major, disk.minor).unwrap_or_else(|| numbered(disk))
            })
            .clone()
    }

    /// How the programs are attached, as io.agent.v1 names it.
    pub fn attachment_name(&self) -> &'static str {
        match self.trace.attachment {
            Attachment::TpBtf => "tp_btf",
            Attachment::RawTp => "raw_tp",
        }
    }

    /// The agent side's tracing counters.
    pub fn counters(&self) -> Vec<Counter> {
        vec![
            Counter::new("ios_completed", self.stats.ios_completed, "block I/Os completed, counted in the kernel's histograms"),
            Counter::new("ios_untraced", self.reconciler.total(), "reads, writes and discards /proc/diskstats counted that the histograms lack since the agent started, or since the position it resumed from (a lower bound, exact when the disk is idle; per disk in io.agent.v1 untraced_by_disk)"),
            Counter::new("ios_lost_restart", self.reconciler.total_lost_to_restart(), "of ios_untraced, those completed after the position a previous agent's delivered records left (--state-file) and before this agent attached: lost to the restart (per disk in io.agent.v1 lost_restart_by_disk)"),
            Counter::new("events_unselected", self.stats.events_unselected, "events of disks --disk does not name, left out"),
            Counter::new("write_flush_sequences", self.stats.flush_sequence_ends, "writes that asked for a cache flush the disk takes as requests of its own: the kernel counts each once as its sequence ends; its data, if any, is in the write histograms, its flushes in the flush ones"),
            Counter::new("recorder_starts_shape", self.stats.shape_shifts, "flight recordings started because a disk's latency shape shifted"),
        ]
    }

    /// The kernel's counters by name, summed over CPUs.
    pub fn kernel_counters(&self) -> Result<Vec<(&'static str, u64, &'static str)>> {
        self.trace.counters()
    }
}

/// A disk's numbers as its name, where sysfs no longer knows it.
fn numbered(disk: DiskId) -> String {
    format!("{}:{}", disk.major, disk.minor)
}

fn clock_ns(clock: libc::clockid_t) -> i128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec; both clocks always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

/// bpf_ktime_get_ns() is CLOCK_MONOTONIC.
fn monotonic_ns() -> u64 {
    u64::try_from(clock_ns(libc::CLOCK_MONOTONIC)).unwrap_or(0)
}

fn wall_minus_monotonic_ns() -> i128 {
    clock_ns(libc::CLOCK_REALTIME) - clock_ns(libc::CLOCK_MONOTONIC)
}

fn disk_id(disk: &SampledDisk) -> DiskId {
    DiskId { major: disk.counters.major, minor: disk.counters.minor }
}

/// The completions the reconciliation counts: reads, writes and discards (flushes are
/// counted by other rules). Saturating: /proc/diskstats (or a --proc-root file) may hold any u64.
pub fn completions(disk: &SampledDisk) -> u64 {
    let c = &disk.counters;
    c.reads_completed.saturating_add(c.writes_completed).saturating_add(c.discards.map_or(0, |d| d.completed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{self, c_enum};

    fn schema_name<T: serde::Serialize>(value: &T) -> String {
        serde_json::to_value(value).unwrap().as_str().unwrap().to_string()
    }

    /// Each constant of a C enum, at its value, is `prefix` and the name given at that index.
    fn named_in_order(prefix: &str, names: impl IntoIterator<Item = String>) -> Vec<(String, u64)> {
        names.into_iter().zip(0..).map(|(name, value)| (format!("{prefix}{}", name.to_uppercase()), value)).collect()
    }

    #[test]
    fn latency_kinds_are_the_schemas() {
        assert_eq!(LATENCY_KINDS.to_vec(), contract::allowed(contract::HIST, "latency"));
    }

    #[test]
    fn latency_kinds_are_enum_latency_kind_in_its_order() {
        let mut kinds = named_in_order("LATENCY_", LATENCY_KINDS.map(String::from));
        kinds.push(("LATENCY_KINDS".to_string(), LATENCY_KINDS.len() as u64));
        assert_eq!(kinds, c_enum("latency_kind"));
        assert_eq!(LATENCY_KINDS[DEVICE], "device");
    }

    #[test]
    fn ops_are_enum_io_op_in_its_order() {
        let mut ops = c_enum("io_op");
        assert_eq!(ops.pop(), Some(("OPS".to_string(), OP_NAMES.len() as u64)), "enum io_op counts its ops last");
        assert_eq!(ops.len(), OP_NAMES.len());
        for (index, ((constant, value), op)) in ops.iter().zip(OP_NAMES).enumerate() {
            assert_eq!(*value, index as u64, "{constant}");
            assert_eq!(constant.strip_prefix("IO_").and_then(|name| name.get(..1)), Some(schema_name(&op).as_str()),
                       "{constant} is {op:?}: an op is named by its first letter");
        }
        assert_eq!(ops[FLUSH].0, "IO_FLUSH");
    }

    #[test]
    fn an_interval_has_room_for_every_histogram_a_disk_can_have() {
        for column in ["hist_op", "hist_latency", "hist_count"] {
            assert_eq!(contract::max_items(contract::INTERVAL, column), OP_NAMES.len() * LATENCY_KINDS.len(), "{column}");
        }
    }

    #[test]
    fn sample_reasons_are_enum_sample_reason_in_its_order() {
        assert_eq!(named_in_order("SAMPLE_", REASONS.iter().map(schema_name)), c_enum("sample_reason"));
    }
}
