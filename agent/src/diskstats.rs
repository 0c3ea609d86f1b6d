//! Parser for `/proc/diskstats`, the kernel's cumulative per-device I/O counters.
//!
//! Field meanings and units follow Documentation/admin-guide/iostats.rst. The number
//! of counters after `major minor name` grew with the kernel:
//! 11 before 4.18, 15 with discard counters (4.18), 17 with flush counters (5.5).
//! Lines with more counters (future kernels) keep the first 17.

pub use crate::lines::LineError;
use serde::Serialize;

/// Counters of one line, named as in iostats.rst. Times are milliseconds, sectors are
/// 512-byte units regardless of the device's logical block size. Serialized as the
/// fields of io.diskstats.v1 (record.rs), so the counters are listed here alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DiskCounters {
    pub major: u32,
    pub minor: u32,
    #[serde(rename = "disk")]
    pub name: String,
    pub reads_completed: u64,
    pub reads_merged: u64,
    pub sectors_read: u64,
    pub read_time_ms: u64,
    pub writes_completed: u64,
    pub writes_merged: u64,
    pub sectors_written: u64,
    pub write_time_ms: u64,
    pub in_flight: u64,
    pub io_time_ms: u64,
    pub weighted_io_time_ms: u64,
    /// Present since Linux 4.18.
    #[serde(flatten)]
    pub discards: Option<DiscardCounters>,
    /// Present since Linux 5.5.
    #[serde(flatten)]
    pub flushes: Option<FlushCounters>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DiscardCounters {
    #[serde(rename = "discards_completed")]
    pub completed: u64,
    #[serde(rename = "discards_merged")]
    pub merged: u64,
    #[serde(rename = "sectors_discarded")]
    pub sectors: u64,
    #[serde(rename = "discard_time_ms")]
    pub time_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FlushCounters {
    #[serde(rename = "flushes_completed")]
    pub completed: u64,
    #[serde(rename = "flush_time_ms")]
    pub time_ms: u64,
}

impl DiskCounters {
    /// True when the device has never completed an I/O (iostat hides such devices too).
    pub fn never_used(&self) -> bool {
        self.reads_completed == 0
            && self.writes_completed == 0
            && self.discards.map_or(true, |d| d.completed == 0)
            && self.flushes.map_or(true, |f| f.completed == 0)
    }
}

const BASE_COUNTERS: usize = 11;
const WITH_DISCARDS: usize = 15;
const WITH_FLUSHES: usize = 17;

/// Parses the whole file. Bad lines are returned beside the good ones: one odd device
/// never hides the others.
pub fn parse(text: &str) -> (Vec<DiskCounters>, Vec<LineError>) {
    let mut disks = Vec::new();
    let mut errors = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line) {
            Ok(disk) => disks.push(disk),
            Err(reason) => errors.push(LineError::new("diskstats", index + 1, reason, line)),
        }
    }
    (disks, errors)
}

pub fn parse_line(line: &str) -> Result<DiskCounters, String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() < 3 + BASE_COUNTERS {
        return Err(format!(
            "{} fields, expected at least {} (major minor name and {} counters)",
            fields.len(),
            3 + BASE_COUNTERS,
            BASE_COUNTERS
        ));
    }
    let number = |i: usize| -> Result<u64, String> {
        fields[i].parse::<u64>().map_err(|_| format!("field {} is not a counter: {:?}", i + 1, fields[i]))
    };
    let counters = fields.len() - 3;
    let counter = |k: usize| number(3 + k);
    let discards = if counters >= WITH_DISCARDS {
        Some(DiscardCounters { completed: counter(11)?, merged: counter(12)?, sectors: counter(13)?, time_ms: counter(14)? })
    } else {
        None
    };
    let flushes = if counters >= WITH_FLUSHES {
        Some(FlushCounters { completed: counter(15)?, time_ms: counter(16)? })
    } else {
        None
    };
    Ok(DiskCounters {
        major: u32::try_from(number(0)?).map_err(|_| "major number out of range".to_string())?,
        minor: u32::try_from(number(1)?).map_err(|_| "minor number out of range".to_string())?,
        name: fields[2].to_string(),
        reads_completed: counter(0)?,
        reads_merged: counter(1)?,
        sectors_read: counter(2)?,
        read_time_ms: counter(3)?,
        writes_completed: counter(4)?,
        writes_merged: counter(5)?,
        sectors_written: counter(6)?,
        write_time_ms: counter(7)?,
        in_flight: counter(8)?,
        io_time_ms: counter(9)?,
        weighted_io_time_ms: counter(10)?,
        discards,
        flushes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL_6: &str = "   8      16 sdb 1000 20 256000 400000 0 0 0 0 2 100000 600000 0 0 0 0 0 0\n";
    const KERNEL_4_18: &str = "   8      16 sdb 1000 20 256000 400000 0 0 0 0 2 100000 600000 5 0 80 7\n";
    const KERNEL_4_4: &str = "   8      16 sdb 1000 20 256000 400000 0 0 0 0 2 100000 600000\n";

    #[test]
    fn reads_all_seventeen_counters_of_a_modern_kernel() {
        let (disks, errors) = parse(KERNEL_6);
        assert!(errors.is_empty());
        let d = &disks[0];
        assert_eq!((d.major, d.minor, d.name.as_str()), (8, 16, "sdb"));
        assert_eq!(d.sectors_read, 256000);
        assert_eq!(d.weighted_io_time_ms, 600000);
        assert_eq!(d.discards, Some(DiscardCounters { completed: 0, merged: 0, sectors: 0, time_ms: 0 }));
        assert_eq!(d.flushes, Some(FlushCounters { completed: 0, time_ms: 0 }));
    }

    #[test]
    fn discard_counters_without_flushes_on_4_18() {
        let d = &parse(KERNEL_4_18).0[0];
        assert_eq!(d.discards, Some(DiscardCounters { completed: 5, merged: 0, sectors: 80, time_ms: 7 }));
        assert_eq!(d.flushes, None);
    }

    #[test]
    fn neither_discards_nor_flushes_before_4_18() {
        let d = &parse(KERNEL_4_4).0[0];
        assert_eq!((d.discards, d.flushes), (None, None));
        assert_eq!(d.in_flight, 2);
    }

    #[test]
    fn extra_counters_of_a_future_kernel_are_ignored() {
        let line = "   8      16 sdb 1 0 8 1 0 0 0 0 0 1 1 0 0 0 0 0 0 99 98\n";
        let (disks, errors) = parse(line);
        assert!(errors.is_empty());
        assert_eq!(disks[0].reads_completed, 1);
    }

    #[test]
    fn bad_lines_are_reported_with_their_number_and_the_rest_is_kept() {
        let text = format!("{KERNEL_6}   8 17 sdb1 1 2 3\n   8 0 sda x 0 0 0 0 0 0 0 0 0 0\n{KERNEL_4_4}");
        let (disks, errors) = parse(&text);
        assert_eq!(disks.len(), 2);
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].line_no, 2);
        assert!(errors[0].reason.contains("6 fields"), "{}", errors[0].reason);
        assert_eq!(errors[1].line_no, 3);
        assert!(errors[1].reason.contains("field 4"), "{}", errors[1].reason);
    }

    #[test]
    fn counter_beyond_u64_is_an_error_not_a_wrap() {
        let line = "8 16 sdb 18446744073709551616 0 0 0 0 0 0 0 0 0 0\n";
        assert_eq!(parse(line).1.len(), 1);
    }

    #[test]
    fn never_used_device_is_recognised() {
        let idle = "7 0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
        assert!(parse(idle).0[0].never_used());
        assert!(!parse(KERNEL_6).0[0].never_used());
    }
}
