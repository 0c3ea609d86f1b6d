package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.detect.Log2Histogram;
import io.iopipe.jobs.detect.OpLatency;
import io.iopipe.jobs.detect.Saturating;
import java.util.Map;
import java.util.TreeMap;

/** One disk's kernel latency histograms per op over one rollup period, and how many windows and amendments they sum. */
public class LatencySpan {
    public String host;
    public String disk;
    public long startNs;
    /**
     * How many of the kernel's interval histograms (io.hist.v1 records, each once) it sums.
     * It grows with what the span holds, whatever path the job took there: a job restored
     * from a checkpoint sums the same histograms again, maybe in other windows and
     * amendments than its run before the crash sent, so the highest revision is the fullest.
     */
    public int revision;
    /** Whether it holds what has not been sent. */
    public boolean unsent;
    public Map<String, KernelLatency> ops = new TreeMap<>();

    /** An op's three kernel histograms and its errors: what a rollup keeps of a window's {@link OpLatency}. */
    public static class KernelLatency {
        public Log2Histogram device = new Log2Histogram();
        public Log2Histogram queue = new Log2Histogram();
        public Log2Histogram total = new Log2Histogram();
        public long errors;

        /** The histogram of one latency kind ("device", "queue", "total"). */
        Log2Histogram kind(String latency) {
            return switch (latency) {
                case "device" -> device;
                case "queue" -> queue;
                case "total" -> total;
                default -> throw new IllegalArgumentException("no latency kind " + latency);
            };
        }
    }

    public LatencySpan() {}

    public LatencySpan(String host, String disk, long startNs) {
        this.host = host;
        this.disk = disk;
        this.startNs = startNs;
    }

    /** Adds the kernel's histograms of each op of a window; the events' stand-ins are no kernel count and stay out. */
    public void absorb(Map<String, OpLatency> windowOps) {
        for (Map.Entry<String, OpLatency> e : windowOps.entrySet()) {
            OpLatency window = e.getValue();
            if (!window.hasKernelHistograms()) {
                continue;
            }
            KernelLatency op = ops.computeIfAbsent(e.getKey(), k -> new KernelLatency());
            op.device.merge(window.device);
            op.queue.merge(window.queue);
            op.total.merge(window.total);
            op.errors = Saturating.add(op.errors, window.errors);
            revision += window.deviceIntervals.intervals;
        }
        unsent = true;
    }
}
