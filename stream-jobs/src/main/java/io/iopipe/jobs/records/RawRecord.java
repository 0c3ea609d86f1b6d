package io.iopipe.jobs.records;

/**
 * One input line as received, with where it came from (topic/partition@offset or
 * file:line) and, from Kafka, its topic and the producer's signature ({@link
 * HostSignatures}; null when it sent none).
 */
public class RawRecord {
    public String source;
    public String text;
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
    public static RawRecord fromTopic(String topic, String source, String text, String signature) {
        RawRecord r = new RawRecord(source, text, signature);
        r.topic = topic;
        return r;
    }
}
