package io.iopipe.jobs.records;

import java.util.List;

/**
 * One io.eventbatch.v1 record: sampled I/Os of one disk, sent together. Its parts are the
 * events it batches, decoded as if each had been sent alone.
 */
public class EventBatch {
    public static final String SCHEMA = "io.eventbatch.v1";

    public String host;
    public String disk;
    public List<IoEvent> events;

    public String key() {
        return OutputRecord.diskKey(host, disk);
    }
}
