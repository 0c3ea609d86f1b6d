//! Where records go: NDJSON on stdout (for Vector or a pipe) or straight to Kafka.

use anyhow::{Context, Result};
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;
use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub trait Sink {
    fn send(&mut self, topic: &str, key: &str, payload: &str) -> Result<()>;
    /// Called after each batch of records of one sample.
    fn flush(&mut self) -> Result<()>;
    /// Delivers what is still buffered; called once, before the exit summary.
    fn close(&mut self) -> Result<()>;
    /// A one-line account of what was sent and lost, for the exit log.
    fn summary(&self) -> String;
}

pub struct StdoutSink {
    out: BufWriter<io::Stdout>,
    written: u64,
}

impl StdoutSink {
    pub fn new() -> Self {
        StdoutSink { out: BufWriter::new(io::stdout()), written: 0 }
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
        self.out.flush().context("writing to stdout")
    }

    fn close(&mut self) -> Result<()> {
        self.flush()
    }

    fn summary(&self) -> String {
        format!("stdout: {} records written", self.written)
    }
}

#[derive(Default)]
pub struct DeliveryStats {
    pub delivered: AtomicU64,
    pub failed: AtomicU64,
    /// Records refused because the bounded local queue was full (broker unreachable
    /// for long): shed, counted, never silent.
    pub shed: AtomicU64,
}

struct DeliveryCounter(Arc<DeliveryStats>);

impl ClientContext for DeliveryCounter {}

impl ProducerContext for DeliveryCounter {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => self.0.delivered.fetch_add(1, Ordering::Relaxed),
            Err((err, _)) => {
                let failed = self.0.failed.fetch_add(1, Ordering::Relaxed);
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
}

/// Memory the producer may hold while the brokers are away; past it records are shed.
const MAX_BUFFERED_KIB: &str = "65536";
/// How long closing waits for buffered records to be delivered.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a record is retried before it counts as failed.
const DELIVERY_TIMEOUT_MS: &str = "300000";

impl KafkaSink {
    pub fn connect(brokers: &str) -> Result<Self> {
        let stats = Arc::new(DeliveryStats::default());
        let producer: ThreadedProducer<DeliveryCounter> = ClientConfig::new()
            .set("bootstrap.servers", brokers)
            .set("client.id", "iopipe-agent")
            .set("enable.idempotence", "true")
            .set("compression.type", "lz4")
            .set("linger.ms", "100")
            .set("queue.buffering.max.kbytes", MAX_BUFFERED_KIB)
            .set("message.timeout.ms", DELIVERY_TIMEOUT_MS)
            .create_with_context(DeliveryCounter(stats.clone()))
            .with_context(|| format!("creating a Kafka producer for {brokers}"))?;
        Ok(KafkaSink { producer, stats })
    }
}

impl Sink for KafkaSink {
    fn send(&mut self, topic: &str, key: &str, payload: &str) -> Result<()> {
        match self.producer.send(BaseRecord::to(topic).key(key).payload(payload)) {
            Ok(()) => Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                self.stats.shed.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err((err, _)) => Err(err).with_context(|| format!("producing to {topic}")),
        }
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    fn close(&mut self) -> Result<()> {
        self.producer.flush(CLOSE_TIMEOUT).map_err(|err| {
            anyhow::anyhow!("{} records still unsent after {CLOSE_TIMEOUT:?}: {err}", self.producer.in_flight_count())
        })
    }

    fn summary(&self) -> String {
        let s = &self.stats;
        format!(
            "kafka: {} delivered, {} failed, {} shed",
            s.delivered.load(Ordering::Relaxed),
            s.failed.load(Ordering::Relaxed),
            s.shed.load(Ordering::Relaxed)
        )
    }
}
