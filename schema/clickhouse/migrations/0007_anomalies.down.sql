DROP TABLE IF EXISTS {db}.anomalies_mv;
DROP TABLE IF EXISTS {db}.anomalies_kafka;
DROP TABLE IF EXISTS {db}.anomalies
