-- requires: ClickHouse >= 21.8 (column codecs)
-- diskstats counters only grow: Delta then ZSTD stores each sample in a few bits.
ALTER TABLE {db}.diskstats
    MODIFY COLUMN reads_completed UInt64 CODEC(Delta, ZSTD(1)),
    MODIFY COLUMN sectors_read UInt64 CODEC(Delta, ZSTD(1)),
    MODIFY COLUMN read_time_ms UInt64 CODEC(Delta, ZSTD(1)),
    MODIFY COLUMN writes_completed UInt64 CODEC(Delta, ZSTD(1)),
    MODIFY COLUMN sectors_written UInt64 CODEC(Delta, ZSTD(1)),
    MODIFY COLUMN write_time_ms UInt64 CODEC(Delta, ZSTD(1)),
    MODIFY COLUMN io_time_ms UInt64 CODEC(Delta, ZSTD(1)),
    MODIFY COLUMN weighted_io_time_ms UInt64 CODEC(Delta, ZSTD(1))
