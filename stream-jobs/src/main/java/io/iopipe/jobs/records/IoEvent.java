package io.iopipe.jobs.records;

/** One io.event.v1 record: a sampled block I/O. */
public class IoEvent {
    public static final String SCHEMA = "io.event.v1";
    /** The op of an I/O whose capture did not say it. */
    public static final String UNKNOWN_OP = "?";
    public static final String TIMED_FROM_DISPATCH = "dispatch";
    public static final String TIMED_FROM_QUEUE = "queue";

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
    /**
     * Whether issue_ns is the request's entry to the block layer (timed_from queue), not
     * its dispatch: complete - issue is then the total time, and its device time unknown.
     */
    public boolean timedFromQueue;

    /** Dispatch to completion: the device time, unless {@link #timedFromQueue}. */
    public long deviceNs() {
        return completeNs - issueNs;
    }

    public long totalNs() {
        return timedFromQueue ? deviceNs() : deviceNs() + queueNs;
    }
}
