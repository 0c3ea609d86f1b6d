package io.iopipe.jobs.records;

/** One io.hist.v1 record: every I/O of one disk, op and latency kind in one agent interval. */
public class HistRecord {
    public static final String SCHEMA = "io.hist.v1";
    /** 2^63 us is beyond any latency: 64 log2 buckets cover every value a long holds. */
    public static final int MAX_BUCKETS = RecordSchema.of(SCHEMA).maxItems("buckets_log2_us");

    public String host;
    public String disk;
    public String op;
    /** device, queue or total. */
    public String latency;
    public long startNs;
    public long endNs;
    public long[] bucketsLog2Us;
    public long count;
    public long sumUs;
    public long maxUs;
    public long errors;
}
