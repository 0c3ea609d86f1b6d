-- requires: ClickHouse >= 21.8 (table TTL, REMOVE TTL)
-- Retention of the raw tables; rollups, windows, anomalies and health are kept. On a
-- server without TTL, drop the oldest day partitions of these tables instead.
ALTER TABLE {db}.events MODIFY TTL issue_time + INTERVAL 3 DAY;
ALTER TABLE {db}.histograms MODIFY TTL start + INTERVAL 14 DAY;
ALTER TABLE {db}.diskstats MODIFY TTL ts + INTERVAL 30 DAY
