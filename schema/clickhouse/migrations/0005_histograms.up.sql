-- Kernel latency histograms (io.hist.v1): every I/O of one op on one disk over about a
-- second, in log2 µs buckets ([2^i, 2^(i+1)), index 0 also below 1 µs), for the device
-- (D2C), queue and total (Q2C) latencies; the rollups of 0009 read the same topic through
-- Kafka tables of their own. A replayed histogram has the same (host, disk, op, latency,
-- start_ns) and replaces its twin.
CREATE TABLE IF NOT EXISTS {db}.histograms
(
    host String,
    disk String,
    op String,
    latency String,
    start_ns UInt64,
    end_ns UInt64,
    start DateTime,
    buckets_log2_us Array(UInt64),
    count UInt64,
    sum_us UInt64,
    max_us UInt64,
    errors UInt64
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(start)
ORDER BY (host, disk, op, latency, start_ns);

-- Blocks of 64 messages: see 0002_windows_kafka.
CREATE TABLE IF NOT EXISTS {db}.histograms_kafka AS {db}.histograms
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.hist.v1',
    kafka_group_name = '{kafka_group}-histograms', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.histograms_mv TO {db}.histograms AS
SELECT
    host, disk, op, latency, start_ns, end_ns,
    toDateTime(intDiv(start_ns, 1000000000)) AS start,
    buckets_log2_us, count, sum_us, max_us, errors
FROM {db}.histograms_kafka
