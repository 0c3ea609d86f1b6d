//! iopipe-agent: the host side of iopipe. Samples /proc/diskstats and ships
//! `io.diskstats.v1` records as NDJSON on stdout or straight to Kafka; converts
//! captures of other tools into `io.event.v1` records.

mod convert;
mod diskstats;
mod iotrace;
mod lines;
mod output;
mod recent;
mod record;
mod sampler;
mod sysfs;
mod topics;
mod tracer;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use output::{KafkaSink, Sink, StdoutSink};
use iotrace::SamplingConfig;
use record::{DiskstatsRecord, DISKSTATS_SCHEMA, EVENT_SCHEMA};
use sampler::{Sample, Sampler};
use tracer::Tracer;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(name = "iopipe-agent", version, about = "Block I/O telemetry for iopipe")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Sample /proc/diskstats every interval and emit io.diskstats.v1 records.
    Run(RunArgs),
    /// Turn a capture made with biosnoop, blkparse, iosnoop -ts or an MSR-style CSV into
    /// io.event.v1 records; malformed lines are reported by number and skipped.
    Convert(ConvertArgs),
}

#[derive(clap::Args)]
struct OutputArgs {
    #[arg(long, value_enum, default_value = "stdout")]
    output: Output,
    /// Kafka bootstrap servers, with --output kafka.
    #[arg(long, env = "IOPIPE_KAFKA_BROKERS", default_value = "127.0.0.1:9092")]
    brokers: String,
}

impl OutputArgs {
    fn sink(&self) -> Result<Box<dyn Sink>> {
        Ok(match self.output {
            Output::Stdout => Box::new(StdoutSink::new()),
            Output::Kafka => Box::new(KafkaSink::connect(&self.brokers)?),
        })
    }
}

#[derive(clap::Args)]
struct ConvertArgs {
    /// The tool whose output FILE holds.
    #[arg(long, value_enum)]
    from: convert::Format,
    file: PathBuf,
    /// Host the capture was made on (required unless the capture names it, as MSR traces do).
    #[arg(long)]
    host: Option<String>,
    /// Disk name for every I/O (blkparse and iosnoop only know major,minor).
    #[arg(long)]
    disk: Option<String>,
    /// Wall-clock ns since the epoch of the capture's time zero (default: the file's modification time).
    #[arg(long)]
    start_ns: Option<u64>,
    #[command(flatten)]
    out: OutputArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum Output {
    Stdout,
    Kafka,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Where procfs is mounted (a fixture tree in tests).
    #[arg(long, default_value = "/proc")]
    proc_root: PathBuf,
    /// Where sysfs is mounted.
    #[arg(long, default_value = "/sys")]
    sys_root: PathBuf,
    /// Host name in every record (default: the kernel's hostname under --proc-root).
    #[arg(long, env = "IOPIPE_HOST")]
    host: Option<String>,
    /// Sampling interval in milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..))]
    interval_ms: u64,
    /// Stop after this many samples (0: run until SIGINT/SIGTERM).
    #[arg(long, default_value_t = 0)]
    count: u64,
    /// Include partitions, not only whole disks.
    #[arg(long)]
    partitions: bool,
    /// Do not trace block I/O with BPF: sample /proc/diskstats only (no privileges needed).
    #[arg(long)]
    no_trace: bool,
    #[command(flatten)]
    sampling: SamplingArgs,
    #[command(flatten)]
    out: OutputArgs,
}

/// Which I/Os the kernel sends as events.
#[derive(clap::Args)]
struct SamplingArgs {
    /// Every I/O whose total latency exceeds this is an event, whatever its disk's history.
    #[arg(long, default_value_t = 500.0)]
    outlier_ceiling_ms: f64,
    /// Device time above this quantile's log2 bucket of the disk's recent distribution
    /// makes an I/O an outlier.
    #[arg(long, default_value_t = 0.999)]
    outlier_quantile: f64,
    /// Sample 1 in N of the other I/Os (0: none).
    #[arg(long, default_value_t = 1000)]
    uniform_every: u32,
    /// Events per disk per second at most; the rest are dropped and counted.
    #[arg(long, default_value_t = 1000)]
    event_budget: u64,
    /// How long a flight recording of every I/O of a disk lasts.
    #[arg(long, default_value_t = 5)]
    recorder_seconds: u64,
    /// Outliers of one disk within one second that start a flight recording.
    #[arg(long, default_value_t = 8)]
    cluster_outliers: u64,
}

impl SamplingArgs {
    fn config(&self) -> Result<SamplingConfig> {
        if !(self.outlier_ceiling_ms > 0.0 && self.outlier_ceiling_ms.is_finite()) {
            bail!("--outlier-ceiling-ms {} must be a positive number of milliseconds", self.outlier_ceiling_ms);
        }
        if !(0.5..1.0).contains(&self.outlier_quantile) {
            bail!("--outlier-quantile {} must be at least 0.5 and below 1", self.outlier_quantile);
        }
        Ok(SamplingConfig {
            // Rounded: 16.384 ms must be exactly 16384000 ns, a log2 bucket edge.
            ceiling_ns: (self.outlier_ceiling_ms * 1e6).round() as u64,
            uniform_every: self.uniform_every,
            budget_per_second: self.event_budget,
            recorder_ns: self.recorder_seconds.saturating_mul(1_000_000_000),
            cluster_outliers: self.cluster_outliers.max(1),
        })
    }
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Convert(args) => convert_capture(args),
    };
    if let Err(err) = result {
        eprintln!("iopipe-agent: error: {err:#}");
        std::process::exit(1);
    }
}

fn run(args: RunArgs) -> Result<()> {
    let host = match &args.host {
        Some(host) => host.clone(),
        None => kernel_hostname(&args.proc_root)?,
    };
    let sampler = Sampler {
        proc_root: args.proc_root.clone(),
        sys_root: args.sys_root.clone(),
        include_partitions: args.partitions,
    };
    // Fail at start, not at the first tick, when the proc root is wrong.
    sampler
        .sample()
        .with_context(|| format!("cannot read {}: is --proc-root right?", sampler.diskstats_path().display()))?;
    let sampling = args.sampling.config()?;
    let mut tracer =
        if args.no_trace { None } else { Some(Tracer::attach(&host, &args.sys_root, sampling, args.sampling.outlier_quantile)?) };
    let mut sink = args.out.sink()?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, stop.clone()).context("installing signal handlers")?;
    }
    let mut agent = Agent::new(host, topics::topic_for(DISKSTATS_SCHEMA));
    let interval = Duration::from_millis(args.interval_ms);
    let started = Instant::now();
    let mut taken = 0u64;
    while !stop.load(Ordering::Relaxed) && (args.count == 0 || taken < args.count) {
        match sampler.sample() {
            Ok(sample) => agent.emit(&sample, sink.as_mut())?,
            Err(err) => eprintln!("iopipe-agent: reading {}: {err}", sampler.diskstats_path().display()),
        }
        if let Some(tracer) = tracer.as_mut() {
            tracer.emit_interval(sink.as_mut())?;
        }
        taken += 1;
        if args.count != 0 && taken >= args.count {
            break;
        }
        let deadline = started + interval * u32::try_from(taken).unwrap_or(u32::MAX);
        match tracer.as_mut() {
            Some(tracer) => poll_until(deadline, &stop, tracer, sink.as_mut())?,
            None => sleep_until(deadline, &stop),
        }
    }
    if let Some(tracer) = tracer.as_mut() {
        tracer.poll(Duration::ZERO, sink.as_mut())?;
        tracer.emit_interval(sink.as_mut())?;
        eprintln!("iopipe-agent: BPF {}", counters_summary(tracer));
    }
    let closed = sink.close();
    eprintln!("iopipe-agent: {taken} samples, {} bad diskstats lines, {}", agent.bad_lines, sink.summary());
    closed
}

struct Agent {
    host: String,
    topic: String,
    warned_unknown_rotational: HashSet<String>,
    reported_bad_lines: HashSet<String>,
    bad_lines: u64,
}

impl Agent {
    fn new(host: String, topic: String) -> Self {
        Agent { host, topic, warned_unknown_rotational: HashSet::new(), reported_bad_lines: HashSet::new(), bad_lines: 0 }
    }

    fn emit(&mut self, sample: &Sample, sink: &mut dyn Sink) -> Result<()> {
        for bad in &sample.bad_lines {
            self.bad_lines += 1;
            // A malformed line usually stays malformed while its other counters move on:
            // say so once per device and problem, keep counting.
            let device = bad.line.split_whitespace().nth(2).unwrap_or_default();
            if self.reported_bad_lines.insert(format!("{device}: {}", bad.reason)) {
                eprintln!("iopipe-agent: skipped {bad} (reported once; counted every time)");
            }
        }
        for disk in &sample.disks {
            let rotational = disk.rotational.unwrap_or_else(|| {
                if self.warned_unknown_rotational.insert(disk.counters.name.clone()) {
                    eprintln!("iopipe-agent: sysfs has no queue/rotational for {}: reporting it as non-rotational", disk.counters.name);
                }
                false
            });
            let record = DiskstatsRecord::new(&self.host, sample.ts_ns, rotational, &disk.counters);
            let payload = serde_json::to_string(&record)?;
            sink.send(&self.topic, &record.key(), &payload)?;
        }
        sink.flush()
    }
}

/// How many malformed lines of a capture are shown one by one; the rest are counted.
const SHOWN_BAD_LINES: usize = 20;

fn convert_capture(args: ConvertArgs) -> Result<()> {
    let bytes = std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let start_ns = match args.start_ns {
        Some(ns) => ns,
        None => modification_time_ns(&args.file)?,
    };
    let ctx = convert::Context { host: args.host.clone(), disk: args.disk.clone(), start_ns };
    let name = args.file.file_name().map_or_else(|| args.file.display().to_string(), |n| n.to_string_lossy().into_owned());
    let conversion = convert::convert(args.from, &name, &String::from_utf8_lossy(&bytes), &ctx).map_err(anyhow::Error::msg)?;
    for bad in conversion.bad_lines.iter().take(SHOWN_BAD_LINES) {
        eprintln!("iopipe-agent: skipped {bad}");
    }
    if conversion.bad_lines.len() > SHOWN_BAD_LINES {
        eprintln!("iopipe-agent: ... and {} more malformed lines", conversion.bad_lines.len() - SHOWN_BAD_LINES);
    }
    let topic = topics::topic_for(EVENT_SCHEMA);
    let mut sink = args.out.sink()?;
    for event in &conversion.events {
        sink.send(&topic, &event.key(), &serde_json::to_string(event)?)?;
    }
    let closed = sink.close();
    eprintln!(
        "iopipe-agent: {name}: {} events, {} malformed lines skipped, {} other lines, {} I/Os incomplete in the capture; {}",
        conversion.events.len(),
        conversion.bad_lines.len(),
        conversion.other_lines,
        conversion.unmatched,
        sink.summary()
    );
    closed
}

fn modification_time_ns(path: &std::path::Path) -> Result<u64> {
    let modified = std::fs::metadata(path)?.modified()?;
    let since_epoch = modified.duration_since(std::time::UNIX_EPOCH).context("file modified before 1970: pass --start-ns")?;
    Ok(u64::try_from(since_epoch.as_nanos()).unwrap_or(u64::MAX))
}

fn kernel_hostname(proc_root: &std::path::Path) -> Result<String> {
    let path = proc_root.join("sys/kernel/hostname");
    let name = std::fs::read_to_string(&path).with_context(|| format!("reading {} (or pass --host)", path.display()))?;
    let name = name.trim();
    if name.is_empty() {
        bail!("{} is empty: pass --host", path.display());
    }
    Ok(name.to_string())
}

/// Sends sampled events as they come until `deadline`, in short steps so a signal stops
/// the agent promptly.
fn poll_until(deadline: Instant, stop: &AtomicBool, tracer: &mut Tracer, sink: &mut dyn output::Sink) -> Result<()> {
    const STEP: Duration = Duration::from_millis(50);
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        tracer.poll((deadline - now).min(STEP), sink)?;
    }
    Ok(())
}

fn counters_summary(tracer: &Tracer) -> String {
    match tracer.kernel_counters() {
        Ok(counters) => counters.iter().map(|(name, n)| format!("{name} {n}")).collect::<Vec<_>>().join(", "),
        Err(err) => format!("counters unreadable: {err}"),
    }
}

/// Sleeps until `deadline` in short steps so a signal stops the agent promptly.
fn sleep_until(deadline: Instant, stop: &AtomicBool) {
    const STEP: Duration = Duration::from_millis(50);
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        std::thread::sleep((deadline - now).min(STEP));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lines::LineError;

    struct Discard;

    impl Sink for Discard {
        fn send(&mut self, _: &str, _: &str, _: &str) -> Result<()> {
            Ok(())
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn close(&mut self) -> Result<()> {
            Ok(())
        }
        fn summary(&self) -> String {
            String::new()
        }
    }

    fn sample_with_bad_line(line: &str) -> Sample {
        let reason = "6 fields, expected at least 14 (major minor name and 11 counters)";
        Sample { ts_ns: 1, disks: Vec::new(), bad_lines: vec![LineError::new("diskstats", 8, reason, line)] }
    }

    #[test]
    fn a_bad_line_whose_counters_move_on_is_reported_once_and_counted_each_time() {
        let mut agent = Agent::new("h".into(), "t".into());
        agent.emit(&sample_with_bad_line("8 16 sdb 1 2 3"), &mut Discard).unwrap();
        agent.emit(&sample_with_bad_line("8 16 sdb 9 9 9"), &mut Discard).unwrap();
        agent.emit(&sample_with_bad_line("8 32 sdc 1 2 3"), &mut Discard).unwrap();
        assert_eq!(agent.bad_lines, 3);
        assert_eq!(agent.reported_bad_lines.len(), 2, "{:?}", agent.reported_bad_lines);
    }
}
