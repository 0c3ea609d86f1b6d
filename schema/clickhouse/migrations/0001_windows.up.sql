-- Per-disk iostat windows (io.window.v1), ingested from Kafka topic io.windows.v1.
-- Step 1 of 3: the table that keeps the rows. ReplacingMergeTree on the window's
-- identity: a replayed window replaces its twin instead of doubling it.
CREATE TABLE IF NOT EXISTS {db}.windows
(
    host String,
    disk String,
    op String,
    window_s UInt32,
    window_start DateTime,
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
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(window_start)
ORDER BY (host, disk, op, window_s, window_start_ns)
