-- Step 2 of 3: the Kafka consumer of io.windows.v1, with the columns of the windows table
-- itself so the two cannot drift. Fields the records do not carry (window_start) take
-- their default; the view computes them. Booleans arrive as JSON true/false, which
-- JSONEachRow reads into UInt8.
-- Row delimiter '\n': each message is its own row, so the ingestion profile
-- (infra/clickhouse/users.xml) can skip a malformed one without losing its neighbours.
-- One consumer group per Kafka table: tables then never rebalance each other. (In one
-- group, every table joining or leaving moves the others' partitions, and a block read
-- but not yet committed across a rebalance is read again.)
CREATE TABLE IF NOT EXISTS {db}.windows_kafka AS {db}.windows
ENGINE = Kafka('{kafka_brokers}', 'io.windows.v1', '{kafka_group}-windows', 'JSONEachRow', '\n')
