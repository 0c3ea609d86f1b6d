DROP TABLE IF EXISTS {db}.disk_inventory_mv;
DROP TABLE IF EXISTS {db}.disk_inventory_kafka;
DROP TABLE IF EXISTS {db}.disk_inventory;
DROP TABLE IF EXISTS {db}.diskstats_mv;
DROP TABLE IF EXISTS {db}.diskstats_kafka;
DROP TABLE IF EXISTS {db}.diskstats
