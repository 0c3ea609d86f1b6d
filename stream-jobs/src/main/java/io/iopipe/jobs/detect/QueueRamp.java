package io.iopipe.jobs.detect;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.Json;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A burst the workload made, not a slow disk: I/Os dispatched together that a serial
 * device serves one after another, so their latencies rise linearly in completion order
 * while completions come at a steady spacing (S3: fsflush's 11 writes, ~19 ms apart).
 * "High service time at low %busy" is this, explained.
 */
public final class QueueRamp {
    /** A ramp needs enough points to be a line. */
    static final int MIN_BURST = 5;
    /** Dispatched together: within this share of the first I/O's own latency. */
    static final double DISPATCH_SPAN_OF_FIRST_LATENCY = 0.25;
    /** The fit of latency against completion order. */
    static final double MIN_R_SQUARED = 0.9;
    /** Steady completions: coefficient of variation of their spacing. */
    static final double MAX_SPACING_CV = 0.5;
    /** Served in turn: each I/O waits about one service time more than the one before. */
    static final double MIN_SLOPE_OF_FIRST_LATENCY = 0.2;

    /**
     * The burst's I/Os its evidence shows: its first ones (the ramp's foot) and its last
     * (how high it climbed); burst_size says how many there were. A flight-recorded burst
     * holds thousands, and every one of them would have made the anomaly too large to send.
     */
    static final int BURST_HEAD_SHOWN = 10;
    static final int BURST_TAIL_SHOWN = 5;

    private QueueRamp() {}

    record Ramp(List<IoEvent> burst, double slopeMs, double interceptMs, double rSquared, double spacingMs, double spacingCv) {}

    public static Optional<Finding> examine(DiskWindow w) {
        List<Ramp> ramps = ramps(w.events);
        if (ramps.isEmpty()) {
            return Optional.empty();
        }
        Ramp largest = ramps.stream().max(Comparator.comparingInt(r -> r.burst().size())).orElseThrow();
        IoEvent first = largest.burst().get(0);
        ObjectNode evidence = Evidence.of(w, first.op);
        evidence.put("bursts", ramps.size());
        evidence.put("burst_size", largest.burst().size());
        evidence.put("burst_start_ns", first.issueNs);
        evidence.put("dispatch_span_ms", Evidence.round(dispatchSpanNs(largest.burst()) / 1e6));
        evidence.put("slope_ms_per_io", Evidence.round(largest.slopeMs()));
        evidence.put("first_latency_ms", Evidence.round(largest.interceptMs()));
        evidence.put("r_squared", Evidence.round(largest.rSquared()));
        evidence.put("completion_spacing_ms", Evidence.round(largest.spacingMs()));
        evidence.set("burst", burstEvents(largest.burst()));
        String summary = String.format("queue ramp: %d I/Os dispatched within %.1f ms completed %.1f ms apart, "
                        + "latency rising %.1f ms per I/O: a workload burst served in turn, not a slow disk",
                largest.burst().size(), dispatchSpanNs(largest.burst()) / 1e6, largest.spacingMs(), largest.slopeMs());
        return Optional.of(new Finding(Finding.Kind.QUEUE_RAMP, Finding.Severity.INFO, summary, evidence,
                Finding.HealthEffect.NONE));
    }

    /** Every ramp among events sorted by dispatch. */
    static List<Ramp> ramps(List<IoEvent> byIssue) {
        List<Ramp> found = new ArrayList<>();
        int i = 0;
        while (i < byIssue.size()) {
            IoEvent first = byIssue.get(i);
            long span = (long) (DISPATCH_SPAN_OF_FIRST_LATENCY * first.deviceNs());
            int j = i + 1;
            while (j < byIssue.size() && byIssue.get(j).issueNs - first.issueNs <= span) {
                j++;
            }
            if (j - i >= MIN_BURST) {
                Optional<Ramp> ramp = fit(byIssue.subList(i, j));
                if (ramp.isPresent()) {
                    found.add(ramp.get());
                    i = j;
                    continue;
                }
            }
            i++;
        }
        return found;
    }

    static Optional<Ramp> fit(List<IoEvent> burst) {
        List<IoEvent> byCompletion = new ArrayList<>(burst);
        byCompletion.sort(Comparator.comparingLong(e -> e.completeNs));
        int n = byCompletion.size();
        double meanX = (n - 1) / 2.0;
        double meanY = 0;
        for (IoEvent e : byCompletion) {
            meanY += e.deviceNs() / 1e6;
        }
        meanY /= n;
        double sxy = 0;
        double sxx = 0;
        double syy = 0;
        for (int k = 0; k < n; k++) {
            double dy = byCompletion.get(k).deviceNs() / 1e6 - meanY;
            sxy += (k - meanX) * dy;
            sxx += (k - meanX) * (k - meanX);
            syy += dy * dy;
        }
        if (syy == 0) {
            return Optional.empty();
        }
        double slope = sxy / sxx;
        double intercept = meanY - slope * meanX;
        double rSquared = sxy * sxy / (sxx * syy);
        double[] spacing = new double[n - 1];
        for (int k = 1; k < n; k++) {
            spacing[k - 1] = (byCompletion.get(k).completeNs - byCompletion.get(k - 1).completeNs) / 1e6;
        }
        double meanSpacing = mean(spacing);
        double cv = meanSpacing == 0 ? Double.MAX_VALUE : stddev(spacing, meanSpacing) / meanSpacing;
        double firstLatencyMs = byCompletion.get(0).deviceNs() / 1e6;
        boolean ramp = rSquared >= MIN_R_SQUARED && cv <= MAX_SPACING_CV
                && slope >= MIN_SLOPE_OF_FIRST_LATENCY * firstLatencyMs;
        return ramp ? Optional.of(new Ramp(byCompletion, slope, intercept, rSquared, meanSpacing, cv)) : Optional.empty();
    }

    static long dispatchSpanNs(List<IoEvent> burst) {
        long lo = Long.MAX_VALUE;
        long hi = Long.MIN_VALUE;
        for (IoEvent e : burst) {
            lo = Math.min(lo, e.issueNs);
            hi = Math.max(hi, e.issueNs);
        }
        return hi - lo;
    }

    private static ArrayNode burstEvents(List<IoEvent> burst) {
        ArrayNode out = Json.MAPPER.createArrayNode();
        List<IoEvent> shown = burst.size() <= BURST_HEAD_SHOWN + BURST_TAIL_SHOWN ? burst
                : Stream.concat(burst.subList(0, BURST_HEAD_SHOWN).stream(),
                        burst.subList(burst.size() - BURST_TAIL_SHOWN, burst.size()).stream()).toList();
        shown.forEach(e -> out.add(Evidence.event(e)));
        return out;
    }

    private static double mean(double[] v) {
        double s = 0;
        for (double x : v) {
            s += x;
        }
        return v.length == 0 ? 0 : s / v.length;
    }

    private static double stddev(double[] v, double mean) {
        double s = 0;
        for (double x : v) {
            s += (x - mean) * (x - mean);
        }
        return v.length == 0 ? 0 : Math.sqrt(s / v.length);
    }
}
