package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * io.window.v1 records as input (a window file replayed, fleet telemetry converted): the
 * throughput and mean latency of each disk-wide window, for comparing drives with their
 * peers. It refuses what schema/records/io.window.v1.schema.json refuses in the fields it
 * reads, every figure at any depth beyond the range the schema states it (none negative,
 * none infinite), and a window whose span is not its stated length; the shared invalid
 * examples exercise every rule.
 */
public final class WindowDecoder {
    public static final String SCHEMA = "io.window.v1";
    public static final String THROUGHPUT_LATENCY = "throughput_latency";
    private static final RecordSchema WINDOW = RecordSchema.of(SCHEMA);
    static final Set<String> METRICS = WINDOW.allowed("metrics");
    static final Set<String> WINDOW_OPS = WINDOW.allowed("op");
    static final Set<String> LATENCY_OPS = WINDOW.allowedNames("latency");
    static final Set<String> QUANTILES = WINDOW.definition("op_latency").allowed("quantiles");
    /** The ops whose completions iostat's await and throughput count: flushes move no data. */
    private static final String[] DATA_OPS = {"read", "write", "discard"};
    private static final String[] COMPLETED = {"reads_completed", "writes_completed", "discards_completed"};
    private static final long NS_PER_S = 1_000_000_000L;

    private WindowDecoder() {}

    /** The window's sample; empty for a window of one op, which says nothing about the whole drive. */
    public static Optional<WindowSample> sample(JsonNode n, long nowNs) throws DecodeException {
        if (!SCHEMA.equals(RecordDecoder.schemaOf(n))) {
            throw new DecodeException("schema must be " + SCHEMA + ", got " + RecordDecoder.schemaOf(n));
        }
        String host = Json.text(n, "host", WINDOW.maxLength("host"));
        String disk = Json.text(n, "disk", WINDOW.maxLength("disk"));
        String op = Json.oneOf(n, "op", WINDOW_OPS);
        long startNs = RecordDecoder.timestamp(n, "window_start_ns", nowNs);
        long endNs = RecordDecoder.timestamp(n, "window_end_ns", nowNs);
        if (endNs <= startNs) {
            throw new DecodeException("window_end_ns " + endNs + " is not after window_start_ns " + startNs);
        }
        atLeastOne(n, "window_s");
        atLeastOne(n, "samples");
        if (!(Json.number(n, "interval_s") > 0)) {
            throw new DecodeException("interval_s must be greater than 0: the span the window's rates are over");
        }
        Optional<String> outOfRange = WINDOW.figureOutOfRange(n);
        if (outOfRange.isPresent()) {
            throw new DecodeException(outOfRange.get());
        }
        long lengthNs = Json.counter(n, "window_s") * NS_PER_S;
        if (endNs - startNs != lengthNs) {
            throw new DecodeException("window_s is " + n.get("window_s") + " but the window spans "
                    + (endNs - startNs) + " ns from window_start_ns to window_end_ns: a window is as long as it says");
        }
        boolean telemetry = n.has("metrics") && THROUGHPUT_LATENCY.equals(Json.oneOf(n, "metrics", METRICS));
        if (telemetry) {
            if (!"all".equals(op)) {
                throw new DecodeException("op must be all in a " + THROUGHPUT_LATENCY + " window, got " + op
                        + ": the telemetry measured the drive's ops together");
            }
            return Optional.of(new WindowSample(host, disk, startNs, endNs, Json.number(n, "kib_per_s"), Json.number(n, "await_ms")));
        }
        boolean rotational = Json.bool(n, "rotational");
        checkLatency(n);
        if (!"all".equals(op)) {
            return Optional.empty();
        }
        WindowSample s = fromIostat(n, host, disk, startNs, endNs);
        s.peerClass = WindowSample.peerClass(rotational, null);
        return Optional.of(s);
    }

    /** iostat's figures summed over reads, writes and discards: kB/s, and await as sysstat printed it before splitting it by op. */
    private static WindowSample fromIostat(JsonNode n, String host, String disk, long startNs, long endNs) throws DecodeException {
        double kibPerS = 0;
        double timeMs = 0;
        long completed = 0;
        for (int i = 0; i < DATA_OPS.length; i++) {
            long ops = Json.counter(n, COMPLETED[i]);
            kibPerS += Json.number(n, DATA_OPS[i] + "_kib_per_s");
            timeMs += Json.number(n, DATA_OPS[i] + "_await_ms") * ops;
            completed += ops;
        }
        return new WindowSample(host, disk, startNs, endNs, kibPerS, completed == 0 ? 0 : timeMs / completed);
    }

    private static void atLeastOne(JsonNode n, String field) throws DecodeException {
        if (Json.counter(n, field) < 1) {
            throw new DecodeException(field + " must be at least 1");
        }
    }

    private static void checkLatency(JsonNode n) throws DecodeException {
        JsonNode latency = n.get("latency");
        if (latency == null) {
            return;
        }
        if (!latency.isObject()) {
            throw new DecodeException("latency must be an object of ops");
        }
        for (Map.Entry<String, JsonNode> op : latency.properties()) {
            if (!LATENCY_OPS.contains(op.getKey())) {
                throw new DecodeException("latency holds an op " + op.getKey() + " that is none of " + LATENCY_OPS);
            }
            if (op.getValue().has("quantiles")) {
                Json.oneOf(op.getValue(), "quantiles", QUANTILES, "latency." + op.getKey() + ".quantiles");
            }
        }
    }
}
