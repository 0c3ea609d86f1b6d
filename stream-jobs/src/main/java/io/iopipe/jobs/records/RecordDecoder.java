package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Set;

/**
 * Turns input lines into typed records, enforcing schema/records/*.schema.json, whose
 * bounds it reads from there. Every rule here is exercised by the schema's shared valid
 * and invalid examples: schema/tests/test_contract.py finds an invalid example for each bound.
 * A batched record (io.interval.v1, io.eventbatch.v1) is read as the records it batches,
 * each part by the same code and rules as its record sent alone.
 */
public final class RecordDecoder {
    private static final RecordSchema DISKSTATS = RecordSchema.of(DiskstatsSample.SCHEMA);
    private static final RecordSchema HIST = RecordSchema.of(HistRecord.SCHEMA);
    private static final RecordSchema EVENT = RecordSchema.of(IoEvent.SCHEMA);
    private static final RecordSchema EVENT_BATCH = RecordSchema.of(EventBatch.SCHEMA);
    /** An interval's histograms: hist_op, hist_count... */
    private static final BatchColumns HISTOGRAMS = BatchColumns.of(IntervalRecord.SCHEMA, "hist_", "histogram");
    static final BatchColumns EVENTS = BatchColumns.of(EventBatch.SCHEMA, "", "event");
    /** Read once, not for every batch: the bounds of a batch's names. */
    private static final int MAX_BATCH_HOST_CHARS = EVENT_BATCH.maxLength("host");
    private static final int MAX_BATCH_DISK_CHARS = EVENT_BATCH.maxLength("disk");
    /** Read once, not for every event: the one bound of an event's text. */
    private static final int MAX_COMM_CHARS = EVENT.maxLength("comm");
    /** 1 / the chance of sampling: at least 1, and at most the kernel's 32-bit count. */
    private static final RecordSchema.Range SAMPLE_WEIGHT = EVENT.range("sample_weight");

    /** Timestamps before 2001-09-09 (10^18 ns) are seconds or milliseconds mistaken for nanoseconds. */
    static final long EARLIEST_PLAUSIBLE_NS = DISKSTATS.minimum("ts_ns");
    /**
     * How far ahead of this clock a producer's clock may run before its records are refused.
     * A disk's event-time clock follows its records, so one record from far ahead would
     * make the disk's next ones late until real time caught up: this bounds the damage.
     */
    static final long MAX_CLOCK_AHEAD_NS = PipelineTimings.MAX_CLOCK_AHEAD.toNanos();
    /**
     * The longest one I/O can spend in the block layer, queued or at the device. The
     * kernel fails a request long before: sd times a SCSI command out after 30 s and
     * retries it at most 5 times (SD_MAX_RETRIES) while the error handler aborts and
     * resets; NVMe times out after 30 s (io_timeout) with at most 5 retries
     * (nvme_max_retries). The slowest real I/Os therefore last minutes, and a dying
     * disk's 10-60 s ones, the evidence of its failure, are far inside. A day is hundreds
     * of times the longest retry chain: a longer I/O is a wrong timestamp (a zero, a
     * clock step, a unit mistaken), not a disk.
     */
    static final long MAX_IO_LATENCY_NS = EVENT.maximum("queue_ns");
    static final long MAX_IO_LATENCY_US = HIST.maximum("max_us");
    /**
     * No device completes more than one I/O per nanosecond (the fastest NVMe drives
     * manage a few million a second, hundreds of times fewer), so a histogram counts at
     * most one I/O per ns of its span. The agent reads that span on the wall clock next
     * to its reads of the kernel's maps, not at them: its last interval at shutdown spans
     * microseconds, a stepped clock can make a span nothing, and either may carry I/Os
     * counted late (a per-CPU copy caught mid-retirement is counted in the next interval).
     * So a span counts as at least the agent's default interval.
     */
    static final long MIN_COUNTED_SPAN_NS = PipelineTimings.AGENT_INTERVAL.toNanos();

    private RecordDecoder() {}

    /** The `schema` field of any record, checked to be a string. */
    public static String schemaOf(JsonNode record) throws DecodeException {
        return Json.text(record, "schema", 64);
    }

    public static DiskstatsSample diskstats(JsonNode n, String source, long nowNs) throws DecodeException {
        expectSchema(n, DiskstatsSample.SCHEMA);
        return sample(n, source, nowNs);
    }

    /** A diskstats sample's fields, wherever they are (a record of its own, or an interval). */
    private static DiskstatsSample sample(JsonNode n, String source, long nowNs) throws DecodeException {
        DiskstatsSample s = new DiskstatsSample();
        s.source = source;
        s.host = Json.text(n, "host", DISKSTATS.maxLength("host"));
        s.disk = Json.text(n, "disk", DISKSTATS.maxLength("disk"));
        s.tsNs = timestamp(n, "ts_ns", nowNs);
        s.rotational = Json.bool(n, "rotational");
        checkDiskIdentity(n);
        s.model = Json.optionalTextUpTo(n, "model", DISKSTATS.maxLength("model"));
        s.rpm = rotationRate(n, s.rotational);
        readCounters(n, s);
        return s;
    }

    /** Every counter, in the kernel's order; one an older kernel lacks is 0. */
    private static void readCounters(JsonNode n, DiskstatsSample s) throws DecodeException {
        DiskstatsFields.Counters<DiskstatsCounters> counters = DiskstatsCounters.ALL;
        for (int i = 0; i < counters.size(); i++) {
            String counter = counters.name(i);
            counters.set(s.counters, i, DiskstatsFields.required(counter) ? Json.counter(n, counter) : Json.optionalCounter(n, counter));
        }
    }

    /** The optional rpm: a rate VPD page B1 can report (0401h to FFFEh), of a disk that rotates; 0 when absent. */
    private static long rotationRate(JsonNode n, boolean rotational) throws DecodeException {
        long rpm = Json.optionalCounter(n, "rpm");
        if (n.has("rpm") && (rpm < MIN_RPM || rpm > MAX_RPM)) {
            throw new DecodeException("rpm", "rpm must be from " + MIN_RPM + " to " + MAX_RPM + " (a rotation rate a disk reports), got " + rpm);
        }
        if (rpm > 0 && !rotational) {
            throw new DecodeException("rotational", "rpm " + rpm + " on a disk that does not rotate (rotational false): leave it out");
        }
        return rpm;
    }

    /** What names the disk for the warehouse and tickets; the jobs do not read it, but it must be as the schema says. */
    private static void checkDiskIdentity(JsonNode n) throws DecodeException {
        Json.optionalCounter(n, "major");
        Json.optionalCounter(n, "minor");
        Json.optionalTextUpTo(n, "serial", DISKSTATS.maxLength("serial"));
        Json.optionalLabels(n, "labels", DISKSTATS.maxProperties("labels"), DISKSTATS.maxValueLength("labels"));
    }

    static final Set<String> OPS = HIST.allowed("op");
    static final long MIN_RPM = DISKSTATS.minimum("rpm");
    static final long MAX_RPM = DISKSTATS.maximum("rpm");
    /** An event's op: also unknown ("?") where the capture did not say. */
    static final Set<String> EVENT_OPS = EVENT.allowed("op");
    static final Set<String> TIMED_FROM = EVENT.allowed("timed_from");
    static final Set<String> LATENCY_KINDS = HIST.allowed("latency");
    static final Set<String> SAMPLE_REASONS = EVENT.allowed("sample_reason");

    public static HistRecord hist(JsonNode n, long nowNs) throws DecodeException {
        expectSchema(n, HistRecord.SCHEMA);
        String host = Json.text(n, "host", HIST.maxLength("host"));
        String disk = Json.text(n, "disk", HIST.maxLength("disk"));
        return histogram(host, disk, span(n, nowNs), n);
    }

    /** The span of a histogram, or of an interval's histograms: start_ns to end_ns. */
    private record Span(long startNs, long endNs) {}

    private static Span span(JsonNode n, long nowNs) throws DecodeException {
        long startNs = timestamp(n, "start_ns", nowNs);
        long endNs = timestamp(n, "end_ns", nowNs);
        if (startNs > endNs) {
            throw new DecodeException("start_ns", "start_ns " + startNs + " is after end_ns " + endNs);
        }
        return new Span(startNs, endNs);
    }

    /** A histogram's own fields, read from `n`, of the disk and span given. */
    private static HistRecord histogram(String host, String disk, Span span, JsonNode n) throws DecodeException {
        HistRecord h = new HistRecord();
        h.host = host;
        h.disk = disk;
        h.startNs = span.startNs();
        h.endNs = span.endNs();
        h.op = Json.oneOf(n, "op", OPS);
        h.latency = Json.oneOf(n, "latency", LATENCY_KINDS);
        h.bucketsLog2Us = Json.counters(n, "buckets_log2_us", HistRecord.MAX_BUCKETS);
        h.count = Json.counter(n, "count");
        long inBuckets = sumOfBuckets(h.bucketsLog2Us);
        if (inBuckets != h.count) {
            throw new DecodeException("count", "buckets_log2_us hold " + inBuckets + " I/Os but count is " + h.count);
        }
        checkCountFitsSpan(h);
        // No bound ties sum_us to count: the agent reads the buckets and the sum of each
        // per-CPU copy apart while completions update them, and carries each over apart,
        // so a sum may hold I/Os the buckets do not. Merges saturate instead (Log2Histogram).
        h.sumUs = Json.counter(n, "sum_us");
        h.maxUs = Json.counter(n, "max_us");
        if (h.maxUs > MAX_IO_LATENCY_US) {
            throw new DecodeException("max_us", "max_us " + h.maxUs + " is beyond the " + seconds(MAX_IO_LATENCY_NS)
                    + " s no I/O lasts: send the interval's largest latency in microseconds");
        }
        h.errors = Json.optionalCounter(n, "errors");
        if (h.errors > h.count) {
            throw new DecodeException("errors", "errors " + h.errors + " exceed count " + h.count);
        }
        return h;
    }

    /** The I/Os the buckets hold; refused rather than wrapped around when beyond a long. */
    private static long sumOfBuckets(long[] buckets) throws DecodeException {
        long sum = 0;
        try {
            for (long b : buckets) {
                sum = Math.addExact(sum, b);
            }
        } catch (ArithmeticException overflow) {
            throw new DecodeException("buckets_log2_us", "buckets_log2_us hold more than 2^63-1 I/Os together: "
                    + "each bucket must count the I/Os of this interval alone");
        }
        return sum;
    }

    private static void checkCountFitsSpan(HistRecord h) throws DecodeException {
        long spanNs = Math.max(h.endNs - h.startNs, MIN_COUNTED_SPAN_NS);
        if (h.count > spanNs) {
            throw new DecodeException("count", "count " + h.count + " is more than one I/O per ns of the " + spanNs
                    + " ns from start_ns to end_ns, faster than any device: count only this interval's I/Os");
        }
    }

    public static IoEvent event(JsonNode n, long nowNs) throws DecodeException {
        expectSchema(n, IoEvent.SCHEMA);
        String host = Json.text(n, "host", EVENT.maxLength("host"));
        String disk = Json.text(n, "disk", EVENT.maxLength("disk"));
        return ioEvent(host, disk, FieldReader.of(n), nowNs);
    }

    /** An event's own fields, read from `n`, of the disk given. */
    private static IoEvent ioEvent(String host, String disk, FieldReader n, long nowNs) throws DecodeException {
        IoEvent e = new IoEvent();
        e.host = host;
        e.disk = disk;
        e.op = n.oneOf("op", EVENT_OPS);
        e.bytes = n.counter("bytes");
        e.sector = n.counter("sector");
        e.issueNs = plausible("issue_ns", n.counter("issue_ns"), nowNs);
        e.completeNs = plausible("complete_ns", n.counter("complete_ns"), nowNs);
        if (e.issueNs > e.completeNs) {
            throw new DecodeException("issue_ns", "issue_ns " + e.issueNs + " is after complete_ns " + e.completeNs);
        }
        if (e.deviceNs() > MAX_IO_LATENCY_NS) {
            throw new DecodeException("issue_ns", "issue_ns is " + seconds(e.deviceNs()) + " s before complete_ns, beyond the "
                    + seconds(MAX_IO_LATENCY_NS) + " s no I/O lasts: issue_ns must be when this I/O was dispatched (or queued)");
        }
        e.queueNs = n.counter("queue_ns");
        e.timedFromQueue = n.has("timed_from") && n.oneOf("timed_from", TIMED_FROM).equals(IoEvent.TIMED_FROM_QUEUE);
        if (e.timedFromQueue && e.queueNs != 0) {
            throw new DecodeException("queue_ns", "queue_ns is " + e.queueNs + " in an I/O timed from the queue, whose split between "
                    + "queue and device is unknown: send 0, or the time from dispatch with timed_from dispatch");
        }
        if (e.queueNs > MAX_IO_LATENCY_NS) {
            throw new DecodeException("queue_ns", "queue_ns " + e.queueNs + " is beyond the " + seconds(MAX_IO_LATENCY_NS)
                    + " s no I/O waits: send the time from insertion to dispatch in nanoseconds, or 0 if unknown");
        }
        e.inflight = n.counter("inflight");
        if (e.timedFromQueue && e.inflight != 0) {
            throw new DecodeException("inflight", "inflight is " + e.inflight + " in an I/O timed from the queue, whose dispatch "
                    + "was not seen: send 0");
        }
        e.error = n.integer("error");
        if (e.error > 0) {
            throw new DecodeException("error", "error must be 0 or -errno, got " + e.error);
        }
        e.comm = n.textUpTo("comm", MAX_COMM_CHARS);
        e.pid = n.counter("pid");
        e.sampleReason = n.oneOf("sample_reason", SAMPLE_REASONS);
        e.sampleWeight = n.number("sample_weight", SAMPLE_WEIGHT);
        return e;
    }

    /**
     * An interval: its diskstats sample, and each of its histograms decoded as if sent alone
     * with the interval's span. Any part refused refuses the interval, the reason led by the
     * interval's field at fault and the part it is of.
     */
    public static IntervalRecord interval(JsonNode n, String source, long nowNs) throws DecodeException {
        expectSchema(n, IntervalRecord.SCHEMA);
        IntervalRecord interval = new IntervalRecord();
        try {
            interval.sample = sample(n, source, nowNs);
        } catch (DecodeException refused) {
            throw refused.ofPart(refused.field(), "the diskstats sample");
        }
        Span span = histogramsSpan(n, nowNs);
        BatchColumns.Parts histograms = HISTOGRAMS.partsOf(n);
        interval.histograms = new ArrayList<>(histograms.size());
        for (int i = 0; i < histograms.size(); i++) {
            interval.histograms.add(histogramOf(interval, span, histograms, i));
        }
        return interval;
    }

    /** The span an interval's histograms share; read even where it has none, as the warehouse keeps it. */
    private static Span histogramsSpan(JsonNode n, long nowNs) throws DecodeException {
        try {
            return span(n, nowNs);
        } catch (DecodeException refused) {
            throw refused.ofPart(refused.field(), "the histograms' span");
        }
    }

    /** The i-th histogram of an interval whose earlier ones are decoded. */
    private static HistRecord histogramOf(IntervalRecord interval, Span span, BatchColumns.Parts histograms, int i)
            throws DecodeException {
        HistRecord h;
        try {
            h = histogram(interval.sample.host, interval.sample.disk, span, histograms.get(i));
        } catch (DecodeException refused) {
            throw histograms.refusal(refused, i, histogramName(histograms, i));
        }
        // Two of one op and latency kind would be one histogram counted twice, or, having
        // one identity in the windows (DiskRecord.identity), one of them dropped as a resend.
        for (int j = 0; j < i; j++) {
            HistRecord earlier = interval.histograms.get(j);
            if (earlier.op.equals(h.op) && earlier.latency.equals(h.latency)) {
                String field = histograms.inBatch("latency", i);
                throw new DecodeException(field, field + " (" + histogramName(histograms, i) + "): histogram " + j
                        + " is of op " + h.op + " and latency " + h.latency + " too: send each op and latency kind "
                        + "of an interval as one histogram");
            }
        }
        return h;
    }

    /** How a message tells an interval's histogram apart: `histogram 1, op W, latency queue`. */
    private static String histogramName(BatchColumns.Parts histograms, int i) {
        return "histogram " + i + ", op " + histograms.entry("op", i) + ", latency " + histograms.entry("latency", i);
    }

    /**
     * A batch of events: each decoded as if sent alone with the batch's host and disk. Any
     * event refused refuses the batch, the reason led by the batch's field at fault and the event's index.
     */
    public static EventBatch eventBatch(JsonNode n, long nowNs) throws DecodeException {
        expectSchema(n, EventBatch.SCHEMA);
        EventBatch batch = new EventBatch();
        batch.host = Json.text(n, "host", MAX_BATCH_HOST_CHARS);
        batch.disk = Json.text(n, "disk", MAX_BATCH_DISK_CHARS);
        BatchColumns.Parts events = EVENTS.partsOf(n);
        batch.events = new ArrayList<>(events.size());
        for (int i = 0; i < events.size(); i++) {
            try {
                batch.events.add(ioEvent(batch.host, batch.disk, FieldReader.of(events.get(i)), nowNs));
            } catch (DecodeException refused) {
                throw events.refusal(refused, i, "event " + i);
            }
        }
        return batch;
    }

    /**
     * An io.eventbatch.v1 record decoded straight off its UTF-8 bytes, its columns read
     * into `columns` without a tree of nodes ({@link EventBatchColumns}) and its events by the rules of
     * {@link #eventBatch}; null where the record is not a batch the column reader vouches
     * for, every event of it accepted: {@link #eventBatch} then decodes it, or refuses it
     * naming why.
     */
    public static EventBatch eventBatchOffBytes(byte[] utf8, long nowNs, EventBatchColumns columns) {
        if (!columns.read(utf8) || !within(columns.host, MAX_BATCH_HOST_CHARS) || !within(columns.disk, MAX_BATCH_DISK_CHARS)) {
            return null;
        }
        EventBatch batch = new EventBatch();
        batch.host = columns.host;
        batch.disk = columns.disk;
        batch.events = new ArrayList<>(columns.size());
        try {
            for (int i = 0; i < columns.size(); i++) {
                batch.events.add(ioEvent(batch.host, batch.disk, columns.event(i), nowNs));
            }
        } catch (DecodeException refused) {
            return null;
        }
        return batch;
    }

    /** As {@link Json#text}'s bound: 1 to maxLength characters. */
    private static boolean within(String text, int maxLength) {
        return !text.isEmpty() && text.length() <= maxLength;
    }

    private static void expectSchema(JsonNode n, String expected) throws DecodeException {
        String schema = schemaOf(n);
        if (!expected.equals(schema)) {
            throw new DecodeException("schema", "schema must be " + expected + ", got " + schema);
        }
    }

    static long timestamp(JsonNode n, String field, long nowNs) throws DecodeException {
        return plausible(field, Json.counter(n, field), nowNs);
    }

    /** A timestamp `field` read as `ts`, refused when it cannot be nanoseconds since the epoch of a clock near this one. */
    private static long plausible(String field, long ts, long nowNs) throws DecodeException {
        if (ts < EARLIEST_PLAUSIBLE_NS) {
            throw new DecodeException(field, field + " " + ts + " is before 2001: not nanoseconds since the epoch");
        }
        if (ts - nowNs > MAX_CLOCK_AHEAD_NS) {
            throw new DecodeException(field, "clock skew: " + field + " is " + (ts - nowNs) / 1_000_000_000L
                    + " s ahead of this clock; fix the producer's clock (NTP)");
        }
        return ts;
    }

    private static long seconds(long ns) {
        return ns / 1_000_000_000L;
    }
}
