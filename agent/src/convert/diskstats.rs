//! /proc/diskstats counters counted from a capture of every I/O, for captures of disks
//! whose class the command line gives (`convert --rotational`): the kernel's counters are
//! sums over the I/Os it completed (Documentation/admin-guide/iostats.rst), so a capture
//! that holds each I/O gives them whole, sampled every second as the agent samples them,
//! and its windows get iostat lines. An I/O counts from the moment it entered the block
//! layer (its queue time before dispatch, where the capture knows it) to its completion.
//! Merges are not in a capture of completed requests: they count 0, and every sample says
//! it was derived from events.

use crate::diskstats::{DiskCounters, DiscardCounters, FlushCounters};
use crate::record::{EventRecord, Op};
use std::collections::BTreeMap;

const SECOND_NS: u64 = 1_000_000_000;
const NS_PER_MS: u64 = 1_000_000;
const SECTOR_BYTES: u64 = 512;

/// What the command line says of the captured disks, which a capture cannot.
#[derive(Debug, Clone)]
pub struct DiskFacts {
    pub rotational: bool,
    pub model: Option<String>,
}

/// One disk's counters at one moment, as the agent would have read them.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub host: String,
    pub ts_ns: u64,
    pub counters: DiskCounters,
}

/// Every disk's samples, each second from the second before its first I/O began to the
/// one after its last completed, in time order.
pub fn samples(events: &[EventRecord]) -> Vec<Sample> {
    let mut by_disk: BTreeMap<(&str, &str), Vec<&EventRecord>> = BTreeMap::new();
    for e in events {
        by_disk.entry((e.host.as_str(), e.disk.as_str())).or_default().push(e);
    }
    let mut out: Vec<Sample> = by_disk.into_iter().flat_map(|((host, disk), ios)| disk_samples(host, disk, &ios)).collect();
    out.sort_by(|a, b| (a.ts_ns, &a.host, &a.counters.name).cmp(&(b.ts_ns, &b.host, &b.counters.name)));
    out
}

/// What happens at one moment of a disk's timeline: an I/O completes, a sample is read,
/// an I/O begins; in that order when they coincide.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Point {
    Completion(usize),
    Sample,
    Start,
}

/// Running sums in ns; the counters are their whole milliseconds.
#[derive(Default)]
struct Sums {
    counters: DiskCounters,
    read_ns: u64,
    write_ns: u64,
    discard_ns: u64,
    flush_ns: u64,
    busy_ns: u64,
    weighted_ns: u64,
}

fn disk_samples(host: &str, disk: &str, ios: &[&EventRecord]) -> Vec<Sample> {
    let start = |e: &EventRecord| e.issue_ns.saturating_sub(e.queue_ns);
    let first = ios.iter().map(|e| start(e)).min().unwrap_or(0) / SECOND_NS * SECOND_NS;
    let last = ios.iter().map(|e| e.complete_ns).max().unwrap_or(0) / SECOND_NS * SECOND_NS + SECOND_NS;
    let mut points: Vec<(u64, Point)> = Vec::with_capacity(2 * ios.len());
    for (i, e) in ios.iter().enumerate() {
        points.push((start(e), Point::Start));
        points.push((e.complete_ns.max(start(e)), Point::Completion(i)));
    }
    points.extend((first..=last).step_by(SECOND_NS as usize).map(|t| (t, Point::Sample)));
    points.sort();

    let mut sums = Sums { counters: DiskCounters { name: disk.to_string(), ..DiskCounters::default() }, ..Sums::default() };
    let (mut in_flight, mut at) = (0u64, first);
    let mut out = Vec::new();
    for (t, point) in points {
        let elapsed = t.saturating_sub(at);
        sums.weighted_ns += in_flight * elapsed;
        sums.busy_ns += if in_flight > 0 { elapsed } else { 0 };
        at = at.max(t);
        match point {
            Point::Start => in_flight += 1,
            Point::Completion(i) => {
                in_flight = in_flight.saturating_sub(1);
                complete(&mut sums, ios[i], ios[i].complete_ns.saturating_sub(start(ios[i])));
            }
            Point::Sample => out.push(Sample { host: host.to_string(), ts_ns: t, counters: counters_of(&sums, in_flight) }),
        }
    }
    out
}

fn complete(sums: &mut Sums, e: &EventRecord, took_ns: u64) {
    let c = &mut sums.counters;
    let sectors = e.bytes.div_ceil(SECTOR_BYTES);
    match e.op {
        Op::R => {
            c.reads_completed += 1;
            c.sectors_read += sectors;
            sums.read_ns += took_ns;
        }
        Op::W => {
            c.writes_completed += 1;
            c.sectors_written += sectors;
            sums.write_ns += took_ns;
        }
        Op::D => {
            let d = c.discards.get_or_insert(DiscardCounters { completed: 0, merged: 0, sectors: 0, time_ms: 0 });
            d.completed += 1;
            d.sectors += sectors;
            sums.discard_ns += took_ns;
        }
        Op::F => {
            let f = c.flushes.get_or_insert(FlushCounters { completed: 0, time_ms: 0 });
            f.completed += 1;
            sums.flush_ns += took_ns;
        }
    }
}

fn counters_of(sums: &Sums, in_flight: u64) -> DiskCounters {
    let mut c = sums.counters.clone();
    c.read_time_ms = sums.read_ns / NS_PER_MS;
    c.write_time_ms = sums.write_ns / NS_PER_MS;
    c.in_flight = in_flight;
    c.io_time_ms = sums.busy_ns / NS_PER_MS;
    c.weighted_io_time_ms = sums.weighted_ns / NS_PER_MS;
    // The kernel prints discard and flush counters whether or not any happened (since
    // 4.18 and 5.5); a capture of every I/O knows they were none.
    c.discards = Some(c.discards.map_or(DiscardCounters { completed: 0, merged: 0, sectors: 0, time_ms: 0 }, |d| {
        DiscardCounters { time_ms: sums.discard_ns / NS_PER_MS, ..d }
    }));
    c.flushes = Some(c.flushes.map_or(FlushCounters { completed: 0, time_ms: 0 }, |f| FlushCounters {
        time_ms: sums.flush_ns / NS_PER_MS,
        ..f
    }));
    c
}
