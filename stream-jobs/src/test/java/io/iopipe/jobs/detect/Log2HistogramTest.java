package io.iopipe.jobs.detect;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

class Log2HistogramTest {
    /** Reads of 4-8 ms and one of 300 ms, as a disk's kernel histogram holds them. */
    private static Log2Histogram reads() {
        Log2Histogram h = new Log2Histogram();
        h.add(5_000, 90);
        h.addBuckets(new long[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 1, 0, 0, 0}, 10, 354_000, 300_000);
        return h;
    }

    /** The same reads as a build before kept them: every bucket, the last ones empty. */
    private static Log2Histogram readsAsAnEarlierBuildKeptThem() {
        Log2Histogram h = reads();
        h.buckets = java.util.Arrays.copyOf(h.buckets, Log2Histogram.BUCKETS);
        return h;
    }

    @Test
    void holdsItsBucketsUpToItsSlowestIoOnly() {
        Log2Histogram h = reads();
        assertEquals(Log2Histogram.bucketOf(300_000) + 1, h.buckets.length);
        assertEquals(99, h.bucket(12));
        assertEquals(1, h.bucket(18));
        assertEquals(0, h.bucket(Log2Histogram.BUCKETS - 1));
        assertEquals(0, new Log2Histogram().bucket(0));
        assertEquals(0, new Log2Histogram().buckets.length, "an empty histogram holds no bucket");
    }

    @Test
    void anEarlierBuildsHistogramReadsAndMergesAsTheTrimmedOne() {
        Log2Histogram trimmed = reads();
        Log2Histogram whole = readsAsAnEarlierBuildKeptThem();
        assertArrayEquals(trimmed.trimmedBuckets(), whole.trimmedBuckets());
        for (double q : new double[] {0.5, 0.9, 0.99, 1.0}) {
            assertEquals(trimmed.quantileUs(q), whole.quantileUs(q), "q " + q);
        }
        Log2Histogram slow = new Log2Histogram();
        slow.add(2_000_000, 1);
        assertArrayEquals(new Log2Histogram().merge(trimmed).merge(slow).trimmedBuckets(),
                whole.merge(slow).trimmedBuckets());
        assertArrayEquals(trimmed.trimmedBuckets(), new Log2Histogram().merge(readsAsAnEarlierBuildKeptThem()).buckets,
                "merging an earlier build's histogram takes none of its empty buckets");
    }

    @Test
    void statesAndShufflesCarryNoRunOfEmptyBuckets() throws Exception {
        TypeSerializer<Log2Histogram> serializer =
                TypeInformation.of(Log2Histogram.class).createSerializer(new SerializerConfigImpl());
        DataOutputSerializer trimmed = new DataOutputSerializer(64);
        serializer.serialize(reads(), trimmed);
        DataOutputSerializer whole = new DataOutputSerializer(64);
        serializer.serialize(readsAsAnEarlierBuildKeptThem(), whole);
        int emptyBucketsDropped = Log2Histogram.BUCKETS - (Log2Histogram.bucketOf(300_000) + 1);
        assertEquals(whole.length() - Long.BYTES * emptyBucketsDropped, trimmed.length(),
                "the 300 ms read's bucket is the last one written: " + trimmed.length() + " bytes against " + whole.length());
    }
}
