package io.iopipe.jobs.records;

/** One io.event.v1 record: a sampled block I/O. */
public class IoEvent {
    public static final String SCHEMA = "io.event.v1";

    public String host;
    public String disk;
    public String op;
    public long bytes;
    public long sector;
    public long issueNs;
    public long completeNs;
    public long queueNs;
    /** Requests in flight at dispatch counting this one; 0 when unknown. */
    public long inflight;
    public long error;
    public String comm;
    public long pid;
    public String sampleReason;
    public double sampleWeight;

    public long deviceNs() {
        return completeNs - issueNs;
    }
}
