-- The batched records are no longer read; the rows made from them stay in the tables.

DROP TABLE IF EXISTS {db}_ingest.events_from_eventbatches_mv;
DROP TABLE IF EXISTS {db}_ingest.events_from_eventbatches_kafka;
DROP TABLE IF EXISTS {db}_ingest.histograms_from_intervals_mv;
DROP TABLE IF EXISTS {db}_ingest.histograms_from_intervals_kafka;
DROP TABLE IF EXISTS {db}_ingest.disk_inventory_from_intervals_mv;
DROP TABLE IF EXISTS {db}_ingest.disk_inventory_from_intervals_kafka;
DROP TABLE IF EXISTS {db}_ingest.diskstats_from_intervals_mv;
DROP TABLE IF EXISTS {db}_ingest.diskstats_from_intervals_kafka
