//! bcc's biosnoop: `TIME(s) COMM PID DISK T SECTOR BYTES [QUE(ms)] LAT(ms)`, one line per
//! completed I/O. TIME is the completion, seconds since the trace started; LAT is the
//! device time (issue to completion); QUE (with -Q) the time queued before issue.
//! COMM may contain spaces ("Cache2 I/O"), so fields are taken from the right.

use super::{field, CaptureParser, CapturedIo, Clock, Line};
use crate::lines::scaled;
use crate::record::{Op, TimedFrom};

#[derive(Default)]
pub struct Parser {
    with_queue_column: bool,
}

impl CaptureParser for Parser {
    fn clock(&self) -> Clock {
        Clock::SinceTraceStart
    }

    fn line(&mut self, line: &str) -> Result<Line, String> {
        let trimmed = line.trim();
        if trimmed.starts_with("TIME(s)") {
            self.with_queue_column = trimmed.contains("QUE(ms)");
            return Ok(Line::NotData);
        }
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("[...]") || trimmed.starts_with("Tracing") {
            return Ok(Line::NotData);
        }
        self.io(trimmed).map(Line::Io)
    }
}

impl Parser {
    fn io(&self, line: &str) -> Result<CapturedIo, String> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let right = if self.with_queue_column { 7 } else { 6 };
        if fields.len() < right + 2 {
            return Err(format!("{} fields, expected TIME(s) COMM and {right} more", fields.len()));
        }
        let tail = &fields[fields.len() - right..];
        let (pid, disk, kind, sector, bytes) = (tail[0], tail[1], tail[2], tail[3], tail[4]);
        let latency_ns = scaled(fields[fields.len() - 1], 6).map_err(|e| format!("LAT(ms) {e}"))?;
        let queue_ns = if self.with_queue_column {
            scaled(tail[5], 6).map_err(|e| format!("QUE(ms) {e}"))?
        } else {
            0
        };
        let complete_ns = i128::from(scaled(fields[0], 9).map_err(|e| format!("TIME(s) {e}"))?);
        Ok(CapturedIo {
            host: None,
            disk: disk.to_string(),
            op: Op::from_rwbs(kind).ok_or_else(|| format!("T {kind:?} is not R, W, D or F"))?,
            bytes: field(bytes, "BYTES")?,
            sector: field(sector, "SECTOR")?,
            issue_ns: complete_ns - i128::from(latency_ns),
            complete_ns,
            queue_ns,
            inflight: None,
            timed_from: TimedFrom::Dispatch,
            error: 0,
            comm: fields[1..fields.len() - right].join(" "),
            pid: field(pid, "PID")?,
        })
    }
}
