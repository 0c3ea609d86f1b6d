package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Builds io.deadletter.v1 records: the rejected input, where it came from and why. Every
 * field is cut to its schema's bound: a reason may quote what it refused (a host, a label
 * key), and input of any size must still make a dead letter the sink can send.
 */
public final class DeadLetters {
    public static final String SCHEMA = "io.deadletter.v1";
    private static final RecordSchema DEAD_LETTER = RecordSchema.of(SCHEMA);
    static final int MAX_RAW_CHARS = DEAD_LETTER.maxLength("raw");
    static final int MAX_REASON_CHARS = DEAD_LETTER.maxLength("reason");
    static final int MAX_SOURCE_CHARS = DEAD_LETTER.maxLength("source");
    static final int MAX_STAGE_CHARS = DEAD_LETTER.maxLength("stage");

    private DeadLetters() {}

    public static OutputRecord of(String stage, String source, String reason, String raw, long nowNs) {
        String text = raw == null ? "" : raw;
        boolean truncated = text.length() > MAX_RAW_CHARS;
        ObjectNode dl = Json.object();
        dl.put("schema", SCHEMA);
        dl.put("ts_ns", nowNs);
        dl.put("stage", Texts.cut(stage, MAX_STAGE_CHARS));
        dl.put("source", source == null || source.isEmpty() ? "unknown" : Texts.cut(source, MAX_SOURCE_CHARS));
        dl.put("reason", Texts.cut(reason, MAX_REASON_CHARS));
        dl.put("raw", Texts.prefix(text, MAX_RAW_CHARS));
        dl.put("raw_truncated", truncated);
        return new OutputRecord(SCHEMA, dl.get("source").asText(), Json.write(dl));
    }

    public static long wallClockNs() {
        return System.currentTimeMillis() * 1_000_000L;
    }
}
