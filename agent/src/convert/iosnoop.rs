//! perf-tools' iosnoop with timestamps (`iosnoop -ts`):
//! `STARTs ENDs COMM PID TYPE DEV BLOCK BYTES LATms`. START/END are seconds since boot;
//! without them (plain `iosnoop`) the I/Os cannot be placed in time, which the
//! converter says instead of guessing. START is the dispatch (block_rq_issue), or with
//! `iosnoop -Q` the insertion in the queue (block_rq_insert): the output is the same, so
//! the command line says which (`convert --queued`), and queued LATms is a total time.

use super::{device_name, field, CaptureParser, CapturedIo, Clock, Line};
use crate::lines::scaled;
use crate::record::{Op, TimedFrom};

pub struct Parser {
    /// Number of leading time columns (STARTs, ENDs) named by the header.
    time_columns: Option<Vec<String>>,
    timed_from: TimedFrom,
}

impl Parser {
    pub fn new(queued: bool) -> Self {
        Parser { time_columns: None, timed_from: if queued { TimedFrom::Queue } else { TimedFrom::Dispatch } }
    }
}

impl CaptureParser for Parser {
    fn clock(&self) -> Clock {
        Clock::SinceBoot
    }

    fn line(&mut self, line: &str) -> Result<Line, String> {
        let trimmed = line.trim();
        if trimmed.contains("COMM") && trimmed.contains("LATms") {
            let columns: Vec<String> =
                trimmed.split_whitespace().take_while(|c| *c != "COMM").map(str::to_string).collect();
            if !columns.iter().any(|c| c == "STARTs" || c == "ENDs") {
                return Err("iosnoop output without STARTs/ENDs columns cannot be placed in time: capture with `iosnoop -ts`".into());
            }
            self.time_columns = Some(columns);
            return Ok(Line::NotData);
        }
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("Tracing") || trimmed.starts_with("[...]") {
            return Ok(Line::NotData);
        }
        let columns = self.time_columns.as_ref().ok_or("I/O line before the COMM ... LATms header")?;
        io(trimmed, columns, self.timed_from).map(Line::Io)
    }
}

fn io(line: &str, time_columns: &[String], timed_from: TimedFrom) -> Result<CapturedIo, String> {
    const RIGHT: usize = 6; // PID TYPE DEV BLOCK BYTES LATms
    let fields: Vec<&str> = line.split_whitespace().collect();
    let leading = time_columns.len();
    if fields.len() < leading + 1 + RIGHT {
        return Err(format!("{} fields, expected {} time columns, COMM and {RIGHT} more", fields.len(), leading));
    }
    let time = |name: &str| -> Result<Option<i128>, String> {
        match time_columns.iter().position(|c| c == name) {
            Some(i) => Ok(Some(i128::from(scaled(fields[i], 9).map_err(|e| format!("{name} {e}"))?))),
            None => Ok(None),
        }
    };
    let tail = &fields[fields.len() - RIGHT..];
    let latency_ns = i128::from(scaled(tail[5], 6).map_err(|e| format!("LATms {e}"))?);
    let (issue_ns, complete_ns) = match (time("STARTs")?, time("ENDs")?) {
        (Some(start), Some(end)) => (start, end),
        (Some(start), None) => (start, start + latency_ns),
        (None, Some(end)) => (end - latency_ns, end),
        (None, None) => unreachable!("the header check requires a time column"),
    };
    Ok(CapturedIo {
        host: None,
        disk: device_name(tail[2])?,
        op: Op::from_rwbs(tail[1]).ok_or_else(|| format!("TYPE {:?} is not a read, write, discard or flush", tail[1]))?,
        bytes: field(tail[4], "BYTES")?,
        sector: field(tail[3], "BLOCK")?,
        issue_ns,
        complete_ns,
        queue_ns: 0,
        inflight: None,
        timed_from,
        error: 0,
        comm: fields[leading..fields.len() - RIGHT].join(" "),
        pid: field(tail[0], "PID")?,
    })
}
