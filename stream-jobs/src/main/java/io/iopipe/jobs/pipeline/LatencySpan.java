package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.detect.Log2Histogram;
import io.iopipe.jobs.detect.OpLatency;
import io.iopipe.jobs.detect.Saturating;
import java.util.Map;
import java.util.TreeMap;

/** One disk's kernel latency histograms per op over one rollup period, and how many 1 min windows they sum. */
public class LatencySpan {
    public long startNs;
    public int revision;
    public Map<String, OpLatency> ops = new TreeMap<>();

    public LatencySpan() {}

    LatencySpan(long startNs) {
        this.startNs = startNs;
    }

    /** Adds the kernel's histograms of each op of a window; the events' stand-ins are no kernel count and stay out. */
    void absorb(Map<String, OpLatency> windowOps) {
        for (Map.Entry<String, OpLatency> e : windowOps.entrySet()) {
            OpLatency window = e.getValue();
            if (!window.hasKernelHistograms()) {
                continue;
            }
            OpLatency op = ops.computeIfAbsent(e.getKey(), k -> new OpLatency());
            op.device.merge(window.device);
            op.queue.merge(window.queue);
            op.total.merge(window.total);
            op.errors = Saturating.add(op.errors, window.errors);
        }
        revision++;
    }

    /** The histogram of one latency kind ("device", "queue", "total") of an op. */
    static Log2Histogram kind(OpLatency op, String latency) {
        return switch (latency) {
            case "device" -> op.device;
            case "queue" -> op.queue;
            case "total" -> op.total;
            default -> throw new IllegalArgumentException("no latency kind " + latency);
        };
    }
}
