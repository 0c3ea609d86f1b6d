package io.iopipe.jobs.detect;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Fail-slow flash against the other drives of its model, fleet-wide. Drives of one model
 * share their NAND, controller and firmware, so a small read dispatched at a shallow
 * queue takes them about as long: its device time is the drive's service time, with no
 * queue or transfer to speak of. A workload changes it most by keeping the drive busy
 * writing (so such windows are left out: see {@link DiskWindow#shallowReads}), and by
 * where its data lies (an SLC cache reads 2-4 times faster than folded QLC): the model's
 * spread takes in what its drives do. A flash drive whose such reads take several times
 * its model's is failing slowly, however far below any fixed flash ceiling they stay:
 * 0.5 ms is ordinary for a SATA drive and five times an NVMe's.
 * <ol>
 * <li>each drive's level: the median device time of its most recent shallow small reads
 *     (weighted by how many I/Os each stands for) within the last hour;</li>
 * <li>the model's baseline: the median level of its drives, and their spread (a robust
 *     sigma of the log levels), computed again about once a window of every drive, and
 *     once more in a window's time when a drive looks slow; no host's drives weigh more
 *     than a typical host's ({@link Baseline#hostCappedWeights}), and a model on fewer
 *     than {@link #MIN_HOSTS} hosts has none;</li>
 * <li>a slow window: the drive's level at least {@link #MIN_RATIO} times the model's and
 *     beyond its spread ({@link #Z_FENCE} sigmas); one found slow stays so down to
 *     {@link #KEEPS_UP_RATIO};</li>
 * <li>persistence: suspect (a warning) after {@link #SUSPECT_AFTER_WINDOWS} slow windows in a
 *     row, failing (critical, a ticket) once the run has lasted {@link #FAILING_AFTER_NS};
 *     slow windows more than {@link #RUN_GAP_NS} apart are two runs.</li>
 * </ol>
 */
public final class ModelPeers {
    public static final double SHALLOW_QUEUE = FailingDisk.SHALLOW_QUEUE;
    /** Small enough that transfer is a few µs of the read on any flash interface. */
    public static final long SMALL_IO_BYTES = 32 * 1024;
    /** Reads a drive keeps, its latest: enough for a median, little state for a fleet. */
    static final int KEPT_READS = 64;
    static final int MIN_READS = 16;
    public static final long HORIZON_NS = 3600L * 1_000_000_000L;
    /** A model's typical read needs several drives: with fewer, one slow drive is half the norm. */
    static final int MIN_DRIVES = 5;
    /**
     * And several hosts: a host speaks only for itself but may name as many drives as it
     * likes, and its drives weigh together as much as the model's typical host's (the
     * median count of drives over its hosts). With two hosts that median is halfway to the
     * one naming more, which then holds most of the weight and decides the baseline; with
     * three or more, the typical host is not the one naming the most, so any one host holds
     * less than half and the others' drives decide. A model seen on fewer hosts is judged
     * by its drives' class rules alone.
     */
    static final int MIN_HOSTS = 3;
    /**
     * NAND pages of one drive differ in read time about twofold (a TLC cell's lower page
     * against its upper), and the drives of one model share that mix; three times the
     * model's is beyond it.
     */
    static final double MIN_RATIO = 3.0;
    /** Beyond the model's spread as a drive is beyond its host's: {@link SlowVsPeers#Z_FENCE}. */
    static final double Z_FENCE = SlowVsPeers.Z_FENCE;
    /** A drive found slow stays so until it is back within twice its model's: no flapping about the threshold. */
    static final double KEEPS_UP_RATIO = 2.0;
    static final int SUSPECT_AFTER_WINDOWS = 3;
    /** A stall of garbage collection or a neighbour's burst passes within a minute; ten of them slow is the drive. */
    static final long FAILING_AFTER_NS = 10L * 60 * 1_000_000_000L;
    /** Slow windows further apart than this (none of its reads judged between) are two runs, not one. */
    static final long RUN_GAP_NS = 60L * 1_000_000_000L;

    static final String NONE_EFFECT = Finding.HealthEffect.NONE.name();
    /**
     * Model strings of virtual disks, lower case: one string covers volumes of every size,
     * type and provisioned rate (a cloud's block store, a hypervisor's disk), so its drives
     * are no peers.
     */
    static final List<String> VIRTUAL_MODELS = List.of("virtual", "qemu", "vmware", "vbox", "elastic block store",
            "persistentdisk", "xen");

    private ModelPeers() {}

    /** Whether drives of this model are peers: a real device's model, not a virtual disk's. */
    public static boolean comparable(String model) {
        if (model == null || model.isBlank()) {
            return false;
        }
        String lower = model.toLowerCase(Locale.ROOT);
        return VIRTUAL_MODELS.stream().noneMatch(lower::contains);
    }

    /** One drive of a model: its latest shallow reads and its run of slow windows; keyed state of its model. */
    public static class Drive {
        public String host;
        public String disk;
        public List<Long> endNs = new ArrayList<>();
        public List<Double> deviceUs = new ArrayList<>();
        public List<Double> weights = new ArrayList<>();
        /** Start of its current run of slow windows, -1 when its last judged window was not slow. */
        public long slowSinceNs = -1;
        public long slowUntilNs = -1;
        public int slowWindows;
        /** When its reads last came, on the job's wall clock: a drive unheard for the horizon leaves its model. */
        public long lastHeardMs;
        /** What it last concluded about the drive's health, a {@link Finding.HealthEffect} name. */
        public String effect = Finding.HealthEffect.NONE.name();

        public Drive() {}

        /**
         * Keeps a window's reads, and the latest of the earlier ones, KEPT_READS in all. Reads
         * weigh very differently: the agent's uniform sample stands for a thousand I/Os each,
         * an outlier for itself, and a window of a busy drive can hold more outliers than
         * KEPT_READS. So a window is kept, or its part kept, as its weighted distribution:
         * whole when it fits, else summarized ({@link #summarized}); never as its last reads,
         * which after its sample would be its outliers alone, and a healthy drive's level
         * their stalls'.
         */
        public void add(ShallowReads r) {
            host = r.host;
            disk = r.disk;
            Reads window = new Reads(r.deviceUs, r.weights).summarized(KEPT_READS);
            for (int i = 0; i < window.deviceUs.length; i++) {
                endNs.add(r.endNs);
                deviceUs.add(window.deviceUs[i]);
                weights.add(window.weights[i]);
            }
            forgetBefore(r.endNs - HORIZON_NS);
            int excess = deviceUs.size() - KEPT_READS;
            while (excess > 0) {
                excess -= shrinkOldestWindow(excess);
            }
        }

        public void forgetBefore(long sinceNs) {
            int old = 0;
            while (old < endNs.size() && endNs.get(old) < sinceNs) {
                old++;
            }
            dropOldest(old);
        }

        /** Takes up to `excess` reads off the oldest window, summarizing what is left of it; returns how many went. */
        private int shrinkOldestWindow(int excess) {
            int size = 1;
            while (size < endNs.size() && endNs.get(size).equals(endNs.get(0))) {
                size++;
            }
            if (size <= excess) {
                dropOldest(size);
                return size;
            }
            long windowEndNs = endNs.get(0);
            Reads oldest = kept(size).summarized(size - excess);
            dropOldest(size);
            for (int i = oldest.deviceUs.length - 1; i >= 0; i--) {
                endNs.add(0, windowEndNs);
                deviceUs.add(0, oldest.deviceUs[i]);
                weights.add(0, oldest.weights[i]);
            }
            return size - oldest.deviceUs.length;
        }

        private void dropOldest(int reads) {
            int n = Math.max(0, reads);
            endNs.subList(0, n).clear();
            deviceUs.subList(0, n).clear();
            weights.subList(0, n).clear();
        }

        /**
         * The weighted median device time of its kept reads; NaN where they weigh as little
         * as fewer than MIN_READS reads of equal weight would (Kish's effective sample size:
         * one read standing for a thousand among a few standing for one is one read).
         */
        double levelUs() {
            Reads all = kept(deviceUs.size());
            if (all.deviceUs().length == 0 || all.effectiveSize() < MIN_READS) {
                return Double.NaN;
            }
            Integer[] order = all.byDeviceTime();
            double total = all.total();
            double seen = 0;
            for (int i : order) {
                seen += all.weights()[i];
                if (seen >= total / 2) {
                    return all.deviceUs()[i];
                }
            }
            return all.deviceUs()[order[order.length - 1]];
        }

        /** Its oldest `reads` kept reads. */
        private Reads kept(int reads) {
            return new Reads(deviceUs.subList(0, reads).stream().mapToDouble(Double::doubleValue).toArray(),
                    weights.subList(0, reads).stream().mapToDouble(Double::doubleValue).toArray());
        }
    }

    /** Some reads of one window: their device times and how many I/Os each stands for. */
    record Reads(double[] deviceUs, double[] weights) {
        /**
         * At most `points` reads standing for the same I/Os as these: these when they fit;
         * else as many as they are worth (Kish's effective sample size: one read standing
         * for a thousand among a few standing for one is one read), placed at evenly spaced
         * quantiles of their weighted distribution, each standing for an equal share of
         * their I/Os. Their weighted median stays theirs, and what they are worth stays as
         * little as it was.
         */
        Reads summarized(int points) {
            if (deviceUs.length <= points) {
                return this;
            }
            double total = total();
            int m = (int) Math.max(1, Math.min(points, Math.floor(effectiveSize())));
            Integer[] order = byDeviceTime();
            double[] values = new double[m];
            double[] shares = new double[m];
            double seen = 0;
            int next = 0;
            for (int i : order) {
                seen += weights[i];
                while (next < m && seen >= (next + 0.5) / m * total) {
                    values[next] = deviceUs[i];
                    shares[next++] = total / m;
                }
            }
            for (; next < m; next++) { // rounding at the top
                values[next] = deviceUs[order[order.length - 1]];
                shares[next] = total / m;
            }
            return new Reads(values, shares);
        }

        double total() {
            return Arrays.stream(weights).sum();
        }

        /** Kish's effective sample size: what these reads are worth as reads of equal weight. */
        double effectiveSize() {
            double total = total();
            double squares = Arrays.stream(weights).map(w -> w * w).sum();
            return total * total / squares;
        }

        /** Their indices, fastest first. */
        Integer[] byDeviceTime() {
            Integer[] order = new Integer[deviceUs.length];
            for (int i = 0; i < order.length; i++) {
                order[i] = i;
            }
            Arrays.sort(order, (a, b) -> Double.compare(deviceUs[a], deviceUs[b]));
            return order;
        }
    }

    /**
     * The model's typical shallow read: the median of its drives' levels (of the drives with
     * one), their robust log spread. Computed again once the model has had as many windows
     * as it has drives since (about one window of each: drives keep their own clocks, so
     * counting records, not time, keeps a host whose clock runs ahead from holding it back).
     */
    public static class Baseline {
        public double medianUs = Double.NaN;
        public double logSigma;
        public int drives;
        /** The hosts of those drives. */
        public int hosts;
        public int drivesHeard;
        public int windowsSince;
        /** The end of the drive's window it was computed for. */
        public long computedForNs = Long.MIN_VALUE;

        public Baseline() {}

        /** The baseline of `drives`, computed for the drive's window ending at `forNs`. */
        public static Baseline of(Collection<Drive> drives, long forNs) {
            List<Drive> leveled = new ArrayList<>();
            List<Double> logs = new ArrayList<>();
            for (Drive d : drives) {
                double level = d.levelUs();
                if (!Double.isNaN(level) && level > 0) {
                    leveled.add(d);
                    logs.add(Math.log(level));
                }
            }
            Baseline b = new Baseline();
            b.computedForNs = forNs;
            b.drivesHeard = drives.size();
            b.drives = leveled.size();
            b.hosts = (int) leveled.stream().map(d -> String.valueOf(d.host)).distinct().count();
            if (!leveled.isEmpty()) {
                SlowVsPeers.Spread spread = SlowVsPeers.Spread.of(logs.stream().mapToDouble(Double::doubleValue).toArray(),
                        hostCappedWeights(leveled));
                b.medianUs = Math.exp(spread.center());
                b.logSigma = spread.sigma();
            }
            return b;
        }

        /**
         * Each drive's say in its model's baseline: 1, except that the drives of one host
         * weigh together no more than the model's typical host's (the median count of its
         * drives over the model's hosts). A host speaks only for itself, but it can name as
         * many disks as it likes: one that claims hundreds of a model, fast or slow, moves
         * the model's median and spread no further than one ordinary host could, so it can
         * neither make other hosts' drives look slow nor hide a slow one.
         */
        static double[] hostCappedWeights(List<Drive> drives) {
            Map<String, Integer> perHost = new HashMap<>();
            for (Drive d : drives) {
                perHost.merge(String.valueOf(d.host), 1, Integer::sum);
            }
            double typical = SlowVsPeers.median(perHost.values().stream().mapToDouble(Integer::doubleValue).toArray());
            return drives.stream().mapToDouble(d -> Math.min(1.0, typical / perHost.get(String.valueOf(d.host)))).toArray();
        }

        /**
         * Counts a window of the model and says whether to compute the baseline again before
         * judging drive `d` on its window `r`: once about every drive has sent one, and when
         * `d` looks slow against a baseline computed before `r` began, so no drive is judged
         * slow against one a window older than its reads (a change of the whole model's
         * workload reaches every drive within a window or two). Once a window's time, not
         * for every drive that looks slow: a model's baseline reads all its drives, and
         * when many look slow at once (a workload all of them share) that would be every
         * drive's window reading every drive.
         */
        public boolean dueFor(Drive d, ShallowReads r) {
            windowsSince++;
            return windowsSince >= Math.max(MIN_DRIVES, drivesHeard)
                    || r.startNs >= computedForNs && slow(d.levelUs(), !NONE_EFFECT.equals(d.effect));
        }

        /** Whether it speaks for the model: enough drives, on enough hosts that no one of them decides it. */
        boolean judges() {
            return drives >= MIN_DRIVES && hosts >= MIN_HOSTS && !Double.isNaN(medianUs);
        }

        /** Slow against the model: beyond MIN_RATIO and its spread; one already found slow stays so down to KEEPS_UP_RATIO. */
        boolean slow(double levelUs, boolean foundSlow) {
            double ratio = foundSlow ? KEEPS_UP_RATIO : MIN_RATIO;
            return judges() && !Double.isNaN(levelUs) && levelUs >= ratio * medianUs && (foundSlow || z(levelUs) >= Z_FENCE);
        }

        double z(double levelUs) {
            return new SlowVsPeers.Spread(Math.log(medianUs), logSigma, drives).z(Math.log(levelUs));
        }
    }

    /** What one window of a drive's reads concludes: an anomaly when one opens or escalates, a verdict when its health effect changes. */
    public record Judgement(Optional<OutputRecord> anomaly, Optional<PeerVerdict> verdict) {
        static final Judgement NONE = new Judgement(Optional.empty(), Optional.empty());
    }

    /** Judges the drive `d` (its reads `r` already added) against its model's baseline `b`. */
    public static Judgement judge(ShallowReads r, Drive d, Baseline b) {
        double level = d.levelUs();
        if (b == null || !b.judges() || Double.isNaN(level)) {
            return Judgement.NONE;
        }
        double ratio = level / b.medianUs;
        boolean slow = b.slow(level, !NONE_EFFECT.equals(d.effect));
        if (!slow) {
            d.slowSinceNs = -1;
            d.slowWindows = 0;
        } else if (d.slowSinceNs < 0 || r.startNs - d.slowUntilNs > RUN_GAP_NS) {
            d.slowSinceNs = r.startNs;
            d.slowWindows = 1;
        } else {
            d.slowWindows++;
        }
        d.slowUntilNs = slow ? r.endNs : -1;
        Finding.HealthEffect effect = !slow || d.slowWindows < SUSPECT_AFTER_WINDOWS ? Finding.HealthEffect.NONE
                : r.endNs - d.slowSinceNs >= FAILING_AFTER_NS ? Finding.HealthEffect.FAILING : Finding.HealthEffect.SUSPECT;
        if (slow && effect == Finding.HealthEffect.NONE && !NONE_EFFECT.equals(d.effect)) {
            effect = Finding.HealthEffect.valueOf(d.effect);  // a run broken by a gap keeps what it had found
        }
        Finding.HealthEffect before = Finding.HealthEffect.valueOf(d.effect);
        if (effect == before) {
            return Judgement.NONE;
        }
        d.effect = effect.name();
        String summary = summary(r, d, b, level, ratio, effect);
        Optional<OutputRecord> anomaly = Optional.empty();
        String anomalyId = null;
        if (effect.compareTo(before) > 0) {
            Finding.Severity severity = effect == Finding.HealthEffect.FAILING ? Finding.Severity.CRITICAL : Finding.Severity.WARNING;
            anomalyId = Ids.of(r.host, r.disk, Finding.Kind.FAILING_DISK.wireName, "model", Long.toString(d.slowSinceNs), severity.name());
            anomaly = Optional.of(DiskDetector.anomalyRecord(anomalyId, r.host, r.disk, Finding.Kind.FAILING_DISK, severity,
                    d.slowSinceNs, r.endNs, summary, evidence(r, d, b, level, ratio)));
        }
        return new Judgement(anomaly, Optional.of(verdict(r.host, r.disk, r.startNs, r.endNs, effect, summary, anomalyId)));
    }

    /**
     * The verdict that lets a drive's model finding lapse when the drive leaves its model's
     * state (unheard for the horizon, or its model forgotten): empty when it had found nothing.
     */
    public static Optional<PeerVerdict> lapsed(Drive d, long atNs) {
        if (NONE_EFFECT.equals(d.effect) || d.host == null) {
            return Optional.empty();
        }
        return Optional.of(verdict(d.host, d.disk, atNs, atNs, Finding.HealthEffect.NONE,
                "no small reads of it at a shallow queue for an hour: its model no longer judges it", null));
    }

    private static PeerVerdict verdict(String host, String disk, long startNs, long endNs, Finding.HealthEffect effect,
                                       String reason, String anomalyId) {
        PeerVerdict v = new PeerVerdict();
        v.host = host;
        v.disk = disk;
        v.hourStartNs = startNs;
        v.hourEndNs = endNs;
        v.effect = effect.name();
        v.reason = reason;
        v.news = anomalyId != null;
        v.anomalyId = anomalyId;
        v.source = PeerVerdict.MODEL;
        return v;
    }

    private static String summary(ShallowReads r, Drive d, Baseline b, double level, double ratio, Finding.HealthEffect effect) {
        String against = String.format(Locale.ROOT, "small reads at a shallow queue take %.3f ms, %.1fx the %.3f ms of the %d drives of its model %s",
                level / 1000, ratio, b.medianUs / 1000, b.drives, r.model);
        return switch (effect) {
            case FAILING -> "failing: " + against + ", for " + (r.endNs - d.slowSinceNs) / 60_000_000_000L + " min";
            case SUSPECT -> "fail-slow suspect: " + against + ", " + d.slowWindows + " windows in a row";
            case NONE -> "keeps up with its model again: " + against;
        };
    }

    private static ObjectNode evidence(ShallowReads r, Drive d, Baseline b, double level, double ratio) {
        ObjectNode n = Json.object();
        n.put("window_start_ns", r.startNs);
        n.put("window_end_ns", r.endNs);
        n.put("model", r.model);
        n.put("shallow_read_ms", Evidence.round(level / 1000));
        n.put("model_read_ms", Evidence.round(b.medianUs / 1000));
        n.put("slowdown_ratio", Evidence.round(ratio));
        n.put("robust_z", Evidence.round(b.z(level)));
        n.put("model_spread_pct", Evidence.round(100 * Math.expm1(b.logSigma)));
        n.put("model_drives", b.drives);
        n.put("reads_judged", d.deviceUs.size());
        n.put("queue_depth_at_most", SHALLOW_QUEUE);
        n.put("slow_since_ns", d.slowSinceNs);
        n.put("slow_windows_in_a_row", d.slowWindows);
        return n;
    }
}
