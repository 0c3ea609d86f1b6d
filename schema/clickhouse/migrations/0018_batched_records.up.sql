-- The agent's batched records, as the stream job accepted them, stored as the rows their
-- v1 records make (iopipe/record_batches.py unfolds a batch into those records):
--   io.intervals.accepted.v1 (io.interval.v1): the diskstats and disk_inventory rows its
--     io.diskstats.v1 sample makes, and one histograms row per entry of its hist_ arrays,
--     as that io.hist.v1 record makes it;
--   io.eventbatches.accepted.v1 (io.eventbatch.v1): one events row per entry of its arrays.
-- A row made from a batch has the key its v1 record's row has: one of either, delivered
-- twice or sent both ways, replaces its twin.
-- Each table an interval fills reads the topic through a Kafka table of its own, with its
-- one view and consumer group: an 18.16 Kafka table feeding two views delivers a read to
-- one of them only (0004, 0009). The Kafka tables are new, so their groups start at the
-- topics' start; they live in {db}_ingest (0017) and name their columns as the records
-- carry them (0015): what an interval does not carry (major, minor, model, serial, the
-- discard and flush counters) takes the same default as in its sample's Kafka table.
-- ARRAY JOIN unfolds the arrays entry by entry. It refuses arrays of different lengths,
-- which the stream job never accepts (a batch with a bad part is refused whole).
-- Blocks of 64 messages: see 0002_windows_kafka.

CREATE TABLE IF NOT EXISTS {db}_ingest.diskstats_from_intervals_kafka
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

CREATE TABLE IF NOT EXISTS {db}_ingest.disk_inventory_from_intervals_kafka AS {db}_ingest.diskstats_from_intervals_kafka
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.intervals.accepted.v1',
    kafka_group_name = '{kafka_group}-disk_inventory-intervals', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.disk_inventory_from_intervals_mv TO {db}.disk_inventory AS
SELECT host, disk, any(model) AS model, any(serial) AS serial, any(rotational) AS rotational,
       toDateTime(intDiv(max(ts_ns), 1000000000)) AS last_seen
FROM {db}_ingest.disk_inventory_from_intervals_kafka
GROUP BY host, disk;

CREATE TABLE IF NOT EXISTS {db}_ingest.histograms_from_intervals_kafka AS {db}_ingest.diskstats_from_intervals_kafka
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.intervals.accepted.v1',
    kafka_group_name = '{kafka_group}-histograms-intervals', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

-- An interval in which the disk completed no I/O has empty hist_ arrays: no histograms row.
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.histograms_from_intervals_mv TO {db}.histograms AS
SELECT
    host, disk, op, latency, start_ns, end_ns,
    toDateTime(intDiv(start_ns, 1000000000)) AS start,
    buckets_log2_us, count, sum_us, max_us, errors
FROM {db}_ingest.histograms_from_intervals_kafka
ARRAY JOIN hist_op AS op, hist_latency AS latency, hist_buckets_log2_us AS buckets_log2_us, hist_count AS count,
    hist_sum_us AS sum_us, hist_max_us AS max_us, hist_errors AS errors;

-- A batch gives every event's timed_from (io.eventbatch.v1), so none is '' here, where a
-- lone io.event.v1 without one reads as 'dispatch' (0016). (Nor could this view say
-- if(timed_from = '', ...) AS timed_from: a SELECT alias may not take an ARRAY JOIN
-- column's name, which 18.16 refuses as a duplicate alias and a modern server reads as
-- ARRAY JOIN of the alias.)
CREATE TABLE IF NOT EXISTS {db}_ingest.events_from_eventbatches_kafka
(
    host String,
    disk String,
    op Array(String),
    issue_ns Array(UInt64),
    complete_ns Array(UInt64),
    sector Array(UInt64),
    bytes Array(UInt64),
    queue_ns Array(UInt64),
    inflight Array(UInt32),
    error Array(Int32),
    comm Array(String),
    pid Array(UInt32),
    sample_reason Array(String),
    sample_weight Array(Float64),
    timed_from Array(String)
)
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.eventbatches.accepted.v1',
    kafka_group_name = '{kafka_group}-events-eventbatches', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.events_from_eventbatches_mv TO {db}.events AS
SELECT
    host, disk, op, issue_ns, complete_ns,
    toDateTime(intDiv(issue_ns, 1000000000)) AS issue_time,
    sector, bytes, queue_ns, inflight, error, comm, pid, sample_reason, sample_weight, timed_from
FROM {db}_ingest.events_from_eventbatches_kafka
ARRAY JOIN op, issue_ns, complete_ns, sector, bytes, queue_ns, inflight, error, comm, pid, sample_reason, sample_weight,
    timed_from
