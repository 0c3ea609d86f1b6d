package io.iopipe.jobs.detect;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Optional;

/**
 * The device's parallelism is used up: latency at the current depth over the disk's
 * own latency at a depth of one, learnt online. Past the knee, added depth only adds
 * waiting (Little's law), so the ratio climbs with depth while throughput stays flat.
 * %util says nothing here: a device that serves many at once reads 100% at depth one.
 */
public final class Saturation {
    /** Windows whose mean depth is at most this teach the depth-one baseline. */
    static final double QD1_MAX_DEPTH = 1.5;
    static final long MIN_IOS = 50;
    /**
     * A window's events dispatched with nothing else in flight teach the depth-one baseline
     * whatever the window's mean depth, when there are this many: a window that straddles
     * a change of depth, or a disk that is never idle for a whole window, still has them.
     */
    static final int MIN_DEPTH_ONE_EVENTS = 20;
    static final double BASELINE_ALPHA = 0.3;
    /** Windows that taught it before the baseline is trusted. */
    static final int MIN_BASELINE_WINDOWS = 2;
    /** Depth from which a rise can be queueing at all. */
    static final double MIN_DEPTH = 2.0;
    /** Onset: two thirds of every I/O's time is waiting for the device. */
    static final double ONSET_RATIO = 3.0;
    /** Saturated: an order of magnitude above its own depth-one latency. */
    static final double SATURATED_RATIO = 10.0;
    /** Queueing stretches latency at most in proportion to depth; beyond that the device itself is slow. */
    static final double MAX_RATIO_PER_DEPTH = 1.5;

    private Saturation() {}

    public static Optional<Finding> examine(DiskWindow w, DiskHistory history) {
        double depth = w.depth();
        double latencyUs = meanLatencyUs(w);
        if (Double.isNaN(depth) || latencyUs <= 0 || history.qd1Windows < MIN_BASELINE_WINDOWS || depth < MIN_DEPTH) {
            return Optional.empty();
        }
        double ratio = latencyUs / history.qd1LatencyUs;
        if (ratio < ONSET_RATIO || ratio > MAX_RATIO_PER_DEPTH * depth) {
            return Optional.empty();
        }
        boolean saturated = ratio >= SATURATED_RATIO;
        ObjectNode evidence = Evidence.of(w, w.busiestOp());
        evidence.put("level", saturated ? "saturated" : "onset");
        evidence.put("ratio_to_qd1", Evidence.round(ratio));
        evidence.put("latency_ms", Evidence.round(latencyUs / 1000));
        evidence.put("qd1_latency_ms", Evidence.round(history.qd1LatencyUs / 1000));
        evidence.put("queue_depth", Evidence.round(depth));
        if (w.hasIostat()) {
            evidence.put("ios_per_s", Evidence.round(w.completedPerS()));
        }
        String summary = String.format("%s: latency %.2f ms is %.1f× its %.3f ms at depth one, at a depth of %.0f",
                saturated ? "saturated" : "saturation onset", latencyUs / 1000, ratio, history.qd1LatencyUs / 1000, depth);
        return Optional.of(new Finding(Finding.Kind.SATURATION,
                saturated ? Finding.Severity.WARNING : Finding.Severity.INFO, summary, evidence, Finding.HealthEffect.NONE));
    }

    /**
     * Learns the depth-one latency from a window: from its I/Os dispatched alone, each
     * carrying its own depth, where it has enough of them; else from the whole window when
     * its mean depth is about one.
     */
    static void learn(DiskWindow w, DiskHistory history) {
        double latencyUs = depthOneLatencyUs(w);
        if (Double.isNaN(latencyUs)) {
            double depth = w.depth();
            if (Double.isNaN(depth) || depth > QD1_MAX_DEPTH || w.deviceAllOps().count < MIN_IOS) {
                return;
            }
            latencyUs = meanLatencyUs(w);
        }
        history.qd1LatencyUs = DiskHistory.ewma(history.qd1LatencyUs, history.qd1Windows, latencyUs, BASELINE_ALPHA);
        history.qd1Windows++;
    }

    /**
     * Mean device time of the window's reads and writes dispatched with no other request
     * in flight, weighted by sample_weight (outliers kept one by one weigh one, a 1-in-N
     * sample N); NaN with fewer than MIN_DEPTH_ONE_EVENTS of them. Flushes and discards
     * are not the data I/Os whose latency a depth stretches.
     */
    static double depthOneLatencyUs(DiskWindow w) {
        double sumUs = 0;
        double weight = 0;
        int events = 0;
        for (var e : w.events) {
            if (e.inflight == 1 && ("R".equals(e.op) || "W".equals(e.op))) {
                sumUs += e.sampleWeight * e.deviceNs() / 1000.0;
                weight += e.sampleWeight;
                events++;
            }
        }
        return events >= MIN_DEPTH_ONE_EVENTS ? sumUs / weight : Double.NaN;
    }

    /** Device time per I/O where the kernel measured it, else await from diskstats. */
    static double meanLatencyUs(DiskWindow w) {
        Log2Histogram device = w.deviceAllOps();
        if (device.count > 0) {
            return device.meanUs();
        }
        return w.awaitMs() * 1000;
    }
}
