-- One disk's device latency heatmap over one day: for every minute, how many I/Os fell
-- in each log2 µs bucket [bucket_low_us, 2 * bucket_low_us). Exact counts from the
-- kernel's histograms (every I/O, not a sample). Grafana: a heatmap panel, format table.
--
-- Parameters: host (String), disk (String), day (Date, the server's time zone).
-- Reads: latency_minutes (newest revisions), 24 hour ranges of one disk.
SELECT
    minute,
    toUInt64(pow(2, bucket - 1)) AS bucket_low_us,
    ios
FROM
(
    SELECT period AS minute, sumForEach(buckets_log2_us) AS h
    FROM iopipe.latency_minutes FINAL
    WHERE host = {host:String} AND disk = {disk:String} AND latency = 'device'
      AND period >= toDateTime({day:Date}) AND period < toDateTime({day:Date}) + 86400
    GROUP BY minute
)
ARRAY JOIN h AS ios, arrayEnumerate(h) AS bucket
WHERE ios > 0
ORDER BY minute, bucket_low_us
