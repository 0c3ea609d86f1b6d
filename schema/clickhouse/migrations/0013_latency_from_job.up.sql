-- Latency rollups per disk, op and latency kind over a minute, an hour and a day, as the
-- stream job sums them (io.latency.v1), in place of 0009's, which summed io.hist.v1 in
-- ClickHouse: a Kafka table adds a block again when Kafka redelivers it (after a server
-- restart), and nothing can tell a repeated sum from a new one. The job sums each kernel
-- histogram once however often it arrives, and re-sends a period still open with
-- everything so far and a higher revision. Each table keeps, per period, the record of
-- the highest revision: a redelivered or re-sent record replaces its twin.
-- Read them with FINAL (or argMax by revision) so twins not yet merged away count once:
--   SELECT sumForEach(buckets_log2_us), sum(count) FROM latency_minutes FINAL WHERE ...
-- The sorting key starts with the coarser period, so a fleet-wide query over the last
-- hour and one disk's day both read only their own granules.
-- 0009's Kafka tables go: io.hist.v1 is parsed once now, by the histograms table.
DROP TABLE IF EXISTS {db}.latency_1m_mv;
DROP TABLE IF EXISTS {db}.latency_1m_kafka;
DROP TABLE IF EXISTS {db}.latency_1h_mv;
DROP TABLE IF EXISTS {db}.latency_1h_kafka;
DROP TABLE IF EXISTS {db}.latency_1d_mv;
DROP TABLE IF EXISTS {db}.latency_1d_kafka;

CREATE TABLE IF NOT EXISTS {db}.latency_minutes
(
    host String,
    disk String,
    op String,
    latency String,
    period DateTime,
    revision UInt32,
    buckets_log2_us Array(UInt64),
    count UInt64,
    errors UInt64,
    sum_us UInt64,
    max_us UInt64
)
ENGINE = ReplacingMergeTree(revision)
PARTITION BY toYYYYMMDD(period)
ORDER BY (toStartOfHour(period), host, disk, op, latency, period);

CREATE TABLE IF NOT EXISTS {db}.latency_hours AS {db}.latency_minutes
ENGINE = ReplacingMergeTree(revision)
PARTITION BY toYYYYMM(period)
ORDER BY (toStartOfDay(period), host, disk, op, latency, period);

CREATE TABLE IF NOT EXISTS {db}.latency_days AS {db}.latency_minutes
ENGINE = ReplacingMergeTree(revision)
PARTITION BY toYear(period)
ORDER BY (host, disk, op, latency, period);

-- The history 0009's tables hold, as revision 0: any record of the job replaces it. The
-- hour and the day the change falls in then count from the job's first record on.
-- (0014 drops 0009's tables, so that a run of this one again still finds them.)
INSERT INTO {db}.latency_minutes
SELECT host, disk, op, latency, period, 0, sumForEachMerge(buckets_log2_us), sumMerge(count), sumMerge(errors),
    sumMerge(sum_us), maxMerge(max_us)
FROM {db}.latency_1m GROUP BY host, disk, op, latency, period;

INSERT INTO {db}.latency_hours
SELECT host, disk, op, latency, period, 0, sumForEachMerge(buckets_log2_us), sumMerge(count), sumMerge(errors),
    sumMerge(sum_us), maxMerge(max_us)
FROM {db}.latency_1h GROUP BY host, disk, op, latency, period;

INSERT INTO {db}.latency_days
SELECT host, disk, op, latency, period, 0, sumForEachMerge(buckets_log2_us), sumMerge(count), sumMerge(errors),
    sumMerge(sum_us), maxMerge(max_us)
FROM {db}.latency_1d GROUP BY host, disk, op, latency, period;

-- One Kafka table per level, each with its one view (see 0009): io.latency.v1 is small,
-- 18 records a minute for a disk reading and writing.
-- Blocks of 64 messages: see 0002_windows_kafka.
CREATE TABLE IF NOT EXISTS {db}.latency_minutes_kafka
(
    host String,
    disk String,
    op String,
    latency String,
    period_s UInt32,
    period_start_ns UInt64,
    revision UInt32,
    buckets_log2_us Array(UInt64),
    count UInt64,
    errors UInt64,
    sum_us UInt64,
    max_us UInt64
)
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.latency.v1',
    kafka_group_name = '{kafka_group}-latency_minutes', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.latency_minutes_mv TO {db}.latency_minutes AS
SELECT host, disk, op, latency, toDateTime(intDiv(period_start_ns, 1000000000)) AS period, revision,
    buckets_log2_us, count, errors, sum_us, max_us
FROM {db}.latency_minutes_kafka
WHERE period_s = 60;

-- Blocks of 64 messages: see 0002_windows_kafka.
CREATE TABLE IF NOT EXISTS {db}.latency_hours_kafka AS {db}.latency_minutes_kafka
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.latency.v1',
    kafka_group_name = '{kafka_group}-latency_hours', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.latency_hours_mv TO {db}.latency_hours AS
SELECT host, disk, op, latency, toDateTime(intDiv(period_start_ns, 1000000000)) AS period, revision,
    buckets_log2_us, count, errors, sum_us, max_us
FROM {db}.latency_hours_kafka
WHERE period_s = 3600;

-- Blocks of 64 messages: see 0002_windows_kafka.
CREATE TABLE IF NOT EXISTS {db}.latency_days_kafka AS {db}.latency_minutes_kafka
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.latency.v1',
    kafka_group_name = '{kafka_group}-latency_days', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.latency_days_mv TO {db}.latency_days AS
SELECT host, disk, op, latency, toDateTime(intDiv(period_start_ns, 1000000000)) AS period, revision,
    buckets_log2_us, count, errors, sum_us, max_us
FROM {db}.latency_days_kafka
WHERE period_s = 86400
