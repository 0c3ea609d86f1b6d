//! `iopipe-agent convert`: captures made with other tools (biosnoop, bpftrace's biosnoop.bt,
//! blkparse, iosnoop, MSR-style CSV) become io.event.v1 records (and, given the disks' class, the
//! io.diskstats.v1 samples they add up to: see diskstats.rs), and fleet telemetry (Perseus-style CSV)
//! io.window.v1 records, so old evidence replays through the pipeline. Malformed lines are reported with their numbers and skipped; the rest of
//! the file is always converted.

mod biosnoop;
mod biosnoop_bt;
mod blkparse;
pub mod diskstats;
mod iosnoop;
mod msr;
pub mod perseus;

use crate::lines::LineError;
use crate::record::{kernel_comm, EventRecord, Op, SampleReason, TimedFrom, EVENT_SCHEMA};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Biosnoop,
    /// bpftrace's biosnoop.bt: whole milliseconds from queue to completion, op unknown.
    BiosnoopBt,
    Blkparse,
    Iosnoop,
    MsrCsv,
    /// Per-drive throughput and mean latency every 15 s: windows, not events (see perseus.rs).
    Perseus,
}

/// What a capture's times count from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clock {
    /// Seconds since the trace started (biosnoop, blkparse): anchored at `start_ns`.
    SinceTraceStart,
    /// Seconds since boot (iosnoop): the earliest I/O is anchored at `start_ns`.
    SinceBoot,
    /// Nanoseconds since the Unix epoch (MSR traces, converted from Windows file time).
    Epoch,
}

/// One I/O as read from a capture, times in ns on the capture's clock.
#[derive(Debug, Clone, PartialEq)]
struct CapturedIo {
    host: Option<String>,
    disk: String,
    op: Op,
    bytes: u64,
    sector: u64,
    issue_ns: i128,
    complete_ns: i128,
    queue_ns: u64,
    /// Known when the capture shows dispatches (blkparse); derived from overlap otherwise,
    /// where the I/Os are timed from their dispatch.
    inflight: Option<u32>,
    timed_from: TimedFrom,
    error: i32,
    comm: String,
    pid: u32,
}

enum Line {
    Io(CapturedIo),
    /// An event that is part of an I/O still being assembled (blkparse Q, I, D...).
    Partial,
    /// Headers, elisions, summaries: not data, not an error.
    NotData,
}

trait CaptureParser {
    fn clock(&self) -> Clock;
    fn line(&mut self, line: &str) -> Result<Line, String>;
    /// I/Os whose events were incomplete when the capture ended (e.g. completions of
    /// requests dispatched before the trace started).
    fn unmatched(&self) -> usize {
        0
    }
    /// Settles what the I/Os can only say together, once every line is read.
    fn finish(&self, _ios: &mut [CapturedIo]) {}
}

/// What the capture itself cannot say.
pub struct Context {
    /// The host of every I/O; required unless the capture names its hosts (MSR traces).
    pub host: Option<String>,
    /// Overrides the disk name of every I/O (blkparse and iosnoop only know major,minor).
    pub disk: Option<String>,
    /// Wall-clock ns that the capture's time zero (or first I/O) corresponds to.
    pub start_ns: u64,
    /// The capture's start times are the requests' entry to the queue (iosnoop -Q), not
    /// their dispatch: its latencies are total times.
    pub queued: bool,
}

pub struct Conversion {
    pub events: Vec<EventRecord>,
    pub bad_lines: Vec<LineError>,
    pub other_lines: usize,
    pub unmatched: usize,
}

pub fn convert(format: Format, input_name: &str, text: &str, ctx: &Context) -> Result<Conversion, String> {
    let mut parser: Box<dyn CaptureParser> = match format {
        Format::Biosnoop => Box::new(biosnoop::Parser::default()),
        Format::BiosnoopBt => Box::new(biosnoop_bt::Parser::default()),
        Format::Blkparse => Box::new(blkparse::Parser::default()),
        Format::Iosnoop => Box::new(iosnoop::Parser::new(ctx.queued)),
        Format::MsrCsv => Box::new(msr::Parser),
        Format::Perseus => return Err(format!("{input_name}: telemetry becomes windows, not events: use perseus::convert")),
    };
    let mut ios = Vec::new();
    let mut bad_lines = Vec::new();
    let mut other_lines = 0;
    for (index, line) in text.lines().enumerate() {
        match parser.line(line) {
            Ok(Line::Io(io)) => ios.push(io),
            Ok(Line::Partial) => {}
            Ok(Line::NotData) => other_lines += 1,
            Err(reason) => bad_lines.push(LineError::new(input_name, index + 1, reason, line)),
        }
    }
    parser.finish(&mut ios);
    if ios.is_empty() {
        return Err(nothing_converted(format, input_name, text.lines().count(), &bad_lines, parser.unmatched()));
    }
    if ctx.host.is_none() && ios.iter().any(|io| io.host.is_none()) {
        return Err(format!("{input_name} does not say which host it was captured on: pass --host"));
    }
    if ctx.disk.is_none() && ios.iter().any(|io| io.disk.is_empty()) {
        return Err(format!("{input_name} does not say which disk its I/Os were on: pass --disk"));
    }
    let events = into_records(ios, parser.clock(), ctx);
    Ok(Conversion { events, bad_lines, other_lines, unmatched: parser.unmatched() })
}

/// Why a capture gave no I/O at all, and the likely fix: it was made by another tool.
fn nothing_converted(format: Format, input_name: &str, lines: usize, bad_lines: &[LineError], unmatched: usize) -> String {
    let tool = clap::ValueEnum::to_possible_value(&format).map_or_else(String::new, |v| v.get_name().to_string());
    let mut why = format!("{input_name}: no I/O converted from its {lines} lines as {tool} output");
    if let Some(first) = bad_lines.first() {
        why += &format!("; {} malformed, the first at line {}: {}", bad_lines.len(), first.line_no, first.reason);
    }
    if unmatched > 0 {
        why += &format!("; {unmatched} I/Os incomplete in the capture");
    }
    why + ": check that --from names the tool that made it"
}

fn into_records(mut ios: Vec<CapturedIo>, clock: Clock, ctx: &Context) -> Vec<EventRecord> {
    let offset: i128 = match clock {
        Clock::SinceTraceStart => i128::from(ctx.start_ns),
        Clock::SinceBoot => i128::from(ctx.start_ns) - ios.iter().map(|io| io.issue_ns).min().unwrap_or(0),
        Clock::Epoch => 0,
    };
    if let Some(disk) = &ctx.disk {
        ios.iter_mut().for_each(|io| io.disk = disk.clone());
    }
    fill_inflight(&mut ios);
    ios.into_iter()
        .map(|io| EventRecord {
            schema: EVENT_SCHEMA,
            host: ctx.host.clone().or(io.host).expect("checked in convert()"),
            disk: io.disk,
            op: io.op,
            bytes: io.bytes,
            sector: io.sector,
            issue_ns: clamp_ns(io.issue_ns + offset),
            complete_ns: clamp_ns(io.complete_ns + offset),
            queue_ns: io.queue_ns,
            inflight: io.inflight.unwrap_or(0),
            error: io.error,
            comm: kernel_comm(&io.comm),
            pid: io.pid,
            sample_reason: SampleReason::All,
            sample_weight: 1.0,
            timed_from: io.timed_from,
        })
        .collect()
}

fn clamp_ns(ns: i128) -> u64 {
    u64::try_from(ns.max(0)).unwrap_or(u64::MAX)
}

/// Requests in flight on the disk when each I/O was issued, counting itself, for
/// captures that list every I/O but not the device's queue: the I/Os issued no later
/// than this one and not yet complete. Not for I/Os timed from the queue: their
/// dispatch, and so the device's queue, is unknown (0).
fn fill_inflight(ios: &mut [CapturedIo]) {
    let mut by_disk: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, io) in ios.iter().enumerate() {
        if io.inflight.is_none() && io.timed_from == TimedFrom::Dispatch {
            by_disk.entry(io.disk.clone()).or_default().push(i);
        }
    }
    for indices in by_disk.values_mut() {
        indices.sort_by_key(|&i| (ios[i].issue_ns, ios[i].complete_ns));
        let mut completions = BinaryHeap::new();
        for &i in indices.iter() {
            while completions.peek().is_some_and(|Reverse(done)| *done <= ios[i].issue_ns) {
                completions.pop();
            }
            completions.push(Reverse(ios[i].complete_ns));
            ios[i].inflight = Some(u32::try_from(completions.len()).unwrap_or(u32::MAX));
        }
    }
}

/// `major,minor` as blktrace and iosnoop print a device: named `major:minor` unless
/// `--disk` says otherwise.
fn device_name(dev: &str) -> Result<String, String> {
    let (major, minor) = dev.split_once(',').ok_or_else(|| format!("device {dev:?} is not major,minor"))?;
    let number = |s: &str| s.parse::<u32>().map_err(|_| format!("device {dev:?} is not major,minor"));
    Ok(format!("{}:{}", number(major)?, number(minor)?))
}

fn field<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{what} is not a number: {text:?}"))
}

#[cfg(test)]
mod tests;
