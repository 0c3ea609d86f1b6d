//! bpftrace's biosnoop.bt, in the forms it has had: `TIME(ms) DISK COMM PID LAT(ms)`
//! under an "Attached N probes" line; in the versions on block tracepoints,
//! `TIME(ms) DISK ID COMM PID LAT(ms)` with a second header line `MAJOR MINOR` and the
//! disk as its two numbers; and the first, `TIME(ms) COMM PID LAT(ms)`, which names no
//! disk (`convert --disk` names it). TIME is the completion, milliseconds since the trace
//! started; LAT runs from blk_account_io_start, the request's entry to the block layer,
//! so it is a total time (queue included) and the device time is unknown. No op, size or
//! sector: the I/Os' op is unknown.
//!
//! Both columns are whole milliseconds, truncated: a LAT is taken at the middle of its
//! millisecond, within half a millisecond of the truth, where the floor would call every
//! sub-millisecond I/O instantaneous; the completions a disk printed in one millisecond
//! are spread evenly across it, in the order printed (the middle for one alone), so each
//! keeps an identity of its own downstream (op, sector and times: all else is unknown).

use super::{field, CaptureParser, CapturedIo, Clock, Line};
use crate::lines::scaled;
use crate::record::{Op, TimedFrom};
use std::collections::HashMap;

const MS_NS: i128 = 1_000_000;

/// Where a header puts the disk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DiskColumn {
    Name,
    MajorMinor,
    Absent,
}

#[derive(Default)]
pub struct Parser {
    /// None before the header.
    disk_column: Option<DiskColumn>,
    /// Whether some TIME had a fraction: then the times are not truncated, and the
    /// completions stay where printed instead of being spread over their millisecond.
    fractional_times: bool,
}

impl CaptureParser for Parser {
    fn clock(&self) -> Clock {
        Clock::SinceTraceStart
    }

    fn line(&mut self, line: &str) -> Result<Line, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"TIME(ms)") && words.last() == Some(&"LAT(ms)") {
            self.disk_column = Some(match (words.get(1), words.get(2)) {
                (Some(&"DISK"), Some(&"ID")) => DiskColumn::MajorMinor,
                (Some(&"DISK"), _) => DiskColumn::Name,
                _ => DiskColumn::Absent,
            });
            return Ok(Line::NotData);
        }
        if words.is_empty() || words == ["MAJOR", "MINOR"] || words[0].starts_with("Attach") || words[0].starts_with('@') {
            return Ok(Line::NotData);
        }
        let disk_column = self.disk_column.ok_or("I/O line before the TIME(ms) ... LAT(ms) header")?;
        self.fractional_times |= words[0].contains('.');
        io(&words, disk_column).map(Line::Io)
    }

    fn finish(&self, ios: &mut [CapturedIo]) {
        if !self.fractional_times {
            spread_over_their_millisecond(ios);
        }
    }
}

fn io(fields: &[&str], disk_column: DiskColumn) -> Result<CapturedIo, String> {
    let (disk, comm_from) = match disk_column {
        DiskColumn::Name => (fields.get(1).ok_or("no DISK")?.to_string(), 2),
        DiskColumn::MajorMinor => {
            let number = |i: usize| fields.get(i).and_then(|f| f.parse::<u32>().ok());
            match (number(1), number(2)) {
                (Some(major), Some(minor)) => (format!("{major}:{minor}"), 3),
                _ => return Err("DISK ID is not MAJOR MINOR".into()),
            }
        }
        DiskColumn::Absent => (String::new(), 1),
    };
    if fields.len() < comm_from + 3 {
        return Err(format!("{} fields, expected TIME(ms), the disk, COMM, PID and LAT(ms)", fields.len()));
    }
    let ms = |text: &str, what: &str| scaled(text, 6).map(i128::from).map_err(|e| format!("{what} {e}"));
    let complete_ns = ms(fields[0], "TIME(ms)")?;
    let lat = fields[fields.len() - 1];
    let total_ns = ms(lat, "LAT(ms)")? + if lat.contains('.') { 0 } else { MS_NS / 2 };
    Ok(CapturedIo {
        host: None,
        disk,
        op: Op::Unknown,
        bytes: 0,
        sector: 0,
        issue_ns: complete_ns - total_ns,
        complete_ns,
        queue_ns: 0,
        inflight: None,
        timed_from: TimedFrom::Queue,
        error: 0,
        comm: fields[comm_from..fields.len() - 2].join(" "),
        pid: field(fields[fields.len() - 2], "PID")?,
    })
}

/// The n completions one disk printed in one millisecond, at (k + 1/2)/n of it, k in print
/// order; each I/O's total time stays as printed.
fn spread_over_their_millisecond(ios: &mut [CapturedIo]) {
    let mut printed: HashMap<(String, i128), i128> = HashMap::new();
    for io in ios.iter() {
        *printed.entry((io.disk.clone(), io.complete_ns)).or_default() += 1;
    }
    let mut placed: HashMap<(String, i128), i128> = HashMap::new();
    for io in ios.iter_mut() {
        let key = (io.disk.clone(), io.complete_ns);
        let n = printed[&key];
        let k = placed.entry(key).or_default();
        let offset = (2 * *k + 1) * MS_NS / (2 * n);
        *k += 1;
        io.complete_ns += offset;
        io.issue_ns += offset;
    }
}
