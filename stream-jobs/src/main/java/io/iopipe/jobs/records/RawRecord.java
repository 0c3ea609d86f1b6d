package io.iopipe.jobs.records;

/** One input line as received, with where it came from (topic/partition@offset or file:line). */
public class RawRecord {
    public String source;
    public String text;

    public RawRecord() {}

    public RawRecord(String source, String text) {
        this.source = source;
        this.text = text;
    }
}
