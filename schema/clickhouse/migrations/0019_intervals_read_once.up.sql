-- requires: ClickHouse >= 21.8 (an insert by a view runs the views of the table it fills)
-- io.intervals.accepted.v1 read once. 0018 gives each table an interval fills a Kafka table
-- of its own (a Kafka table's read reaches only the views that existed when it began, so
-- one view each), and every interval crosses the network and is parsed three times. Here
-- one Kafka table and its one consumer group pass each block to a Null table, and the
-- three views on that table fill diskstats, disk_inventory and histograms from the same
-- block. A modern server runs the views of a table a view writes TO; 18.16 does not (it
-- runs only the views of a view, which a modern server does not): there 0018's tables go on
-- reading, and `up` applies this after an upgrade.
-- The Null table's views are made before the view that fills it, as a Kafka table's view
-- is made after anything it needs. The consumer group is new, so it starts at the topic's
-- start: an interval 0018's tables read before is read again, and its rows replace their
-- twins, as any row delivered twice does (0018). 0018's Kafka tables are dropped last.
-- Blocks of 64 messages: see 0002_windows_kafka.

CREATE TABLE IF NOT EXISTS {db}_ingest.intervals
(
    host String,
    disk String,
    ts_ns UInt64,
    major UInt32,
    minor UInt32,
    rotational UInt8,
    model String,
    serial String,
    reads_completed UInt64,
    reads_merged UInt64,
    sectors_read UInt64,
    read_time_ms UInt64,
    writes_completed UInt64,
    writes_merged UInt64,
    sectors_written UInt64,
    write_time_ms UInt64,
    in_flight UInt64,
    io_time_ms UInt64,
    weighted_io_time_ms UInt64,
    discards_completed UInt64,
    discards_merged UInt64,
    sectors_discarded UInt64,
    discard_time_ms UInt64,
    flushes_completed UInt64,
    flush_time_ms UInt64,
    start_ns UInt64,
    end_ns UInt64,
    hist_op Array(String),
    hist_latency Array(String),
    hist_buckets_log2_us Array(Array(UInt64)),
    hist_count Array(UInt64),
    hist_sum_us Array(UInt64),
    hist_max_us Array(UInt64),
    hist_errors Array(UInt64)
)
ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.diskstats_of_intervals_mv TO {db}.diskstats AS
SELECT
    host, disk, ts_ns,
    toDateTime(intDiv(ts_ns, 1000000000)) AS ts,
    major, minor, rotational, model, serial,
    reads_completed, reads_merged, sectors_read, read_time_ms,
    writes_completed, writes_merged, sectors_written, write_time_ms,
    in_flight, io_time_ms, weighted_io_time_ms,
    discards_completed, discards_merged, sectors_discarded, discard_time_ms,
    flushes_completed, flush_time_ms
FROM {db}_ingest.intervals;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.disk_inventory_of_intervals_mv TO {db}.disk_inventory AS
SELECT host, disk, any(model) AS model, any(serial) AS serial, any(rotational) AS rotational,
       toDateTime(intDiv(max(ts_ns), 1000000000)) AS last_seen
FROM {db}_ingest.intervals
GROUP BY host, disk;

-- An interval in which the disk completed no I/O has empty hist_ arrays: no histograms row.
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.histograms_of_intervals_mv TO {db}.histograms AS
SELECT
    host, disk, op, latency, start_ns, end_ns,
    toDateTime(intDiv(start_ns, 1000000000)) AS start,
    buckets_log2_us, count, sum_us, max_us, errors
FROM {db}_ingest.intervals
ARRAY JOIN hist_op AS op, hist_latency AS latency, hist_buckets_log2_us AS buckets_log2_us, hist_count AS count,
    hist_sum_us AS sum_us, hist_max_us AS max_us, hist_errors AS errors;

CREATE TABLE IF NOT EXISTS {db}_ingest.intervals_kafka AS {db}_ingest.intervals
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.intervals.accepted.v1',
    kafka_group_name = '{kafka_group}-intervals', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.intervals_mv TO {db}_ingest.intervals AS
SELECT * FROM {db}_ingest.intervals_kafka;

DROP TABLE IF EXISTS {db}_ingest.histograms_from_intervals_mv;
DROP TABLE IF EXISTS {db}_ingest.histograms_from_intervals_kafka;
DROP TABLE IF EXISTS {db}_ingest.disk_inventory_from_intervals_mv;
DROP TABLE IF EXISTS {db}_ingest.disk_inventory_from_intervals_kafka;
DROP TABLE IF EXISTS {db}_ingest.diskstats_from_intervals_mv;
DROP TABLE IF EXISTS {db}_ingest.diskstats_from_intervals_kafka
