-- The raw tables read the agent topics again, as 0004-0006 made them read.

DROP TABLE IF EXISTS {db}.diskstats_mv;
DROP TABLE IF EXISTS {db}.diskstats_kafka;
CREATE TABLE IF NOT EXISTS {db}.diskstats_kafka
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
    flush_time_ms UInt64
)
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.diskstats.v1',
    kafka_group_name = '{kafka_group}-diskstats', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.diskstats_mv TO {db}.diskstats AS
SELECT
    host, disk, ts_ns,
    toDateTime(intDiv(ts_ns, 1000000000)) AS ts,
    major, minor, rotational, model, serial,
    reads_completed, reads_merged, sectors_read, read_time_ms,
    writes_completed, writes_merged, sectors_written, write_time_ms,
    in_flight, io_time_ms, weighted_io_time_ms,
    discards_completed, discards_merged, sectors_discarded, discard_time_ms,
    flushes_completed, flush_time_ms
FROM {db}.diskstats_kafka;

DROP TABLE IF EXISTS {db}.disk_inventory_mv;
DROP TABLE IF EXISTS {db}.disk_inventory_kafka;
CREATE TABLE IF NOT EXISTS {db}.disk_inventory_kafka AS {db}.diskstats_kafka
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.diskstats.v1',
    kafka_group_name = '{kafka_group}-disk_inventory', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.disk_inventory_mv TO {db}.disk_inventory AS
SELECT host, disk, any(model) AS model, any(serial) AS serial, any(rotational) AS rotational,
       toDateTime(intDiv(max(ts_ns), 1000000000)) AS last_seen
FROM {db}.disk_inventory_kafka
GROUP BY host, disk;

DROP TABLE IF EXISTS {db}.histograms_mv;
DROP TABLE IF EXISTS {db}.histograms_kafka;
CREATE TABLE IF NOT EXISTS {db}.histograms_kafka
(
    host String,
    disk String,
    op String,
    latency String,
    start_ns UInt64,
    end_ns UInt64,
    buckets_log2_us Array(UInt64),
    count UInt64,
    sum_us UInt64,
    max_us UInt64,
    errors UInt64
)
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.hist.v1',
    kafka_group_name = '{kafka_group}-histograms', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.histograms_mv TO {db}.histograms AS
SELECT
    host, disk, op, latency, start_ns, end_ns,
    toDateTime(intDiv(start_ns, 1000000000)) AS start,
    buckets_log2_us, count, sum_us, max_us, errors
FROM {db}.histograms_kafka;

DROP TABLE IF EXISTS {db}.events_mv;
DROP TABLE IF EXISTS {db}.events_kafka;
CREATE TABLE IF NOT EXISTS {db}.events_kafka
(
    host String,
    disk String,
    op String,
    issue_ns UInt64,
    complete_ns UInt64,
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
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.events.v1',
    kafka_group_name = '{kafka_group}-events', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.events_mv TO {db}.events AS
SELECT
    host, disk, op, issue_ns, complete_ns,
    toDateTime(intDiv(issue_ns, 1000000000)) AS issue_time,
    sector, bytes, queue_ns, inflight, error, comm, pid, sample_reason, sample_weight
FROM {db}.events_kafka
