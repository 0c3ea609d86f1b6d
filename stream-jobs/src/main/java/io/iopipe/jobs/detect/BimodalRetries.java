package io.iopipe.jobs.detect;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.Json;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Retries: a second, slower latency mode, apart from the main one by an empty valley.
 * A retried I/O pays its first attempt again; on a rotational disk, each retry waits
 * for the sector to come round, so the gap is a whole number of revolutions.
 * The mean hides all this (S2: 5 ms average, modes at 2 and 10 ms).
 *
 * <p>A slower mode is retries only when nothing else explains it. Device time (D2C)
 * already leaves out the host's queue (Q2C minus D2C); the drive's own queue it does not:
 * I/Os dispatched behind a burst wait there. Retries strike at whatever depth the disk
 * runs at, so the slower mode persists among the I/Os dispatched no deeper than the main
 * mode's; waiting needs a queue, so among those it all but vanishes. Likewise a slower
 * mode of larger I/Os is a mix of sizes.
 *
 * <p>Not on flash: it has no revolutions. Its retry (a NAND read re-sensed at shifted
 * thresholds, then soft-decision decoding) adds tens of microseconds per step to reads,
 * the same order as its program, erase and garbage-collection stalls, so without the
 * drive's own counters a slower flash mode cannot be told from those. A flash drive
 * slowed by retries shows in its service time against its class and its own history. A
 * disk whose class is unknown (no diskstats) is judged without the revolutions.
 *
 * <p>A disk that reports its rotation rate (rpm) is held to it: where every I/O's
 * latency is known, a gap that is no whole number of its revolutions is not retries (a
 * cache's misses, a second zone, a seek-bound mix). Elsewhere the gap is named in
 * revolutions of each common rate it fits.
 */
public final class BimodalRetries {
    /** I/Os needed in a window for a shape to mean anything. */
    static final long MIN_IOS = 200;
    /** Bins per octave when every I/O's latency is known. */
    static final int FINE_BINS_PER_OCTAVE = 8;
    /** A valley this shallow relative to the smaller of its two peaks separates modes. */
    static final double VALLEY_FRACTION = 0.2;
    /** A mode must hold this share of the I/Os: a few stragglers are a tail, not a mode. */
    static final double MIN_MODE_SHARE = 0.02;
    static final long MIN_MODE_IOS = 5;
    /**
     * A retry repeats at least the first attempt: its mode sits at twice the main one or
     * more. And further than the queue reaches: at a mean depth d (aqu-sz, the I/O itself
     * counted) an I/O may wait behind the others, d times the main mode without any retry.
     */
    static final double MIN_MODE_RATIO = 2.0;
    static final long[] COMMON_RPMS = {5400, 7200, 10_000, 15_000};
    /** How close to a whole number of revolutions the gap must be. */
    static final double REVOLUTION_TOLERANCE = 0.15;

    static double revolutionMs(long rpm) {
        return 60_000.0 / rpm;
    }

    /**
     * How far a disk's true rate may stray from the rate it reports: drives of a rate class
     * report the class (5400-class drives that spin at 5900 rpm say 5400: 9% faster).
     */
    static final double REPORTED_RATE_SPREAD = 0.10;

    /** How many revolutions at `rpm` the gap is, when within REVOLUTION_TOLERANCE of a whole number of one or more; else 0. */
    static long wholeRevolutions(double gapMs, long rpm) {
        return wholeRevolutions(gapMs, rpm, 0);
    }

    /**
     * As {@link #wholeRevolutions(double, long)}, for a rate the disk reports: the k-th
     * revolution of its true rate may lie up to REPORTED_RATE_SPREAD × k revolutions away.
     */
    static long wholeRevolutionsOfReportedRate(double gapMs, long rpm) {
        return wholeRevolutions(gapMs, rpm, REPORTED_RATE_SPREAD);
    }

    private static long wholeRevolutions(double gapMs, long rpm, double rateSpread) {
        double revolutions = gapMs / revolutionMs(rpm);
        long k = Math.round(revolutions);
        return k >= 1 && Math.abs(revolutions - k) <= REVOLUTION_TOLERANCE + rateSpread * k ? k : 0;
    }

    /** The rates the gap may be whole revolutions of: the disk's own where it reports one, else each common one. */
    static long[] ratesOf(DiskWindow w) {
        return w.rpm() > 0 ? new long[] {w.rpm()} : COMMON_RPMS;
    }

    /** Whole revolutions of `rpm` the gap is, a rate the disk reports given its leeway; else 0. */
    static long wholeRevolutionsOn(DiskWindow w, double gapMs, long rpm) {
        return w.rpm() > 0 ? wholeRevolutionsOfReportedRate(gapMs, rpm) : wholeRevolutions(gapMs, rpm);
    }

    /**
     * Retries are repeated media accesses, so the main mode must be media accesses too. On
     * a rotational disk, a main mode under this is served from a cache (the drive's track
     * buffer; the host's page cache behind a virtual disk that says it rotates): even the
     * fastest common disk, 15k rpm, waits 2 ms for the sector on average. Its slower mode
     * is then the reads that missed the cache, not retries.
     */
    static final double MIN_MEDIA_ACCESS_US = 500;
    /**
     * Among the I/Os dispatched no deeper than the main mode's typical one, a slower mode
     * made by waiting holds less than this fraction of its share of all the I/Os.
     */
    static final double SHALLOW_SHARE_FRACTION = 0.5;
    /** A slower mode whose I/Os are this many times larger on average is a mix of sizes. */
    static final double LARGER_IOS_RATIO = 2.0;
    /** Events a mode (or the shallow I/Os) needs before what they say of it counts. */
    static final int MIN_EVENTS = 10;
    /**
     * How many times the waiting steady arrivals make (M/M/1) a window must hold on average
     * to have come in bursts. Service time that varies more raises the steady queue (M/G/1:
     * (1 + C^2) / 2 times M/M/1's; a mode of reads retried a revolution or more later keeps
     * C^2 below 2, within a factor of 1.5), so twice is beyond it.
     */
    static final double BURSTY_QUEUE_FACTOR = 2.0;
    /**
     * How much wider than the main mode a mode of retries may be: a quarter revolution of
     * the fastest common disk (15k rpm), for the bins and a retry's own jitter. A retried
     * I/O pays its first attempt again, so retries are the main mode moved by whole
     * revolutions and no wider; I/Os that each wait for their own sector (cache misses,
     * long seeks) wait uniformly up to a revolution, whose interquartile range alone is half
     * a revolution: twice the allowance at 15k rpm, more at slower speeds.
     */
    static final double COPY_SPREAD_ALLOWANCE_US = 60_000_000.0 / 15_000 / 4;
    /**
     * How unlikely a binomial spread must make the slower mode's spread over the window's
     * intervals for it to have come in bursts: a retrying disk is excused by chance in one
     * window of a thousand, and found in the next.
     */
    static final double BURSTS_Z = 3.09;
    /** Intervals, and I/Os of the slower mode, needed before their spread over time tells anything. */
    static final int MIN_INTERVALS = 3;
    static final long MIN_SPREAD_IOS = 8;

    private BimodalRetries() {}

    /**
     * Retries interleave with first attempts all through a window, so every interval's
     * median stays with the main mode. An interval whose median sits nearer the slower
     * mode means the window spans a change of regime (a disk turning slow, a deeper
     * queue): two modes in time, not retries.
     */
    static boolean changedRegime(OpLatency latency, Mode main, Mode slower) {
        return latency.slowestIntervalMedianUs >= Math.sqrt(main.medianUs() * slower.medianUs());
    }

    /** A run of bins around one peak (`fromBin` to `toBin` of its Shape): its weight and median latency. */
    record Mode(double medianUs, double weight, int fromBin, int toBin) {}

    /**
     * What the window's events say of one mode's I/Os: the mean depth at dispatch (the
     * I/O counted) and the mean size, each weighted by sample_weight; NaN where fewer than
     * MIN_EVENTS events of the mode know it.
     */
    record ModeIos(double depth, double bytes) {
        static ModeIos of(Shape shape, Mode mode, List<IoEvent> events) {
            Mean depth = new Mean();
            Mean bytes = new Mean();
            for (IoEvent e : events) {
                if (shape.in(mode, e)) {
                    bytes.add(e.bytes, e.sampleWeight);
                    if (e.inflight > 0) {
                        depth.add(e.inflight, e.sampleWeight);
                    }
                }
            }
            return new ModeIos(depth.value(), bytes.value());
        }

        /** False where the main mode's size is unknown or nothing (flushes carry no data). */
        boolean largerThan(ModeIos main) {
            return main.bytes > 0 && bytes >= LARGER_IOS_RATIO * main.bytes;
        }
    }

    /** A weighted mean of at least MIN_EVENTS values, else NaN. */
    private static final class Mean {
        double sum;
        double weight;
        int n;

        void add(double value, double w) {
            sum += w * value;
            weight += w;
            n++;
        }

        double value() {
            return n < MIN_EVENTS ? Double.NaN : sum / weight;
        }
    }

    /** What the events dispatched at a shallow queue say of a slower mode. */
    enum AtShallowQueue {
        /** It all but vanishes among them: waiting. */
        VANISHES,
        /** It keeps its share among them, as retries do. */
        PERSISTS,
        /** Too few events to tell. */
        UNTOLD
    }

    /**
     * Among the events dispatched no deeper than the main mode's mean depth, whether the
     * slower mode's share (weighted by sample_weight) falls below SHALLOW_SHARE_FRACTION
     * of its share among all: waiting; or keeps to it: as retries do.
     */
    static AtShallowQueue atShallowQueue(Shape shape, Mode main, double mainDepth, Mode slower, List<IoEvent> events) {
        if (Double.isNaN(mainDepth)) {
            return AtShallowQueue.UNTOLD;
        }
        long shallowest = Math.max(1, Math.round(mainDepth));
        double all = 0;
        double slowAll = 0;
        double shallow = 0;
        double slowShallow = 0;
        int shallowEvents = 0;
        for (IoEvent e : events) {
            boolean isMain = shape.in(main, e);
            boolean isSlow = shape.in(slower, e);
            if (e.inflight <= 0 || !(isMain || isSlow)) {
                continue;
            }
            all += e.sampleWeight;
            slowAll += isSlow ? e.sampleWeight : 0;
            if (e.inflight <= shallowest) {
                shallow += e.sampleWeight;
                slowShallow += isSlow ? e.sampleWeight : 0;
                shallowEvents++;
            }
        }
        if (shallowEvents < MIN_EVENTS || slowAll == 0) {
            return AtShallowQueue.UNTOLD;
        }
        return slowShallow / shallow < SHALLOW_SHARE_FRACTION * (slowAll / all) ? AtShallowQueue.VANISHES : AtShallowQueue.PERSISTS;
    }

    /**
     * Whether the slower mode's I/Os say what it is instead of retries: larger I/Os, or
     * waiting. Waiting shows as a mode that vanishes among the I/Os dispatched at a shallow
     * queue; where too few events tell that, a mode a burst's queue held time enough to
     * make is waiting too (a burst's tail, which the window's mean depth averages away),
     * and so is one whose I/Os came bunched in a few of the window's intervals.
     */
    static boolean explainedOtherwise(DiskWindow w, OpLatency latency, Shape shape, Mode main, Mode slower,
                                      List<IoEvent> events) {
        ModeIos mainIos = ModeIos.of(shape, main, events);
        if (ModeIos.of(shape, slower, events).largerThan(mainIos)) {
            return true;
        }
        return switch (atShallowQueue(shape, main, mainIos.depth(), slower, events)) {
            case VANISHES -> true;
            case PERSISTS -> false;
            case UNTOLD -> burstsQueueHeldIt(w, shape, main, slower) || cameInBursts(latency, shape, slower);
        };
    }

    /**
     * Whether the window's I/Os came in bursts whose queue held time enough to make the
     * slower mode. Bursts: more waiting than steady arrivals make at the disk's
     * utilisation rho: a queue fed steadily has rho^2/(1-rho) waiting on average besides
     * the one in service (M/M/1), and a retry's extra revolution raises that by less than
     * BURSTY_QUEUE_FACTOR; aqu-sz less utilisation is what waited. Held time: on a disk that serves one I/O
     * at a time, device time beyond its busy time is time I/Os waited for one another at
     * the device (every op's device times less io_time, which also counts the block
     * layer's queue, so this errs low); waiting as long as the least the slower mode's I/Os
     * took beyond the main mode's time can make the mode alone. Steady load at a high
     * utilisation (S2's retries at 97%) queues as much as retries do and is not excused. A
     * disk's first window (its class known, no interval of diskstats yet) cannot rule
     * waiting out.
     */
    static boolean burstsQueueHeldIt(DiskWindow w, Shape shape, Mode main, Mode slower) {
        if (!w.hasIostat()) {
            return w.classKnown();
        }
        double utilisation = w.utilFraction();
        if (!w.rotational() || utilisation >= 1) {
            return false;
        }
        boolean bursty = w.queueSize() - utilisation > BURSTY_QUEUE_FACTOR * utilisation * utilisation / (1 - utilisation);
        double waitingUs = w.deviceAllOps().sumUs - w.iostat.counters.ioTimeMs * 1000.0;
        return bursty && waitingUs >= shape.leastTotalUs(slower) - slower.weight() * main.medianUs();
    }

    /**
     * Whether the slower mode's I/Os came bunched in time, as a burst's queue makes them,
     * not spread as retries are. A retry strikes an I/O whatever its neighbours do, so
     * the mode's share of each kernel interval's I/Os varies as a binomial draw does; a
     * burst puts the I/Os waiting behind it in the intervals it fell in. Overdispersion:
     * the chi-square of the intervals' counts against the binomial beyond its quantile at
     * BURSTS_Z (Wilson-Hilferty). Told only from the kernel's histograms, whose intervals
     * are each a slice of time, with the mode's buckets.
     */
    static boolean cameInBursts(OpLatency latency, Shape shape, Mode slower) {
        if (shape.binsPerOctave != 1 || latency.deviceIntervals.intervals < MIN_INTERVALS) {
            return false;
        }
        long[][] counts = latency.deviceIntervals.inBucketsAndAll(slower.fromBin(), slower.toBin());
        double inMode = 0;
        double all = 0;
        for (long[] interval : counts) {
            inMode += interval[0];
            all += interval[1];
        }
        double share = inMode / all;
        if (inMode < MIN_SPREAD_IOS || share >= 1) {
            return false;
        }
        double chiSquare = 0;
        for (long[] interval : counts) {
            double expected = interval[1] * share;
            chiSquare += (interval[0] - expected) * (interval[0] - expected) / (expected * (1 - share));
        }
        int freedom = counts.length - 1;
        double spread = 2.0 / (9 * freedom);
        double quantile = freedom * Math.pow(1 - spread + BURSTS_Z * Math.sqrt(spread), 3);
        return chiSquare > quantile;
    }

    /**
     * Whether the slower mode is too wide to be the main mode moved by whole revolutions:
     * its interquartile spread exceeds the main mode's by more than
     * COPY_SPREAD_ALLOWANCE_US. Told only where every I/O's latency is known: a log2
     * bucket is an octave wide, wider than the difference.
     */
    static boolean tooWideForRetries(Shape shape, Mode main, Mode slower) {
        return shape.binsPerOctave > 1 && shape.spreadUs(slower) > shape.spreadUs(main) + COPY_SPREAD_ALLOWANCE_US;
    }

    public static Optional<Finding> examine(DiskWindow w) {
        for (String op : w.ops.keySet()) {
            Optional<Finding> found = examineOp(w, op);
            if (found.isPresent()) {
                return found;
            }
        }
        return Optional.empty();
    }

    static Optional<Finding> examineOp(DiskWindow w, String op) {
        OpLatency latency = w.ops.get(op);
        boolean flash = w.classKnown() && !w.iostat.rotational;
        if (flash || latency == null || latency.count() < MIN_IOS) {
            return Optional.empty();
        }
        List<IoEvent> every = w.fullCapture(op);
        Shape shape = every.isEmpty() ? Shape.of(latency.device()) : Shape.of(every);
        List<Mode> modes = shape.modes();
        if (modes.size() < 2) {
            return Optional.empty();
        }
        Mode main = modes.stream().max((a, b) -> Double.compare(a.weight(), b.weight())).orElseThrow();
        if (w.rotational() && main.medianUs() < MIN_MEDIA_ACCESS_US) {
            return Optional.empty();
        }
        double depth = w.depth();
        double ratio = Double.isNaN(depth) ? MIN_MODE_RATIO : Math.max(MIN_MODE_RATIO, depth);
        List<Mode> slower = modes.stream().filter(m -> m.medianUs() >= ratio * main.medianUs()).toList();
        if (slower.isEmpty()) {
            return Optional.empty();
        }
        Mode retries = slower.get(0);
        if (changedRegime(latency, main, retries) || tooWideForRetries(shape, main, retries)) {
            return Optional.empty();
        }
        List<IoEvent> events = w.events.stream().filter(e -> e.op.equals(op)).toList();
        if (explainedOtherwise(w, latency, shape, main, retries, events)) {
            return Optional.empty();
        }
        double gapMs = (retries.medianUs() - main.medianUs()) / 1000;
        if (w.rpm() > 0 && shape.binsPerOctave > 1 && wholeRevolutionsOn(w, gapMs, w.rpm()) == 0) {
            return Optional.empty();
        }
        double total = shape.total();
        ObjectNode evidence = Evidence.of(w, op);
        ArrayNode modeList = evidence.putArray("modes");
        for (Mode m : modes) {
            ObjectNode listed = modeList.addObject().put("median_ms", Evidence.round(m.medianUs() / 1000))
                    .put("ios", Math.round(m.weight())).put("share", Evidence.round(m.weight() / total));
            if (shape.binsPerOctave > 1) {
                listed.put("spread_ms", Evidence.round(shape.spreadUs(m) / 1000));
            }
            ModeIos ios = ModeIos.of(shape, m, events);
            if (!Double.isNaN(ios.depth())) {
                listed.put("dispatch_depth", Evidence.round(ios.depth()));
            }
        }
        evidence.put("gap_ms", Evidence.round(gapMs));
        evidence.put("resolution", every.isEmpty() ? "log2 histogram" : "every I/O");
        String revolutions = "";
        if (w.rotational()) {
            if (w.rpm() > 0) {
                evidence.put("rpm", w.rpm());
            }
            ArrayNode matches = evidence.putArray("whole_revolutions");
            for (long rpm : ratesOf(w)) {
                long k = wholeRevolutionsOn(w, gapMs, rpm);
                if (k > 0) {
                    matches.addObject().put("rpm", rpm).put("revolutions", k).put("revolution_ms", Evidence.round(revolutionMs(rpm)));
                    revolutions += (revolutions.isEmpty() ? "" : ", ") + k + " × " + rpm + " rpm";
                }
            }
        }
        String notWhole = w.rpm() > 0 ? " (not a whole number of its " + w.rpm() + " rpm revolutions)"
                : " (not a whole number of revolutions at a common rpm)";
        String summary = String.format("%s latency is bimodal: %.0f%% at %.2f ms, %.0f%% at %.2f ms; gap %.2f ms%s",
                op, 100 * main.weight() / total, main.medianUs() / 1000, 100 * retries.weight() / total,
                retries.medianUs() / 1000, gapMs,
                revolutions.isEmpty() ? (w.rotational() ? notWhole : "") : " = " + revolutions + " revolution(s): retries");
        return Optional.of(new Finding(Finding.Kind.BIMODAL_RETRIES, Finding.Severity.WARNING, summary, evidence,
                Finding.HealthEffect.SUSPECT));
    }

    /** Latency mass over log-spaced bins, with the latencies that fell in each. */
    static final class Shape {
        final double[] weight;
        final List<List<Double>> values;
        final double lowestLog2;
        final int binsPerOctave;

        private Shape(int bins, double lowestLog2, int binsPerOctave) {
            this.weight = new double[bins];
            this.values = new ArrayList<>();
            for (int i = 0; i < bins; i++) {
                values.add(new ArrayList<>());
            }
            this.lowestLog2 = lowestLog2;
            this.binsPerOctave = binsPerOctave;
        }

        static Shape of(List<IoEvent> events) {
            double lo = Double.MAX_VALUE;
            double hi = 0;
            for (IoEvent e : events) {
                double l = log2Us(e);
                lo = Math.min(lo, l);
                hi = Math.max(hi, l);
            }
            Shape s = new Shape((int) ((hi - lo) * FINE_BINS_PER_OCTAVE) + 1, lo, FINE_BINS_PER_OCTAVE);
            for (IoEvent e : events) {
                int bin = s.binOf(e.deviceNs() / 1000.0);
                s.weight[bin] += 1;
                s.values.get(bin).add(e.deviceNs() / 1000.0);
            }
            return s;
        }

        /** From a log2 histogram: one bin per bucket, its latencies at the bucket's geometric middle. */
        static Shape of(Log2Histogram h) {
            Shape s = new Shape(Log2Histogram.BUCKETS, 0, 1);
            for (int i = 0; i < Log2Histogram.BUCKETS; i++) {
                s.weight[i] = h.bucket(i);
                double lower = Math.max(1, Log2Histogram.lowerEdgeUs(i));
                s.values.get(i).add(lower * Math.sqrt(2));
            }
            return s;
        }

        static double log2Us(IoEvent e) {
            return log2(e.deviceNs() / 1000.0);
        }

        static double log2(double us) {
            return Math.log(Math.max(1.0, us)) / Math.log(2);
        }

        /** Whether the event's device time falls in the mode's bins. */
        boolean in(Mode mode, IoEvent e) {
            int bin = binOf(e.deviceNs() / 1000.0);
            return bin >= mode.fromBin() && bin <= mode.toBin();
        }

        /** The bin a latency falls in, as the I/Os were binned; -1 outside the shape. */
        int binOf(double us) {
            int bin = binsPerOctave == 1 ? Log2Histogram.bucketOf((long) us) : (int) ((log2(us) - lowestLog2) * binsPerOctave);
            return bin >= 0 && bin < weight.length ? bin : -1;
        }

        double total() {
            double t = 0;
            for (double w : weight) {
                t += w;
            }
            return t;
        }

        /** Fine bins are smoothed over three so sampling noise makes no peaks. */
        double[] density() {
            if (binsPerOctave == 1) {
                return weight.clone();
            }
            double[] d = new double[weight.length];
            for (int i = 0; i < weight.length; i++) {
                double sum = 0;
                int n = 0;
                for (int j = Math.max(0, i - 1); j <= Math.min(weight.length - 1, i + 1); j++) {
                    sum += weight[j];
                    n++;
                }
                d[i] = sum / n;
            }
            return d;
        }

        /**
         * Modes, fastest first: neighbouring peaks are separate modes when the valley
         * between them is no higher than VALLEY_FRACTION of the lower one; runs of bins
         * too light to matter (a tail's stragglers) are left out.
         */
        List<Mode> modes() {
            double[] d = density();
            List<Integer> splits = new ArrayList<>();
            int current = -1;
            for (int p : peaks(d)) {
                if (current < 0) {
                    current = p;
                    continue;
                }
                int valley = current + 1;
                for (int i = current + 1; i < p; i++) {
                    if (d[i] < d[valley]) {
                        valley = i;
                    }
                }
                if (d[valley] <= VALLEY_FRACTION * Math.min(d[current], d[p])) {
                    splits.add(valley);
                    current = p;
                } else if (d[p] > d[current]) {
                    current = p;
                }
            }
            splits.add(d.length - 1);
            double total = total();
            List<Mode> modes = new ArrayList<>();
            int from = 0;
            for (int to : splits) {
                Mode m = mode(from, to);
                if (m.weight() >= Math.max(MIN_MODE_IOS, MIN_MODE_SHARE * total)) {
                    modes.add(m);
                }
                from = to + 1;
            }
            return modes;
        }

        /** Local maxima, the right end of a plateau. */
        private static List<Integer> peaks(double[] d) {
            List<Integer> peaks = new ArrayList<>();
            for (int i = 0; i < d.length; i++) {
                double before = i == 0 ? 0 : d[i - 1];
                double after = i == d.length - 1 ? 0 : d[i + 1];
                if (d[i] > 0 && d[i] >= before && d[i] > after) {
                    peaks.add(i);
                }
            }
            return peaks;
        }

        /** The run's weight and weighted median latency. */
        private Mode mode(int from, int to) {
            double w = 0;
            for (int i = from; i <= to; i++) {
                w += weight[i];
            }
            return new Mode(quantileUs(from, to, w, 0.5), w, from, to);
        }

        /** The latency below which the fraction {@code q} of the run's weight {@code w} falls. */
        private double quantileUs(int from, int to, double w, double q) {
            double seen = 0;
            for (int i = from; i <= to; i++) {
                List<Double> v = values.get(i);
                if (v.isEmpty()) {
                    continue;
                }
                double each = weight[i] / v.size();
                List<Double> sorted = new ArrayList<>(v);
                sorted.sort(Double::compare);
                for (double value : sorted) {
                    seen += each;
                    if (seen >= q * w) {
                        return value;
                    }
                }
            }
            return 0;
        }

        /**
         * The least the mode's I/Os can have taken together: each at the lower edge of its
         * log2 bucket, or, where every I/O's latency is known, their sum.
         */
        double leastTotalUs(Mode m) {
            double total = 0;
            for (int i = m.fromBin(); i <= m.toBin(); i++) {
                if (binsPerOctave == 1) {
                    total += weight[i] * Log2Histogram.lowerEdgeUs(i);
                } else {
                    total += values.get(i).stream().mapToDouble(Double::doubleValue).sum();
                }
            }
            return total;
        }

        /** A mode's interquartile range of latency. */
        double spreadUs(Mode m) {
            return quantileUs(m.fromBin(), m.toBin(), m.weight(), 0.75) - quantileUs(m.fromBin(), m.toBin(), m.weight(), 0.25);
        }
    }
}
