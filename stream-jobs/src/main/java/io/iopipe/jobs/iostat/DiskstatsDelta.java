package io.iopipe.jobs.iostat;

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
        boolean anyDecreased = curr.readsCompleted < prev.readsCompleted
                || curr.readsMerged < prev.readsMerged
                || curr.sectorsRead < prev.sectorsRead
                || curr.readTimeMs < prev.readTimeMs
                || curr.writesCompleted < prev.writesCompleted
                || curr.writesMerged < prev.writesMerged
                || curr.sectorsWritten < prev.sectorsWritten
                || curr.writeTimeMs < prev.writeTimeMs
                || curr.ioTimeMs < prev.ioTimeMs
                || curr.weightedIoTimeMs < prev.weightedIoTimeMs
                || curr.discardsCompleted < prev.discardsCompleted
                || curr.discardsMerged < prev.discardsMerged
                || curr.sectorsDiscarded < prev.sectorsDiscarded
                || curr.discardTimeMs < prev.discardTimeMs
                || curr.flushesCompleted < prev.flushesCompleted
                || curr.flushTimeMs < prev.flushTimeMs;
        return anyDecreased ? Outcome.COUNTER_RESET : Outcome.DELTA;
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
        d.readsCompleted = curr.readsCompleted - prev.readsCompleted;
        d.readsMerged = curr.readsMerged - prev.readsMerged;
        d.sectorsRead = curr.sectorsRead - prev.sectorsRead;
        d.readTimeMs = curr.readTimeMs - prev.readTimeMs;
        d.writesCompleted = curr.writesCompleted - prev.writesCompleted;
        d.writesMerged = curr.writesMerged - prev.writesMerged;
        d.sectorsWritten = curr.sectorsWritten - prev.sectorsWritten;
        d.writeTimeMs = curr.writeTimeMs - prev.writeTimeMs;
        d.ioTimeMs = curr.ioTimeMs - prev.ioTimeMs;
        d.weightedIoTimeMs = curr.weightedIoTimeMs - prev.weightedIoTimeMs;
        d.discardsCompleted = curr.discardsCompleted - prev.discardsCompleted;
        d.discardsMerged = curr.discardsMerged - prev.discardsMerged;
        d.sectorsDiscarded = curr.sectorsDiscarded - prev.sectorsDiscarded;
        d.discardTimeMs = curr.discardTimeMs - prev.discardTimeMs;
        d.flushesCompleted = curr.flushesCompleted - prev.flushesCompleted;
        d.flushTimeMs = curr.flushTimeMs - prev.flushTimeMs;
        return d;
    }
}
