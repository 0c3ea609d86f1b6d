package io.iopipe.jobs.pipeline;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.detect.Log2Histogram;
import io.iopipe.jobs.detect.OpLatency;
import io.iopipe.jobs.iostat.IostatWindow;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import java.util.Map;
import java.util.Optional;

/**
 * io.window.v1: the iostat line of a window and, per op, its latency distributions:
 * device time (btt's D2C), queue time and their total (Q2C), each as a log2 histogram
 * with quantiles, and how many sampled events the window holds.
 */
final class WindowRecord {
    static final double[] QUANTILES = {0.5, 0.9, 0.99, 0.999};
    static final String[] QUANTILE_NAMES = {"p50_us", "p90_us", "p99_us", "p999_us"};

    private WindowRecord() {}

    /** None for a window without diskstats: its rates have no interval to divide by. */
    static Optional<OutputRecord> of(DiskWindow w) {
        if (!w.hasIostat()) {
            return Optional.empty();
        }
        ObjectNode r = IostatWindow.fields(w.iostat, w.startNs, w.endNs, w.windowSeconds);
        if (!w.ops.isEmpty()) {
            ObjectNode latency = r.putObject("latency");
            for (Map.Entry<String, OpLatency> e : w.ops.entrySet()) {
                latency.set(e.getKey(), op(e.getValue()));
            }
        }
        return Optional.of(new OutputRecord(IostatWindow.SCHEMA, w.key(), Json.write(r)));
    }

    static ObjectNode op(OpLatency op) {
        ObjectNode o = Json.object();
        o.put("count", op.count());
        o.put("errors", op.errors());
        o.put("source", op.hasKernelHistograms() ? "kernel" : "events");
        o.set("device", distribution(op.device()));
        o.set("queue", distribution(op.queue()));
        o.set("total", distribution(op.total()));
        o.put("events", op.events);
        return o;
    }

    static ObjectNode distribution(Log2Histogram h) {
        ObjectNode d = Json.object();
        d.putPOJO("buckets_log2_us", h.trimmedBuckets());
        d.put("mean_us", h.meanUs());
        for (int i = 0; i < QUANTILES.length; i++) {
            d.put(QUANTILE_NAMES[i], h.quantileUs(QUANTILES[i]));
        }
        d.put("max_us", h.maxUs);
        return d;
    }
}
