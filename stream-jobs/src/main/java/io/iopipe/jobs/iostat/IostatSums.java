package io.iopipe.jobs.iostat;

import io.iopipe.jobs.records.DiskstatsFields;

/** The sum of a window's deltas of one disk: the accumulator of the iostat window. */
public class IostatSums {
    private static final DiskstatsFields.Counters<IostatSums> SUMMED = DiskstatsFields.of(IostatSums.class, DiskstatsFields.CUMULATIVE);

    public String host;
    public String disk;
    public boolean rotational;
    /** The device's model, where it tells; null otherwise. */
    public String model;
    /** A rotational disk's rotation rate, where it tells; 0 otherwise. */
    public long rpm;
    /** Whether a sample said what class of disk this is (rotational, model), even without an interval. */
    public boolean classKnown;
    public int samples;
    public long intervalNs;
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

    public IostatSums add(DiskstatsDelta d) {
        host = d.host;
        disk = d.disk;
        rotational = d.rotational;
        model = d.model;
        rpm = d.rpm;
        classKnown = true;
        if (d.classOnly()) {
            return this;
        }
        samples += 1;
        intervalNs += d.endNs - d.startNs;
        for (int i = 0; i < SUMMED.size(); i++) {
            SUMMED.set(this, i, SUMMED.get(this, i) + DiskstatsDelta.COUNTERS.get(d, i));
        }
        return this;
    }

    public IostatSums merge(IostatSums o) {
        if (o.samples == 0) {
            if (o.classKnown && !classKnown) {
                rotational = o.rotational;
                model = o.model;
                rpm = o.rpm;
                classKnown = true;
            }
            return this;
        }
        classKnown = true;
        host = o.host;
        disk = o.disk;
        rotational = o.rotational;
        model = o.model;
        rpm = o.rpm;
        samples += o.samples;
        intervalNs += o.intervalNs;
        for (int i = 0; i < SUMMED.size(); i++) {
            SUMMED.set(this, i, SUMMED.get(this, i) + SUMMED.get(o, i));
        }
        return this;
    }
}
