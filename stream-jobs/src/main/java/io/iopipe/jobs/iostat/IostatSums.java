package io.iopipe.jobs.iostat;

import io.iopipe.jobs.records.DiskstatsCounters;

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
    /** What each counter that only grows counted over the window's intervals. */
    public DiskstatsCounters counters = new DiskstatsCounters();

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
        counters.add(d.counters);
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
        counters.add(o.counters);
        return this;
    }
}
