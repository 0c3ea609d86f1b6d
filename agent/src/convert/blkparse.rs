//! blkparse's default output: `major,minor cpu seq timestamp pid action rwbs sector + size [process]`.
//! One I/O spans several events; it is assembled per device and sector: Q (queued, names
//! the submitting process), I (inserted into the scheduler), D (dispatched to the device),
//! C (completed; its bracket holds the error). Queue time is I→D (Q→D without I), device
//! time D→C, and the device's in-flight count is tracked from D and C, as btt does.

use super::{device_name, field, CaptureParser, CapturedIo, Clock, Line};
use crate::lines::scaled;
use crate::record::{Op, TimedFrom};
use std::collections::HashMap;

/// Flushes carry no sector; they are keyed by device alone.
const NO_SECTOR: u64 = u64::MAX;
const SECTOR_BYTES: u64 = 512;

#[derive(Default)]
pub struct Parser {
    requests: HashMap<(String, u64), Request>,
    inflight: HashMap<String, u32>,
    unmatched: usize,
}

#[derive(Default)]
struct Request {
    queued_ns: Option<i128>,
    inserted_ns: Option<i128>,
    issued_ns: Option<i128>,
    inflight_at_issue: u32,
    comm: String,
    pid: u32,
}

struct Event<'a> {
    dev: String,
    ts_ns: i128,
    pid: u32,
    action: &'a str,
    rwbs: &'a str,
    sector: u64,
    sectors: u64,
    bracket: String,
}

impl CaptureParser for Parser {
    fn clock(&self) -> Clock {
        Clock::SinceTraceStart
    }

    fn line(&mut self, line: &str) -> Result<Line, String> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let is_event = fields.first().is_some_and(|f| f.split_once(',').is_some_and(|(a, b)| is_number(a) && is_number(b)));
        if !is_event {
            return Ok(Line::NotData); // per-CPU summaries, totals, blank lines
        }
        let event = parse_event(&fields)?;
        Ok(self.apply(event))
    }

    fn unmatched(&self) -> usize {
        self.unmatched + self.requests.values().filter(|r| r.issued_ns.is_some()).count()
    }
}

impl Parser {
    fn apply(&mut self, e: Event) -> Line {
        let key = (e.dev.clone(), e.sector);
        match e.action {
            "Q" => {
                self.requests.insert(key, Request { queued_ns: Some(e.ts_ns), comm: e.bracket, pid: e.pid, ..Request::default() });
            }
            "G" => {
                self.requests.entry(key).or_insert_with(|| Request { comm: e.bracket, pid: e.pid, ..Request::default() });
            }
            "I" => self.requests.entry(key).or_default().inserted_ns = Some(e.ts_ns),
            // Merged into another request: it completes as part of that one.
            "M" | "F" => {
                self.requests.remove(&key);
            }
            "D" => {
                let depth = self.inflight.entry(e.dev.clone()).or_default();
                *depth += 1;
                let request = self.requests.entry(key).or_insert_with(|| Request { comm: e.bracket, pid: e.pid, ..Request::default() });
                request.issued_ns = Some(e.ts_ns);
                request.inflight_at_issue = *depth;
            }
            "R" => {
                if let Some(request) = self.requests.get_mut(&key) {
                    if request.issued_ns.take().is_some() {
                        self.decrement_inflight(&e.dev);
                    }
                }
            }
            "C" => return self.complete(key, e),
            _ => {} // P, U, A, X, B, S...: plugging, remaps, splits carry no timing of their own
        }
        Line::Partial
    }

    fn complete(&mut self, key: (String, u64), e: Event) -> Line {
        let Some(request) = self.requests.remove(&key) else {
            self.unmatched += 1; // dispatched before the trace started
            return Line::Partial;
        };
        let Some(issued_ns) = request.issued_ns else {
            self.unmatched += 1;
            return Line::Partial;
        };
        self.decrement_inflight(&e.dev);
        let waited_from = request.inserted_ns.or(request.queued_ns).unwrap_or(issued_ns);
        Line::Io(CapturedIo {
            host: None,
            disk: e.dev,
            op: Op::from_rwbs(e.rwbs).unwrap_or(Op::F),
            bytes: e.sectors * SECTOR_BYTES,
            sector: if e.sector == NO_SECTOR { 0 } else { e.sector },
            issue_ns: issued_ns,
            complete_ns: e.ts_ns,
            queue_ns: u64::try_from(issued_ns - waited_from).unwrap_or(0),
            inflight: Some(request.inflight_at_issue),
            timed_from: TimedFrom::Dispatch,
            error: completion_error(&e.bracket),
            comm: request.comm,
            pid: request.pid,
        })
    }

    fn decrement_inflight(&mut self, dev: &str) {
        if let Some(depth) = self.inflight.get_mut(dev) {
            *depth = depth.saturating_sub(1);
        }
    }
}

fn parse_event<'a>(fields: &[&'a str]) -> Result<Event<'a>, String> {
    if fields.len() < 7 {
        return Err(format!("{} fields, expected major,minor cpu seq timestamp pid action rwbs ...", fields.len()));
    }
    let rest = &fields[7..];
    // "sector + size [process]" for data events; just "[process]" for flushes and plugs.
    let (sector, sectors, bracket_from) = if rest.len() >= 3 && rest[1] == "+" {
        (field(rest[0], "sector")?, field(rest[2], "size")?, 3)
    } else {
        (NO_SECTOR, 0, 0)
    };
    let bracket = rest[bracket_from.min(rest.len())..].join(" ");
    let bracket = bracket.split(']').next().unwrap_or("").trim_start_matches('[').to_string();
    Ok(Event {
        dev: device_name(fields[0])?,
        ts_ns: i128::from(scaled(fields[3], 9).map_err(|e| format!("timestamp {e}"))?),
        pid: field(fields[4], "pid")?,
        action: fields[5],
        rwbs: fields[6],
        sector,
        sectors,
        bracket,
    })
}

/// blkparse prints a completion's status in brackets: 0, or a negative errno.
fn completion_error(bracket: &str) -> i32 {
    bracket.trim().parse::<i32>().map(|e| -e.abs()).unwrap_or(0)
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_digit())
}
