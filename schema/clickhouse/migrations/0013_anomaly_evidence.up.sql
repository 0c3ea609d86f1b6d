-- Each anomaly's evidence, as the JSON text the record carries in evidence_json (18.16
-- cannot read the evidence object into a String). Read it with visitParamExtractFloat /
-- visitParamExtractRaw (every version) or JSONExtract (modern ones).
-- A Kafka table cannot be altered on 18.16, so its view and table are dropped and made
-- again from the widened table; the consumer group keeps its offsets meanwhile, so what
-- arrives in between is read afterwards.
DROP TABLE IF EXISTS {db}.anomalies_mv;
DROP TABLE IF EXISTS {db}.anomalies_kafka;
ALTER TABLE {db}.anomalies ADD COLUMN evidence_json String AFTER summary;

CREATE TABLE IF NOT EXISTS {db}.anomalies_kafka AS {db}.anomalies
ENGINE = Kafka('{kafka_brokers}', 'io.anomalies.v1', '{kafka_group}-anomalies', 'JSONEachRow', '\n');

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.anomalies_mv TO {db}.anomalies AS
SELECT
    id, host, disk, kind, severity, start_ns, end_ns,
    toDateTime(intDiv(start_ns, 1000000000)) AS start,
    summary, evidence_json,
    now() AS received_at,
    toUInt32(4294967295 - toUInt32(now())) AS earliest_first
FROM {db}.anomalies_kafka
