//! Block I/O tracing in the kernel (src/bpf/iotrace.bpf.c): loading and attaching, the
//! cumulative per-CPU histograms turned into exact per-interval differences, sampled
//! events drained from the ring buffer, and per-disk sampling settings written back.

mod skel {
    #![allow(clippy::all, non_camel_case_types, non_snake_case, dead_code, unused_imports)]
    include!(concat!(env!("OUT_DIR"), "/iotrace.skel.rs"));
}

use anyhow::{anyhow, Context, Result};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, MapMut, PrintLevel, RingBuffer, RingBufferBuilder};
use skel::{types, IotraceSkel, IotraceSkelBuilder};
use std::cell::RefCell;
use std::collections::HashMap;
use std::mem::{size_of, MaybeUninit};
use std::rc::Rc;
use std::sync::Mutex;
use std::time::Duration;

/// libbpf's own messages while loading, kept to explain a failure after our hint: its
/// first guess on EPERM (RLIMIT_MEMLOCK) misleads when a capability is what is missing.
static LIBBPF_MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn keep_libbpf_message(_level: PrintLevel, message: String) {
    if let Ok(mut messages) = LIBBPF_MESSAGES.lock() {
        messages.push(message.trim_end().to_string());
    }
}

pub const MAX_SLOTS: usize = 27;
pub const OPS: usize = 4;
pub const LATENCY_KINDS: usize = 3;
const _: () = assert!(size_of::<types::hist>() == (MAX_SLOTS + 2) * 8, "iotrace.h and MAX_SLOTS disagree");

/// How the programs are attached: BTF-typed tracepoints where the kernel has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attachment {
    TpBtf,
    RawTp,
}

/// What the kernel samples into events; set once, before loading.
#[derive(Debug, Clone, Copy)]
pub struct SamplingConfig {
    /// Total latency above which every I/O is an outlier, whatever the disk's history.
    pub ceiling_ns: u64,
    /// 1/N of the I/Os that are not otherwise sampled; 0 turns uniform sampling off.
    pub uniform_every: u32,
    /// Events per disk per second, outliers included; past it they are dropped and counted.
    pub budget_per_second: u64,
    /// How long a flight recording of every I/O of a disk lasts.
    pub recorder_ns: u64,
    /// Outliers of one disk within one second that start a flight recording.
    pub cluster_outliers: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DiskId {
    pub major: u32,
    pub minor: u32,
}

/// The I/Os of one disk, op and latency kind completed in one interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntervalHist {
    pub disk: DiskId,
    /// 0 read, 1 write, 2 discard, 3 flush (enum io_op).
    pub op: usize,
    /// 0 device, 1 queue, 2 total (enum latency_kind).
    pub kind: usize,
    pub buckets: Vec<u64>,
    pub count: u64,
    pub sum_us: u64,
    pub max_us: u64,
    pub errors: u64,
}

/// One sampled I/O as the kernel wrote it; times are CLOCK_MONOTONIC ns.
#[derive(Debug, Clone)]
pub struct RawEvent {
    pub disk: DiskId,
    pub op: usize,
    pub reason: u8,
    pub weight: u32,
    pub sector: u64,
    pub bytes: u32,
    pub issue_ns: u64,
    pub complete_ns: u64,
    pub queue_ns: u64,
    pub inflight: u32,
    /// blk_status_t.
    pub status: u32,
    pub pid: u32,
    pub comm: String,
}

/// Per-disk settings the agent derives: thresholds per op, and a flight recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DiskSettings {
    pub outlier_ns: [u64; OPS],
    pub recorder_until_ns: u64,
    /// Outliers in one second that start a flight recording; 0: the configured default.
    pub cluster_outliers: u64,
}

#[derive(Clone, Default)]
struct Totals {
    slots: [[[u64; MAX_SLOTS]; LATENCY_KINDS]; OPS],
    count: [[u64; LATENCY_KINDS]; OPS],
    sum_us: [[u64; LATENCY_KINDS]; OPS],
    errors: [u64; OPS],
}

/// The BPF side's counters in the order of enum bpf_counter, with what each counts.
pub const KERNEL_COUNTERS: [(&str, &str); 12] = [
    ("ios_untracked", "completions of requests dispatched before the agent attached, without a kernel dispatch time"),
    ("partial_completions", "partial completions (the request went on)"),
    ("disk_map_full", "I/Os of disks beyond the agent's disk table: not counted"),
    ("tag_collisions", "dispatches whose tag slot was taken: no in-flight depth or task for them"),
    ("ios_other_ops", "zone, write-zeroes and driver requests: not read, write, discard or flush"),
    ("io_errors", "completions carrying an error"),
    ("outliers", "completions over their disk's outlier threshold or the ceiling"),
    ("events_sampled", "events written to the ring buffer"),
    ("events_dropped_budget", "sampled events over their disk's per-second budget"),
    ("outliers_dropped", "outlier events dropped, by the budget or a full ring buffer"),
    ("events_dropped_ringbuf", "sampled events refused by the full ring buffer"),
    ("recorder_starts_cluster", "flight recordings started by a cluster of outliers"),
];

/// The maps the agent reads and writes, borrowed from a skeleton that lives as long as
/// the agent (the programs stay attached until it exits).
struct Maps {
    hists: &'static MapMut<'static>,
    disk_configs: &'static MapMut<'static>,
    counters: &'static MapMut<'static>,
    bss: &'static mut types::bss,
}

pub struct IoTrace {
    maps: Maps,
    ring: RingBuffer<'static>,
    drained: Rc<RefCell<Vec<RawEvent>>>,
    pub attachment: Attachment,
    previous: HashMap<DiskId, Totals>,
    settings: HashMap<DiskId, DiskSettings>,
}

impl IoTrace {
    /// Loads and attaches, preferring tp_btf and falling back to raw_tp (or only raw_tp
    /// when asked: `only_raw_tp` exercises the fallback on kernels that have both).
    pub fn attach(sampling: &SamplingConfig, only_raw_tp: bool) -> Result<Self> {
        libbpf_rs::set_print(Some((PrintLevel::Info, keep_libbpf_message)));
        let attached = if only_raw_tp {
            Self::load(Attachment::RawTp, sampling)
        } else {
            match Self::load(Attachment::TpBtf, sampling) {
                Ok(loaded) => Ok(loaded),
                Err(btf_error) => Self::load(Attachment::RawTp, sampling).map_err(|raw_error| explain(btf_error, raw_error)),
            }
        };
        libbpf_rs::set_print(None);
        let messages = std::mem::take(&mut *LIBBPF_MESSAGES.lock().unwrap_or_else(|e| e.into_inner()));
        let (skel, attachment) = attached.map_err(|e| anyhow!("{e:#}\n  libbpf said:\n    {}", messages.join("\n    ")))?;
        Self::from_skel(skel, attachment)
    }

    fn load(attachment: Attachment, sampling: &SamplingConfig) -> Result<(IotraceSkel<'static>, Attachment)> {
        // The skeleton borrows its object for as long as the programs stay attached:
        // the whole life of the agent.
        let storage = Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = IotraceSkelBuilder::default().open(storage)?;
        let rodata = open.maps.rodata_data.as_deref_mut().ok_or_else(|| anyhow!("the BPF object has no .rodata"))?;
        rodata.ceiling_ns = sampling.ceiling_ns;
        rodata.uniform_every = sampling.uniform_every;
        rodata.budget_per_second = sampling.budget_per_second;
        rodata.recorder_ns = sampling.recorder_ns;
        rodata.cluster_outliers = sampling.cluster_outliers;
        let btf = attachment == Attachment::TpBtf;
        for (program, wanted) in [
            (&mut open.progs.btf_issue, btf),
            (&mut open.progs.btf_requeue, btf),
            (&mut open.progs.btf_complete, btf),
            (&mut open.progs.raw_issue, !btf),
            (&mut open.progs.raw_requeue, !btf),
            (&mut open.progs.raw_complete, !btf),
        ] {
            program.set_autoload(wanted);
        }
        let mut skel = open.load().with_context(|| format!("loading the BPF programs ({attachment:?})"))?;
        skel.attach().with_context(|| format!("attaching to the block tracepoints ({attachment:?})"))?;
        Ok((skel, attachment))
    }

    fn from_skel(skel: IotraceSkel<'static>, attachment: Attachment) -> Result<Self> {
        let skel: &'static mut IotraceSkel<'static> = Box::leak(Box::new(skel));
        let maps = &mut skel.maps;
        let drained = Rc::new(RefCell::new(Vec::new()));
        let sink = drained.clone();
        let mut builder = RingBufferBuilder::new();
        builder.add(&maps.events, move |bytes: &[u8]| {
            // A malformed record cannot come from our own program; skip rather than stop.
            if let Ok(raw) = read_struct::<types::event>(bytes) {
                sink.borrow_mut().push(RawEvent::from(&raw));
            }
            0
        })?;
        let ring = builder.build().context("opening the events ring buffer")?;
        let bss = maps.bss_data.as_deref_mut().ok_or_else(|| anyhow!("the BPF object has no .bss"))?;
        let maps = Maps { hists: &maps.hists, disk_configs: &maps.disk_configs, counters: &maps.counters, bss };
        Ok(IoTrace { maps, ring, drained, attachment, previous: HashMap::new(), settings: HashMap::new() })
    }

    /// Waits up to `timeout` for sampled events and returns what the kernel wrote.
    pub fn poll_events(&mut self, timeout: Duration) -> Result<Vec<RawEvent>> {
        match self.ring.poll(timeout) {
            // A signal (SIGTERM: stop) interrupted the wait; the caller decides.
            Err(err) if err.kind() == libbpf_rs::ErrorKind::Interrupted => {}
            other => other.context("polling the events ring buffer")?,
        }
        Ok(std::mem::take(&mut *self.drained.borrow_mut()))
    }

    /// What completed since the previous call, per disk, op and latency kind.
    pub fn read_interval(&mut self) -> Result<Vec<IntervalHist>> {
        // Completions from now on record their maxima under the next interval.
        let interval = self.maps.bss.interval;
        self.maps.bss.interval = interval + 1;
        let mut out = Vec::new();
        let keys: Vec<Vec<u8>> = self.maps.hists.keys().collect();
        for key_bytes in keys {
            let key: types::disk_key = read_struct(&key_bytes)?;
            let disk = DiskId { major: key.major, minor: key.minor };
            let Some(per_cpu) = self.maps.hists.lookup_percpu(&key_bytes, MapFlags::ANY)? else { continue };
            let cpus = per_cpu.iter().map(|bytes| read_struct::<types::disk_hists>(bytes)).collect::<Result<Vec<_>>>()?;
            let totals = sum_cpus(&cpus);
            let previous = self.previous.insert(disk, totals.clone()).unwrap_or_default();
            out.extend(differences(disk, &totals, &previous, &cpus, interval));
        }
        out.sort_by_key(|h| (h.disk, h.op, h.kind));
        Ok(out)
    }

    /// Writes a disk's thresholds and flight recording where the kernel reads them.
    pub fn configure(&mut self, disk: DiskId, settings: DiskSettings) -> Result<()> {
        if self.settings.get(&disk) == Some(&settings) {
            return Ok(());
        }
        let key = types::disk_key { major: disk.major, minor: disk.minor };
        let value = types::disk_config {
            outlier_ns: settings.outlier_ns,
            recorder_until_ns: settings.recorder_until_ns,
            cluster_outliers: settings.cluster_outliers,
        };
        self.maps.disk_configs.update(as_bytes(&key), as_bytes(&value), MapFlags::ANY).context("writing a disk's sampling settings")?;
        self.settings.insert(disk, settings);
        self.publish_fast_path();
        Ok(())
    }

    /// Lets completions skip the settings lookup when no disk's settings could apply.
    fn publish_fast_path(&mut self) {
        let thresholds = self.settings.values().flat_map(|s| s.outlier_ns).filter(|&ns| ns > 0);
        self.maps.bss.lowest_outlier_ns = thresholds.min().unwrap_or(0);
        self.maps.bss.any_recording_until_ns = self.settings.values().map(|s| s.recorder_until_ns).max().unwrap_or(0);
    }

    /// What `configure` last wrote for a disk.
    pub fn settings(&self, disk: DiskId) -> Option<DiskSettings> {
        self.settings.get(&disk).copied()
    }

    /// The BPF side's own counters (KERNEL_COUNTERS), summed over CPUs.
    pub fn counters(&self) -> Result<Vec<(&'static str, u64)>> {
        KERNEL_COUNTERS
            .iter()
            .enumerate()
            .map(|(index, (name, _))| {
                let key = u32::try_from(index).unwrap().to_ne_bytes();
                let per_cpu = self.maps.counters.lookup_percpu(&key, MapFlags::ANY)?.unwrap_or_default();
                Ok((*name, per_cpu.iter().map(|v| read_u64(v)).sum()))
            })
            .collect()
    }
}

impl From<&types::event> for RawEvent {
    fn from(e: &types::event) -> Self {
        let comm_bytes: Vec<u8> = e.comm.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
        RawEvent {
            disk: DiskId { major: e.major, minor: e.minor },
            op: usize::from(e.op),
            reason: e.reason,
            weight: e.weight,
            sector: e.sector,
            bytes: e.bytes,
            issue_ns: e.issue_ns,
            complete_ns: e.complete_ns,
            queue_ns: e.queue_ns,
            inflight: e.inflight,
            status: e.status,
            pid: e.pid,
            comm: String::from_utf8_lossy(&comm_bytes).into_owned(),
        }
    }
}

fn sum_cpus(cpus: &[types::disk_hists]) -> Totals {
    let mut totals = Totals::default();
    for cpu in cpus {
        for op in 0..OPS {
            for kind in 0..LATENCY_KINDS {
                let hist = &cpu.hist[op][kind];
                for (total, slot) in totals.slots[op][kind].iter_mut().zip(hist.slots.iter()) {
                    *total += slot;
                }
                totals.count[op][kind] += hist.count;
                totals.sum_us[op][kind] += hist.sum_us;
            }
            totals.errors[op] += cpu.errors[op];
        }
    }
    totals
}

fn differences(disk: DiskId, now: &Totals, before: &Totals, cpus: &[types::disk_hists], interval: u64) -> Vec<IntervalHist> {
    let mut out = Vec::new();
    for op in 0..OPS {
        for kind in 0..LATENCY_KINDS {
            let count = now.count[op][kind] - before.count[op][kind];
            if count == 0 {
                continue;
            }
            let mut buckets: Vec<u64> =
                now.slots[op][kind].iter().zip(before.slots[op][kind].iter()).map(|(n, b)| n - b).collect();
            while buckets.last() == Some(&0) {
                buckets.pop();
            }
            let max_us = cpus
                .iter()
                .filter(|cpu| cpu.max_interval[op][kind] == interval)
                .map(|cpu| cpu.max_us[op][kind])
                .max()
                .unwrap_or(0);
            out.push(IntervalHist {
                disk,
                op,
                kind,
                buckets,
                count,
                sum_us: now.sum_us[op][kind] - before.sum_us[op][kind],
                max_us,
                errors: now.errors[op] - before.errors[op],
            });
        }
    }
    out
}

fn explain(btf_error: anyhow::Error, raw_error: anyhow::Error) -> anyhow::Error {
    let permission = [&btf_error, &raw_error]
        .iter()
        .any(|e| e.chain().any(|cause| cause.to_string().contains("Operation not permitted") || cause.to_string().contains("EPERM")));
    let hint = if permission {
        "the agent needs CAP_BPF and CAP_PERFMON to load and attach BPF programs (or run as root)"
    } else {
        "the kernel needs BPF, BTF (/sys/kernel/btf/vmlinux), BPF ring buffers (Linux 5.8) and the block_rq_* tracepoints"
    };
    anyhow!("{hint}; pass --no-trace to sample /proc/diskstats only.\n  tp_btf: {btf_error:#}\n  raw_tp: {raw_error:#}")
}

/// Map keys and values are plain C structs (repr(C), Copy, no pointers).
fn read_struct<T: Copy>(bytes: &[u8]) -> Result<T> {
    if bytes.len() < size_of::<T>() {
        return Err(anyhow!("BPF map value of {} bytes, expected {}", bytes.len(), size_of::<T>()));
    }
    // SAFETY: length checked; T is a plain-old-data struct generated from the BPF BTF.
    Ok(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
}

fn as_bytes<T: Copy>(value: &T) -> &[u8] {
    // SAFETY: T is a plain-old-data struct generated from the BPF BTF, without padding
    // the kernel would read uninitialised (disk_key and disk_config are all u32/u64).
    unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) }
}

fn read_u64(bytes: &[u8]) -> u64 {
    bytes.get(..8).map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap()))
}

/// The -errno the kernel reports for a blk_status_t (block/blk-core.c blk_errors[]).
pub fn status_errno(status: u32) -> i32 {
    const EOPNOTSUPP: i32 = 95;
    match status {
        0 => 0,
        1 => -EOPNOTSUPP,
        2 => -110, // ETIMEDOUT
        3 => -28,  // ENOSPC
        4 => -67,  // ENOLINK
        5 => -121, // EREMOTEIO
        6 => -52,  // EBADE
        7 => -61,  // ENODATA
        8 => -84,  // EILSEQ
        9 => -12,  // ENOMEM
        11 => -78, // EREMCHG
        12 => -11, // EAGAIN
        13 => -16, // EBUSY
        14 => -109, // ETOOMANYREFS
        15 => -75, // EOVERFLOW
        16 => -19, // ENODEV
        17 => -62, // ETIME
        19 => -22, // EINVAL
        _ => -5,   // EIO: BLK_STS_IOERR (10) and anything newer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_and_timeouts_become_negative_errno() {
        assert_eq!(status_errno(0), 0);
        assert_eq!(status_errno(10), -5);
        assert_eq!(status_errno(2), -110);
        assert_eq!(status_errno(250), -5);
    }
}
