ALTER TABLE {db}.diskstats
    MODIFY COLUMN reads_completed UInt64 CODEC(Default),
    MODIFY COLUMN sectors_read UInt64 CODEC(Default),
    MODIFY COLUMN read_time_ms UInt64 CODEC(Default),
    MODIFY COLUMN writes_completed UInt64 CODEC(Default),
    MODIFY COLUMN sectors_written UInt64 CODEC(Default),
    MODIFY COLUMN write_time_ms UInt64 CODEC(Default),
    MODIFY COLUMN io_time_ms UInt64 CODEC(Default),
    MODIFY COLUMN weighted_io_time_ms UInt64 CODEC(Default)
