package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Set;

/**
 * Turns input lines into typed records, enforcing schema/records/*.schema.json.
 * Every rule here is exercised by the schema's shared valid and invalid examples.
 */
public final class RecordDecoder {
    /** Timestamps before 2001-09-09 are seconds or milliseconds mistaken for nanoseconds. */
    static final long EARLIEST_PLAUSIBLE_NS = 1_000_000_000_000_000_000L;
    /**
     * How far ahead of this clock a producer's clock may run before its records are refused.
     * A disk's event-time clock follows its records, so one record from far ahead would
     * make the disk's next ones late until real time caught up: this bounds the damage.
     */
    static final long MAX_CLOCK_AHEAD_NS = 15L * 60 * 1_000_000_000L;

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

    static final Set<String> OPS = Set.of("R", "W", "D", "F");
    static final Set<String> LATENCY_KINDS = Set.of("device", "queue", "total");
    static final Set<String> SAMPLE_REASONS = Set.of("outlier", "uniform", "recorder", "all");

    public static HistRecord hist(JsonNode n, long nowNs) throws DecodeException {
        expectSchema(n, HistRecord.SCHEMA);
        HistRecord h = new HistRecord();
        h.host = Json.text(n, "host", 253);
        h.disk = Json.text(n, "disk", 64);
        h.op = Json.oneOf(n, "op", OPS);
        h.latency = Json.oneOf(n, "latency", LATENCY_KINDS);
        h.startNs = Json.counter(n, "start_ns");
        h.endNs = timestamp(n, "end_ns", nowNs);
        if (h.startNs > h.endNs) {
            throw new DecodeException("start_ns " + h.startNs + " is after end_ns " + h.endNs);
        }
        h.bucketsLog2Us = Json.counters(n, "buckets_log2_us", HistRecord.MAX_BUCKETS);
        h.count = Json.counter(n, "count");
        h.sumUs = Json.counter(n, "sum_us");
        h.maxUs = Json.counter(n, "max_us");
        h.errors = Json.optionalCounter(n, "errors");
        long inBuckets = 0;
        for (long b : h.bucketsLog2Us) {
            inBuckets += b;
        }
        if (inBuckets != h.count) {
            throw new DecodeException("buckets_log2_us hold " + inBuckets + " I/Os but count is " + h.count);
        }
        if (h.errors > h.count) {
            throw new DecodeException("errors " + h.errors + " exceed count " + h.count);
        }
        return h;
    }

    public static IoEvent event(JsonNode n, long nowNs) throws DecodeException {
        expectSchema(n, IoEvent.SCHEMA);
        IoEvent e = new IoEvent();
        e.host = Json.text(n, "host", 253);
        e.disk = Json.text(n, "disk", 64);
        e.op = Json.oneOf(n, "op", OPS);
        e.bytes = Json.counter(n, "bytes");
        e.sector = Json.counter(n, "sector");
        e.issueNs = Json.counter(n, "issue_ns");
        e.completeNs = timestamp(n, "complete_ns", nowNs);
        if (e.issueNs > e.completeNs) {
            throw new DecodeException("issue_ns " + e.issueNs + " is after complete_ns " + e.completeNs);
        }
        e.queueNs = Json.counter(n, "queue_ns");
        e.inflight = Json.counter(n, "inflight");
        e.error = Json.integer(n, "error");
        if (e.error > 0) {
            throw new DecodeException("error must be 0 or -errno, got " + e.error);
        }
        e.comm = Json.textUpTo(n, "comm", 16);
        e.pid = Json.counter(n, "pid");
        e.sampleReason = Json.oneOf(n, "sample_reason", SAMPLE_REASONS);
        e.sampleWeight = Json.number(n, "sample_weight");
        if (!(e.sampleWeight >= 1) || Double.isInfinite(e.sampleWeight)) {
            throw new DecodeException("sample_weight must be a finite number of at least 1, got " + e.sampleWeight);
        }
        return e;
    }

    private static void expectSchema(JsonNode n, String expected) throws DecodeException {
        String schema = schemaOf(n);
        if (!expected.equals(schema)) {
            throw new DecodeException("expected " + expected + ", got " + schema);
        }
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
