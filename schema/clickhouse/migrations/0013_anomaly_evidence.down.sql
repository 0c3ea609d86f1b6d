-- Back to 0007's anomalies: the view and Kafka table made again without evidence_json.
DROP TABLE IF EXISTS {db}.anomalies_mv;
DROP TABLE IF EXISTS {db}.anomalies_kafka;
ALTER TABLE {db}.anomalies DROP COLUMN evidence_json;

CREATE TABLE IF NOT EXISTS {db}.anomalies_kafka AS {db}.anomalies
ENGINE = Kafka('{kafka_brokers}', 'io.anomalies.v1', '{kafka_group}-anomalies', 'JSONEachRow', '\n');

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.anomalies_mv TO {db}.anomalies AS
SELECT
    id, host, disk, kind, severity, start_ns, end_ns,
    toDateTime(intDiv(start_ns, 1000000000)) AS start,
    summary,
    now() AS received_at,
    toUInt32(4294967295 - toUInt32(now())) AS earliest_first
FROM {db}.anomalies_kafka
