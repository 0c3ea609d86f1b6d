-- 0009's rollups, summed in ClickHouse from io.hist.v1: 0013 moved their history into
-- latency_minutes, latency_hours and latency_days.
DROP TABLE IF EXISTS {db}.latency_1m;
DROP TABLE IF EXISTS {db}.latency_1h;
DROP TABLE IF EXISTS {db}.latency_1d
