//! Where records go: NDJSON on stdout or a unix socket (for Vector), or straight to Kafka.

use crate::kafka_config::{KafkaConfig, DELIVERY_TIMEOUT, PRODUCER_SETTINGS};
use crate::signing::{self, HostKey};
use anyhow::{Context, Result};
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;
use crate::telemetry::Counter;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io::{self, BufWriter, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub trait Sink {
    fn send(&mut self, topic: &str, key: &str, payload: &str) -> Result<()>;
    /// Called after each batch of records of one sample.
    fn flush(&mut self) -> Result<()>;
    /// Delivers what is still buffered; called once, before the exit summary.
    fn close(&mut self) -> Result<()>;
    /// What was sent and lost so far, as the agent's own counters.
    fn counters(&self) -> Vec<Counter>;
    /// Records handed to `send` so far.
    fn records_handed(&self) -> u64;
    /// How many of the records handed so far, counted from the first, the sink is done
    /// with: delivered as far as it can know (written to the pipe or socket, acknowledged
    /// by the brokers), or lost for good and counted (shed, failed). The state file's
    /// position never passes them (restart.rs).
    fn records_settled(&self) -> u64;
    /// A one-line account of what was sent and lost, for the exit log.
    fn summary(&self) -> String {
        self.counters().iter().map(|c| format!("{} {}", c.name, c.value)).collect::<Vec<_>>().join(", ")
    }
}

pub struct StdoutSink {
    out: BufWriter<io::Stdout>,
    written: u64,
    /// Records written before the last flush that succeeded: in the pipe, not the buffer.
    flushed: u64,
}

impl StdoutSink {
    pub fn new() -> Self {
        StdoutSink { out: BufWriter::new(io::stdout()), written: 0, flushed: 0 }
    }
}

impl Sink for StdoutSink {
    fn send(&mut self, _topic: &str, _key: &str, payload: &str) -> Result<()> {
        self.out.write_all(payload.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.written += 1;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.out.flush().context("writing to stdout")?;
        self.flushed = self.written;
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        self.flush()
    }

    fn counters(&self) -> Vec<Counter> {
        vec![Counter::new("stdout_records", self.written, "records written to stdout")]
    }

    fn records_handed(&self) -> u64 {
        self.written
    }

    fn records_settled(&self) -> u64 {
        self.flushed
    }
}

#[derive(Default)]
pub struct DeliveryStats {
    pub delivered: AtomicU64,
    pub failed: AtomicU64,
    /// Records refused because the bounded local queue was full (broker unreachable
    /// for long): shed, counted, never silent.
    pub shed: AtomicU64,
    settlement: Mutex<Settlement>,
}

impl DeliveryStats {
    fn settle(&self, record: u64) {
        self.settlement.lock().unwrap_or_else(|e| e.into_inner()).settle(record);
    }

    fn settled(&self) -> u64 {
        self.settlement.lock().unwrap_or_else(|e| e.into_inner()).prefix
    }
}

/// Which records, numbered in the order they were sent, the producer is done with. Its
/// reports come in any order across partitions: only the unbroken run from the first
/// counts, so a record still in the producer's memory holds back all after it.
#[derive(Default)]
struct Settlement {
    /// Records 0..prefix are all settled.
    prefix: u64,
    /// Settled records beyond the first one still out.
    ahead: BTreeSet<u64>,
}

impl Settlement {
    fn settle(&mut self, record: u64) {
        if record != self.prefix {
            if record > self.prefix {
                self.ahead.insert(record);
            }
            return;
        }
        self.prefix += 1;
        while self.ahead.remove(&self.prefix) {
            self.prefix += 1;
        }
    }
}

/// What librdkafka says of its brokers and requests (a connection refused, every broker
/// down, a request timed out, a refused login), on the agent's stderr: each kind the first
/// time, then at most once every SAID_AGAIN_AFTER with how often it came meanwhile. Without
/// it an agent holding a backlog, or giving one up at its stop, would not say why.
#[derive(Default)]
struct KafkaSays {
    kinds: Mutex<HashMap<String, Said>>,
    last: Mutex<Option<String>>,
}

struct Said {
    at: Instant,
    /// Times it came since it was last said.
    since: u64,
}

/// How long a kind of librdkafka's errors is kept quiet after it was said: a broker away
/// for a minute is refused at every reconnect, backing off up to 10 s.
const SAID_AGAIN_AFTER: Duration = Duration::from_secs(30);

impl KafkaSays {
    /// The line to print for `what`, of `kind`, at `now`; None while the kind is kept quiet.
    fn line(&self, kind: &str, what: &str, now: Instant) -> Option<String> {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(what.to_owned());
        let mut kinds = self.kinds.lock().unwrap_or_else(|e| e.into_inner());
        match kinds.get_mut(kind) {
            None => {
                kinds.insert(kind.to_owned(), Said { at: now, since: 0 });
                Some(format!("iopipe-agent: kafka: {what}"))
            }
            Some(said) if now.duration_since(said.at) >= SAID_AGAIN_AFTER => {
                let line = format!("iopipe-agent: kafka: {what} ({} more like it in the last {:.0?})", said.since, now.duration_since(said.at));
                *said = Said { at: now, since: 0 };
                Some(line)
            }
            Some(said) => {
                said.since += 1;
                None
            }
        }
    }

    fn say(&self, kind: &str, what: &str) {
        if let Some(line) = self.line(kind, what, Instant::now()) {
            eprintln!("{line}");
        }
    }

    /// The last thing librdkafka said, quiet or not.
    fn last(&self) -> Option<String> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

struct DeliveryCounter {
    stats: Arc<DeliveryStats>,
    says: Arc<KafkaSays>,
}

impl ClientContext for DeliveryCounter {
    /// Its warnings and worse, but for a broker's failures (facility FAIL), each of which
    /// comes as an error too; a broker's connection (`localhost:9092/1: ...`) is a kind of its own.
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        if (level as i32) <= RDKafkaLogLevel::Warning as i32 && facility != "FAIL" {
            self.says.say(&format!("{facility} {}", broker_of(message)), message);
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.says.say(&format!("{error} {}", broker_of(reason)), &format!("{error}: {reason}"));
    }
}

/// The broker a librdkafka message is about (`localhost:19092/1: Connect to ...`), or "".
fn broker_of(message: &str) -> &str {
    message.split_once(": ").map_or("", |(first, _)| if first.contains('/') { first } else { "" })
}

impl ProducerContext for DeliveryCounter {
    /// The record's number in sending order.
    type DeliveryOpaque = Box<u64>;

    fn delivery(&self, result: &DeliveryResult<'_>, record: Box<u64>) {
        self.stats.settle(*record);
        match result {
            Ok(_) => self.stats.delivered.fetch_add(1, Ordering::Relaxed),
            Err((err, _)) => {
                let failed = self.stats.failed.fetch_add(1, Ordering::Relaxed);
                if failed.is_power_of_two() || failed == 0 {
                    eprintln!("iopipe-agent: kafka delivery failed ({} so far): {err}", failed + 1);
                }
                failed
            }
        };
    }
}

pub struct KafkaSink {
    producer: ThreadedProducer<DeliveryCounter>,
    stats: Arc<DeliveryStats>,
    says: Arc<KafkaSays>,
    handed: u64,
    /// Signs every record when given (signing.rs); without it records go unsigned.
    signing_key: Option<HostKey>,
    /// How long a record is retried before it counts as failed (message.timeout.ms).
    delivery_timeout: Duration,
}

/// How long the agent retries a record by default: about as long as the producer's 64 MiB
/// holds a busy host's records (230 KB/s, infra/vector/README.md).
pub const DEFAULT_DELIVERY_TIMEOUT_S: u64 = 300;

/// How long past the delivery timeout closing waits for librdkafka to give its last
/// records up: it looks for records out of time once a second.
const CLOSE_MARGIN: Duration = Duration::from_secs(10);
/// How often closing looks at the delivery's progress.
const CLOSE_STEP: Duration = Duration::from_secs(1);
const CLOSE_PROGRESS_EVERY: Duration = Duration::from_secs(5);

impl KafkaSink {
    /// A producer for `brokers`, with the settings of `file` added to the agent's own, that
    /// signs every record with `signing_key` when given and retries each for `delivery_timeout`.
    pub fn connect(
        brokers: &str,
        file: Option<&KafkaConfig>,
        signing_key: Option<HostKey>,
        delivery_timeout: Duration,
    ) -> Result<Self> {
        let stats = Arc::new(DeliveryStats::default());
        let says = Arc::new(KafkaSays::default());
        let mut config = ClientConfig::new();
        config.set("bootstrap.servers", brokers);
        for (key, value) in PRODUCER_SETTINGS {
            config.set(key, value);
        }
        config.set(DELIVERY_TIMEOUT[0], delivery_timeout.as_millis().to_string());
        if let Some(file) = file {
            file.apply(&mut config);
        }
        let producer: ThreadedProducer<DeliveryCounter> = config
            .create_with_context(DeliveryCounter { stats: stats.clone(), says: says.clone() })
            .map_err(|err| match file {
                Some(file) => file.refused(err),
                None => err.into(),
            })
            .with_context(|| format!("creating a Kafka producer for {brokers}"))?;
        Ok(KafkaSink { producer, stats, says, handed: 0, signing_key, delivery_timeout })
    }

    fn last_said(&self) -> String {
        self.says.last().unwrap_or_else(|| "nothing".to_owned())
    }
}

/// The record of `payload`, numbered `number` in sending order, with its signature header
/// when there is a key. The signature is of the payload's bytes as handed to the producer:
/// compression happens below the record, and the stream job sees these bytes again.
fn kafka_record<'a>(
    topic: &'a str,
    key: &'a str,
    payload: &'a str,
    number: u64,
    signing_key: Option<&HostKey>,
) -> BaseRecord<'a, str, str, Box<u64>> {
    let record = BaseRecord::with_opaque_to(topic, Box::new(number)).key(key).payload(payload);
    match signing_key {
        Some(signing_key) => {
            let signature = signing_key.header_value(payload.as_bytes());
            let header = Header { key: signing::header_name(), value: Some(&signature) };
            record.headers(OwnedHeaders::new_with_capacity(1).insert(header))
        }
        None => record,
    }
}

impl Sink for KafkaSink {
    fn send(&mut self, topic: &str, key: &str, payload: &str) -> Result<()> {
        let number = self.handed;
        self.handed += 1;
        let record = kafka_record(topic, key, payload, number, self.signing_key.as_ref());
        match self.producer.send(record) {
            Ok(()) => Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                self.stats.shed.fetch_add(1, Ordering::Relaxed);
                self.stats.settle(number);
                Ok(())
            }
            Err((err, _)) => Err(err).with_context(|| format!("producing to {topic}")),
        }
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    /// Waits until librdkafka is done with every buffered record: delivered, or failed at
    /// its delivery timeout. A stop never drops a record the agent would still retry had it
    /// gone on running, whether the brokers are taking a backlog or all away: a stall of
    /// any length short of the timeout may end (a broker restarting, a request on a dead
    /// connection waiting out socket.timeout.ms). Records that failed meanwhile are an error.
    fn close(&mut self) -> Result<()> {
        let deadline = Instant::now() + self.delivery_timeout + CLOSE_MARGIN;
        let failed_before = self.stats.failed.load(Ordering::Relaxed);
        let mut said_at = Instant::now();
        loop {
            match self.producer.flush(CLOSE_STEP) {
                Ok(()) => break,
                Err(KafkaError::Flush(RDKafkaErrorCode::OperationTimedOut)) => {}
                Err(err) => return Err(err).context("delivering the buffered records"),
            }
            if Instant::now() >= deadline {
                anyhow::bail!(
                    "{} records still unsent {:?} past their delivery timeout (librdkafka last said: {})",
                    self.producer.in_flight_count(),
                    CLOSE_MARGIN,
                    self.last_said()
                );
            }
            if said_at.elapsed() >= CLOSE_PROGRESS_EVERY {
                said_at = Instant::now();
                eprintln!(
                    "iopipe-agent: closing: {} records still to deliver, each retried up to --kafka-delivery-timeout {:?} \
                     (librdkafka last said: {})",
                    self.producer.in_flight_count(),
                    self.delivery_timeout,
                    self.last_said()
                );
            }
        }
        let failed = self.stats.failed.load(Ordering::Relaxed) - failed_before;
        if failed > 0 {
            anyhow::bail!(
                "{failed} records failed delivery while closing: the brokers took none within --kafka-delivery-timeout {:?} \
                 (librdkafka last said: {})",
                self.delivery_timeout,
                self.last_said()
            );
        }
        Ok(())
    }

    fn counters(&self) -> Vec<Counter> {
        let s = &self.stats;
        vec![
            Counter::new("kafka_delivered", s.delivered.load(Ordering::Relaxed), "records the brokers acknowledged"),
            Counter::new("kafka_failed", s.failed.load(Ordering::Relaxed), "records that failed delivery after retries"),
            Counter::new("kafka_shed", s.shed.load(Ordering::Relaxed), "records shed because the bounded producer queue was full"),
        ]
    }

    fn records_handed(&self) -> u64 {
        self.handed
    }

    fn records_settled(&self) -> u64 {
        self.stats.settled()
    }
}

/// NDJSON to a unix stream socket (Vector's `socket` source in `unix_stream` mode).
/// While the listener is away, lines wait in a bounded buffer and the agent reconnects;
/// past the bound the oldest lines are shed and counted.
pub struct UnixSink {
    path: PathBuf,
    stream: Option<UnixStream>,
    pending: VecDeque<String>,
    pending_bytes: usize,
    last_attempt: Option<Instant>,
    written: u64,
    shed: u64,
    connects: u64,
}

/// Bytes of lines kept while the listener is away.
const MAX_PENDING_BYTES: usize = 64 << 20;
/// How often a lost listener is retried.
const RECONNECT_EVERY: Duration = Duration::from_secs(1);
/// How long one write may block before the listener counts as stalled.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

impl UnixSink {
    /// Starts even when nobody listens yet: the agent must not depend on its shipper's
    /// start order. Says so once.
    pub fn new(path: PathBuf) -> Self {
        let mut sink = UnixSink {
            path,
            stream: None,
            pending: VecDeque::new(),
            pending_bytes: 0,
            last_attempt: None,
            written: 0,
            shed: 0,
            connects: 0,
        };
        if !sink.connect() {
            eprintln!("iopipe-agent: nobody listens on {} yet; buffering and retrying every {RECONNECT_EVERY:?}", sink.path.display());
        }
        sink
    }

    fn connect(&mut self) -> bool {
        self.last_attempt = Some(Instant::now());
        match UnixStream::connect(&self.path) {
            Ok(stream) => {
                let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
                self.stream = Some(stream);
                self.connects += 1;
                true
            }
            Err(_) => false,
        }
    }

    fn write_pending(&mut self) {
        if self.stream.is_none() {
            let due = self.last_attempt.is_none_or(|at| at.elapsed() >= RECONNECT_EVERY);
            if !due || !self.connect() {
                return;
            }
        }
        let Some(stream) = self.stream.as_mut() else { return };
        let mut out = BufWriter::new(stream);
        let mut sent = 0;
        for line in &self.pending {
            if out.write_all(line.as_bytes()).is_err() {
                break;
            }
            sent += 1;
        }
        // Lines sit in the BufWriter until flushed: only a successful flush delivers them.
        if sent == self.pending.len() && out.flush().is_ok() {
            drop(out);
            self.written += sent as u64;
            self.pending.clear();
            self.pending_bytes = 0;
        } else {
            // Which lines reached the listener is unknown: resend them all after reconnecting
            // (at-least-once, as the Kafka producer without idempotence would be).
            drop(out);
            eprintln!("iopipe-agent: lost the listener on {}; buffering and reconnecting", self.path.display());
            self.stream = None;
        }
    }
}

impl Sink for UnixSink {
    fn send(&mut self, _topic: &str, _key: &str, payload: &str) -> Result<()> {
        let line = format!("{payload}\n");
        self.pending_bytes += line.len();
        self.pending.push_back(line);
        while self.pending_bytes > MAX_PENDING_BYTES {
            let Some(oldest) = self.pending.pop_front() else { break };
            self.pending_bytes -= oldest.len();
            self.shed += 1;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.write_pending();
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        self.last_attempt = None;
        self.write_pending();
        if self.pending.is_empty() {
            Ok(())
        } else {
            anyhow::bail!("{} records not delivered to {}: nobody listens", self.pending.len(), self.path.display())
        }
    }

    fn counters(&self) -> Vec<Counter> {
        vec![
            Counter::new("socket_records", self.written, "records written to the unix socket"),
            Counter::new("socket_shed", self.shed, "records shed while the socket's listener was away too long"),
            Counter::new("socket_connects", self.connects, "connections made to the unix socket's listener"),
        ]
    }

    fn records_handed(&self) -> u64 {
        self.records_settled() + self.pending.len() as u64
    }

    /// The lines still pending are the newest: every older one was written or shed.
    fn records_settled(&self) -> u64 {
        self.written + self.shed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::Headers;
    use rdkafka::mocking::MockCluster;
    use rdkafka::{Message, Offset, TopicPartitionList};

    #[test]
    fn only_the_unbroken_run_of_settled_records_from_the_first_counts() {
        let mut settlement = Settlement::default();
        for record in [1, 2, 4] {
            settlement.settle(record);
        }
        assert_eq!(settlement.prefix, 0, "record 0 is still out");
        settlement.settle(0);
        assert_eq!(settlement.prefix, 3);
        settlement.settle(3);
        assert_eq!((settlement.prefix, settlement.ahead.len()), (5, 0));
    }

    #[test]
    fn records_in_the_producers_memory_are_not_settled() {
        // Nothing listens there: every record waits in the producer for a broker.
        let mut sink = KafkaSink::connect("127.0.0.1:9", None, None, Duration::from_secs(DEFAULT_DELIVERY_TIMEOUT_S)).unwrap();
        for n in 0..3 {
            sink.send("io.hist.v1", "h/sdb", &format!("{{\"n\":{n}}}")).unwrap();
        }
        sink.flush().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!((sink.records_handed(), sink.records_settled()), (3, 0));
    }

    #[test]
    fn librdkafka_is_heard_once_per_kind_and_again_with_a_count_after_a_quiet_spell() {
        let says = KafkaSays::default();
        let start = Instant::now();
        let refused = "localhost:19092/1: Connect to ipv4#127.0.0.1:19092 failed: Connection refused";
        assert_eq!(says.line("transport localhost:19092/1", refused, start).as_deref(), Some(format!("iopipe-agent: kafka: {refused}").as_str()));
        assert_eq!(says.line("transport localhost:19092/1", refused, start + Duration::from_secs(1)), None);
        assert!(says.line("transport localhost:19093/2", "localhost:19093/2: refused", start + Duration::from_secs(2)).is_some(), "another broker");
        assert_eq!(says.line("transport localhost:19092/1", refused, start + Duration::from_secs(3)), None);
        let again = says.line("transport localhost:19092/1", refused, start + SAID_AGAIN_AFTER).unwrap();
        assert!(again.ends_with("(2 more like it in the last 30s)"), "{again}");
        assert_eq!(says.last().as_deref(), Some(refused));
    }

    #[test]
    fn a_broker_nobody_answers_for_is_named() {
        assert_eq!(broker_of("localhost:19092/1: Connect to ipv4#127.0.0.1:19092 failed"), "localhost:19092/1");
        assert_eq!(broker_of("1/1 brokers are down"), "");
        assert_eq!(broker_of("Timed out: 3 requests"), "");
    }

    #[test]
    fn what_librdkafka_says_of_an_unreachable_broker_is_kept() {
        let mut sink = KafkaSink::connect("127.0.0.1:9", None, None, Duration::from_secs(DEFAULT_DELIVERY_TIMEOUT_S)).unwrap();
        sink.send("io.hist.v1", "h/sdb", "{}").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while sink.says.last().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let said = sink.says.last().expect("librdkafka said nothing of a broker that refuses every connection");
        // The broker refusing, or all brokers down: librdkafka counts those down as it sees
        // their states at that moment, so "1/1" or, racing a reconnect, "0/1".
        assert!(said.contains("127.0.0.1:9") || said.contains("/1 brokers are down"), "{said}");
    }

    fn test_key() -> HostKey {
        signing::host_key(b"a master secret for the tests", "db-17")
    }

    /// Each header of a record, by name.
    fn headers_of(headers: Option<&impl Headers>) -> Vec<(String, String)> {
        headers.map_or_else(Vec::new, |headers| {
            headers
                .iter()
                .map(|h| (h.key.to_string(), String::from_utf8_lossy(h.value.unwrap_or_default()).into_owned()))
                .collect()
        })
    }

    #[test]
    fn a_record_carries_the_signature_of_its_value() {
        let key = test_key();
        let payload = r#"{"schema":"io.hist.v1","host":"db-17"}"#;
        let record = kafka_record("io.hist.v1", "db-17/sdb", payload, 7, Some(&key));
        assert_eq!(headers_of(record.headers.as_ref()), [("iopipe-sig".to_string(), key.header_value(payload.as_bytes()))]);
        assert_eq!((record.payload, record.key, *record.delivery_opaque), (Some(payload), Some("db-17/sdb"), 7));
        let unsigned = kafka_record("io.hist.v1", "db-17/sdb", payload, 7, None);
        assert!(unsigned.headers.is_none());
    }

    #[test]
    fn every_record_the_sink_produces_arrives_signed() {
        const TOPIC: &str = "io.hist.v1";
        let cluster = MockCluster::new(1).unwrap();
        cluster.create_topic(TOPIC, 1, 1).unwrap();
        let key = test_key();
        let mut sink = KafkaSink::connect(&cluster.bootstrap_servers(), None, Some(key.clone()), Duration::from_secs(30)).unwrap();
        let payloads: Vec<String> = (0..3).map(|n| format!(r#"{{"schema":"io.hist.v1","n":{n}}}"#)).collect();
        for payload in &payloads {
            sink.send(TOPIC, "db-17/sdb", payload).unwrap();
        }
        sink.close().unwrap();
        assert_eq!(sink.stats.delivered.load(Ordering::Relaxed), 3);

        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", cluster.bootstrap_servers())
            .set("group.id", "iopipe-agent-tests")
            .set("enable.auto.commit", "false")
            .create()
            .unwrap();
        let mut partition = TopicPartitionList::new();
        partition.add_partition_offset(TOPIC, 0, Offset::Beginning).unwrap();
        consumer.assign(&partition).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut received = Vec::new();
        while received.len() < payloads.len() && Instant::now() < deadline {
            if let Some(message) = consumer.poll(Duration::from_millis(200)) {
                let message = message.unwrap();
                let value = message.payload().unwrap().to_vec();
                received.push((String::from_utf8(value).unwrap(), headers_of(message.headers())));
            }
        }
        let expected: Vec<(String, Vec<(String, String)>)> = payloads
            .iter()
            .map(|p| (p.clone(), vec![("iopipe-sig".to_string(), key.header_value(p.as_bytes()))]))
            .collect();
        assert_eq!(received, expected);
    }

    /// A sink to a one-broker mock cluster whose broker is down, holding three records.
    fn sink_held_by_a_broker_down(cluster: &MockCluster<'_, rdkafka::producer::DefaultProducerContext>, timeout: Duration) -> KafkaSink {
        cluster.create_topic("io.hist.v1", 1, 1).unwrap();
        cluster.broker_down(-1).unwrap();
        let mut sink = KafkaSink::connect(&cluster.bootstrap_servers(), None, None, timeout).unwrap();
        for n in 0..3 {
            sink.send("io.hist.v1", "db-17/sdb", &format!("{{\"n\":{n}}}")).unwrap();
        }
        sink
    }

    #[test]
    fn a_close_begun_with_every_broker_down_delivers_once_they_are_back() {
        let cluster = MockCluster::new(1).unwrap();
        let mut sink = sink_held_by_a_broker_down(&cluster, Duration::from_secs(60));
        let closing = std::thread::spawn(move || (sink.close(), sink));
        std::thread::sleep(Duration::from_secs(4));
        assert!(!closing.is_finished(), "the close waits for the brokers");
        cluster.broker_up(-1).unwrap();
        let (closed, sink) = closing.join().unwrap();
        closed.unwrap();
        assert_eq!((sink.stats.delivered.load(Ordering::Relaxed), sink.stats.failed.load(Ordering::Relaxed)), (3, 0));
    }

    #[test]
    fn a_close_gives_up_on_records_at_their_delivery_timeout_and_says_so() {
        let cluster = MockCluster::new(1).unwrap();
        let mut sink = sink_held_by_a_broker_down(&cluster, Duration::from_secs(2));
        let started = Instant::now();
        let refused = format!("{:#}", sink.close().unwrap_err());
        assert!(started.elapsed() < Duration::from_secs(2) + CLOSE_MARGIN, "{:?}", started.elapsed());
        assert!(refused.starts_with("3 records failed delivery while closing"), "{refused}");
        assert_eq!((sink.stats.failed.load(Ordering::Relaxed), sink.records_settled()), (3, 3), "lost and counted");
    }

    #[test]
    fn lines_waiting_for_the_socket_listener_are_not_settled() {
        let path = std::env::temp_dir().join(format!("iopipe-agent-{}-nobody.sock", std::process::id()));
        let mut sink = UnixSink::new(path);
        sink.send("io.hist.v1", "h/sdb", "{}").unwrap();
        sink.flush().unwrap();
        assert_eq!((sink.records_handed(), sink.records_settled()), (1, 0));
    }
}
