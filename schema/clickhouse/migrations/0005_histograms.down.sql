DROP TABLE IF EXISTS {db}.histograms_mv;
DROP TABLE IF EXISTS {db}.histograms_kafka;
DROP TABLE IF EXISTS {db}.histograms
