-- Anomalies the stream job raised (io.anomaly.v1), one per episode and severity, named by
-- a deterministic id. received_at is when the row reached ClickHouse: with start (the
-- first anomalous window) it gives the time to detect an SRE experienced. A replay must
-- not move it later, so the version falls as time passes and ReplacingMergeTree keeps the
-- earliest delivery. The free-form evidence object stays in Kafka; the summary is here.
CREATE TABLE IF NOT EXISTS {db}.anomalies
(
    id String,
    host String,
    disk String,
    kind String,
    severity String,
    start_ns UInt64,
    end_ns UInt64,
    start DateTime,
    summary String,
    received_at DateTime,
    earliest_first UInt32
)
ENGINE = ReplacingMergeTree(earliest_first)
PARTITION BY toYYYYMM(start)
ORDER BY (host, disk, kind, start_ns, id);

CREATE TABLE IF NOT EXISTS {db}.anomalies_kafka AS {db}.anomalies
ENGINE = Kafka('{kafka_brokers}', 'io.anomalies.v1', '{kafka_group}-anomalies', 'JSONEachRow', '\n');

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.anomalies_mv TO {db}.anomalies AS
SELECT
    id, host, disk, kind, severity, start_ns, end_ns,
    toDateTime(intDiv(start_ns, 1000000000)) AS start,
    summary,
    now() AS received_at,
    toUInt32(4294967295 - toUInt32(now())) AS earliest_first
FROM {db}.anomalies_kafka
