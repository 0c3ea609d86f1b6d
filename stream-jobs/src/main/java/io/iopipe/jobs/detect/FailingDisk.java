package io.iopipe.jobs.detect;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.records.IoEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The device is slow, not the workload: service time far above what its class's
 * mechanics allow and above its own history while the queue is shallow, I/Os that take
 * over a second at a shallow queue, or I/O errors.
 */
public final class FailingDisk {
    /** aqu-sz up to which load cannot explain a slow I/O: a handful in flight. */
    static final double SHALLOW_QUEUE = 4.0;
    /** Fewer completions than this in a window say little about a service time. */
    static final long MIN_IOS = 10;
    /** Slowest healthy random access of a disk: full-stroke seek (~20 ms) + one 5400 rpm revolution (11.1 ms), twice. */
    static final double ROTATIONAL_CEILING_MS = 60;
    /** Inner tracks of a slow disk still stream ~50 MB/s: big requests add their transfer time. */
    static final double ROTATIONAL_BYTES_PER_MS = 50_000;
    /** Flash serves in 0.02-5 ms; garbage collection stalls tens of ms, never a median of 50. */
    static final double FLASH_CEILING_MS = 50;
    static final double FLASH_BYTES_PER_MS = 200_000;
    /** Against its own history: this many times its usual service time, above what is normal for its class. */
    static final double OWN_BASELINE_FACTOR = 8;
    static final int OWN_BASELINE_MIN_WINDOWS = 30;
    static final double ROTATIONAL_TYPICAL_MS = 20;
    static final double FLASH_TYPICAL_MS = 2;
    /** One I/O taking a second at a shallow queue: no healthy disk of any class does that. */
    static final long FAIL_SLOW_US = 1_000_000;
    /** Errors in one window from which the disk is failing rather than suspect. */
    static final long FAILING_ERRORS = 5;

    private FailingDisk() {}

    /**
     * Shallow by the queue the I/Os met while the disk was busy, not by aqu-sz: a burst
     * that queued deep in an idle window is slow by its queue, not by the disk.
     */
    public static Optional<Finding> examine(DiskWindow w, DiskHistory history) {
        double depth = w.busyDepth();
        boolean shallow = !Double.isNaN(depth) && depth <= SHALLOW_QUEUE;
        List<String> reasons = new ArrayList<>();
        boolean critical = false;
        double serviceMs = serviceMs(w);
        double ceilingMs = ceilingMs(w);
        if (shallow && serviceMs > ceilingMs) {
            reasons.add(String.format("service time %.1f ms is beyond the %.0f ms any healthy %s disk needs, at a queue of %.2f",
                    serviceMs, ceilingMs, w.rotational() ? "rotational" : "flash", depth));
            critical = true;
        } else if (shallow && slowAgainstOwnHistory(w, history, serviceMs)) {
            reasons.add(String.format("service time %.1f ms is %.0f× this disk's usual %.2f ms, at a queue of %.2f",
                    serviceMs, serviceMs / history.serviceBaselineMs, history.serviceBaselineMs, depth));
            critical = true;
        }
        long overSecond = failSlowIos(w, shallow);
        if (overSecond > 0) {
            reasons.add(overSecond + " I/O(s) over 1 s of device time at a shallow queue (max "
                    + Math.round(w.deviceAllOps().maxUs / 1000.0) + " ms)");
        }
        long errors = w.errors();
        if (errors > 0) {
            reasons.add(errors + " I/O error(s)");
            critical |= errors >= FAILING_ERRORS;
        }
        if (reasons.isEmpty()) {
            return Optional.empty();
        }
        ObjectNode evidence = Evidence.of(w, w.busiestOp());
        evidence.set("worst_events", Evidence.worstEvents(w.events));  // its reasons span every op
        evidence.put("service_ms", Evidence.round(serviceMs));
        evidence.put("class_ceiling_ms", Evidence.round(ceilingMs));
        evidence.put("queue_depth", Evidence.round(Double.isNaN(depth) ? 0 : depth));
        evidence.put("ios_over_1s", overSecond);
        evidence.put("errors", errors);
        if (history.serviceBaselineWindows > 0) {
            evidence.put("own_baseline_service_ms", Evidence.round(history.serviceBaselineMs));
        }
        evidence.putPOJO("reasons", reasons);
        String summary = (critical ? "failing: " : "fail-slow suspect: ") + String.join("; ", reasons);
        return Optional.of(new Finding(Finding.Kind.FAILING_DISK,
                critical ? Finding.Severity.CRITICAL : Finding.Severity.WARNING, summary, evidence,
                critical ? Finding.HealthEffect.FAILING : Finding.HealthEffect.SUSPECT));
    }

    /**
     * A rotational disk serves one I/O at a time, so busy time per I/O (svctm) is its
     * service time. Its device times are no stand-in: they hold the wait in the drive's
     * own queue too (a burst of writes served in turn), which only the window's diskstats
     * tell from service, so without enough of them (a burst's diskstats counted in the next
     * window) it has none. Flash serves many at once, so svctm understates; its median
     * device time stands in, which at a shallow queue is close to the service time.
     */
    static double serviceMs(DiskWindow w) {
        if (w.rotational()) {
            // Service is part of each I/O's time: svctm above await means the counters
            // disagree (busy time from I/Os the window did not complete), and await bounds it.
            return w.iostatCompleted() >= MIN_IOS ? Math.min(w.serviceMs(), w.awaitMs()) : 0;
        }
        Log2Histogram device = w.deviceAllOps();
        return device.count >= MIN_IOS ? device.quantileUs(0.5) / 1000 : 0;
    }

    static double ceilingMs(DiskWindow w) {
        double bytes = w.hasIostat() ? w.bytesPerIo() : 0;
        return w.rotational()
                ? ROTATIONAL_CEILING_MS + bytes / ROTATIONAL_BYTES_PER_MS
                : FLASH_CEILING_MS + bytes / FLASH_BYTES_PER_MS;
    }

    static boolean slowAgainstOwnHistory(DiskWindow w, DiskHistory history, double serviceMs) {
        double typical = w.rotational() ? ROTATIONAL_TYPICAL_MS : FLASH_TYPICAL_MS;
        return history.serviceBaselineWindows >= OWN_BASELINE_MIN_WINDOWS
                && serviceMs > OWN_BASELINE_FACTOR * history.serviceBaselineMs
                && serviceMs > typical;
    }

    /**
     * I/Os over a second at a shallow queue: each event that knows its depth speaks for
     * itself; the kernel's histogram counts them when the window's queue was shallow.
     */
    static long failSlowIos(DiskWindow w, boolean shallowWindow) {
        long fromEvents = 0;
        for (IoEvent e : w.events) {
            boolean shallowAtDispatch = e.inflight > 0 ? e.inflight <= SHALLOW_QUEUE : shallowWindow;
            if (e.deviceNs() >= FAIL_SLOW_US * 1000 && shallowAtDispatch) {
                fromEvents++;
            }
        }
        long fromHistogram = 0;
        if (shallowWindow) {
            Log2Histogram device = w.deviceAllOps();
            for (int i = Log2Histogram.bucketOf(FAIL_SLOW_US) + 1; i < Log2Histogram.BUCKETS; i++) {
                fromHistogram = Saturating.add(fromHistogram, device.bucket(i));
            }
            if (fromHistogram == 0 && device.maxUs >= FAIL_SLOW_US) {
                fromHistogram = 1;
            }
        }
        return Math.max(fromEvents, fromHistogram);
    }

    /** Whether a window tells the disk's service time (serviceMs), to teach its baseline. */
    static boolean teachesBaseline(DiskWindow w) {
        return w.rotational() ? w.iostatCompleted() >= MIN_IOS : w.deviceAllOps().count >= MIN_IOS;
    }
}
