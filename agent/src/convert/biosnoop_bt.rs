//! bpftrace's biosnoop.bt: `TIME(ms) DISK COMM PID LAT(ms)` under an "Attached N probes"
//! line, or, in the versions on block tracepoints, `TIME(ms) DISK ID COMM PID LAT(ms)`
//! with a second header line `MAJOR MINOR` and the disk as its two numbers. TIME is the
//! completion, milliseconds since the trace started; LAT runs from blk_account_io_start,
//! the request's entry to the block layer, so it is a total time (queue included) and
//! the device time is unknown. No op, size or sector: the I/Os' op is unknown.
//!
//! Both columns are whole milliseconds, truncated: each value is taken at the middle of
//! its millisecond, within half a millisecond of the truth, where the floor would call
//! every sub-millisecond I/O instantaneous.

use super::{field, CaptureParser, CapturedIo, Clock, Line};
use crate::lines::scaled;
use crate::record::{Op, TimedFrom};

const HALF_MS_NS: i128 = 500_000;

#[derive(Default)]
pub struct Parser {
    /// Which header the capture has: None before it; Some(true) when the disk is MAJOR MINOR.
    disk_as_numbers: Option<bool>,
}

impl CaptureParser for Parser {
    fn clock(&self) -> Clock {
        Clock::SinceTraceStart
    }

    fn line(&mut self, line: &str) -> Result<Line, String> {
        let trimmed = line.trim();
        if trimmed.starts_with("TIME(ms)") && trimmed.ends_with("LAT(ms)") {
            self.disk_as_numbers = Some(trimmed.split_whitespace().nth(2) == Some("ID"));
            return Ok(Line::NotData);
        }
        if trimmed.is_empty() || trimmed == "MAJOR MINOR" || trimmed.starts_with("Attach") || trimmed.starts_with('@') {
            return Ok(Line::NotData);
        }
        let disk_as_numbers = self.disk_as_numbers.ok_or("I/O line before the TIME(ms) ... LAT(ms) header")?;
        io(trimmed, disk_as_numbers).map(Line::Io)
    }
}

fn io(line: &str, disk_as_numbers: bool) -> Result<CapturedIo, String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (disk, comm_from) = if disk_as_numbers {
        let number = |i: usize| fields.get(i).and_then(|f| f.parse::<u32>().ok());
        match (number(1), number(2)) {
            (Some(major), Some(minor)) => (format!("{major}:{minor}"), 3),
            _ => return Err("DISK ID is not MAJOR MINOR".into()),
        }
    } else {
        (fields.get(1).ok_or("no DISK")?.to_string(), 2)
    };
    if fields.len() < comm_from + 3 {
        return Err(format!("{} fields, expected TIME(ms), DISK, COMM, PID and LAT(ms)", fields.len()));
    }
    let ms = |text: &str, what: &str| -> Result<i128, String> {
        let ns = i128::from(scaled(text, 6).map_err(|e| format!("{what} {e}"))?);
        Ok(if text.contains('.') { ns } else { ns + HALF_MS_NS })
    };
    let complete_ns = ms(fields[0], "TIME(ms)")?;
    let total_ns = ms(fields[fields.len() - 1], "LAT(ms)")?;
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
