DROP TABLE IF EXISTS {db}.health_mv;
DROP TABLE IF EXISTS {db}.health_kafka;
DROP TABLE IF EXISTS {db}.health
