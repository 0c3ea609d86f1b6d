package io.iopipe.jobs.records;

/**
 * One disk's throughput and mean I/O latency over one window: what comparing a drive with
 * its peers needs, from the job's own windows or from io.window.v1 records of any kind
 * (iostat's, or fleet telemetry's throughput and latency alone).
 */
public class WindowSample {
    public String host;
    public String disk;
    public long startNs;
    public long endNs;
    public double kibPerS;
    /** Mean time of the window's completed I/Os, queue included; 0 when none completed. */
    public double awaitMs;
    /**
     * What a drive is compared with: drives of its host in the same class. Rotational or not,
     * and the model where the source tells it; empty where it tells neither (telemetry of one
     * host's drives, which share a model).
     */
    public String peerClass = "";

    public WindowSample() {}

    public WindowSample(String host, String disk, long startNs, long endNs, double kibPerS, double awaitMs) {
        this.host = host;
        this.disk = disk;
        this.startNs = startNs;
        this.endNs = endNs;
        this.kibPerS = kibPerS;
        this.awaitMs = awaitMs;
    }

    public String key() {
        return OutputRecord.diskKey(host, disk);
    }

    /** The drives compared together: one host's drives of one class. */
    public String peersKey() {
        return host + "\n" + peerClass;
    }

    public static String peerClass(boolean rotational, String model) {
        return (rotational ? "rotational" : "non-rotational") + (model == null ? "" : " " + model);
    }

    /** Whether the disk did any I/O: an idle window says nothing about how fast it is. */
    public boolean busy() {
        return kibPerS > 0 && awaitMs > 0;
    }
}
