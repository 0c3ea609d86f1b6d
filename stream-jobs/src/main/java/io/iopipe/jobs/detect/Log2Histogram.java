package io.iopipe.jobs.detect;

import io.iopipe.jobs.records.HistRecord;

/**
 * A biolatency-style histogram of latencies in microseconds: bucket i counts
 * [2^i, 2^(i+1)) us, bucket 0 also what is under 1 us. Merging is exact, so a window
 * built from the kernel's interval histograms counts every I/O once, up to 2^63-1 of
 * them: beyond, counts and sums hold there (Saturating) rather than wrap to small ones.
 */
public class Log2Histogram {
    public static final int BUCKETS = HistRecord.MAX_BUCKETS;

    /**
     * Buckets [0, the last that ever held an I/O]: a latency's buckets end at its slowest
     * I/O, a few dozen of the {@link #BUCKETS} at most, and the windows' state and their
     * shuffles to every detector carried the rest as zeros. (A histogram an earlier build
     * kept holds all BUCKETS, its last ones empty.) Read one with {@link #bucket}.
     */
    public long[] buckets = new long[0];
    public long count;
    public long sumUs;
    public long maxUs;

    public static int bucketOf(long us) {
        return us <= 1 ? 0 : 63 - Long.numberOfLeadingZeros(us);
    }

    public static long lowerEdgeUs(int bucket) {
        return bucket == 0 ? 0 : 1L << bucket;
    }

    public static long upperEdgeUs(int bucket) {
        return bucket >= 62 ? Long.MAX_VALUE : 1L << (bucket + 1);
    }

    /** The I/Os of bucket `i`, 0 past the last that held one. */
    public long bucket(int i) {
        return i < buckets.length ? buckets[i] : 0;
    }

    /** Makes room for buckets [0, `last`]. */
    private void holdUpTo(int last) {
        if (last >= buckets.length) {
            buckets = java.util.Arrays.copyOf(buckets, last + 1);
        }
    }

    public void add(long us, long n) {
        int bucket = bucketOf(us);
        holdUpTo(bucket);
        buckets[bucket] = Saturating.add(buckets[bucket], n);
        count = Saturating.add(count, n);
        sumUs = Saturating.add(sumUs, Saturating.multiply(us, n));
        maxUs = Math.max(maxUs, us);
    }

    /** Adds one kernel interval histogram (its buckets, count, sum and max). */
    public void addBuckets(long[] log2Buckets, long n, long sum, long max) {
        int last = Math.min(log2Buckets.length, BUCKETS) - 1;
        while (last >= 0 && log2Buckets[last] == 0) {
            last--;
        }
        holdUpTo(last);
        for (int i = 0; i <= last; i++) {
            buckets[i] = Saturating.add(buckets[i], log2Buckets[i]);
        }
        count = Saturating.add(count, n);
        sumUs = Saturating.add(sumUs, sum);
        maxUs = Math.max(maxUs, max);
    }

    public Log2Histogram merge(Log2Histogram o) {
        addBuckets(o.buckets, o.count, o.sumUs, o.maxUs);
        return this;
    }

    public double meanUs() {
        return count == 0 ? 0 : (double) sumUs / count;
    }

    /** Buckets [0, last non-empty]: the biolatency-style array a record carries. */
    public long[] trimmedBuckets() {
        int last = buckets.length - 1;
        while (last >= 0 && buckets[last] == 0) {
            last--;
        }
        return java.util.Arrays.copyOf(buckets, last + 1);
    }

    /**
     * The q-quantile, interpolated log-linearly inside its bucket, so it never leaves
     * the bucket that holds it and never exceeds the exact max.
     */
    public double quantileUs(double q) {
        if (count == 0) {
            return 0;
        }
        double rank = q * count;
        long seen = 0;
        for (int i = 0; i < buckets.length; i++) {
            if (buckets[i] == 0) {
                continue;
            }
            if (seen + buckets[i] >= rank) {
                double within = (rank - seen) / buckets[i];
                double lower = Math.max(1, lowerEdgeUs(i));
                double upper = Math.min(upperEdgeUs(i), Math.max(lower, maxUs));
                return Math.min(lower * Math.pow(upper / lower, within), maxUs);
            }
            seen = Saturating.add(seen, buckets[i]);
        }
        return maxUs;
    }
}
