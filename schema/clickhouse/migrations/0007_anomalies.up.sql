-- Anomalies the stream job raised (io.anomaly.v1), one per episode and severity, named by
-- a deterministic id. received_at is when the row reached ClickHouse: with start (the
-- first anomalous window) it gives the time to detect an SRE experienced. A replay must
-- not move it later, so the version falls as time passes and ReplacingMergeTree keeps the
-- earliest delivery. The evidence is kept as the JSON text the record carries in
-- evidence_json (18.16 cannot read the evidence object into a String): read it with
-- visitParamExtractFloat / visitParamExtractRaw (every version) or JSONExtract (modern).
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
    evidence_json String,
    received_at DateTime,
    earliest_first UInt32
)
ENGINE = ReplacingMergeTree(earliest_first)
PARTITION BY toYYYYMM(start)
ORDER BY (host, disk, kind, start_ns, id);

-- Blocks of 64 messages: see 0002_windows_kafka.
CREATE TABLE IF NOT EXISTS {db}.anomalies_kafka AS {db}.anomalies
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.anomalies.v1',
    kafka_group_name = '{kafka_group}-anomalies', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.anomalies_mv TO {db}.anomalies AS
SELECT
    id, host, disk, kind, severity, start_ns, end_ns,
    toDateTime(intDiv(start_ns, 1000000000)) AS start,
    summary, evidence_json,
    now() AS received_at,
    toUInt32(4294967295 - toUInt32(now())) AS earliest_first
FROM {db}.anomalies_kafka
