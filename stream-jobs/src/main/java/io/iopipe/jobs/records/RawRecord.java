package io.iopipe.jobs.records;

/**
 * One input line as received, with where it came from (topic/partition@offset or
 * file:line) and, from Kafka, the producer's signature ({@link HostSignatures}; null when
 * it sent none).
 */
public class RawRecord {
    public String source;
    public String text;
    public String signature;

    public RawRecord() {}

    public RawRecord(String source, String text) {
        this(source, text, null);
    }

    public RawRecord(String source, String text, String signature) {
        this.source = source;
        this.text = text;
        this.signature = signature;
    }
}
