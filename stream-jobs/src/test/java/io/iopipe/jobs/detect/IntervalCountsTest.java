package io.iopipe.jobs.detect;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class IntervalCountsTest {
    @Test
    void eachIntervalKeepsItsOwnCountsThroughAMerge() {
        IntervalCounts first = new IntervalCounts();
        first.add(new long[] {0, 0, 3, 0, 1});
        first.add(new long[0]); // an interval with nothing: no interval
        IntervalCounts second = new IntervalCounts();
        long[] lowestAndHighest = new long[Log2Histogram.BUCKETS];
        lowestAndHighest[0] = 5;
        lowestAndHighest[Log2Histogram.BUCKETS - 1] = 2;
        second.add(lowestAndHighest);
        first.merge(second);
        assertEquals(2, first.intervals);
        long[][] counts = first.inBucketsAndAll(4, 63);
        assertArrayEquals(new long[] {1, 4}, counts[0]);
        assertArrayEquals(new long[] {2, 7}, counts[1]);
    }

    @Test
    void aCountTooLargeToKeepIsHeldAtTheMostItCanBe() {
        IntervalCounts counts = new IntervalCounts();
        counts.add(new long[] {0, Long.MAX_VALUE});
        long[][] kept = counts.inBucketsAndAll(1, 1);
        assertEquals(kept[0][1], kept[0][0]);
        assertEquals((1L << 57) - 1, kept[0][0]);
    }
}
