-- The tickets iopipe opened for failing disks: one per disk episode (the ticket of
-- io.health.v1), open from the disk turning failing until it is healthy again, whatever
-- it passes through between. Each with when it opened and why, its last action (open,
-- update or resolve) and when, and every anomaly its transitions cite. Open tickets of
-- any age, and those resolved in the last `resolved_hours`; the Alertmanager bridge
-- (iopipe/bridge.py) posts exactly these as alerts.
--
-- Parameters: resolved_hours (UInt32), how far back resolved tickets are still listed.
-- Reads: health (transitions only, a few rows per disk and episode).
SELECT
    host,
    disk,
    ticket_id,
    opened_ns,
    opened_reason,
    opened_anomaly_ids,
    last_action,
    last_ns,
    last_reason,
    cited_anomaly_ids
FROM
(
    SELECT
        host,
        disk,
        `ticket.ticket_id` AS ticket_id,
        min(ts_ns) AS opened_ns,
        argMin(reason, ts_ns) AS opened_reason,
        argMin(anomaly_ids, ts_ns) AS opened_anomaly_ids,
        argMax(`ticket.action`, ts_ns) AS last_action,
        max(ts_ns) AS last_ns,
        argMax(reason, ts_ns) AS last_reason,
        groupUniqArrayArray(anomaly_ids) AS cited_anomaly_ids
    FROM iopipe.health FINAL
    WHERE `ticket.ticket_id` != ''
    GROUP BY host, disk, ticket_id
)
WHERE last_action != 'resolve' OR last_ns >= (toUInt64(now()) - {resolved_hours:UInt32} * 3600) * 1000000000
ORDER BY opened_ns, host, disk
