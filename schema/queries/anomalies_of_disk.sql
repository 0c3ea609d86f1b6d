-- What iopipe found on one disk and why: its anomalies of the last hours, newest first,
-- each with its summary and the evidence's headline figures: the window's device time
-- p50, p99 and max, and its iostat line's queue size and utilisation. `evidence` is the
-- whole evidence as JSON text: the window's biolatency histogram, its worst events and
-- the detector's own figures (modes and gap for retries, service time and its ceiling
-- for a failing disk, the ratio to QD1 for saturation, the burst for a queue ramp).
-- Modern servers read any of it with JSONExtract, e.g. JSONExtractFloat(evidence, 'gap_ms').
--
-- Parameters: host (String), disk (String), hours (UInt32), how far back to look.
-- Reads: anomalies (small).
SELECT
    start AS onset,
    kind,
    severity,
    summary,
    visitParamExtractFloat(evidence_json, 'device_p50_ms') AS p50_ms,
    visitParamExtractFloat(evidence_json, 'device_p99_ms') AS p99_ms,
    visitParamExtractFloat(evidence_json, 'device_max_ms') AS max_ms,
    visitParamExtractFloat(visitParamExtractRaw(evidence_json, 'iostat'), 'aqu_sz') AS aqu_sz,
    visitParamExtractFloat(visitParamExtractRaw(evidence_json, 'iostat'), 'util_pct') AS util_pct,
    evidence_json AS evidence
FROM iopipe.anomalies FINAL
WHERE host = {host:String} AND disk = {disk:String} AND start >= now() - {hours:UInt32} * 3600
ORDER BY start_ns DESC, kind, severity
