-- Disks that went from suspect to failing, newest first, with how long they were suspect
-- first and the ticket opened for them: the disks to replace.
--
-- Parameters: days (UInt32), how far back to look.
-- Reads: health (small).
SELECT
    host,
    disk,
    arrayReduce('max', arrayFilter(t -> t <= failing_at, suspect_times)) AS suspect_since,
    failing_at,
    failing_at - suspect_since AS seconds_suspect,
    reason,
    ticket_id
FROM
(
    SELECT host, disk, ts AS failing_at, reason, `ticket.ticket_id` AS ticket_id
    FROM iopipe.health FINAL
    WHERE from_state = 'suspect' AND to_state = 'failing' AND ts >= now() - {days:UInt32} * 86400
) AS failing
ANY LEFT JOIN
(
    SELECT host, disk, groupArray(ts) AS suspect_times
    FROM iopipe.health FINAL
    WHERE to_state = 'suspect'
    GROUP BY host, disk
) AS suspect USING (host, disk)
ORDER BY failing_at DESC, host, disk
