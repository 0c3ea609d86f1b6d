-- Disk health transitions (io.health.v1): healthy, suspect, failing, recovered, with the
-- anomalies behind them and the ticket action taken. The ticket object arrives as
-- ticket.action / ticket.ticket_id (the ingestion profile imports one level of nesting).
CREATE TABLE IF NOT EXISTS {db}.health
(
    id String,
    host String,
    disk String,
    ts_ns UInt64,
    ts DateTime,
    from_state String,
    to_state String,
    reason String,
    anomaly_ids Array(String),
    `ticket.action` String,
    `ticket.ticket_id` String
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(ts)
ORDER BY (host, disk, ts_ns, id);

-- Blocks of 64 messages: see 0002_windows_kafka.
CREATE TABLE IF NOT EXISTS {db}.health_kafka AS {db}.health
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.health.v1',
    kafka_group_name = '{kafka_group}-health', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.health_mv TO {db}.health AS
SELECT
    id, host, disk, ts_ns,
    toDateTime(intDiv(ts_ns, 1000000000)) AS ts,
    from_state, to_state, reason, anomaly_ids, `ticket.action`, `ticket.ticket_id`
FROM {db}.health_kafka
