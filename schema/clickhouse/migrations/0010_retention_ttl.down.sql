ALTER TABLE {db}.diskstats REMOVE TTL;
ALTER TABLE {db}.histograms REMOVE TTL;
ALTER TABLE {db}.events REMOVE TTL
