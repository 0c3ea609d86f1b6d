package io.iopipe.jobs.iostat;

import io.iopipe.jobs.records.DiskstatsCounters;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.OutputRecord;

/**
 * What one disk did between two consecutive diskstats samples: counter deltas over
 * (startNs, endNs]. Summing deltas telescopes to (last sample - first sample), so a
 * window of deltas gives exactly what iostat prints for the same two snapshots.
 */
public class DiskstatsDelta {
    public String host;
    public String disk;
    public boolean rotational;
    public String model;
    public long rpm;
    public long startNs;
    public long endNs;
    /** What each counter that only grows counted over the interval. */
    public DiskstatsCounters counters = new DiskstatsCounters();

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
        return curr.counters.anyBelow(prev.counters) ? Outcome.COUNTER_RESET : Outcome.DELTA;
    }

    /**
     * A disk's first sample: no interval yet, only what class of disk it is, so that its
     * first window (whose I/Os the detectors judge) knows whether it rotates.
     */
    public static DiskstatsDelta classOf(DiskstatsSample first) {
        return over(first.tsNs, first);
    }

    /** Whether this says only the disk's class ({@link #classOf}), spanning no time. */
    public boolean classOnly() {
        return startNs == endNs;
    }

    /** The delta from `prev` to `curr`; only meaningful when classify() said DELTA. */
    public static DiskstatsDelta between(DiskstatsSample prev, DiskstatsSample curr) {
        DiskstatsDelta d = over(prev.tsNs, curr);
        d.counters = curr.counters.since(prev.counters);
        return d;
    }

    /** The disk `end` names, as it says it is, over (startNs, end's time]; nothing counted yet. */
    private static DiskstatsDelta over(long startNs, DiskstatsSample end) {
        DiskstatsDelta d = new DiskstatsDelta();
        d.host = end.host;
        d.disk = end.disk;
        d.rotational = end.rotational;
        d.model = end.model;
        d.rpm = end.rpm;
        d.startNs = startNs;
        d.endNs = end.tsNs;
        return d;
    }
}
