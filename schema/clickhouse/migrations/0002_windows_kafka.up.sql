-- Step 2 of 3: the Kafka consumer of io.windows.v1, with the columns of the windows table
-- itself so the two cannot drift. Fields the records do not carry (window_start) take
-- their default; the view computes them. Booleans arrive as JSON true/false, which
-- JSONEachRow reads into UInt8.
-- Row delimiter '\n': each message is its own row, so the ingestion profile
-- (infra/clickhouse/users.xml) can skip a malformed one without losing its neighbours.
-- One consumer group per Kafka table: tables then never rebalance each other. (In one
-- group, every table joining or leaving moves the others' partitions, and a block read
-- but not yet committed across a rebalance is read again.)
-- Blocks of 64 messages: on 18.16 a Kafka table's read ends, and its rows reach the
-- tables, only when a block is full (65536 messages by default) or the topic falls silent;
-- the flush interval (stream_flush_interval_ms, 7.5 s) is checked between blocks only.
-- One host's steady second-by-second histograms never fill a block nor fall silent, so
-- they reached ClickHouse minutes late, when the agent stopped. With 64-message blocks
-- each read ends within about 7.5 s and is still written as one insert, so parts do not
-- multiply; 500,000 histograms ingested in 8.7 s with either block size on this machine.
-- Modern servers flush on time regardless.
CREATE TABLE IF NOT EXISTS {db}.windows_kafka AS {db}.windows
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.windows.v1',
    kafka_group_name = '{kafka_group}-windows', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64
