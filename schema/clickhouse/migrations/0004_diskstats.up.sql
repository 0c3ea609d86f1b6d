-- Raw /proc/diskstats samples (io.diskstats.v1), one row per disk per second, with the
-- disk's model and serial (what peers and tickets are named by). A replayed sample has
-- the same (host, disk, ts_ns) and replaces its twin.
CREATE TABLE IF NOT EXISTS {db}.diskstats
(
    host String,
    disk String,
    ts_ns UInt64,
    ts DateTime,
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
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMMDD(ts)
ORDER BY (host, disk, ts_ns);

-- Blocks of 64 messages: see 0002_windows_kafka.
CREATE TABLE IF NOT EXISTS {db}.diskstats_kafka AS {db}.diskstats
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
FROM {db}.diskstats_kafka
;

-- What each disk is: model, serial, class, where last seen. A few rows per disk, so
-- "the peers of this disk" (same host, same model) costs nothing to find.
CREATE TABLE IF NOT EXISTS {db}.disk_inventory
(
    host String,
    disk String,
    model String,
    serial String,
    rotational UInt8,
    last_seen DateTime
)
ENGINE = ReplacingMergeTree(last_seen)
ORDER BY (host, disk);

-- A Kafka table of its own for the inventory's view, with its own consumer group: an 18.16
-- Kafka table feeding two views can deliver a read to one of them only (see 0009).
CREATE TABLE IF NOT EXISTS {db}.disk_inventory_kafka AS {db}.diskstats
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.diskstats.v1',
    kafka_group_name = '{kafka_group}-disk_inventory', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.disk_inventory_mv TO {db}.disk_inventory AS
SELECT host, disk, any(model) AS model, any(serial) AS serial, any(rotational) AS rotational,
       toDateTime(intDiv(max(ts_ns), 1000000000)) AS last_seen
FROM {db}.disk_inventory_kafka
GROUP BY host, disk
