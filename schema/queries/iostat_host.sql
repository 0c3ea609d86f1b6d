-- iostat -x of one host: what `iostat -x <window_s>` would have printed over the last
-- minutes, one row per disk per window, with sysstat's column names. The rates are the
-- kernel's counters over each window, computed as sysstat computes them.
--
-- Parameters: host (String), window_s (UInt32: one of schema/pipeline.json's window_s), minutes (UInt32).
-- Reads: windows, one host's range.
SELECT
    window_start AS time,
    disk,
    round(reads_per_s, 2) AS `r/s`,
    round(read_kib_per_s, 2) AS `rkB/s`,
    round(read_merges_per_s, 2) AS `rrqm/s`,
    round(read_merges_pct, 2) AS `%rrqm`,
    round(read_await_ms, 2) AS r_await,
    round(read_req_kib, 2) AS `rareq-sz`,
    round(writes_per_s, 2) AS `w/s`,
    round(write_kib_per_s, 2) AS `wkB/s`,
    round(write_merges_per_s, 2) AS `wrqm/s`,
    round(write_merges_pct, 2) AS `%wrqm`,
    round(write_await_ms, 2) AS w_await,
    round(write_req_kib, 2) AS `wareq-sz`,
    round(discards_per_s, 2) AS `d/s`,
    round(discard_await_ms, 2) AS d_await,
    round(flushes_per_s, 2) AS `f/s`,
    round(flush_await_ms, 2) AS f_await,
    round(queue_size, 2) AS `aqu-sz`,
    round(util_pct, 2) AS `%util`
FROM iopipe.windows FINAL
WHERE host = {host:String} AND op = 'all' AND window_s = {window_s:UInt32}
  AND window_start >= now() - {minutes:UInt32} * 60
ORDER BY time, disk
