-- The tables as 0009 made them, empty: their history is in 0013's.
CREATE TABLE IF NOT EXISTS {db}.latency_1m
(
    host String,
    disk String,
    op String,
    latency String,
    period DateTime,
    buckets_log2_us AggregateFunction(sumForEach, Array(UInt64)),
    count AggregateFunction(sum, UInt64),
    errors AggregateFunction(sum, UInt64),
    sum_us AggregateFunction(sum, UInt64),
    max_us AggregateFunction(max, UInt64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMMDD(period)
ORDER BY (toStartOfHour(period), host, disk, op, latency, period);

CREATE TABLE IF NOT EXISTS {db}.latency_1h AS {db}.latency_1m
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(period)
ORDER BY (toStartOfDay(period), host, disk, op, latency, period);

CREATE TABLE IF NOT EXISTS {db}.latency_1d AS {db}.latency_1m
ENGINE = AggregatingMergeTree
PARTITION BY toYear(period)
ORDER BY (host, disk, op, latency, period)
