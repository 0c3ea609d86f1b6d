package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.node.ObjectNode;

/** Builds io.deadletter.v1 records: the rejected input, where it came from and why. */
public final class DeadLetters {
    public static final String SCHEMA = "io.deadletter.v1";
    static final int MAX_RAW_CHARS = 4096;

    private DeadLetters() {}

    public static OutputRecord of(String stage, String source, String reason, String raw, long nowNs) {
        String text = raw == null ? "" : raw;
        boolean truncated = text.length() > MAX_RAW_CHARS;
        ObjectNode dl = Json.object();
        dl.put("schema", SCHEMA);
        dl.put("ts_ns", nowNs);
        dl.put("stage", stage);
        dl.put("source", source == null || source.isEmpty() ? "unknown" : source);
        dl.put("reason", reason);
        dl.put("raw", truncated ? text.substring(0, MAX_RAW_CHARS) : text);
        dl.put("raw_truncated", truncated);
        return new OutputRecord(SCHEMA, dl.get("source").asText(), Json.write(dl));
    }

    public static long wallClockNs() {
        return System.currentTimeMillis() * 1_000_000L;
    }
}
