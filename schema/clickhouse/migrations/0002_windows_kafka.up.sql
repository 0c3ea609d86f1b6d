-- Step 2 of 3: the Kafka consumer of io.windows.v1, with the columns of the windows table
-- itself so the two cannot drift. Fields the records do not carry (window_start) take
-- their default; the view computes them. Booleans arrive as JSON true/false, which
-- JSONEachRow reads into UInt8.
CREATE TABLE IF NOT EXISTS {db}.windows_kafka AS {db}.windows
ENGINE = Kafka('{kafka_brokers}', 'io.windows.v1', '{kafka_group}', 'JSONEachRow')
