//! iopipe-agent: the host side of iopipe. Traces block I/O with BPF and samples
//! /proc/diskstats (batched as `io.interval.v1` and `io.eventbatch.v1`, or one by one as
//! `io.diskstats.v1`, `io.hist.v1` and `io.event.v1`, and its own counters in `io.agent.v1`),
//! as NDJSON on stdout or a unix socket, or straight to Kafka; converts captures and
//! telemetry of other tools into `io.event.v1` and `io.window.v1` records.

mod batching;
#[cfg(test)]
mod contract;
mod convert;
mod diskstats;
mod iotrace;
mod kafka_config;
mod lines;
mod output;
mod privileges;
mod recent;
mod reconcile;
mod record;
mod restart;
mod sampler;
mod sysfs;
mod run;
mod signing;
mod telemetry;
mod topics;
mod tracer;

/// The agent's source directory while its tests run, as cargo gives it at run time: the
/// path compiled in names where the test binary was built, and a target directory shared
/// by several checkouts may have built it in another.
#[cfg(test)]
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

use anyhow::{bail, Context, Result};
use batching::RecordMode;
use clap::{Parser, Subcommand, ValueEnum};
use output::{KafkaSink, Sink, StdoutSink, UnixSink, DEFAULT_DELIVERY_TIMEOUT_S};
use iotrace::SamplingConfig;
use kafka_config::KafkaConfig;
use record::EVENT_SCHEMA;
use restart::{PositionKeeper, Resumed, StateFile};
use run::Run;
use sampler::{DiskSelection, Sampler};
use signing::HostKey;
use std::collections::BTreeMap;
use telemetry::MetricsEndpoint;
use tracer::Tracer;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "iopipe-agent", version, about = "Block I/O telemetry for iopipe")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Trace block I/O with BPF and sample /proc/diskstats (--no-trace: sample only).
    ///
    /// Every I/O a disk completes is counted in the kernel into per-disk, per-op log2
    /// histograms of device, queue and total latency; the I/Os worth reading one by one
    /// (outliers, 1 in --uniform-every of the rest, flight recordings, every I/O of a quiet
    /// disk) are sampled as events. Every interval the agent sends each disk's
    /// /proc/diskstats sample with its histograms of the interval (io.interval.v1) and the
    /// events read in it (io.eventbatch.v1), or, with --records single, the three one by one
    /// (io.diskstats.v1, io.hist.v1, io.event.v1 as they complete); and its own counters
    /// (io.agent.v1), which include, per disk, the completions of /proc/diskstats its
    /// histograms lack. Tracing needs CAP_BPF and CAP_PERFMON; every capability is dropped
    /// once the programs are attached. With --no-trace the agent sends its diskstats samples
    /// (intervals without histograms) and counters alone, and needs no privileges.
    Run(RunArgs),
    /// Turn a capture of another tool into io.event.v1 records, or fleet telemetry into
    /// io.window.v1 records.
    ///
    /// Captures: bcc's biosnoop, bpftrace's biosnoop.bt, blkparse, iosnoop -ts (-Qts with
    /// --queued) and MSR-style CSV; telemetry: Perseus-style CSV. Malformed lines are
    /// reported by number and skipped.
    Convert(ConvertArgs),
}

#[derive(clap::Args)]
struct OutputArgs {
    /// Where the records go: NDJSON on stdout, NDJSON to a unix stream socket (--socket),
    /// or each record to its Kafka topic (--brokers).
    #[arg(long, value_enum, default_value = "stdout")]
    output: Output,
    /// Kafka bootstrap servers, with --output kafka.
    #[arg(long, env = "IOPIPE_KAFKA_BROKERS", default_value = "127.0.0.1:9092")]
    brokers: String,
    /// Unix stream socket to write NDJSON to, with --output unix (Vector's socket source).
    #[arg(long, env = "IOPIPE_SOCKET")]
    socket: Option<PathBuf>,
    /// librdkafka properties for the producer, with --output kafka: a file of key=value
    /// lines, such as the TLS and SASL settings (e.g. /etc/iopipe/kafka/agent.properties).
    ///
    /// Blank lines and lines starting with # are ignored, spaces around key and value
    /// trimmed; a value runs to the end of its line; a key may be set once. The settings
    /// add to the agent's own, which the file cannot change: bootstrap.servers is --brokers,
    /// and the agent's delivery accounting rests on the others (enable.idempotence, acks,
    /// retries, max.in.flight, partitioner, linger.ms and the like; message.timeout.ms is --kafka-delivery-timeout;
    /// each refused by name). A malformed line or a property librdkafka does not take stops
    /// the agent at start, naming the file, line and key; no value of the file is ever
    /// printed. A file holding a secret (sasl.password, ssl.key.password, ssl.key.pem)
    /// that its group or others can read is said on stderr: chmod 600 it.
    #[arg(long, value_name = "PATH", env = "IOPIPE_KAFKA_CONFIG")]
    kafka_config: Option<PathBuf>,
    /// How long each record is retried while Kafka is unreachable, in seconds, with
    /// --output kafka (librdkafka's message.timeout.ms); past it the record is lost and
    /// counted (kafka_failed). A stop waits up to this long for what the agent holds.
    ///
    /// With the producer's 64 MiB of memory it bounds the outage the agent rides out
    /// without a loss (docs/agent.md).
    #[arg(long, value_name = "SECONDS", env = "IOPIPE_KAFKA_DELIVERY_TIMEOUT", default_value_t = DEFAULT_DELIVERY_TIMEOUT_S,
          value_parser = clap::value_parser!(u64).range(1..=3_600))]
    kafka_delivery_timeout: u64,
    /// The host's signing key, with --output kafka: a file holding it as 64 lowercase hex
    /// digits, a trailing newline allowed (e.g. /etc/iopipe/kafka/signing.key).
    ///
    /// The key is derived from the fleet's master secret for this host (schema/signing.json)
    /// and signs for records naming this host only. Every record sent to Kafka carries the
    /// header iopipe-sig, "v1=" and the HMAC-SHA256 of the record's value under the key; the
    /// stream job, when it holds the master secret, refuses a record unsigned or signed with
    /// another host's key. Without this option the records go unsigned, said once at start.
    /// A malformed file stops the agent at start, naming the file; no part of the key is
    /// ever printed. A key file its group or others can read is said on stderr: chmod 600 it.
    #[arg(long, value_name = "PATH", env = "IOPIPE_SIGNING_KEY")]
    signing_key: Option<PathBuf>,
}

/// What --output kafka takes from files: read and checked at start, before anything else.
#[derive(Default)]
struct KafkaFiles {
    config: Option<KafkaConfig>,
    signing_key: Option<HostKey>,
}

impl OutputArgs {
    /// The files of --kafka-config and --signing-key, with --output kafka. Says once when
    /// there is no key: the records would be refused by a job that checks signatures.
    fn kafka_files(&self) -> Result<KafkaFiles> {
        if !matches!(self.output, Output::Kafka) {
            return Ok(KafkaFiles::default());
        }
        let config = self.kafka_config.as_deref().map(KafkaConfig::load).transpose()?;
        let signing_key = self.signing_key.as_deref().map(HostKey::load).transpose()?;
        if signing_key.is_none() {
            eprintln!("iopipe-agent: no --signing-key (IOPIPE_SIGNING_KEY): records go to Kafka unsigned, and a stream \
                       job that holds the master secret refuses every one of them");
        }
        Ok(KafkaFiles { config, signing_key })
    }

    fn sink(&self, kafka_files: KafkaFiles) -> Result<Box<dyn Sink>> {
        Ok(match self.output {
            Output::Stdout => Box::new(StdoutSink::new()),
            Output::Kafka => {
                let delivery_timeout = Duration::from_secs(self.kafka_delivery_timeout);
                Box::new(KafkaSink::connect(&self.brokers, kafka_files.config.as_ref(), kafka_files.signing_key, delivery_timeout)?)
            }
            Output::Unix => match &self.socket {
                Some(path) => Box::new(UnixSink::new(path.clone())),
                None => bail!("--output unix needs --socket PATH (where Vector's socket source listens)"),
            },
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
    /// Whether the captured disks rotate (true for HDDs): with it, the diskstats samples the
    /// capture adds up to are sent too, so its disks get windows judged by their class.
    #[arg(long)]
    rotational: Option<bool>,
    /// The captured disks' model, with --rotational: flash drives are compared with their model's.
    #[arg(long, requires = "rotational")]
    model: Option<String>,
    /// The captured disks' rotation rate, with --rotational true: retries are told by whole
    /// revolutions of it instead of those of any common rate.
    #[arg(long, requires = "rotational", value_parser = rotation_rate)]
    rpm: Option<u32>,
    /// The capture was made with `iosnoop -Q`: its start times are the requests' insertion
    /// in the queue, so its latencies are total times and no device time is claimed.
    #[arg(long)]
    queued: bool,
    #[command(flatten)]
    out: OutputArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum Output {
    Stdout,
    Kafka,
    Unix,
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
    /// How often, in milliseconds, the agent samples /proc/diskstats and sends the
    /// interval's histograms and its own counters.
    #[arg(long, default_value = env!("IOPIPE_DEFAULT_INTERVAL_MS"), value_parser = clap::value_parser!(u64).range(10..))]
    interval_ms: u64,
    /// Stop after this many intervals (0: run until SIGINT/SIGTERM).
    #[arg(long, default_value_t = 0)]
    count: u64,
    /// Which records carry the disks' samples, histograms and events.
    ///
    /// batched: per disk and interval, one io.interval.v1 (its /proc/diskstats sample and
    /// every histogram of the interval) and io.eventbatch.v1 records of the events read in
    /// the interval (as many as the schema allows in one, a full one sent at once), all sent
    /// as the interval closes. single: io.diskstats.v1, io.hist.v1 and io.event.v1 one by
    /// one, events as they complete, as agents sent before the batches (every pipeline that
    /// takes the batches still takes these). Either way a disk's histograms with no diskstats
    /// sample of the disk in their interval (the read failed, the disk was removed or used
    /// first after the sample, or the moments after a --count run's last sample) go as
    /// io.hist.v1 records.
    #[arg(long, value_enum, default_value = "batched")]
    records: RecordMode,
    /// Include partitions, not only whole disks.
    #[arg(long)]
    partitions: bool,
    /// Report only this disk, by its name in /proc/diskstats (repeatable), e.g. --disk sda
    /// --disk nvme0n1: its diskstats, histograms and events. Every disk when none is named.
    #[arg(long = "disk", value_name = "NAME")]
    disks: Vec<String>,
    /// Do not trace block I/O with BPF: sample /proc/diskstats only (no privileges needed).
    #[arg(long)]
    no_trace: bool,
    /// Attach raw tracepoints even where BTF-typed ones work (the fallback for kernels
    /// without tracepoint BTF, slower: every field is a probe read).
    #[arg(long, conflicts_with = "no_trace")]
    raw_tp: bool,
    /// A label of this host on every diskstats and agent record, KEY=VALUE (repeatable),
    /// e.g. --label rack=r12.
    #[arg(long = "label", value_name = "KEY=VALUE")]
    labels: Vec<String>,
    /// Serve the agent's counters in Prometheus text format at http://ADDRESS/metrics (off
    /// unless given; 127.0.0.1:9464 keeps it on the host). The agent holds no capability
    /// by then: a port below 1024 cannot be bound.
    #[arg(long, value_name = "ADDRESS", env = "IOPIPE_METRICS_LISTEN")]
    metrics_listen: Option<String>,
    /// Leave the name and pid of the task that dispatched each I/O out of events (comm "",
    /// pid 0, as for an unknown task): for hosts whose process names are not to leave them.
    #[arg(long, conflicts_with = "no_trace")]
    no_comm: bool,
    /// Keep where each disk's count of missing completions stands in PATH, so that a
    /// restart loses nothing silently (off when not given; e.g. /run/iopipe/agent-state.json).
    ///
    /// Every interval the agent holds each disk's /proc/diskstats completions against its
    /// histograms and reports what they lack (ios_untraced). With this file it also
    /// records, per disk, the completions its delivered records account for: records
    /// written to stdout or the socket, or acknowledged by the Kafka brokers (a record still
    /// in the producer's memory holds the position back; one shed or failed for good, counted
    /// in socket_shed, kafka_shed or kafka_failed, does not). An agent started again with the
    /// file, on the same boot and host, resumes from there each disk of the same major:minor
    /// and name whose count has not gone back: what completed in the interval the previous
    /// agent had not delivered, and while no agent ran, is reported missing (ios_untraced,
    /// untraced_by_disk) and counted apart as lost to the restart (ios_lost_restart,
    /// lost_restart_by_disk). A restart loses the latencies of those I/Os, never their count.
    /// A missing, unreadable or foreign file is said on stderr, and the disks count from this
    /// start. The file serves within one boot (a tmpfs such as /run suits it); one agent per
    /// file.
    #[arg(long, value_name = "PATH", conflicts_with = "no_trace")]
    state_file: Option<PathBuf>,
    #[command(flatten)]
    sampling: SamplingArgs,
    #[command(flatten)]
    out: OutputArgs,
}

/// Which I/Os the kernel sends as events; the defaults are schema/sampling.json's.
#[derive(clap::Args)]
struct SamplingArgs {
    /// Every I/O whose total latency exceeds this is an event, whatever its disk's history.
    #[arg(long, default_value = env!("IOPIPE_DEFAULT_OUTLIER_CEILING_MS"))]
    outlier_ceiling_ms: f64,
    /// Device time above this quantile's log2 bucket of the disk's recent distribution
    /// makes an I/O an outlier.
    #[arg(long, default_value = env!("IOPIPE_DEFAULT_OUTLIER_QUANTILE"))]
    outlier_quantile: f64,
    /// Sample 1 in N of the other I/Os (0: none).
    #[arg(long, default_value = env!("IOPIPE_DEFAULT_UNIFORM_EVERY"))]
    uniform_every: u32,
    /// Events per disk per second at most; the rest are dropped and counted.
    #[arg(long, default_value = env!("IOPIPE_DEFAULT_EVENT_BUDGET"))]
    event_budget: u64,
    /// How long a flight recording of every I/O of a disk lasts.
    #[arg(long, default_value = env!("IOPIPE_DEFAULT_RECORDER_SECONDS"))]
    recorder_seconds: u64,
    /// Outliers of one disk within one second that start a flight recording.
    #[arg(long, default_value = env!("IOPIPE_DEFAULT_CLUSTER_OUTLIERS"))]
    cluster_outliers: u64,
    /// Request queues the kernel's per-disk tables hold (0: twice the host's, at least
    /// 64). Raise it when the agent reports disk_map_full.
    #[arg(long, default_value_t = 0)]
    max_disks: u32,
    /// A disk with fewer completions than this in the last second is quiet: every I/O of it
    /// is recorded, so a burst on a near-idle disk or a dying disk's few slow reads arrive
    /// whole, at a cost bounded by the quietness itself (0: off).
    #[arg(long, default_value = env!("IOPIPE_DEFAULT_QUIET_IOS"))]
    quiet_ios: u64,
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
            max_disks: self.max_disks,
            quiet_ios: self.quiet_ios,
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
    let labels = parse_labels(&args.labels)?;
    // Before the programs attach: a bad file stops the agent before it changes anything.
    let kafka_files = args.out.kafka_files()?;
    let sampler = Sampler {
        proc_root: args.proc_root.clone(),
        sys_root: args.sys_root.clone(),
        include_partitions: args.partitions,
        selection: DiskSelection::named(&args.disks),
    };
    // Fail at start, not at the first tick, when the proc root is wrong. Read before the
    // programs attach: the completions counted missing are counted from here.
    let before_tracing = sampler
        .sample()
        .with_context(|| format!("cannot read {}: is --proc-root right?", sampler.diskstats_path().display()))?;
    for absent in sampler.selection.absent_from(&before_tracing) {
        eprintln!("iopipe-agent: --disk {absent}: /proc/diskstats has no such disk with I/O (a partition needs --partitions): it is reported from its first I/O");
    }
    let sampling = args.sampling.config()?;
    let state_file = args.state_file.as_ref().and_then(|path| open_state_file(path, &args.proc_root, &host));
    let resumed = state_file.as_ref().map(|file| resume(file, &before_tracing)).unwrap_or_default();
    let tracer = if args.no_trace {
        None
    } else {
        let tracer = Tracer::attach(&host, &args.sys_root, sampling, args.sampling.outlier_quantile, args.raw_tp, &before_tracing, &resumed)?;
        let tracer = tracer.only(sampler.selection.clone());
        Some(if args.no_comm { tracer.without_tasks() } else { tracer })
    };
    // Before any thread starts (the metrics endpoint's, the Kafka client's): a thread keeps
    // the capabilities it was created with.
    privileges::drop_all()?;
    if !args.no_trace {
        eprintln!("iopipe-agent: programs attached; every capability dropped");
    }
    let interval = Duration::from_millis(args.interval_ms);
    let metrics = args.metrics_listen.as_deref().map(|at| MetricsEndpoint::listen(at, telemetry::alive_within(interval))).transpose()?;
    if let Some(metrics) = &metrics {
        eprintln!("iopipe-agent: metrics on http://{}/metrics", metrics.address);
        eprintln!("iopipe-agent: liveness on http://{}/healthz", metrics.address);
    }
    Run {
        host,
        labels,
        sampler,
        tracer,
        sink: args.out.sink(kafka_files)?,
        metrics,
        positions: state_file.map(PositionKeeper::new),
        interval,
        count: args.count,
        records: args.records,
    }
    .execute()
}

/// The state file at `path` of this boot and host; none, said once, when the boot cannot
/// be told (the file would be trusted across a reboot that reset every count).
fn open_state_file(path: &std::path::Path, proc_root: &std::path::Path, host: &str) -> Option<StateFile> {
    match restart::boot_id(proc_root) {
        Ok(boot_id) => Some(StateFile::new(path.to_path_buf(), &boot_id, host)),
        Err(err) => {
            eprintln!("iopipe-agent: cannot read the boot id under {} ({err}): --state-file {} is not used", proc_root.display(), path.display());
            None
        }
    }
}

/// The disks that resume from the positions a previous agent left, each other one said.
fn resume(file: &StateFile, before_tracing: &sampler::Sample) -> Vec<Resumed> {
    let stored = match file.load() {
        Ok(stored) => stored,
        Err(why) => {
            eprintln!("iopipe-agent: state file {} {why}: every disk counts from this start", file.path.display());
            return Vec::new();
        }
    };
    let reading = before_tracing.disks.iter().map(|d| {
        let c = &d.counters;
        (iotrace::DiskId { major: c.major, minor: c.minor }, c.name.as_str(), tracer::completions(d))
    });
    let (resumed, notes) = restart::resumable(&stored, reading);
    for note in notes {
        eprintln!("iopipe-agent: state file {}: {note}", file.path.display());
    }
    let lost: Vec<String> = resumed.iter().map(|r| format!("{} {}", r.name, r.lost())).collect();
    eprintln!(
        "iopipe-agent: resumed {} disks from state file {}; completions lost to the restart: {}",
        resumed.len(),
        file.path.display(),
        if lost.is_empty() { "none".to_string() } else { lost.join(", ") }
    );
    resumed
}

/// `--rpm`: one of the rates a disk can report (sysfs::ROTATION_RATES).
fn rotation_rate(text: &str) -> Result<u32, String> {
    let rates = sysfs::ROTATION_RATES;
    text.parse::<u32>().ok().filter(|rpm| rates.contains(rpm))
        .ok_or_else(|| format!("{text} is not a rotation rate a disk reports ({} to {} rpm)", rates.start(), rates.end()))
}

/// `--label rack=r12 --label zone=eu-1a`.
fn parse_labels(labels: &[String]) -> Result<BTreeMap<String, String>> {
    labels
        .iter()
        .map(|label| match label.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => Ok((key.trim().to_string(), value.trim().to_string())),
            _ => bail!("--label {label:?} must be KEY=VALUE, e.g. --label rack=r12"),
        })
        .collect()
}

/// How many malformed lines of a capture are shown one by one; the rest are counted.
const SHOWN_BAD_LINES: usize = 20;

fn convert_capture(args: ConvertArgs) -> Result<()> {
    let bytes = std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    if args.from == convert::Format::Perseus {
        return convert_telemetry(&args, &String::from_utf8_lossy(&bytes));
    }
    let start_ns = match args.start_ns {
        Some(ns) => ns,
        None => modification_time_ns(&args.file)?,
    };
    if args.queued && args.from != convert::Format::Iosnoop {
        bail!("--queued is for iosnoop captures made with -Q, whose output does not say so; the other formats say \
               where their times start");
    }
    if args.rpm.is_some() && args.rotational == Some(false) {
        bail!("--rpm is the rotation rate of a disk that rotates: pass --rotational true with it, or leave it out");
    }
    let ctx = convert::Context { host: args.host.clone(), disk: args.disk.clone(), start_ns, queued: args.queued };
    let name = file_name(&args.file);
    let conversion = convert::convert(args.from, &name, &String::from_utf8_lossy(&bytes), &ctx).map_err(anyhow::Error::msg)?;
    report_bad_lines(&conversion.bad_lines);
    let facts = args.rotational.map(|rotational| convert::diskstats::DiskFacts { rotational, model: args.model.clone(), rpm: args.rpm });
    if facts.is_some() && !matches!(args.out.output, Output::Stdout) {
        bail!("--rotational writes events and diskstats as one stream in time order, for `make detect`: with --output \
               kafka or unix they would go to two topics and the diskstats run ahead of the events; use --output stdout");
    }
    let samples = match &facts {
        Some(_) => convert::diskstats::samples(&conversion.events).map_err(anyhow::Error::msg)?,
        None => Vec::new(),
    };
    let records = in_time_order(&conversion.events, &samples, facts.as_ref());
    let diskstats_note = match &facts {
        Some(_) => format!(", {} diskstats samples counted from them", samples.len()),
        None => String::new(),
    };
    send_converted(&args.out, records, |summary| {
        eprintln!(
            "iopipe-agent: {name}: {} events{diskstats_note}, {} malformed lines skipped, {} other lines, {} I/Os incomplete in the capture; {summary}",
            conversion.events.len(),
            conversion.bad_lines.len(),
            conversion.other_lines,
            conversion.unmatched,
        );
        if facts.is_none() {
            eprintln!("iopipe-agent: no diskstats for {name}'s disks, so no windows: pass --rotational true|false (and --model) to count them from its I/Os");
        }
        let timed_from_queue = conversion.events.iter().filter(|e| e.timed_from == record::TimedFrom::Queue).count();
        if timed_from_queue > 0 {
            eprintln!("iopipe-agent: {name}: {timed_from_queue} events timed from the queue (timed_from queue): total times, \
                       whose device time is unknown, so no verdict on device time rests on them");
        }
    })
}

/// Events (at their completion) and diskstats samples as one stream in time order, as an
/// agent sends them: each disk's clock in the job follows its records. Serialised as they
/// are sent; without samples, the events as the capture gave them.
fn in_time_order<'a>(
    events: &'a [record::EventRecord],
    samples: &'a [convert::diskstats::Sample],
    facts: Option<&'a convert::diskstats::DiskFacts>,
) -> impl Iterator<Item = (&'static str, String, serde_json::Result<String>)> + 'a {
    let mut order: Vec<usize> = (0..events.len()).collect();
    if facts.is_some() {
        order.sort_by_key(|&i| events[i].complete_ns);
    }
    let mut next_sample = samples.iter().peekable();
    let mut next_event = order.into_iter().peekable();
    std::iter::from_fn(move || {
        let sample_first = match (next_sample.peek(), next_event.peek()) {
            (Some(s), Some(&i)) => s.ts_ns < events[i].complete_ns,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        if sample_first {
            let s = next_sample.next()?;
            let facts = facts?;
            let mut r = record::DiskstatsRecord::new(&s.host, s.ts_ns, facts.rotational, &s.counters);
            r.model = facts.model.as_deref();
            r.rpm = facts.rpm;
            r.derived_from_events = Some(true);
            Some((record::DISKSTATS_SCHEMA, r.key(), serde_json::to_string(&r)))
        } else {
            let e = &events[next_event.next()?];
            Some((EVENT_SCHEMA, e.key(), serde_json::to_string(e)))
        }
    })
}

/// Sends converted records of one schema to their topic, then reports with the sink's
/// summary (what it delivered, and what not) before saying whether all were delivered.
fn send_converted(
    out: &OutputArgs,
    records: impl Iterator<Item = (&'static str, String, serde_json::Result<String>)>,
    report: impl FnOnce(&str),
) -> Result<()> {
    let mut sink = out.sink(out.kafka_files()?)?;
    let mut topic_of: BTreeMap<&str, String> = BTreeMap::new();
    for (schema, key, json) in records {
        let topic = topic_of.entry(schema).or_insert_with(|| topics::topic_for(schema));
        sink.send(topic, &key, &json?)?;
    }
    let closed = sink.close();
    report(&sink.summary());
    closed
}

/// Telemetry of a host's drives becomes its windows; the file's own times are absolute.
fn convert_telemetry(args: &ConvertArgs, text: &str) -> Result<()> {
    let name = file_name(&args.file);
    let host = args.host.as_deref().with_context(|| format!("{name} does not say which host its drives are in: pass --host"))?;
    let conversion = convert::perseus::convert(&name, text, host).map_err(anyhow::Error::msg)?;
    report_bad_lines(&conversion.bad_lines);
    let records = conversion.windows.iter().map(|w| (convert::perseus::WINDOW_SCHEMA, w.key(), serde_json::to_string(w)));
    send_converted(&args.out, records, |summary| {
        eprintln!("iopipe-agent: {name}: {} windows, {} malformed lines skipped; {summary}", conversion.windows.len(), conversion.bad_lines.len())
    })
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

fn report_bad_lines(bad_lines: &[lines::LineError]) {
    for bad in bad_lines.iter().take(SHOWN_BAD_LINES) {
        eprintln!("iopipe-agent: skipped {bad}");
    }
    if bad_lines.len() > SHOWN_BAD_LINES {
        eprintln!("iopipe-agent: ... and {} more malformed lines", bad_lines.len() - SHOWN_BAD_LINES);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_key_value_pairs() {
        let labels = parse_labels(&["rack=r12".into(), "zone = eu-1a".into()]).unwrap();
        assert_eq!(labels.into_iter().collect::<Vec<_>>(), [("rack".into(), "r12".into()), ("zone".into(), "eu-1a".into())]);
        assert!(parse_labels(&["rack".into()]).is_err());
        assert!(parse_labels(&["=x".into()]).is_err());
    }

    #[test]
    fn the_default_interval_is_the_one_the_job_counts_a_histograms_span_as_at_least() {
        let pipeline: serde_json::Value = serde_json::from_str(contract::PIPELINE).unwrap();
        let Command::Run(run) = Cli::try_parse_from(["iopipe-agent", "run"]).unwrap().command else { unreachable!() };
        assert_eq!(run.interval_ms, pipeline["agent_interval_s"].as_u64().unwrap() * 1000);
    }
}
