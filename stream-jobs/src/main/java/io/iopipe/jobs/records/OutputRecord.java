package io.iopipe.jobs.records;

import java.nio.charset.StandardCharsets;

/**
 * A record the jobs emit: its schema (which picks the topic), its Kafka key and its JSON.
 * An accepted input is an agent record the job accepted, passed on as it was sent to the
 * schema's accepted topic, which ClickHouse's raw tables read: byte for byte what was
 * checked, when it came off Kafka ({@link #bytes}).
 */
public class OutputRecord {
    public String schema;
    public String key;
    /** The JSON as text; null for an accepted input read off Kafka, which {@link #bytes} holds. */
    public String json;
    /** An accepted input's message as it came off Kafka; null otherwise. */
    public byte[] bytes;
    public boolean acceptedInput;

    public OutputRecord() {}

    /** An accepted agent record, as it came. */
    public static OutputRecord acceptedInput(String schema, String key, RawRecord raw) {
        OutputRecord r = new OutputRecord(schema, key, raw.text);
        r.bytes = raw.bytes;
        r.acceptedInput = true;
        return r;
    }

    /** The JSON as text. */
    public String text() {
        return json != null ? json : new String(bytes, StandardCharsets.UTF_8);
    }

    /** The JSON as UTF-8 bytes, as a Kafka topic takes it. */
    public byte[] utf8() {
        return bytes != null ? bytes : json.getBytes(StandardCharsets.UTF_8);
    }

    /** The Kafka key of every per-disk record: one disk always lands in one partition. */
    public static String diskKey(String host, String disk) {
        return host + "/" + disk;
    }

    public OutputRecord(String schema, String key, String json) {
        this.schema = schema;
        this.key = key;
        this.json = json;
    }

    @Override
    public String toString() {
        return text();
    }
}
