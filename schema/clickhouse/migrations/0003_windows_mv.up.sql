-- Step 3 of 3: moves each consumed block from the Kafka table into windows.
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.windows_mv TO {db}.windows AS
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
FROM {db}.windows_kafka
