package io.iopipe.jobs.iostat;

/** The sum of a window's deltas of one disk: the accumulator of the iostat window. */
public class IostatSums {
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
        readsCompleted += d.readsCompleted;
        readsMerged += d.readsMerged;
        sectorsRead += d.sectorsRead;
        readTimeMs += d.readTimeMs;
        writesCompleted += d.writesCompleted;
        writesMerged += d.writesMerged;
        sectorsWritten += d.sectorsWritten;
        writeTimeMs += d.writeTimeMs;
        ioTimeMs += d.ioTimeMs;
        weightedIoTimeMs += d.weightedIoTimeMs;
        discardsCompleted += d.discardsCompleted;
        discardsMerged += d.discardsMerged;
        sectorsDiscarded += d.sectorsDiscarded;
        discardTimeMs += d.discardTimeMs;
        flushesCompleted += d.flushesCompleted;
        flushTimeMs += d.flushTimeMs;
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
        readsCompleted += o.readsCompleted;
        readsMerged += o.readsMerged;
        sectorsRead += o.sectorsRead;
        readTimeMs += o.readTimeMs;
        writesCompleted += o.writesCompleted;
        writesMerged += o.writesMerged;
        sectorsWritten += o.sectorsWritten;
        writeTimeMs += o.writeTimeMs;
        ioTimeMs += o.ioTimeMs;
        weightedIoTimeMs += o.weightedIoTimeMs;
        discardsCompleted += o.discardsCompleted;
        discardsMerged += o.discardsMerged;
        sectorsDiscarded += o.sectorsDiscarded;
        discardTimeMs += o.discardTimeMs;
        flushesCompleted += o.flushesCompleted;
        flushTimeMs += o.flushTimeMs;
        return this;
    }
}
