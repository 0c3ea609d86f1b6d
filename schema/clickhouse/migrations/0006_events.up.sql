-- Sampled block I/O events (io.event.v1): the outliers, errors and recorder samples the
-- agents send. Short retention: the day partitions are meant to be dropped after a few
-- days (0010 sets a TTL where the server has one). An event's identity is what the
-- stream job deduplicates it by: op, sector, issue and completion time.
CREATE TABLE IF NOT EXISTS {db}.events
(
    host String,
    disk String,
    op String,
    issue_ns UInt64,
    complete_ns UInt64,
    issue_time DateTime,
    sector UInt64,
    bytes UInt64,
    queue_ns UInt64,
    inflight UInt32,
    error Int32,
    comm String,
    pid UInt32,
    sample_reason String,
    sample_weight Float64
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(issue_time)
ORDER BY (host, disk, op, issue_ns, sector, complete_ns);

-- Blocks of 64 messages: see 0002_windows_kafka.
CREATE TABLE IF NOT EXISTS {db}.events_kafka AS {db}.events
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.events.v1',
    kafka_group_name = '{kafka_group}-events', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.events_mv TO {db}.events AS
SELECT
    host, disk, op, issue_ns, complete_ns,
    toDateTime(intDiv(issue_ns, 1000000000)) AS issue_time,
    sector, bytes, queue_ns, inflight, error, comm, pid, sample_reason, sample_weight
FROM {db}.events_kafka
