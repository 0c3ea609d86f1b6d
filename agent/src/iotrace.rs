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
pub(crate) use skel::types;
use skel::{IotraceSkel, IotraceSkelBuilder};
use std::cell::RefCell;
use std::collections::HashMap;
use std::mem::{size_of, MaybeUninit};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
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
// Sizes of iotrace.h's enums, from the skeleton's types (the kernel's BTF of the programs).
pub const OPS: usize = types::io_op::OPS.0 as usize;
pub const LATENCY_KINDS: usize = types::latency_kind::LATENCY_KINDS.0 as usize;
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
    /// Request queues the kernel's per-disk tables hold; 0: sized from the host.
    pub max_disks: u32,
    /// A disk with fewer completions than this in the last second has every I/O recorded; 0: off.
    pub quiet_ios: u64,
}

/// The kernel numbers request queues from 0 and reuses the lowest free number, so the
/// numbers in use stay below the most queues alive at once: room for twice today's,
/// at least 64, rounded up to a power of two. Each entry costs 32 KiB plus 3 KiB per CPU.
pub fn disk_table_size(requested: u32, request_queues_now: usize) -> u32 {
    if requested > 0 {
        return requested;
    }
    let wanted = u32::try_from(request_queues_now.saturating_mul(2)).unwrap_or(u32::MAX / 2);
    wanted.max(64).next_power_of_two()
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
    sum_us: [[u64; LATENCY_KINDS]; OPS],
    errors: [u64; OPS],
    flush_sequences: FlushSequences,
}

/// A disk's writes in flush sequences over an interval (struct disk_hists): the kernel
/// counts each such write once, when its sequence ends, whether or not it had data to
/// time; the histograms hold its data part, if any, when that completes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlushSequences {
    /// Data parts timed (or found untracked) as writes.
    pub data: u64,
    /// Sequences ended: one write each in /proc/diskstats.
    pub ends: u64,
}

impl FlushSequences {
    /// The kernel's completions accounted for by histograms holding `traced` reads,
    /// writes and discards: a write in a sequence counts at its end, not at its data.
    pub fn accounted(&self, traced: u64) -> u64 {
        (traced + self.ends).saturating_sub(self.data)
    }

    /// What came since `earlier`, a reading of the same counts.
    fn since(&self, earlier: &FlushSequences) -> FlushSequences {
        FlushSequences { data: self.data.saturating_sub(earlier.data), ends: self.ends.saturating_sub(earlier.ends) }
    }
}

/// The BPF side's counters in the order of enum bpf_counter: the constant the programs
/// count each at, the name the agent reports it by, and what it counts.
pub const KERNEL_COUNTERS: [(&str, &str, &str); 14] = [
    ("COUNTER_UNTRACKED", "ios_untracked", "completions with no dispatch time, the agent's or the kernel's (dispatched before it attached, or their tag slot taken): not in the histograms"),
    ("COUNTER_PARTIAL", "partial_completions", "partial completions (the request went on)"),
    ("COUNTER_DISK_MAP_FULL", "disk_map_full", "completions of request queues numbered beyond the agent's disk tables (--max-disks): not in the histograms"),
    ("COUNTER_TAG_COLLISIONS", "tag_collisions", "dispatches whose tag slot another request held: that request's completion has no in-flight depth or task"),
    ("COUNTER_OTHER_OPS", "ios_other_ops", "zone, write-zeroes and driver requests: not read, write, discard or flush"),
    ("COUNTER_ERRORS", "io_errors", "completions carrying an error"),
    ("COUNTER_OUTLIERS", "outliers", "completions over their disk's outlier threshold or the ceiling"),
    ("COUNTER_EVENTS", "events_sampled", "events written to the ring buffer"),
    ("COUNTER_DROPPED_BUDGET", "events_dropped_budget", "sampled events over their disk's per-second budget"),
    ("COUNTER_DROPPED_OUTLIERS", "outliers_dropped", "outlier events dropped, by the budget or a full ring buffer"),
    ("COUNTER_DROPPED_RINGBUF", "events_dropped_ringbuf", "sampled events refused by the full ring buffer"),
    ("COUNTER_RECORDER_STARTS", "recorder_starts_cluster", "flight recordings started by a cluster of outliers"),
    ("COUNTER_RETIRED", "hists_retired", "CPU copies of a disk's histograms retired: another disk took over its request queue"),
    ("COUNTER_RETIRED_LOST", "retired_lost", "of which found no room to retire: their counts are lost"),
];
const _: () = assert!(KERNEL_COUNTERS.len() == types::bpf_counter::COUNTERS.0 as usize, "enum bpf_counter has more or fewer");

/// The maps the agent reads and writes, borrowed from a skeleton that lives as long as
/// the agent (the programs stay attached until it exits).
struct Maps {
    hists: &'static MapMut<'static>,
    retired: &'static MapMut<'static>,
    disk_configs: &'static MapMut<'static>,
    counters: &'static MapMut<'static>,
    bss: &'static mut types::bss,
}

pub struct IoTrace {
    maps: Maps,
    ring: RingBuffer<'static>,
    drained: Rc<RefCell<Vec<RawEvent>>>,
    pub attachment: Attachment,
    programs: [BorrowedFd<'static>; 3],
    disk_table: u32,
    /// Counts of retired CPU copies, per disk, already drained from the kernel.
    retired: HashMap<DiskId, Totals>,
    previous: HashMap<DiskId, Totals>,
    settings: HashMap<DiskId, DiskSettings>,
}

impl IoTrace {
    /// Loads and attaches, preferring tp_btf and falling back to raw_tp (or only raw_tp
    /// when asked: `only_raw_tp` exercises the fallback on kernels that have both).
    /// `disk_table`: request queues the per-disk tables hold (see `disk_table_size`).
    pub fn attach(sampling: &SamplingConfig, disk_table: u32, only_raw_tp: bool) -> Result<Self> {
        libbpf_rs::set_print(Some((PrintLevel::Info, keep_libbpf_message)));
        let attached = if only_raw_tp {
            Self::load(Attachment::RawTp, sampling, disk_table)
        } else {
            match Self::load(Attachment::TpBtf, sampling, disk_table) {
                Ok(loaded) => Ok(loaded),
                Err(btf_error) => {
                    Self::load(Attachment::RawTp, sampling, disk_table).map_err(|raw_error| explain(btf_error, raw_error))
                }
            }
        };
        libbpf_rs::set_print(None);
        let messages = std::mem::take(&mut *LIBBPF_MESSAGES.lock().unwrap_or_else(|e| e.into_inner()));
        let (skel, attachment) = attached.map_err(|e| anyhow!("{e:#}\n  libbpf said:\n    {}", messages.join("\n    ")))?;
        Self::from_skel(skel, attachment, disk_table)
    }

    fn load(attachment: Attachment, sampling: &SamplingConfig, disk_table: u32) -> Result<(IotraceSkel<'static>, Attachment)> {
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
        rodata.quiet_ios = sampling.quiet_ios;
        open.maps.disks.set_max_entries(disk_table)?;
        open.maps.hists.set_max_entries(disk_table)?;
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

    fn from_skel(skel: IotraceSkel<'static>, attachment: Attachment, disk_table: u32) -> Result<Self> {
        let skel: &'static mut IotraceSkel<'static> = Box::leak(Box::new(skel));
        let progs = &skel.progs;
        let programs = match attachment {
            Attachment::TpBtf => [&progs.btf_issue, &progs.btf_requeue, &progs.btf_complete],
            Attachment::RawTp => [&progs.raw_issue, &progs.raw_requeue, &progs.raw_complete],
        }
        .map(|program| program.as_fd());
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
        let maps =
            Maps { hists: &maps.hists, retired: &maps.retired, disk_configs: &maps.disk_configs, counters: &maps.counters, bss };
        Ok(IoTrace {
            maps,
            ring,
            drained,
            attachment,
            programs,
            disk_table,
            retired: HashMap::new(),
            previous: HashMap::new(),
            settings: HashMap::new(),
        })
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

    /// What completed since the previous call, per disk, op and latency kind, and each
    /// disk's flush sequences.
    pub fn read_interval(&mut self) -> Result<(Vec<IntervalHist>, HashMap<DiskId, FlushSequences>)> {
        // Completions from now on record their maxima under the next interval.
        let interval = self.maps.bss.interval;
        self.maps.bss.interval = interval + 1;
        // Retired copies first: one that retires between the two reads is then missed
        // this interval and counted in the next, never counted twice.
        let mut maxima: HashMap<DiskId, Maxima> = HashMap::new();
        for copy in self.drain_retired()? {
            let disk = disk_of(&copy);
            self.retired.entry(disk).or_default().add(&copy);
            maxima.entry(disk).or_default().add(&copy, interval);
        }
        let mut totals = self.retired.clone();
        for copy in self.live_copies()? {
            let disk = disk_of(&copy);
            totals.entry(disk).or_default().add(&copy);
            maxima.entry(disk).or_default().add(&copy, interval);
        }
        let mut out = Vec::new();
        let mut flush_sequences = HashMap::new();
        for (disk, now) in totals {
            let previous = self.previous.entry(disk).or_default();
            out.extend(differences(disk, &now, previous, &maxima.remove(&disk).unwrap_or_default()));
            let interval = now.flush_sequences.since(&previous.flush_sequences);
            if interval != FlushSequences::default() {
                flush_sequences.insert(disk, interval);
            }
            previous.keep_highest(&now);
        }
        out.sort_by_key(|h| (h.disk, h.op, h.kind));
        Ok((out, flush_sequences))
    }

    /// Every CPU's copy of every table entry a disk has used.
    fn live_copies(&self) -> Result<Vec<types::disk_hists>> {
        let mut copies = Vec::new();
        for index in 0..self.disk_table {
            let Some(per_cpu) = self.maps.hists.lookup_percpu(&index.to_ne_bytes(), MapFlags::ANY)? else { continue };
            for bytes in per_cpu {
                let copy: types::disk_hists = read_struct(&bytes)?;
                if copy.disk.major != 0 || copy.disk.minor != 0 {
                    copies.push(copy);
                }
            }
        }
        Ok(copies)
    }

    /// The retired copies the kernel holds, removed from it.
    fn drain_retired(&mut self) -> Result<Vec<types::disk_hists>> {
        let keys: Vec<Vec<u8>> = self.maps.retired.keys().collect();
        let mut copies = Vec::new();
        for key in keys {
            if let Some(bytes) = self.maps.retired.lookup(&key, MapFlags::ANY)? {
                copies.push(read_struct(&bytes)?);
            }
            self.maps.retired.delete(&key).context("deleting a drained retired histogram")?;
        }
        Ok(copies)
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

    /// The BPF side's own counters (KERNEL_COUNTERS), summed over CPUs, then the
    /// kernel's count of runs it skipped (RECURSION_MISSES): (name, value, help).
    pub fn counters(&self) -> Result<Vec<(&'static str, u64, &'static str)>> {
        let mut counters = KERNEL_COUNTERS
            .iter()
            .enumerate()
            .map(|(index, (_, name, help))| {
                let key = u32::try_from(index).unwrap().to_ne_bytes();
                let per_cpu = self.maps.counters.lookup_percpu(&key, MapFlags::ANY)?.unwrap_or_default();
                Ok((*name, per_cpu.iter().map(|v| read_u64(v)).sum(), *help))
            })
            .collect::<Result<Vec<_>>>()?;
        let misses = self.programs.iter().map(|fd| recursion_misses(*fd)).sum::<Result<u64>>()?;
        counters.push((RECURSION_MISSES.0, misses, RECURSION_MISSES.1));
        Ok(counters)
    }
}

/// Runs of a program the kernel skipped because it was already running on that CPU: a
/// completion interrupting another's program. Those I/Os go uncounted.
pub const RECURSION_MISSES: (&str, &str) =
    ("bpf_recursion_misses", "runs of the programs the kernel skipped, one already running on that CPU: those I/Os are not counted");

fn recursion_misses(program: BorrowedFd<'_>) -> Result<u64> {
    let mut info = libbpf_sys::bpf_prog_info::default();
    let mut len = u32::try_from(size_of::<libbpf_sys::bpf_prog_info>()).unwrap();
    // SAFETY: info is a bpf_prog_info of `len` bytes; the kernel writes at most that.
    let ret = unsafe { libbpf_sys::bpf_obj_get_info_by_fd(program.as_raw_fd(), (&raw mut info).cast(), &mut len) };
    if ret != 0 {
        return Err(std::io::Error::last_os_error()).context("reading a BPF program's statistics");
    }
    Ok(info.recursion_misses)
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

fn disk_of(copy: &types::disk_hists) -> DiskId {
    DiskId { major: copy.disk.major, minor: copy.disk.minor }
}

impl Totals {
    fn add(&mut self, copy: &types::disk_hists) {
        for op in 0..OPS {
            for kind in 0..LATENCY_KINDS {
                let hist = &copy.hist[op][kind];
                for (total, slot) in self.slots[op][kind].iter_mut().zip(hist.slots.iter()) {
                    *total += slot;
                }
                self.sum_us[op][kind] += hist.sum_us;
            }
            self.errors[op] += copy.errors[op];
        }
        self.flush_sequences.data += copy.flush_sequence_data;
        self.flush_sequences.ends += copy.flush_sequence_ends;
    }

    /// Each figure at its highest seen: a copy caught mid-retirement can read low for
    /// one interval, and its counts must then be reported once, when they reappear.
    fn keep_highest(&mut self, now: &Totals) {
        fn highest<const N: usize>(kept: &mut [u64; N], now: &[u64; N]) {
            for (k, n) in kept.iter_mut().zip(now) {
                *k = (*k).max(*n);
            }
        }
        for op in 0..OPS {
            for kind in 0..LATENCY_KINDS {
                highest(&mut self.slots[op][kind], &now.slots[op][kind]);
            }
            highest(&mut self.sum_us[op], &now.sum_us[op]);
        }
        highest(&mut self.errors, &now.errors);
        let sequences = &mut self.flush_sequences;
        sequences.data = sequences.data.max(now.flush_sequences.data);
        sequences.ends = sequences.ends.max(now.flush_sequences.ends);
    }
}

/// The largest latency of the interval being read, per op and kind.
#[derive(Default)]
struct Maxima([[u64; LATENCY_KINDS]; OPS]);

impl Maxima {
    fn add(&mut self, copy: &types::disk_hists, interval: u64) {
        for op in 0..OPS {
            for kind in 0..LATENCY_KINDS {
                if copy.max_interval[op][kind] == interval {
                    self.0[op][kind] = self.0[op][kind].max(copy.max_us[op][kind]);
                }
            }
        }
    }
}

fn differences(disk: DiskId, now: &Totals, before: &Totals, maxima: &Maxima) -> Vec<IntervalHist> {
    let mut out = Vec::new();
    for op in 0..OPS {
        for kind in 0..LATENCY_KINDS {
            let mut buckets: Vec<u64> =
                now.slots[op][kind].iter().zip(before.slots[op][kind].iter()).map(|(n, b)| n.saturating_sub(*b)).collect();
            // From the buckets rather than the kernel's own count, which a read racing a
            // completion can see one step apart from them.
            let count: u64 = buckets.iter().sum();
            if count == 0 {
                continue;
            }
            while buckets.last() == Some(&0) {
                buckets.pop();
            }
            out.push(IntervalHist {
                disk,
                op,
                kind,
                buckets,
                count,
                sum_us: now.sum_us[op][kind].saturating_sub(before.sum_us[op][kind]),
                max_us: maxima.0[op][kind],
                errors: now.errors[op].saturating_sub(before.errors[op]),
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
    use crate::contract::{c_define, c_enum};

    #[test]
    fn table_sizes_are_iotrace_hs() {
        assert_eq!(MAX_SLOTS, c_define("MAX_SLOTS"));
        assert_eq!(c_enum("io_op").last(), Some(&("OPS".to_string(), OPS as u64)), "enum io_op counts its ops last");
        assert_eq!(c_enum("latency_kind").last(), Some(&("LATENCY_KINDS".to_string(), LATENCY_KINDS as u64)));
    }

    #[test]
    fn kernel_counters_are_enum_bpf_counter_in_its_order() {
        let mut counters: Vec<(String, u64)> =
            KERNEL_COUNTERS.iter().zip(0..).map(|((constant, _, _), index)| (constant.to_string(), index)).collect();
        counters.push(("COUNTERS".to_string(), KERNEL_COUNTERS.len() as u64));
        assert_eq!(counters, c_enum("bpf_counter"));
    }

    #[test]
    fn io_errors_and_timeouts_become_negative_errno() {
        assert_eq!(status_errno(0), 0);
        assert_eq!(status_errno(10), -5);
        assert_eq!(status_errno(2), -110);
        assert_eq!(status_errno(250), -5);
    }

    #[test]
    fn disk_tables_have_room_for_twice_the_queues_of_today() {
        assert_eq!(disk_table_size(0, 3), 64);
        assert_eq!(disk_table_size(0, 40), 128);
        assert_eq!(disk_table_size(0, 600), 2048);
        assert_eq!(disk_table_size(500, 3), 500);
    }

    fn copy_of(disk: (u32, u32), read_us: &[u64]) -> types::disk_hists {
        let mut copy = types::disk_hists::default();
        copy.disk = types::disk_key { major: disk.0, minor: disk.1 };
        for &us in read_us {
            let slot = (64 - us.max(1).leading_zeros() - 1) as usize;
            copy.hist[0][0].slots[slot] += 1;
            copy.hist[0][0].count += 1;
            copy.hist[0][0].sum_us += us;
        }
        copy
    }

    fn interval(now: &Totals, previous: &mut Totals) -> u64 {
        let out = differences(DiskId { major: 7, minor: 0 }, now, previous, &Maxima::default());
        previous.keep_highest(now);
        out.iter().map(|h| h.count).sum()
    }

    #[test]
    fn counts_caught_mid_retirement_are_reported_once_when_they_reappear() {
        let mut previous = Totals::default();
        let mut now = Totals::default();
        now.add(&copy_of((7, 0), &[100, 200, 3000]));
        assert_eq!(interval(&now, &mut previous), 3);
        // The copy was zeroed on its CPU and its retired twin not read yet: 2 more I/Os
        // elsewhere, the 3 retiring ones missing.
        let mut caught = Totals::default();
        caught.add(&copy_of((7, 0), &[150, 250]));
        let while_caught = interval(&caught, &mut previous);
        // Next interval: the retired 3 are back, with the 2 and one more.
        let mut later = Totals::default();
        later.add(&copy_of((7, 0), &[100, 200, 3000]));
        later.add(&copy_of((7, 0), &[150, 250, 260]));
        let after = interval(&later, &mut previous);
        assert!(while_caught <= 2, "{while_caught}");
        assert_eq!(3 + while_caught + after, 6, "every I/O once: {while_caught} then {after}");
    }

    #[test]
    fn a_synced_write_counts_once_when_its_flushes_are_done() {
        // Two writes of no sequence timed; two fsyncs' empty writes ended; two O_DSYNC
        // writes' data timed, one of them with its sequence ended, the other still flushing.
        let sequences = FlushSequences { data: 2, ends: 3 };
        // The kernel has counted the 2 writes of no sequence, the 2 empty ones and the
        // ended O_DSYNC one: 5, not the one still flushing.
        assert_eq!(sequences.accounted(2 + 2), 5);
        assert_eq!(FlushSequences::default().accounted(7), 7);
    }

    #[test]
    fn an_interval_count_is_the_sum_of_its_buckets() {
        let mut now = Totals::default();
        now.add(&copy_of((7, 0), &[5, 6, 7, 900]));
        let out = differences(DiskId { major: 7, minor: 0 }, &now, &Totals::default(), &Maxima::default());
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].count, out[0].buckets.iter().sum::<u64>());
        assert_eq!(out[0].count, 4);
    }
}
