-- One disk beside its peers: the other disks of the same model on the same host, over
-- the last 24 hours. Same model, same host, same workload mix is as close to a control
-- group as a fleet has; a disk whose p99 is several times its peers' median is the odd
-- one out even when nothing crossed a threshold.
--
-- Device latency (D2C), reads and writes together, from the hourly histograms merged
-- exactly; p99 interpolated inside its log2 bucket.
-- Parameters: host (String), disk (String).
-- Reads: disk_inventory (to find the model), latency_hours (newest revisions) for one host.
SELECT
    disk,
    disk = {disk:String} AS this_disk,
    ios,
    mean_ms,
    p99_ms,
    round(p99_ms / arrayReduce('median', arrayFilter((p, d) -> d != {disk:String}, all_p99_ms, all_disks)), 2) AS p99_vs_peers
FROM
(
    SELECT
        groupArray(disk) AS all_disks,
        groupArray(ios) AS all_ios,
        groupArray(mean_ms) AS all_mean_ms,
        groupArray(p99_ms) AS all_p99_ms
    FROM
    (
        SELECT
            disk,
            ios,
            round(sum_us / ios / 1000, 3) AS mean_ms,
            round(pow(2, i99 - 1 + (0.99 * ios - if(i99 > 1, cum[i99 - 1], 0)) / h[i99]) / 1000, 3) AS p99_ms
        FROM
        (
            SELECT
                disk,
                sumForEach(buckets_log2_us) AS h,
                arrayCumSum(h) AS cum,
                sum(count) AS ios,
                sum(sum_us) AS sum_us,
                arrayFirstIndex(c -> c >= 0.99 * ios, cum) AS i99
            FROM iopipe.latency_hours FINAL
            WHERE host = {host:String} AND latency = 'device' AND period >= toStartOfHour(now() - 86400)
              AND disk IN
              (
                  SELECT disk FROM iopipe.disk_inventory FINAL
                  WHERE host = {host:String} AND model =
                      (SELECT any(model) FROM iopipe.disk_inventory FINAL WHERE host = {host:String} AND disk = {disk:String})
              )
            GROUP BY disk
            HAVING ios > 0
        )
    )
)
ARRAY JOIN all_disks AS disk, all_ios AS ios, all_mean_ms AS mean_ms, all_p99_ms AS p99_ms
ORDER BY this_disk DESC, p99_ms DESC, disk
