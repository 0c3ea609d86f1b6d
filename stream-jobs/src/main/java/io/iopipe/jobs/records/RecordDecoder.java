package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * Turns input lines into typed records, enforcing schema/records/*.schema.json.
 * Every rule here is exercised by the schema's shared valid and invalid examples.
 */
public final class RecordDecoder {
    /** Timestamps before 2001-09-09 are seconds or milliseconds mistaken for nanoseconds. */
    static final long EARLIEST_PLAUSIBLE_NS = 1_000_000_000_000_000_000L;
    /** How far ahead of this clock a producer's clock may run before its records are refused. */
    static final long MAX_CLOCK_AHEAD_NS = 24L * 3600 * 1_000_000_000L;

    private RecordDecoder() {}

    /** The `schema` field of any record, checked to be a string. */
    public static String schemaOf(JsonNode record) throws DecodeException {
        return Json.text(record, "schema", 64);
    }

    public static DiskstatsSample diskstats(JsonNode n, String source, long nowNs) throws DecodeException {
        String schema = schemaOf(n);
        if (!DiskstatsSample.SCHEMA.equals(schema)) {
            throw new DecodeException("expected " + DiskstatsSample.SCHEMA + ", got " + schema);
        }
        DiskstatsSample s = new DiskstatsSample();
        s.source = source;
        s.host = Json.text(n, "host", 253);
        s.disk = Json.text(n, "disk", 64);
        s.tsNs = timestamp(n, "ts_ns", nowNs);
        s.rotational = Json.bool(n, "rotational");
        s.readsCompleted = Json.counter(n, "reads_completed");
        s.readsMerged = Json.counter(n, "reads_merged");
        s.sectorsRead = Json.counter(n, "sectors_read");
        s.readTimeMs = Json.counter(n, "read_time_ms");
        s.writesCompleted = Json.counter(n, "writes_completed");
        s.writesMerged = Json.counter(n, "writes_merged");
        s.sectorsWritten = Json.counter(n, "sectors_written");
        s.writeTimeMs = Json.counter(n, "write_time_ms");
        s.inFlight = Json.counter(n, "in_flight");
        s.ioTimeMs = Json.counter(n, "io_time_ms");
        s.weightedIoTimeMs = Json.counter(n, "weighted_io_time_ms");
        s.discardsCompleted = Json.optionalCounter(n, "discards_completed");
        s.discardsMerged = Json.optionalCounter(n, "discards_merged");
        s.sectorsDiscarded = Json.optionalCounter(n, "sectors_discarded");
        s.discardTimeMs = Json.optionalCounter(n, "discard_time_ms");
        s.flushesCompleted = Json.optionalCounter(n, "flushes_completed");
        s.flushTimeMs = Json.optionalCounter(n, "flush_time_ms");
        return s;
    }

    static long timestamp(JsonNode n, String field, long nowNs) throws DecodeException {
        long ts = Json.counter(n, field);
        if (ts < EARLIEST_PLAUSIBLE_NS) {
            throw new DecodeException(field + " " + ts + " is before 2001: not nanoseconds since the epoch");
        }
        if (ts - nowNs > MAX_CLOCK_AHEAD_NS) {
            throw new DecodeException("clock skew: " + field + " is " + (ts - nowNs) / 1_000_000_000L
                    + " s ahead of this clock; fix the producer's clock (NTP)");
        }
        return ts;
    }
}
