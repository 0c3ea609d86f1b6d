//! Fleet telemetry in the layout of the Perseus fail-slow dataset (Alibaba, FAST'23): a
//! CSV with the header `ts,disk_id,throughput,latency`, one row per drive every 15 s, the
//! drives of one host. `ts` is Unix seconds at the end of the sample, `throughput` bytes/s,
//! `latency` the drive's mean I/O latency over the sample in microseconds. Each row becomes
//! an io.window.v1 window of `metrics: throughput_latency`: those two figures and nothing
//! the telemetry did not measure. Rows with `NA` are malformed lines, skipped.

use crate::lines::LineError;
use crate::record::disk_key;
use serde::Serialize;

pub const WINDOW_SCHEMA: &str = "io.window.v1";
/// The dataset's sampling period: one row per drive every 15 s.
const PERIOD_S: u64 = 15;
const NS_PER_S: u64 = 1_000_000_000;
/// io.window.v1 times are ns since the epoch from 2001 on: a `ts` before is not Unix seconds.
const EARLIEST_TS_S: u64 = 1_000_000_000;

/// One drive over one telemetry sample, as io.window.v1 carries it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TelemetryWindow {
    pub schema: &'static str,
    pub host: String,
    pub disk: String,
    pub op: &'static str,
    pub window_start_ns: u64,
    pub window_end_ns: u64,
    pub window_s: u64,
    pub interval_s: f64,
    pub samples: u32,
    pub metrics: &'static str,
    pub kib_per_s: f64,
    pub await_ms: f64,
}

impl TelemetryWindow {
    pub fn key(&self) -> String {
        disk_key(&self.host, &self.disk)
    }
}

pub struct Conversion {
    pub windows: Vec<TelemetryWindow>,
    pub bad_lines: Vec<LineError>,
}

/// Every row of the file, in time order (then by drive): the order a live feed delivers them.
pub fn convert(input_name: &str, text: &str, host: &str) -> Result<Conversion, String> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, header)) if is_header(header) => {}
        Some((_, first)) => {
            return Err(format!(
                "{input_name}: the first line is not the header ts,disk_id,throughput,latency: {:?}: check that --from names the tool that made it",
                crate::lines::excerpt(first)
            ))
        }
        None => return Err(format!("{input_name} is empty")),
    }
    let mut windows = Vec::new();
    let mut bad_lines = Vec::new();
    for (index, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        match window(line, host) {
            Ok(w) => windows.push(w),
            Err(reason) => bad_lines.push(LineError::new(input_name, index + 1, reason, line)),
        }
    }
    if windows.is_empty() {
        let first = bad_lines.first().map_or_else(String::new, |b| format!(": the first, line {}: {}", b.line_no, b.reason));
        return Err(format!("{input_name}: no row converted, {} malformed{first}", bad_lines.len()));
    }
    windows.sort_by(|a, b| (a.window_end_ns, &a.disk).cmp(&(b.window_end_ns, &b.disk)));
    Ok(Conversion { windows, bad_lines })
}

fn is_header(line: &str) -> bool {
    let names: Vec<String> = line.split(',').map(|f| unquote(f).to_ascii_lowercase()).collect();
    names == ["ts", "disk_id", "throughput", "latency"]
}

fn unquote(field: &str) -> &str {
    let f = field.trim();
    f.strip_prefix('"').and_then(|f| f.strip_suffix('"')).unwrap_or(f)
}

fn window(line: &str, host: &str) -> Result<TelemetryWindow, String> {
    let fields: Vec<&str> = line.split(',').map(unquote).collect();
    if fields.len() != 4 {
        return Err(format!("{} fields, expected 4: ts,disk_id,throughput,latency", fields.len()));
    }
    let ts_s: u64 = super::field(fields[0], "ts")?;
    if ts_s < EARLIEST_TS_S {
        return Err(format!("ts {ts_s} is before 2001: not Unix seconds"));
    }
    if fields[1].is_empty() {
        return Err("empty disk_id".into());
    }
    let bytes_per_s = measured(fields[2], "throughput")?;
    let latency_us = measured(fields[3], "latency")?;
    let end_ns = ts_s.checked_mul(NS_PER_S).ok_or_else(|| format!("ts {ts_s} is too far in the future"))?;
    Ok(TelemetryWindow {
        schema: WINDOW_SCHEMA,
        host: host.to_string(),
        disk: fields[1].to_string(),
        op: "all",
        window_start_ns: end_ns - PERIOD_S * NS_PER_S,
        window_end_ns: end_ns,
        window_s: PERIOD_S,
        interval_s: PERIOD_S as f64,
        samples: 1,
        metrics: "throughput_latency",
        kib_per_s: bytes_per_s / 1024.0,
        await_ms: latency_us / 1000.0,
    })
}

/// A figure the telemetry measured: finite and not negative; `NA` where it measured nothing.
fn measured(text: &str, what: &str) -> Result<f64, String> {
    if text.eq_ignore_ascii_case("NA") {
        return Err(format!("{what} is NA: not measured"));
    }
    let value: f64 = super::field(text, what)?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("{what} {text} is not a finite figure of at least 0"));
    }
    Ok(value)
}
