package io.iopipe.jobs.detect;

/**
 * One flash drive's small reads dispatched at a shallow queue in one window: their device
 * times and how many I/Os each stands for. At a shallow queue and a small size a flash
 * read's device time is its service time, which drives of one model share: what
 * {@link ModelPeers} compares.
 */
public class ShallowReads {
    public String host;
    public String disk;
    public String model;
    public long startNs;
    public long endNs;
    public double[] deviceUs;
    public double[] weights;

    public ShallowReads() {}

    public static ShallowReads of(String host, String disk, String model, long startNs, long endNs, double[] deviceUs,
                                  double[] weights) {
        ShallowReads r = new ShallowReads();
        r.host = host;
        r.disk = disk;
        r.model = model;
        r.startNs = startNs;
        r.endNs = endNs;
        r.deviceUs = deviceUs;
        r.weights = weights;
        return r;
    }

    public String key() {
        return io.iopipe.jobs.records.OutputRecord.diskKey(host, disk);
    }
}
