//! /proc/diskstats counters counted from a capture of every I/O, for captures of disks
//! whose class the command line gives (`convert --rotational`): the kernel's counters are
//! sums over the I/Os it completed (Documentation/admin-guide/iostats.rst), so a capture
//! that holds each I/O gives them whole, sampled every second as the agent samples them,
//! and its windows get iostat lines. As the kernel (5.8 and later) counts them: an I/O's
//! time runs from its entry to the block layer (its queue time before dispatch, where the
//! capture knows it) to its completion and is added at completion, to its op's time and to
//! the weighted time; io_time is the time at least one I/O was in flight. Merges are not in
//! a capture of completed requests: they count 0, and every sample says it was derived
//! from events. A write of no data is a flush (bcc's biosnoop prints flushes as W).

use crate::diskstats::{DiskCounters, DiscardCounters, FlushCounters};
use crate::record::{EventRecord, Op};
use std::collections::BTreeMap;

const SECOND_NS: u64 = 1_000_000_000;
const NS_PER_MS: u64 = 1_000_000;
const SECTOR_BYTES: u64 = 512;
/**
 * Samples are read a nanosecond before each whole second, so the second's sample falls in
 * the window of the I/Os it counts (the job places a diskstats delta by where it ends).
 */
const BEFORE_THE_SECOND_NS: u64 = 1;
/// A capture longer than this has a timestamp off, not a week of I/O: refused, not sampled.
pub const MAX_SPAN_NS: u64 = 7 * 24 * 3600 * SECOND_NS;

/// What the command line says of the captured disks, which a capture cannot.
#[derive(Debug, Clone)]
pub struct DiskFacts {
    pub rotational: bool,
    pub model: Option<String>,
    pub rpm: Option<u32>,
}

/// One disk's counters at one moment, as the agent would have read them.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub host: String,
    pub ts_ns: u64,
    pub counters: DiskCounters,
}

/// Every disk's samples, each second from the one before its first I/O began to the one
/// after its last completed, in time order; an error naming the disk whose I/Os span more
/// than MAX_SPAN_NS (a timestamp off).
pub fn samples(events: &[EventRecord]) -> Result<Vec<Sample>, String> {
    let mut by_disk: BTreeMap<(&str, &str), Vec<&EventRecord>> = BTreeMap::new();
    for e in events {
        by_disk.entry((e.host.as_str(), e.disk.as_str())).or_default().push(e);
    }
    let mut out = Vec::new();
    for ((host, disk), ios) in by_disk {
        out.extend(disk_samples(host, disk, &ios)?);
    }
    out.sort_by(|a, b| (a.ts_ns, &a.host, &a.counters.name).cmp(&(b.ts_ns, &b.host, &b.counters.name)));
    Ok(out)
}

/// What happens at one moment of a disk's timeline: an I/O completes, a sample is read,
/// an I/O begins; in that order when they coincide. An I/O of no length is its completion
/// alone: it was never in flight.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Point {
    Completion { io: usize, was_in_flight: bool },
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
}

fn started_ns(e: &EventRecord) -> u64 {
    e.issue_ns.saturating_sub(e.queue_ns)
}

fn disk_samples(host: &str, disk: &str, ios: &[&EventRecord]) -> Result<Vec<Sample>, String> {
    if ios.iter().any(|e| e.op == Op::Unknown) {
        return Err(format!("{host}/{disk}: the capture does not say which I/Os read and which wrote, and diskstats count \
                            each op apart: convert it without --rotational (its events alone)"));
    }
    let earliest = ios.iter().map(|e| started_ns(e)).min().unwrap_or(0);
    let latest = ios.iter().map(|e| e.complete_ns).max().unwrap_or(0);
    if latest.saturating_sub(earliest) > MAX_SPAN_NS {
        return Err(format!("{host}/{disk}: its I/Os span {} days from the first's start to the last's completion: a \
                            timestamp is off (check the capture, or --start-ns)", latest.saturating_sub(earliest) / (24 * 3600 * SECOND_NS)));
    }
    let first = earliest / SECOND_NS * SECOND_NS;
    let last = latest / SECOND_NS * SECOND_NS + SECOND_NS;
    let mut points: Vec<(u64, Point)> = Vec::with_capacity(2 * ios.len());
    for (i, e) in ios.iter().enumerate() {
        let (start, end) = (started_ns(e), e.complete_ns.max(started_ns(e)));
        let was_in_flight = end > start;
        if was_in_flight {
            points.push((start, Point::Start));
        }
        points.push((end, Point::Completion { io: i, was_in_flight }));
    }
    let seconds = (first + SECOND_NS..=last).step_by(SECOND_NS as usize);
    points.push((first, Point::Sample));
    points.extend(seconds.map(|t| (t - BEFORE_THE_SECOND_NS, Point::Sample)));
    points.sort();

    let mut sums = Sums { counters: DiskCounters { name: disk.to_string(), ..DiskCounters::default() }, ..Sums::default() };
    let (mut in_flight, mut at) = (0u64, first);
    let mut out = Vec::new();
    for (t, point) in points {
        sums.busy_ns += if in_flight > 0 { t.saturating_sub(at) } else { 0 };
        at = at.max(t);
        match point {
            Point::Start => in_flight += 1,
            Point::Completion { io, was_in_flight } => {
                in_flight -= u64::from(was_in_flight);
                complete(&mut sums, ios[io], ios[io].complete_ns.saturating_sub(started_ns(ios[io])));
            }
            Point::Sample => out.push(Sample { host: host.to_string(), ts_ns: t, counters: counters_of(&sums, in_flight) }),
        }
    }
    Ok(out)
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
        Op::W if e.bytes == 0 => {
            let f = c.flushes.get_or_insert(FlushCounters { completed: 0, time_ms: 0 });
            f.completed += 1;
            sums.flush_ns += took_ns;
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
        Op::Unknown => unreachable!("disk_samples refuses I/Os of unknown op"),
    }
}

fn counters_of(sums: &Sums, in_flight: u64) -> DiskCounters {
    let mut c = sums.counters.clone();
    c.read_time_ms = sums.read_ns / NS_PER_MS;
    c.write_time_ms = sums.write_ns / NS_PER_MS;
    c.in_flight = in_flight;
    c.io_time_ms = sums.busy_ns / NS_PER_MS;
    c.weighted_io_time_ms = (sums.read_ns + sums.write_ns + sums.discard_ns + sums.flush_ns) / NS_PER_MS;
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
