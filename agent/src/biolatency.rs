//! In-kernel block I/O latency histograms (src/bpf/biolatency.bpf.c): loading, attaching,
//! and turning the cumulative per-CPU histograms into exact per-interval differences.

mod skel {
    #![allow(clippy::all, non_camel_case_types, non_snake_case, dead_code, unused_imports)]
    include!(concat!(env!("OUT_DIR"), "/biolatency.skel.rs"));
}

use anyhow::{anyhow, Context, Result};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, PrintLevel};
use skel::{types, BiolatencySkel, BiolatencySkelBuilder};
use std::collections::HashMap;
use std::mem::{size_of, MaybeUninit};
use std::sync::Mutex;

/// libbpf's own messages while loading, kept to explain a failure after our hint: its
/// first guess on EPERM (RLIMIT_MEMLOCK) misleads when a capability is what is missing.
static LIBBPF_MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn keep_libbpf_message(_level: PrintLevel, message: String) {
    if let Ok(mut messages) = LIBBPF_MESSAGES.lock() {
        messages.push(message.trim_end().to_string());
    }
}

pub const MAX_SLOTS: usize = 27;
const _: () = assert!(size_of::<types::hist>() == (MAX_SLOTS + 2) * 8, "biolatency.h and MAX_SLOTS disagree");

/// How the programs are attached: BTF-typed tracepoints where the kernel has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attachment {
    TpBtf,
    RawTp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HistKey {
    pub major: u32,
    pub minor: u32,
    /// 0 read, 1 write, 2 discard, 3 flush (enum io_op).
    pub op: u8,
    /// 0 device, 1 queue, 2 total (enum latency_kind).
    pub kind: u8,
}

/// The I/Os of one disk, op and latency kind completed in one interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntervalHist {
    pub key: HistKey,
    pub buckets: Vec<u64>,
    pub count: u64,
    pub sum_us: u64,
    pub max_us: u64,
}

#[derive(Clone, Default)]
struct Totals {
    slots: [u64; MAX_SLOTS],
    count: u64,
    sum_us: u64,
}

/// Names of the BPF side's counters, in the order of enum bpf_counter.
pub const COUNTER_NAMES: [&str; 7] =
    ["completions", "untracked", "partial", "request_map_full", "hist_map_full", "other_ops", "errors"];

pub struct Biolatency {
    skel: BiolatencySkel<'static>,
    pub attachment: Attachment,
    previous: HashMap<HistKey, Totals>,
}

impl Biolatency {
    /// Loads and attaches, preferring tp_btf and falling back to raw_tp.
    pub fn attach() -> Result<Self> {
        libbpf_rs::set_print(Some((PrintLevel::Info, keep_libbpf_message)));
        let attached = match Self::load(Attachment::TpBtf) {
            Ok(loaded) => Ok(loaded),
            Err(btf_error) => Self::load(Attachment::RawTp).map_err(|raw_error| explain(btf_error, raw_error)),
        };
        libbpf_rs::set_print(None);
        let messages = std::mem::take(&mut *LIBBPF_MESSAGES.lock().unwrap_or_else(|e| e.into_inner()));
        attached.map_err(|e| anyhow!("{e:#}\n  libbpf said:\n    {}", messages.join("\n    ")))
    }

    fn load(attachment: Attachment) -> Result<Self> {
        // The skeleton borrows its object for as long as the programs stay attached:
        // the whole life of the agent.
        let storage = Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = BiolatencySkelBuilder::default().open(storage)?;
        let btf = attachment == Attachment::TpBtf;
        for (program, wanted) in [
            (&mut open.progs.btf_insert, btf),
            (&mut open.progs.btf_issue, btf),
            (&mut open.progs.btf_complete, btf),
            (&mut open.progs.raw_insert, !btf),
            (&mut open.progs.raw_issue, !btf),
            (&mut open.progs.raw_complete, !btf),
        ] {
            program.set_autoload(wanted);
        }
        let mut skel = open.load().with_context(|| format!("loading the BPF programs ({attachment:?})"))?;
        skel.attach().with_context(|| format!("attaching to the block tracepoints ({attachment:?})"))?;
        Ok(Biolatency { skel, attachment, previous: HashMap::new() })
    }

    /// What completed since the previous call, per disk, op and latency kind.
    pub fn read_interval(&mut self) -> Result<Vec<IntervalHist>> {
        let mut out = Vec::new();
        let keys: Vec<Vec<u8>> = self.skel.maps.hists.keys().collect();
        for key_bytes in keys {
            let key = decode_key(&key_bytes)?;
            let Some(per_cpu) = self.skel.maps.hists.lookup_percpu(&key_bytes, MapFlags::ANY)? else { continue };
            let totals = sum_cpus(&per_cpu)?;
            let previous = self.previous.insert(key, totals.clone()).unwrap_or_default();
            let count = totals.count - previous.count;
            if count == 0 {
                continue;
            }
            let mut buckets: Vec<u64> = totals.slots.iter().zip(previous.slots.iter()).map(|(now, before)| now - before).collect();
            while buckets.last() == Some(&0) {
                buckets.pop();
            }
            let max_us = self.take_max(&key_bytes)?;
            out.push(IntervalHist { key, buckets, count, sum_us: totals.sum_us - previous.sum_us, max_us });
        }
        out.sort_by_key(|h| (h.key.major, h.key.minor, h.key.op, h.key.kind));
        Ok(out)
    }

    fn take_max(&mut self, key_bytes: &[u8]) -> Result<u64> {
        let max = match self.skel.maps.hist_max.lookup_percpu(key_bytes, MapFlags::ANY)? {
            Some(per_cpu) => per_cpu.iter().map(|v| read_u64(v)).max().unwrap_or(0),
            None => 0,
        };
        // Gone only if no completion recreated it meanwhile; either way no count is lost.
        let _ = self.skel.maps.hist_max.delete(key_bytes);
        Ok(max)
    }

    /// The BPF side's own counters (COUNTER_NAMES), summed over CPUs.
    pub fn counters(&self) -> Result<Vec<(&'static str, u64)>> {
        COUNTER_NAMES
            .iter()
            .enumerate()
            .map(|(index, name)| {
                let key = u32::try_from(index).unwrap().to_ne_bytes();
                let per_cpu = self.skel.maps.counters.lookup_percpu(&key, MapFlags::ANY)?.unwrap_or_default();
                Ok((*name, per_cpu.iter().map(|v| read_u64(v)).sum()))
            })
            .collect()
    }
}

fn explain(btf_error: anyhow::Error, raw_error: anyhow::Error) -> anyhow::Error {
    let permission = [&btf_error, &raw_error]
        .iter()
        .any(|e| e.chain().any(|cause| cause.to_string().contains("Operation not permitted") || cause.to_string().contains("EPERM")));
    let hint = if permission {
        "the agent needs CAP_BPF and CAP_PERFMON to load and attach BPF programs (or run as root)"
    } else {
        "the kernel needs BPF, BTF (/sys/kernel/btf/vmlinux) and the block_rq_* tracepoints"
    };
    anyhow!("{hint}; pass --no-trace to sample /proc/diskstats only.\n  tp_btf: {btf_error:#}\n  raw_tp: {raw_error:#}")
}

fn decode_key(bytes: &[u8]) -> Result<HistKey> {
    let raw: types::hist_key = read_struct(bytes)?;
    Ok(HistKey { major: raw.major, minor: raw.minor, op: raw.op, kind: raw.kind })
}

fn sum_cpus(per_cpu: &[Vec<u8>]) -> Result<Totals> {
    let mut totals = Totals::default();
    for value in per_cpu {
        let hist: types::hist = read_struct(value)?;
        for (total, slot) in totals.slots.iter_mut().zip(hist.slots.iter()) {
            *total += slot;
        }
        totals.count += hist.count;
        totals.sum_us += hist.sum_us;
    }
    Ok(totals)
}

/// Map keys and values are plain C structs (repr(C), Copy, no pointers).
fn read_struct<T: Copy>(bytes: &[u8]) -> Result<T> {
    if bytes.len() < size_of::<T>() {
        return Err(anyhow!("BPF map value of {} bytes, expected {}", bytes.len(), size_of::<T>()));
    }
    // SAFETY: length checked; T is a plain-old-data struct generated from the BPF BTF.
    Ok(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
}

fn read_u64(bytes: &[u8]) -> u64 {
    bytes.get(..8).map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap()))
}
