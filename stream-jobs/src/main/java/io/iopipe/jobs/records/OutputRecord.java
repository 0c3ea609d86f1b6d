package io.iopipe.jobs.records;

/**
 * A record the jobs emit: its schema (which picks the topic), its Kafka key and its JSON.
 * An accepted input is an agent record the job accepted, passed on as it was sent to the
 * schema's accepted topic, which ClickHouse's raw tables read.
 */
public class OutputRecord {
    public String schema;
    public String key;
    public String json;
    public boolean acceptedInput;

    public OutputRecord() {}

    public static OutputRecord acceptedInput(String schema, String key, String json) {
        OutputRecord r = new OutputRecord(schema, key, json);
        r.acceptedInput = true;
        return r;
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
        return json;
    }
}
