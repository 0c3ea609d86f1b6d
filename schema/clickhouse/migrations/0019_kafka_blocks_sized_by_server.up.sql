-- Every Kafka table made anew with blocks sized for the server it runs on: {kafka_blocks}
-- is what iopipe/migrate.py's kafka_blocks gives that server's version.
--   18.16: blocks of 64 messages, as before (0002): its read ends only when a block is
--     full or the topic falls silent, and the blocks of one read of about 7.5 s are
--     written as one insert.
--   20.6 and newer: each block is an insert of its own, not squashed with the next, and
--     a block ends when full, when kafka_flush_interval_ms has passed or after ten polls
--     (of 0.5 s) found nothing. Blocks of 64 made an insert of every 64 messages: at
--     100,000 disks, about 1,560 inserts a second into each table fed by the intervals,
--     where MergeTree wants one a second or blocks of thousands of rows. Here a block
--     holds up to 65,536 messages or 7.5 s of them.
-- A changed table takes a new name (_sized_); each keeps the consumer group of the one it
-- replaces, so it reads on from where that one stopped. Table by table, each view first:
-- a table stops reading only for its own change.

DROP TABLE IF EXISTS {db}_ingest.windows_mv;
DROP TABLE IF EXISTS {db}_ingest.windows_kafka;
CREATE TABLE IF NOT EXISTS {db}_ingest.windows_sized_kafka
(
    host String,
    disk String,
    op String,
    window_s UInt32,
    window_start_ns UInt64,
    window_end_ns UInt64,
    interval_s Float64,
    samples UInt32,
    rotational UInt8,
    reads_completed UInt64,
    writes_completed UInt64,
    discards_completed UInt64,
    flushes_completed UInt64,
    reads_per_s Float64,
    writes_per_s Float64,
    read_kib_per_s Float64,
    write_kib_per_s Float64,
    read_merges_per_s Float64,
    write_merges_per_s Float64,
    read_merges_pct Float64,
    write_merges_pct Float64,
    read_await_ms Float64,
    write_await_ms Float64,
    read_req_kib Float64,
    write_req_kib Float64,
    discards_per_s Float64,
    discard_kib_per_s Float64,
    discard_merges_per_s Float64,
    discard_merges_pct Float64,
    discard_await_ms Float64,
    discard_req_kib Float64,
    flushes_per_s Float64,
    flush_await_ms Float64,
    queue_size Float64,
    util_pct Float64
)
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.windows.v1',
    kafka_group_name = '{kafka_group}-windows', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    {kafka_blocks};
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.windows_sized_mv TO {db}.windows AS
SELECT
    host, disk, op, window_s,
    toDateTime(intDiv(window_start_ns, 1000000000)) AS window_start,
    window_start_ns, window_end_ns, interval_s, samples, rotational,
    reads_completed, writes_completed, discards_completed, flushes_completed,
    reads_per_s, writes_per_s, read_kib_per_s, write_kib_per_s,
    read_merges_per_s, write_merges_per_s, read_merges_pct, write_merges_pct,
    read_await_ms, write_await_ms, read_req_kib, write_req_kib,
    discards_per_s, discard_kib_per_s, discard_merges_per_s, discard_merges_pct,
    discard_await_ms, discard_req_kib, flushes_per_s, flush_await_ms,
    queue_size, util_pct
FROM {db}_ingest.windows_sized_kafka;

DROP TABLE IF EXISTS {db}_ingest.anomalies_mv;
DROP TABLE IF EXISTS {db}_ingest.anomalies_kafka;
CREATE TABLE IF NOT EXISTS {db}_ingest.anomalies_sized_kafka
(
    id String,
    host String,
    disk String,
    kind String,
    severity String,
    start_ns UInt64,
    end_ns UInt64,
    summary String,
    evidence_json String
)
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.anomalies.v1',
    kafka_group_name = '{kafka_group}-anomalies', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    {kafka_blocks};
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.anomalies_sized_mv TO {db}.anomalies AS
SELECT
    id, host, disk, kind, severity, start_ns, end_ns,
    toDateTime(intDiv(start_ns, 1000000000)) AS start,
    summary, evidence_json,
    now() AS received_at,
    toUInt32(4294967295 - toUInt32(now())) AS earliest_first
FROM {db}_ingest.anomalies_sized_kafka;

DROP TABLE IF EXISTS {db}_ingest.health_mv;
DROP TABLE IF EXISTS {db}_ingest.health_kafka;
CREATE TABLE IF NOT EXISTS {db}_ingest.health_sized_kafka
(
    id String,
    host String,
    disk String,
    ts_ns UInt64,
    from_state String,
    to_state String,
    reason String,
    anomaly_ids Array(String),
    `ticket.action` String,
    `ticket.ticket_id` String
)
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.health.v1',
    kafka_group_name = '{kafka_group}-health', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    {kafka_blocks};
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.health_sized_mv TO {db}.health AS
SELECT
    id, host, disk, ts_ns,
    toDateTime(intDiv(ts_ns, 1000000000)) AS ts,
    from_state, to_state, reason, anomaly_ids, `ticket.action`, `ticket.ticket_id`
FROM {db}_ingest.health_sized_kafka;

DROP TABLE IF EXISTS {db}_ingest.latency_minutes_mv;
DROP TABLE IF EXISTS {db}_ingest.latency_minutes_kafka;
CREATE TABLE IF NOT EXISTS {db}_ingest.latency_minutes_sized_kafka
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
    {kafka_blocks};
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.latency_minutes_sized_mv TO {db}.latency_minutes AS
SELECT host, disk, op, latency, toDateTime(intDiv(period_start_ns, 1000000000)) AS period, revision,
    buckets_log2_us, count, errors, sum_us, max_us
FROM {db}_ingest.latency_minutes_sized_kafka
WHERE period_s = 60;

DROP TABLE IF EXISTS {db}_ingest.latency_hours_mv;
DROP TABLE IF EXISTS {db}_ingest.latency_hours_kafka;
CREATE TABLE IF NOT EXISTS {db}_ingest.latency_hours_sized_kafka AS {db}_ingest.latency_minutes_sized_kafka
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.latency.v1',
    kafka_group_name = '{kafka_group}-latency_hours', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    {kafka_blocks};
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.latency_hours_sized_mv TO {db}.latency_hours AS
SELECT host, disk, op, latency, toDateTime(intDiv(period_start_ns, 1000000000)) AS period, revision,
    buckets_log2_us, count, errors, sum_us, max_us
FROM {db}_ingest.latency_hours_sized_kafka
WHERE period_s = 3600;

DROP TABLE IF EXISTS {db}_ingest.latency_days_mv;
DROP TABLE IF EXISTS {db}_ingest.latency_days_kafka;
CREATE TABLE IF NOT EXISTS {db}_ingest.latency_days_sized_kafka AS {db}_ingest.latency_minutes_sized_kafka
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.latency.v1',
    kafka_group_name = '{kafka_group}-latency_days', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    {kafka_blocks};
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.latency_days_sized_mv TO {db}.latency_days AS
SELECT host, disk, op, latency, toDateTime(intDiv(period_start_ns, 1000000000)) AS period, revision,
    buckets_log2_us, count, errors, sum_us, max_us
FROM {db}_ingest.latency_days_sized_kafka
WHERE period_s = 86400;

DROP TABLE IF EXISTS {db}_ingest.diskstats_mv;
DROP TABLE IF EXISTS {db}_ingest.diskstats_kafka;
CREATE TABLE IF NOT EXISTS {db}_ingest.diskstats_sized_kafka
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
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.diskstats.accepted.v1',
    kafka_group_name = '{kafka_group}-diskstats-accepted', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    {kafka_blocks};
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.diskstats_sized_mv TO {db}.diskstats AS
SELECT
    host, disk, ts_ns,
    toDateTime(intDiv(ts_ns, 1000000000)) AS ts,
    major, minor, rotational, model, serial,
    reads_completed, reads_merged, sectors_read, read_time_ms,
    writes_completed, writes_merged, sectors_written, write_time_ms,
    in_flight, io_time_ms, weighted_io_time_ms,
    discards_completed, discards_merged, sectors_discarded, discard_time_ms,
    flushes_completed, flush_time_ms
FROM {db}_ingest.diskstats_sized_kafka;

DROP TABLE IF EXISTS {db}_ingest.disk_inventory_mv;
DROP TABLE IF EXISTS {db}_ingest.disk_inventory_kafka;
CREATE TABLE IF NOT EXISTS {db}_ingest.disk_inventory_sized_kafka AS {db}_ingest.diskstats_sized_kafka
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.diskstats.accepted.v1',
    kafka_group_name = '{kafka_group}-disk_inventory-accepted', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    {kafka_blocks};
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.disk_inventory_sized_mv TO {db}.disk_inventory AS
SELECT host, disk, any(model) AS model, any(serial) AS serial, any(rotational) AS rotational,
       toDateTime(intDiv(max(ts_ns), 1000000000)) AS last_seen
FROM {db}_ingest.disk_inventory_sized_kafka
GROUP BY host, disk;

DROP TABLE IF EXISTS {db}_ingest.histograms_mv;
DROP TABLE IF EXISTS {db}_ingest.histograms_kafka;
CREATE TABLE IF NOT EXISTS {db}_ingest.histograms_sized_kafka
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
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.hist.accepted.v1',
    kafka_group_name = '{kafka_group}-histograms-accepted', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    {kafka_blocks};
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.histograms_sized_mv TO {db}.histograms AS
SELECT
    host, disk, op, latency, start_ns, end_ns,
    toDateTime(intDiv(start_ns, 1000000000)) AS start,
    buckets_log2_us, count, sum_us, max_us, errors
FROM {db}_ingest.histograms_sized_kafka;

DROP TABLE IF EXISTS {db}_ingest.events_mv;
DROP TABLE IF EXISTS {db}_ingest.events_kafka;
CREATE TABLE IF NOT EXISTS {db}_ingest.events_sized_kafka
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
    sample_weight Float64,
    timed_from String
)
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.events.accepted.v1',
    kafka_group_name = '{kafka_group}-events-accepted', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    {kafka_blocks};
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.events_sized_mv TO {db}.events AS
SELECT
    host, disk, op, issue_ns, complete_ns,
    toDateTime(intDiv(issue_ns, 1000000000)) AS issue_time,
    sector, bytes, queue_ns, inflight, error, comm, pid, sample_reason, sample_weight,
    if(timed_from = '', 'dispatch', timed_from) AS timed_from
FROM {db}_ingest.events_sized_kafka;

DROP TABLE IF EXISTS {db}_ingest.diskstats_from_intervals_mv;
DROP TABLE IF EXISTS {db}_ingest.diskstats_from_intervals_kafka;
CREATE TABLE IF NOT EXISTS {db}_ingest.diskstats_from_intervals_sized_kafka
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
    {kafka_blocks};
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.diskstats_from_intervals_sized_mv TO {db}.diskstats AS
SELECT
    host, disk, ts_ns,
    toDateTime(intDiv(ts_ns, 1000000000)) AS ts,
    major, minor, rotational, model, serial,
    reads_completed, reads_merged, sectors_read, read_time_ms,
    writes_completed, writes_merged, sectors_written, write_time_ms,
    in_flight, io_time_ms, weighted_io_time_ms,
    discards_completed, discards_merged, sectors_discarded, discard_time_ms,
    flushes_completed, flush_time_ms
FROM {db}_ingest.diskstats_from_intervals_sized_kafka;

DROP TABLE IF EXISTS {db}_ingest.disk_inventory_from_intervals_mv;
DROP TABLE IF EXISTS {db}_ingest.disk_inventory_from_intervals_kafka;
CREATE TABLE IF NOT EXISTS {db}_ingest.disk_inventory_from_intervals_sized_kafka AS {db}_ingest.diskstats_from_intervals_sized_kafka
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.intervals.accepted.v1',
    kafka_group_name = '{kafka_group}-disk_inventory-intervals', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    {kafka_blocks};
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.disk_inventory_from_intervals_sized_mv TO {db}.disk_inventory AS
SELECT host, disk, any(model) AS model, any(serial) AS serial, any(rotational) AS rotational,
       toDateTime(intDiv(max(ts_ns), 1000000000)) AS last_seen
FROM {db}_ingest.disk_inventory_from_intervals_sized_kafka
GROUP BY host, disk;

DROP TABLE IF EXISTS {db}_ingest.histograms_from_intervals_mv;
DROP TABLE IF EXISTS {db}_ingest.histograms_from_intervals_kafka;
CREATE TABLE IF NOT EXISTS {db}_ingest.histograms_from_intervals_sized_kafka AS {db}_ingest.diskstats_from_intervals_sized_kafka
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.intervals.accepted.v1',
    kafka_group_name = '{kafka_group}-histograms-intervals', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    {kafka_blocks};
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.histograms_from_intervals_sized_mv TO {db}.histograms AS
SELECT
    host, disk, op, latency, start_ns, end_ns,
    toDateTime(intDiv(start_ns, 1000000000)) AS start,
    buckets_log2_us, count, sum_us, max_us, errors
FROM {db}_ingest.histograms_from_intervals_sized_kafka
ARRAY JOIN hist_op AS op, hist_latency AS latency, hist_buckets_log2_us AS buckets_log2_us, hist_count AS count,
    hist_sum_us AS sum_us, hist_max_us AS max_us, hist_errors AS errors;

DROP TABLE IF EXISTS {db}_ingest.events_from_eventbatches_mv;
DROP TABLE IF EXISTS {db}_ingest.events_from_eventbatches_kafka;
CREATE TABLE IF NOT EXISTS {db}_ingest.events_from_eventbatches_sized_kafka
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
    {kafka_blocks};
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}_ingest.events_from_eventbatches_sized_mv TO {db}.events AS
SELECT
    host, disk, op, issue_ns, complete_ns,
    toDateTime(intDiv(issue_ns, 1000000000)) AS issue_time,
    sector, bytes, queue_ns, inflight, error, comm, pid, sample_reason, sample_weight, timed_from
FROM {db}_ingest.events_from_eventbatches_sized_kafka
ARRAY JOIN op, issue_ns, complete_ns, sector, bytes, queue_ns, inflight, error, comm, pid, sample_reason, sample_weight,
    timed_from;
