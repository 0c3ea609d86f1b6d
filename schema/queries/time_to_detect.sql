-- Time to detect, per anomaly: from the start of its first anomalous window (onset, to
-- within a window) to the moment its row reached ClickHouse, where dashboards and
-- tickets see it. That includes windowing, detection, Kafka and ingestion. A replayed
-- anomaly keeps its first arrival (the table keeps the earliest delivery).
--
-- Parameters: days (UInt32), how far back to look.
-- Reads: anomalies (small).
SELECT
    id,
    host,
    disk,
    kind,
    severity,
    start AS onset,
    received_at AS detected,
    toUnixTimestamp(received_at) - intDiv(start_ns, 1000000000) AS seconds_to_detect
FROM iopipe.anomalies FINAL
WHERE start >= now() - {days:UInt32} * 86400
ORDER BY onset DESC, host, disk, kind, severity
