DROP TABLE IF EXISTS {db}.events_mv;
DROP TABLE IF EXISTS {db}.events_kafka;
DROP TABLE IF EXISTS {db}.events
