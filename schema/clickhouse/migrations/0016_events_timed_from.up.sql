-- An event says what its issue_ns marks (io.event.v1 timed_from): the dispatch to the
-- device, as the agent and most tools record it, or the request's entry to the block
-- layer, for captures whose tools start their clock there (iosnoop -Q, biosnoop.bt):
-- their complete_ns - issue_ns is a total time, not a device time. Rows stored before
-- were all timed from the dispatch: the column's default. The Kafka table is made anew
-- with the field (absent from most records: '' there, 'dispatch' here) under the same
-- consumer group, so it reads on from where the old one stopped.

DROP TABLE IF EXISTS {db}.events_mv;
DROP TABLE IF EXISTS {db}.events_kafka;
ALTER TABLE {db}.events ADD COLUMN IF NOT EXISTS timed_from String DEFAULT 'dispatch';
CREATE TABLE IF NOT EXISTS {db}.events_kafka
(
    host String,
    disk String,
    op String,
    issue_ns UInt64,
    complete_ns UInt64,
    sector UInt64,
    bytes UInt64,
    queue_ns UInt64,
    inflight UInt32,
    error Int32,
    comm String,
    pid UInt32,
    sample_reason String,
    sample_weight Float64,
    timed_from String
)
ENGINE = Kafka SETTINGS kafka_broker_list = '{kafka_brokers}', kafka_topic_list = 'io.events.accepted.v1',
    kafka_group_name = '{kafka_group}-events-accepted', kafka_format = 'JSONEachRow', kafka_row_delimiter = '\n',
    kafka_max_block_size = 64;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.events_mv TO {db}.events AS
SELECT
    host, disk, op, issue_ns, complete_ns,
    toDateTime(intDiv(issue_ns, 1000000000)) AS issue_time,
    sector, bytes, queue_ns, inflight, error, comm, pid, sample_reason, sample_weight,
    if(timed_from = '', 'dispatch', timed_from) AS timed_from
FROM {db}.events_kafka
