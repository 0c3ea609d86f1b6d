package io.iopipe.jobs.records;

import java.util.List;

/**
 * One io.interval.v1 record: a disk's diskstats sample and every latency histogram of the
 * agent interval it ends, sent together. Its parts are the records it batches, decoded as
 * if each had been sent alone.
 */
public class IntervalRecord {
    public static final String SCHEMA = "io.interval.v1";

    public DiskstatsSample sample;
    /** At most one per op and latency kind; none where the disk completed no I/O. */
    public List<HistRecord> histograms;
}
