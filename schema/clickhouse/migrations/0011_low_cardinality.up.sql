-- requires: ClickHouse >= 21.8 (LowCardinality without the experimental flag)
-- Dictionary-encode the repetitive strings outside the sorting keys: smaller columns and
-- faster filters on them. Key columns keep String so both engines sort identically.
ALTER TABLE {db}.events MODIFY COLUMN comm LowCardinality(String), MODIFY COLUMN sample_reason LowCardinality(String);
ALTER TABLE {db}.diskstats MODIFY COLUMN model LowCardinality(String);
ALTER TABLE {db}.anomalies MODIFY COLUMN severity LowCardinality(String);
ALTER TABLE {db}.health MODIFY COLUMN from_state LowCardinality(String), MODIFY COLUMN to_state LowCardinality(String)
