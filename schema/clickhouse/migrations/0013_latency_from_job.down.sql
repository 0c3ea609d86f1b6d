DROP TABLE IF EXISTS {db}.latency_days_mv;
DROP TABLE IF EXISTS {db}.latency_days_kafka;
DROP TABLE IF EXISTS {db}.latency_hours_mv;
DROP TABLE IF EXISTS {db}.latency_hours_kafka;
DROP TABLE IF EXISTS {db}.latency_minutes_mv;
DROP TABLE IF EXISTS {db}.latency_minutes_kafka;
DROP TABLE IF EXISTS {db}.latency_days;
DROP TABLE IF EXISTS {db}.latency_hours;
DROP TABLE IF EXISTS {db}.latency_minutes;

-- 0009's rollups read io.hist.v1 again, each from its consumer group's committed offset.
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
