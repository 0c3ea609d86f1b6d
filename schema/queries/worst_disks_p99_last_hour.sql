-- Worst disks fleet-wide by p99 device latency (D2C) over the last hour.
--
-- Every I/O of the hour counts: the disks' 1 min histograms are merged bucket by bucket
-- (reads and writes together), and p99 is interpolated log-linearly inside the log2 µs
-- bucket that holds it, so it is exact to within that bucket. Disks with fewer than
-- 100 I/Os in the hour have no meaningful p99 and are left out.
--
-- Parameters: limit (UInt32), rows to return.
-- Reads: latency_minutes, only the granules of the last hour (its sorting key starts with
-- the hour); FINAL keeps the newest revision of each minute.
-- The hour condition repeats the minute one for ClickHouse 18.16, which does not carry a
-- condition on `period` over to the key's toStartOfHour(period): without it, the whole
-- day's partition is read (730 ms instead of 190 ms for 10,000 disks).
SELECT
    host,
    disk,
    ios,
    errors,
    round(sum_us / ios / 1000, 3) AS mean_ms,
    round(pow(2, i99 - 1 + (0.99 * ios - if(i99 > 1, cum[i99 - 1], 0)) / h[i99]) / 1000, 3) AS p99_ms,
    round(max_us / 1000, 3) AS max_ms
FROM
(
    SELECT
        host,
        disk,
        sumForEach(buckets_log2_us) AS h,
        arrayCumSum(h) AS cum,
        sum(count) AS ios,
        sum(errors) AS errors,
        sum(sum_us) AS sum_us,
        max(max_us) AS max_us,
        arrayFirstIndex(c -> c >= 0.99 * ios, cum) AS i99
    FROM iopipe.latency_minutes FINAL
    WHERE latency = 'device' AND period >= toStartOfMinute(now() - 3600)
      AND toStartOfHour(period) >= toStartOfHour(now() - 3600)
    GROUP BY host, disk
    HAVING ios >= 100
)
ORDER BY p99_ms DESC, host, disk
LIMIT {limit:UInt32}
