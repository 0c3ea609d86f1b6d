-- Latency rollups per disk, op and latency kind: 1 min, 1 h and 1 day (period: the
-- start of the minute, hour or day; the three tables have the same columns). Each keeps the
-- summed histogram as an aggregate state, so any range merges exactly: a month's p99 or
-- heatmap is computed from the month's buckets, never from averages of averages.
--   buckets: sumForEachMerge(buckets_log2_us) -> the log2 µs histogram
--   count, errors, sum_us: sumMerge;  max_us: maxMerge
-- Every level reads io.hist.v1 through a Kafka table of its own (own consumer group, own
-- offsets), whose one view is created right after it:
--  - ClickHouse 18.16 does not pass a view's inserts on to the views of its target table,
--    so a level cannot be fed from the level below it;
--  - an 18.16 Kafka table's read delivers only to the views that existed when the read
--    began, and a read lasts seconds. Views added here to histograms_kafka, already
--    reading, would miss that read's messages: rollups short now and then after a fresh
--    `up`, and without the history the topic still holds after an upgrade. A Kafka
--    table with one view never reads before that view exists.
-- The cost: io.hist.v1 is parsed once per table (make bench-ingest: four tables together
-- at 0.35 of a plain consumer's rate).
-- The sorting key starts with the coarser period, so a fleet-wide query over the last hour
-- and one disk's day both read only their own granules.
CREATE TABLE IF NOT EXISTS {db}.latency_1m
(
    host String,
    disk String,
    op String,
    latency String,
    period DateTime,
    buckets_log2_us AggregateFunction(sumForEach, Array(UInt64)),
    count AggregateFunction(sum, UInt64),
    errors AggregateFunction(sum, UInt64),
    sum_us AggregateFunction(sum, UInt64),
    max_us AggregateFunction(max, UInt64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMMDD(period)
ORDER BY (toStartOfHour(period), host, disk, op, latency, period);

CREATE TABLE IF NOT EXISTS {db}.latency_1h AS {db}.latency_1m
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(period)
ORDER BY (toStartOfDay(period), host, disk, op, latency, period);

CREATE TABLE IF NOT EXISTS {db}.latency_1d AS {db}.latency_1m
ENGINE = AggregatingMergeTree
PARTITION BY toYear(period)
ORDER BY (host, disk, op, latency, period);

-- Blocks of 64 messages: see 0002_windows_kafka.
CREATE TABLE IF NOT EXISTS {db}.latency_1m_kafka AS {db}.histograms
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.hist.v1',
    kafka_group_name = '{kafka_group}-latency_1m', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.latency_1m_mv TO {db}.latency_1m AS
SELECT
    host, disk, op, latency,
    toStartOfMinute(toDateTime(intDiv(start_ns, 1000000000))) AS period,
    sumForEachState(buckets_log2_us) AS buckets_log2_us,
    sumState(count) AS count, sumState(errors) AS errors,
    sumState(sum_us) AS sum_us, maxState(max_us) AS max_us
FROM {db}.latency_1m_kafka
GROUP BY host, disk, op, latency, period;

-- Blocks of 64 messages: see 0002_windows_kafka.
CREATE TABLE IF NOT EXISTS {db}.latency_1h_kafka AS {db}.histograms
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.hist.v1',
    kafka_group_name = '{kafka_group}-latency_1h', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.latency_1h_mv TO {db}.latency_1h AS
SELECT
    host, disk, op, latency,
    toStartOfHour(toDateTime(intDiv(start_ns, 1000000000))) AS period,
    sumForEachState(buckets_log2_us) AS buckets_log2_us,
    sumState(count) AS count, sumState(errors) AS errors,
    sumState(sum_us) AS sum_us, maxState(max_us) AS max_us
FROM {db}.latency_1h_kafka
GROUP BY host, disk, op, latency, period;

-- Blocks of 64 messages: see 0002_windows_kafka.
CREATE TABLE IF NOT EXISTS {db}.latency_1d_kafka AS {db}.histograms
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.hist.v1',
    kafka_group_name = '{kafka_group}-latency_1d', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.latency_1d_mv TO {db}.latency_1d AS
SELECT
    host, disk, op, latency,
    toStartOfDay(toDateTime(intDiv(start_ns, 1000000000))) AS period,
    sumForEachState(buckets_log2_us) AS buckets_log2_us,
    sumState(count) AS count, sumState(errors) AS errors,
    sumState(sum_us) AS sum_us, maxState(max_us) AS max_us
FROM {db}.latency_1d_kafka
GROUP BY host, disk, op, latency, period
