package io.iopipe.jobs.records;

import java.nio.charset.StandardCharsets;

/**
 * One input line as received, with where it came from (topic/partition@offset or
 * file:line) and, from Kafka, its topic and the producer's signature ({@link
 * HostSignatures}; null when it sent none). A line read from a file is its text; a
 * message read from Kafka is its bytes, parsed, checked against its signature and passed
 * on to its accepted topic as they came, never decoded to text and encoded again.
 */
public class RawRecord {
    public String source;
    /** The line, read from a file; null for a message, which {@link #bytes} holds. */
    public String text;
    /** The message as it came off Kafka; null for a line, which {@link #text} holds. */
    public byte[] bytes;
    public String signature;
    /** The topic it was read from; null off Kafka. */
    public String topic;

    public RawRecord() {}

    public RawRecord(String source, String text) {
        this(source, text, null);
    }

    public RawRecord(String source, String text, String signature) {
        this.source = source;
        this.text = text;
        this.signature = signature;
    }

    /** Read from a topic: its schema must be the one topics.json gives that topic. */
    public static RawRecord fromTopic(String topic, String source, byte[] bytes, String signature) {
        RawRecord r = new RawRecord(source, null, signature);
        r.bytes = bytes;
        r.topic = topic;
        return r;
    }

    /** The record as text, for what quotes it (a dead letter). */
    public String text() {
        return text != null ? text : new String(bytes, StandardCharsets.UTF_8);
    }

    /** The record as UTF-8 bytes: what its signature covers and its accepted topic takes. */
    public byte[] utf8() {
        return bytes != null ? bytes : text.getBytes(StandardCharsets.UTF_8);
    }
}
