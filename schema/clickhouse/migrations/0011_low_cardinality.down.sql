ALTER TABLE {db}.health MODIFY COLUMN from_state String, MODIFY COLUMN to_state String;
ALTER TABLE {db}.anomalies MODIFY COLUMN severity String;
ALTER TABLE {db}.diskstats MODIFY COLUMN model String;
ALTER TABLE {db}.events MODIFY COLUMN comm String, MODIFY COLUMN sample_reason String
