package io.iopipe.jobs.detect;

import java.util.Arrays;

/**
 * When in a window its I/Os came: each kernel interval's device-time buckets, kept
 * compact (a window's dozen intervals use a few buckets each). Each used bucket is one
 * long, its count shifted above its bucket number; a 0 ends an interval.
 */
public class IntervalCounts {
    private static final int BUCKET_BITS = 6;
    private static final long MAX_COUNT = (1L << (Long.SIZE - 1 - BUCKET_BITS)) - 1;

    public long[] packed = new long[0];
    public int intervals;

    /** One kernel interval's buckets (an io.hist.v1 record's buckets_log2_us). */
    public void add(long[] buckets) {
        int used = 0;
        for (int i = 0; i < buckets.length && i < Log2Histogram.BUCKETS; i++) {
            used += buckets[i] > 0 ? 1 : 0;
        }
        if (used == 0) {
            return;
        }
        int at = packed.length;
        packed = Arrays.copyOf(packed, at + used + 1);
        for (int i = 0; i < buckets.length && i < Log2Histogram.BUCKETS; i++) {
            if (buckets[i] > 0) {
                packed[at++] = Math.min(buckets[i], MAX_COUNT) << BUCKET_BITS | i;
            }
        }
        intervals++;
    }

    public IntervalCounts merge(IntervalCounts o) {
        int at = packed.length;
        packed = Arrays.copyOf(packed, at + o.packed.length);
        System.arraycopy(o.packed, 0, packed, at, o.packed.length);
        intervals += o.intervals;
        return this;
    }

    /** Per interval: {its I/Os in buckets fromBucket..toBucket, all its I/Os}. */
    public long[][] inBucketsAndAll(int fromBucket, int toBucket) {
        long[][] out = new long[intervals][2];
        int interval = 0;
        for (long word : packed) {
            if (word == 0) {
                interval++;
                continue;
            }
            long count = word >>> BUCKET_BITS;
            int bucket = (int) (word & ((1 << BUCKET_BITS) - 1));
            out[interval][0] += bucket >= fromBucket && bucket <= toBucket ? count : 0;
            out[interval][1] += count;
        }
        return out;
    }
}
