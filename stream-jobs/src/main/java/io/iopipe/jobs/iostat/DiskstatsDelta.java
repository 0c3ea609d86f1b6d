package io.iopipe.jobs.iostat;

import io.iopipe.jobs.records.DiskstatsFields;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.OutputRecord;

/**
 * What one disk did between two consecutive diskstats samples: counter deltas over
 * (startNs, endNs]. Summing deltas telescopes to (last sample - first sample), so a
 * window of deltas gives exactly what iostat prints for the same two snapshots.
 */
public class DiskstatsDelta {
    private static final DiskstatsFields.Counters<DiskstatsSample> SAMPLED =
            DiskstatsFields.of(DiskstatsSample.class, DiskstatsFields.CUMULATIVE);
    static final DiskstatsFields.Counters<DiskstatsDelta> COUNTERS = DiskstatsFields.of(DiskstatsDelta.class, DiskstatsFields.CUMULATIVE);

    public String host;
    public String disk;
    public boolean rotational;
    public String model;
    public long rpm;
    public long startNs;
    public long endNs;
    public long readsCompleted;
    public long readsMerged;
    public long sectorsRead;
    public long readTimeMs;
    public long writesCompleted;
    public long writesMerged;
    public long sectorsWritten;
    public long writeTimeMs;
    public long ioTimeMs;
    public long weightedIoTimeMs;
    public long discardsCompleted;
    public long discardsMerged;
    public long sectorsDiscarded;
    public long discardTimeMs;
    public long flushesCompleted;
    public long flushTimeMs;

    public String key() {
        return OutputRecord.diskKey(host, disk);
    }

    public enum Outcome { DELTA, DUPLICATE, OUT_OF_ORDER, COUNTER_RESET }

    /** How `curr` relates to the disk's previous sample `prev`. */
    public static Outcome classify(DiskstatsSample prev, DiskstatsSample curr) {
        if (curr.tsNs == prev.tsNs) {
            return Outcome.DUPLICATE;
        }
        if (curr.tsNs < prev.tsNs) {
            return Outcome.OUT_OF_ORDER;
        }
        // 64-bit kernel counters only go down when the device was re-created or the
        // host rebooted: that interval's I/O is unknowable, so it starts a new baseline.
        return anyDecreased(prev, curr) ? Outcome.COUNTER_RESET : Outcome.DELTA;
    }

    private static boolean anyDecreased(DiskstatsSample prev, DiskstatsSample curr) {
        for (int i = 0; i < SAMPLED.size(); i++) {
            if (SAMPLED.get(curr, i) < SAMPLED.get(prev, i)) {
                return true;
            }
        }
        return false;
    }

    /**
     * A disk's first sample: no interval yet, only what class of disk it is, so that its
     * first window (whose I/Os the detectors judge) knows whether it rotates.
     */
    public static DiskstatsDelta classOf(DiskstatsSample first) {
        DiskstatsDelta d = new DiskstatsDelta();
        d.host = first.host;
        d.disk = first.disk;
        d.rotational = first.rotational;
        d.model = first.model;
        d.rpm = first.rpm;
        d.startNs = first.tsNs;
        d.endNs = first.tsNs;
        return d;
    }

    /** Whether this says only the disk's class ({@link #classOf}), spanning no time. */
    public boolean classOnly() {
        return startNs == endNs;
    }

    /** The delta from `prev` to `curr`; only meaningful when classify() said DELTA. */
    public static DiskstatsDelta between(DiskstatsSample prev, DiskstatsSample curr) {
        DiskstatsDelta d = new DiskstatsDelta();
        d.host = curr.host;
        d.disk = curr.disk;
        d.rotational = curr.rotational;
        d.model = curr.model;
        d.rpm = curr.rpm;
        d.startNs = prev.tsNs;
        d.endNs = curr.tsNs;
        for (int i = 0; i < COUNTERS.size(); i++) {
            COUNTERS.set(d, i, SAMPLED.get(curr, i) - SAMPLED.get(prev, i));
        }
        return d;
    }
}
