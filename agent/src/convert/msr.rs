//! MSR Cambridge block traces (SNIA IOTTA), CSV without a header:
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`. Timestamp is Windows
//! file time (100 ns ticks since 1601-01-01) at issue; Offset and Size are bytes;
//! ResponseTime is 100 ns ticks.

use super::{field, CaptureParser, CapturedIo, Clock, Line};
use crate::record::{Op, TimedFrom};

/// 100 ns ticks from 1601-01-01 to 1970-01-01.
const FILETIME_UNIX_EPOCH: u64 = 116_444_736_000_000_000;
const NS_PER_TICK: i128 = 100;
const SECTOR_BYTES: u64 = 512;

pub struct Parser;

impl CaptureParser for Parser {
    fn clock(&self) -> Clock {
        Clock::Epoch
    }

    fn line(&mut self, line: &str) -> Result<Line, String> {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with("Timestamp") {
            return Ok(Line::NotData);
        }
        let fields: Vec<&str> = trimmed.split(',').map(str::trim).collect();
        if fields.len() != 7 {
            return Err(format!("{} fields, expected 7: Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime", fields.len()));
        }
        let filetime: u64 = field(fields[0], "Timestamp")?;
        let since_epoch = filetime.checked_sub(FILETIME_UNIX_EPOCH).ok_or("Timestamp is before 1970: not Windows file time")?;
        let issue_ns = i128::from(since_epoch) * NS_PER_TICK;
        let response_ticks: u64 = field(fields[6], "ResponseTime")?;
        let op = match fields[3].to_ascii_lowercase().as_str() {
            "read" => Op::R,
            "write" => Op::W,
            other => return Err(format!("Type {other:?} is not Read or Write")),
        };
        let offset: u64 = field(fields[4], "Offset")?;
        if fields[1].is_empty() {
            return Err("empty Hostname".into());
        }
        Ok(Line::Io(CapturedIo {
            host: Some(fields[1].to_string()),
            disk: fields[2].to_string(),
            op,
            bytes: field(fields[5], "Size")?,
            sector: offset / SECTOR_BYTES,
            issue_ns,
            complete_ns: issue_ns + i128::from(response_ticks) * NS_PER_TICK,
            queue_ns: 0,
            inflight: None,
            timed_from: TimedFrom::Dispatch,
            error: 0,
            comm: String::new(),
            pid: 0,
        }))
    }
}
