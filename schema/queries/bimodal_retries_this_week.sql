-- Disks with bimodal retries in the last 7 days: a second latency mode at two or more
-- times the main one (Brooker's retry signature; whole revolutions on rotational disks).
-- An episode is one run of anomalous windows; it may be reported at more than one
-- severity, so episodes are counted by their start.
--
-- Parameters: none.
-- Reads: anomalies (small).
SELECT
    host,
    disk,
    uniqExact(start_ns) AS episodes,
    min(start) AS first_seen,
    max(start) AS last_seen,
    argMax(summary, start_ns) AS latest_summary
FROM iopipe.anomalies FINAL
WHERE kind = 'bimodal_retries' AND start >= now() - 7 * 86400
GROUP BY host, disk
ORDER BY last_seen DESC, host, disk
