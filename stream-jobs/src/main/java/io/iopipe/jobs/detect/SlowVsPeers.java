package io.iopipe.jobs.detect;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.WindowSample;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * slow_vs_peers: a drive slower than its peers under the same load, the way Perseus
 * (FAST'23) finds fail-slow drives. The drives of one host share model and workload, so
 * at a given throughput they should answer alike; a drive that does not, hour after hour
 * and day after day, is failing slowly. Each hour of a host:
 * <ol>
 * <li>each drive's peers' fit: the other drives' windows of the hour in equal-count
 *     throughput bins, the median latency of each bin;</li>
 * <li>the drive's slowdown: the median over its windows of its latency over the fit at its
 *     throughput, a median so minutes of a burst do not make an hour;</li>
 * <li>a slow hour: a slowdown beyond the peers' spread (robust z over every drive-hour of
 *     the host in the last week) and of at least {@link #MIN_SLOWDOWN};</li>
 * <li>persistence: a warning (health suspect) after {@link #WARN_AFTER_HOURS} slow hours in a
 *     row, so a one-hour blip never counts; failing (a ticket) once slow on
 *     {@link #FAILING_DAYS} days of the last week, in most of its hours there.</li>
 * </ol>
 * When most drives of a host are slow in an hour, the fit itself is in doubt (a host or
 * workload problem, not N drives): none of them counts as slow that hour.
 */
public final class SlowVsPeers {
    public static final long HOUR_NS = 3600L * 1_000_000_000L;
    static final long DAY_NS = 24 * HOUR_NS;
    /** How long a drive's hours are remembered: the spread, the persistence and a host's forgetting. */
    public static final long HORIZON_NS = 7 * DAY_NS;
    /** A drive is compared with at least three peers: with fewer, "its peers" is one or two other drives. */
    static final int MIN_DRIVES = 4;
    /** A drive is assessed on an hour it was busy for at least a quarter of. */
    static final long MIN_BUSY_NS = HOUR_NS / 4;
    static final int MAX_FIT_BINS = 10;
    static final int MIN_SAMPLES_PER_BIN = 20;
    /** Beyond the peers' spread: the usual robust-outlier fence, 3 standard deviations estimated from the MAD. */
    static final double Z_FENCE = 3.0;
    static final double MAD_TO_SIGMA = 1.4826;
    /**
     * A slowdown worth a technician: drives of one model under one load differ by a few
     * percent; a fifth slower than the fit of its peers is a drive that no longer keeps up.
     */
    static final double MIN_SLOWDOWN = 1.2;
    static final int WARN_AFTER_HOURS = 3;
    static final int FAILING_DAYS = 3;
    /**
     * An episode ends once the drive has kept up with its peers this long: until then its
     * slow hours are one anomaly, however far apart (telemetry may cover a few hours a day).
     */
    static final long EPISODE_QUIET_NS = DAY_NS;

    private SlowVsPeers() {}

    public record Assessment(List<OutputRecord> anomalies, List<PeerVerdict> verdicts) {}

    /** A drive's hour against its peers' fit. */
    record DriveHour(String disk, double logSlowdown, double awaitMs, double fitAwaitMs, double kibPerS) {}

    /**
     * Assesses one hour of a host's drives of one class from their windows; {@code drives} (by disk) is the host's
     * state, updated in place. No verdict for a drive too idle to judge, nor for any drive of
     * a host with fewer than {@link #MIN_DRIVES} to compare.
     */
    public static Assessment assessHour(String host, long hourStartNs, Collection<WindowSample> windows,
                                        Map<String, PeerHistory> drives) {
        for (PeerHistory h : drives.values()) {
            h.forgetBefore(hourStartNs + HOUR_NS - HORIZON_NS);
        }
        drives.values().removeIf(PeerHistory::isEmpty);
        Map<String, List<WindowSample>> busy = busyDrives(windows);
        if (busy.size() < MIN_DRIVES) {
            return new Assessment(List.of(), List.of());
        }
        String peerClass = busy.values().iterator().next().get(0).peerClass;
        List<DriveHour> hours = new ArrayList<>();
        busy.forEach((disk, own) -> hours.add(driveHour(disk, own, peersOf(disk, busy))));
        for (DriveHour d : hours) {
            drives.computeIfAbsent(d.disk(), k -> new PeerHistory()).add(hourStartNs, d.logSlowdown(), false);
        }
        Spread spread = Spread.of(drives.values());
        List<DriveHour> slow = hours.stream().filter(d -> spread.z(d.logSlowdown()) >= Z_FENCE
                && Math.exp(d.logSlowdown()) >= MIN_SLOWDOWN).toList();
        boolean hostWide = slow.size() * 2 > hours.size();
        if (!hostWide) {
            slow.forEach(d -> markLastHourSlow(drives.get(d.disk())));
        }
        List<OutputRecord> anomalies = new ArrayList<>();
        List<PeerVerdict> verdicts = new ArrayList<>();
        for (DriveHour d : hours) {
            Evidence e = new Evidence(host, peerClass, hourStartNs, d, spread, hours.size(), slow.size());
            verdicts.add(judge(drives.get(d.disk()), e, anomalies));
        }
        return new Assessment(anomalies, verdicts);
    }

    private static void markLastHourSlow(PeerHistory h) {
        h.slow.set(h.slow.size() - 1, true);
    }

    /** The busy windows of each drive busy long enough in the hour to judge. */
    static Map<String, List<WindowSample>> busyDrives(Collection<WindowSample> windows) {
        Map<String, List<WindowSample>> byDisk = new TreeMap<>();
        for (WindowSample w : windows) {
            if (w.busy()) {
                byDisk.computeIfAbsent(w.disk, k -> new ArrayList<>()).add(w);
            }
        }
        byDisk.values().removeIf(own -> own.stream().mapToLong(w -> w.endNs - w.startNs).sum() < MIN_BUSY_NS);
        return byDisk;
    }

    private static List<WindowSample> peersOf(String disk, Map<String, List<WindowSample>> busy) {
        List<WindowSample> peers = new ArrayList<>();
        busy.forEach((other, own) -> {
            if (!other.equals(disk)) {
                peers.addAll(own);
            }
        });
        return peers;
    }

    static DriveHour driveHour(String disk, List<WindowSample> own, List<WindowSample> peers) {
        Fit fit = Fit.of(peers);
        double[] logSlowdowns = new double[own.size()];
        double[] fitted = new double[own.size()];
        for (int i = 0; i < own.size(); i++) {
            fitted[i] = fit.awaitMsAt(own.get(i).kibPerS);
            logSlowdowns[i] = Math.log(own.get(i).awaitMs / fitted[i]);
        }
        return new DriveHour(disk, median(logSlowdowns), median(own.stream().mapToDouble(w -> w.awaitMs).toArray()),
                median(fitted), median(own.stream().mapToDouble(w -> w.kibPerS).toArray()));
    }

    /** The peers' latency as a step function of throughput: equal-count bins, the median latency of each. */
    record Fit(double[] upperKib, double[] medianAwaitMs) {
        static Fit of(List<WindowSample> peers) {
            List<WindowSample> byKib = new ArrayList<>(peers);
            byKib.sort((a, b) -> Double.compare(a.kibPerS, b.kibPerS));
            int bins = Math.max(1, Math.min(MAX_FIT_BINS, byKib.size() / MIN_SAMPLES_PER_BIN));
            double[] upper = new double[bins];
            double[] await = new double[bins];
            for (int b = 0; b < bins; b++) {
                List<WindowSample> bin = byKib.subList(b * byKib.size() / bins, (b + 1) * byKib.size() / bins);
                upper[b] = bin.get(bin.size() - 1).kibPerS;
                await[b] = median(bin.stream().mapToDouble(w -> w.awaitMs).toArray());
            }
            return new Fit(upper, await);
        }

        double awaitMsAt(double kibPerS) {
            int b = 0;
            while (b < upperKib.length - 1 && kibPerS > upperKib[b]) {
                b++;
            }
            return medianAwaitMs[b];
        }
    }

    /** How far apart a host's drives are, from every drive-hour it remembers: median and robust sigma of the log slowdowns. */
    record Spread(double center, double sigma, int driveHours) {
        static Spread of(Collection<PeerHistory> drives) {
            return of(drives.stream().flatMap(h -> h.logSlowdown.stream()).mapToDouble(Double::doubleValue).toArray());
        }

        /** The median of `logs` and their robust sigma (from the MAD), over `logs.length` values. */
        static Spread of(double[] logs) {
            double m = SlowVsPeers.median(logs);
            double mad = SlowVsPeers.median(Arrays.stream(logs).map(x -> Math.abs(x - m)).toArray());
            return new Spread(m, MAD_TO_SIGMA * mad, logs.length);
        }

        /** The weighted median of `logs` and their robust sigma (from the weighted MAD). */
        static Spread of(double[] logs, double[] weights) {
            double m = SlowVsPeers.weightedMedian(logs, weights);
            double mad = SlowVsPeers.weightedMedian(Arrays.stream(logs).map(x -> Math.abs(x - m)).toArray(), weights);
            return new Spread(m, MAD_TO_SIGMA * mad, logs.length);
        }

        double z(double log) {
            double above = log - center;
            return sigma > 0 ? above / sigma : (above > 0 ? Double.POSITIVE_INFINITY : 0);
        }
    }

    record Evidence(String host, String peerClass, long hourStartNs, DriveHour drive, Spread spread, int drives, int slowDrives) {}

    /** The drive's verdict for the hour, and its anomaly when an episode begins. */
    private static PeerVerdict judge(PeerHistory h, Evidence e, List<OutputRecord> anomalies) {
        Finding.HealthEffect effect = effectOf(h);
        Finding.HealthEffect before = Finding.HealthEffect.valueOf(h.effect);
        long hourEndNs = e.hourStartNs() + HOUR_NS;
        String summary = summary(h, e, effect);
        PeerVerdict v = new PeerVerdict();
        v.host = e.host();
        v.disk = e.drive().disk();
        v.hourStartNs = e.hourStartNs();
        v.hourEndNs = hourEndNs;
        v.effect = effect.name();
        v.reason = summary;
        v.news = effect.compareTo(before) > 0;
        h.effect = effect.name();
        if (effect == Finding.HealthEffect.NONE) {
            if (h.anomalyId != null && e.hourStartNs() - h.episodeLastNs > EPISODE_QUIET_NS) {
                h.anomalyId = null;
            }
            return v;
        }
        if (h.anomalyId == null) {
            h.episodeStartNs = h.hourStartNs.get(h.hourStartNs.size() - Math.max(1, h.slowInARow()));
            h.anomalyId = Ids.of(e.host(), e.drive().disk(), Finding.Kind.SLOW_VS_PEERS.wireName, Long.toString(h.episodeStartNs));
            anomalies.add(DiskDetector.anomalyRecord(h.anomalyId, e.host(), e.drive().disk(), Finding.Kind.SLOW_VS_PEERS,
                    Finding.Severity.WARNING, h.episodeStartNs, hourEndNs, summary, evidence(h, e)));
            v.news = true;
        }
        h.episodeLastNs = hourEndNs;
        v.anomalyId = h.anomalyId;
        return v;
    }

    private static Finding.HealthEffect effectOf(PeerHistory h) {
        if (h.slowDays() >= FAILING_DAYS && h.slowHours() * 2 > h.slow.size()) {
            return Finding.HealthEffect.FAILING;
        }
        return h.slowInLast(WARN_AFTER_HOURS) ? Finding.HealthEffect.SUSPECT : Finding.HealthEffect.NONE;
    }

    private static String summary(PeerHistory h, Evidence e, Finding.HealthEffect effect) {
        String ratio = String.format(java.util.Locale.ROOT, "%s is %.2fx slower than its %d peers at the same throughput "
                        + "(%.3f ms against their %.3f ms; their spread %.0f%%)",
                e.drive().disk(), Math.exp(e.drive().logSlowdown()), e.drives() - 1, e.drive().awaitMs(), e.drive().fitAwaitMs(),
                100 * Math.expm1(e.spread().sigma()));
        return switch (effect) {
            case FAILING -> ratio + ", slow on " + h.slowDays() + " days of the last " + HORIZON_NS / DAY_NS
                    + " (" + h.slowHours() + " of " + h.slow.size() + " hours)";
            case SUSPECT -> ratio + ", slow " + h.slowInARow() + " hours in a row";
            case NONE -> ratio;
        };
    }

    private static ObjectNode evidence(PeerHistory h, Evidence e) {
        ObjectNode n = Json.object();
        n.put("hour_start_ns", e.hourStartNs());
        n.put("slowdown_ratio", Math.exp(e.drive().logSlowdown()));
        n.put("await_ms", e.drive().awaitMs());
        n.put("peer_fit_await_ms", e.drive().fitAwaitMs());
        n.put("kib_per_s", e.drive().kibPerS());
        n.put("peers", e.drives() - 1);
        n.put("peer_class", e.peerClass());
        n.put("robust_z", e.spread().z(e.drive().logSlowdown()));
        n.put("peer_spread_pct", 100 * Math.expm1(e.spread().sigma()));
        n.put("host_drive_hours", e.spread().driveHours());
        n.put("slow_drives_on_host", e.slowDrives());
        ObjectNode p = n.putObject("persistence");
        p.put("slow_hours_in_a_row", h.slowInARow());
        p.put("slow_hours", h.slowHours());
        p.put("assessed_hours", h.slow.size());
        p.put("slow_days", h.slowDays());
        p.put("over_days", HORIZON_NS / DAY_NS);
        return n;
    }

    /**
     * The value with half of the weight below it and half above; where a value's weight ends
     * exactly at half, the mean of it and the next, so that equal weights give {@link #median}.
     */
    static double weightedMedian(double[] values, double[] weights) {
        Integer[] order = new Integer[values.length];
        double total = 0;
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
            total += weights[i];
        }
        if (order.length == 0 || !(total > 0)) {
            return Double.NaN;
        }
        Arrays.sort(order, (a, b) -> Double.compare(values[a], values[b]));
        double half = total / 2;
        double tolerance = 1e-9 * total;
        double seen = 0;
        for (int i = 0; i < order.length; i++) {
            seen += weights[order[i]];
            if (seen > half + tolerance) {
                return values[order[i]];
            }
            if (seen >= half - tolerance) {
                return i + 1 < order.length ? (values[order[i]] + values[order[i + 1]]) / 2 : values[order[i]];
            }
        }
        return values[order[order.length - 1]];
    }

    static double median(double[] values) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int mid = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    }
}
