package io.iopipe.jobs.pipeline;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.detect.Log2Histogram;
import io.iopipe.jobs.detect.OpLatency;
import io.iopipe.jobs.iostat.IostatWindow;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.IoEvent;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;
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
                latency.set(e.getKey(), op(e.getValue(), w.fullCapture(e.getKey())));
            }
        }
        return Optional.of(new OutputRecord(IostatWindow.SCHEMA, w.key(), Json.write(r)));
    }

    /** One op's distributions; quantiles exact from `every` I/O's event when the window has them all. */
    static ObjectNode op(OpLatency op, List<IoEvent> every) {
        boolean exact = !every.isEmpty();
        ObjectNode o = Json.object();
        o.put("count", op.total().count);
        o.put("errors", op.errors());
        o.put("source", op.hasKernelHistograms() ? "kernel" : "events");
        o.put("quantiles", exact ? "every_io" : "log2_buckets");
        o.set("device", distribution(op.device(), exact ? sortedUs(every, e -> e.deviceNs()) : null));
        o.set("queue", distribution(op.queue(), exact ? sortedUs(every, e -> e.queueNs) : null));
        o.set("total", distribution(op.total(), exact ? sortedUs(every, IoEvent::totalNs) : null));
        o.put("events", op.events);
        double inflight = op.meanInflight();
        if (!Double.isNaN(inflight)) {
            o.put("inflight_mean", inflight);
        }
        return o;
    }

    private static long[] sortedUs(List<IoEvent> events, ToLongFunction<IoEvent> ns) {
        long[] us = new long[events.size()];
        for (int i = 0; i < us.length; i++) {
            us[i] = ns.applyAsLong(events.get(i)) / 1000;
        }
        Arrays.sort(us);
        return us;
    }

    /** The histogram, its mean and max; quantiles by nearest rank over `exactUs` when given, else interpolated in the buckets. */
    static ObjectNode distribution(Log2Histogram h, long[] exactUs) {
        ObjectNode d = Json.object();
        d.putPOJO("buckets_log2_us", h.trimmedBuckets());
        d.put("mean_us", h.meanUs());
        for (int i = 0; i < QUANTILES.length; i++) {
            d.put(QUANTILE_NAMES[i], exactUs == null ? h.quantileUs(QUANTILES[i]) : nearestRank(exactUs, QUANTILES[i]));
        }
        d.put("max_us", h.maxUs);
        return d;
    }

    static double nearestRank(long[] sorted, double q) {
        int rank = (int) Math.ceil(q * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }
}
