-- Intervals are read as 0018 reads them: its three Kafka tables, each with its view and
-- its consumer group, which go on from where they stopped (a row read twice replaces its
-- twin).

CREATE TABLE IF NOT EXISTS {db}_ingest.diskstats_from_intervals_kafka AS {db}_ingest.intervals
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.intervals.accepted.v1',
    kafka_group_name = '{kafka_group}-diskstats-intervals', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.diskstats_from_intervals_mv TO {db}.diskstats AS
SELECT
    host, disk, ts_ns,
    toDateTime(intDiv(ts_ns, 1000000000)) AS ts,
    major, minor, rotational, model, serial,
    reads_completed, reads_merged, sectors_read, read_time_ms,
    writes_completed, writes_merged, sectors_written, write_time_ms,
    in_flight, io_time_ms, weighted_io_time_ms,
    discards_completed, discards_merged, sectors_discarded, discard_time_ms,
    flushes_completed, flush_time_ms
FROM {db}_ingest.diskstats_from_intervals_kafka;

CREATE TABLE IF NOT EXISTS {db}_ingest.disk_inventory_from_intervals_kafka AS {db}_ingest.intervals
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.intervals.accepted.v1',
    kafka_group_name = '{kafka_group}-disk_inventory-intervals', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.disk_inventory_from_intervals_mv TO {db}.disk_inventory AS
SELECT host, disk, any(model) AS model, any(serial) AS serial, any(rotational) AS rotational,
       toDateTime(intDiv(max(ts_ns), 1000000000)) AS last_seen
FROM {db}_ingest.disk_inventory_from_intervals_kafka
GROUP BY host, disk;

CREATE TABLE IF NOT EXISTS {db}_ingest.histograms_from_intervals_kafka AS {db}_ingest.intervals
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.intervals.accepted.v1',
    kafka_group_name = '{kafka_group}-histograms-intervals', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.histograms_from_intervals_mv TO {db}.histograms AS
SELECT
    host, disk, op, latency, start_ns, end_ns,
    toDateTime(intDiv(start_ns, 1000000000)) AS start,
    buckets_log2_us, count, sum_us, max_us, errors
FROM {db}_ingest.histograms_from_intervals_kafka
ARRAY JOIN hist_op AS op, hist_latency AS latency, hist_buckets_log2_us AS buckets_log2_us, hist_count AS count,
    hist_sum_us AS sum_us, hist_max_us AS max_us, hist_errors AS errors;

DROP TABLE IF EXISTS {db}_ingest.intervals_mv;
DROP TABLE IF EXISTS {db}_ingest.intervals_kafka;
DROP TABLE IF EXISTS {db}_ingest.histograms_of_intervals_mv;
DROP TABLE IF EXISTS {db}_ingest.disk_inventory_of_intervals_mv;
DROP TABLE IF EXISTS {db}_ingest.diskstats_of_intervals_mv;
DROP TABLE IF EXISTS {db}_ingest.intervals
