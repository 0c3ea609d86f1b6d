package io.iopipe.jobs.records;

/** A record the jobs emit: its schema (which picks the topic), its Kafka key and its JSON. */
public class OutputRecord {
    public String schema;
    public String key;
    public String json;

    public OutputRecord() {}

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
