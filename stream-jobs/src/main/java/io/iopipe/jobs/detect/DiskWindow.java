package io.iopipe.jobs.detect;

import io.iopipe.jobs.iostat.IostatSums;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.WindowSample;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Everything one disk did in one event-time window: the iostat sums of its diskstats
 * deltas, each op's latency histograms and the sampled events. What the detectors see.
 */
public class DiskWindow {
    /** Events kept per window; the rest are counted. Bursts and outliers are far fewer. */
    public static final int MAX_EVENTS = 20_000;
    static final double MS_PER_S = 1000.0;
    static final double NS_PER_MS = 1e6;
    /** The sample_reason of a capture that sends every I/O. */
    static final String EVERY_IO = "all";
    static final double SECTORS_PER_KIB = 2.0;

    public String host;
    public String disk;
    public long startNs;
    public long endNs;
    public int windowSeconds;
    public IostatSums iostat = new IostatSums();
    public Map<String, OpLatency> ops = new TreeMap<>();
    public List<IoEvent> events = new ArrayList<>();
    public long eventsOverCap;
    /**
     * Identities of the records folded in while the window is open: a resent one is merged
     * once. A {@link LongHashSet}, unless the window was read from state (Flink reads a set
     * field back as a HashSet): the next record makes it one.
     */
    public Set<Long> seen = new LongHashSet();
    /** Of {@link #seen}, the kernel histograms': a closed window remembers these a while, for late ones. */
    public Set<Long> seenHistograms = new LongHashSet();
    /** The last window its disk sent before it fell silent: no more of the disk is coming for now. */
    public boolean lastBeforeSilence;
    /**
     * Not a window but kernel histograms that came after their window closed: too late for
     * the detectors, never too late to be counted in the latency rollups.
     */
    public boolean amendsClosedWindow;
    /**
     * 0 for a window sent when it closed; n for its n-th whole copy sent again after it
     * closed on its disk's silence and then took records still on their way (a Kafka
     * outage's backlog). A later copy replaces an earlier one; only the window records
     * carry copies, never the detectors or the rollups.
     */
    public int revision;
    /** A window closed on silence that took records since it was last sent (kept state, not output). */
    public boolean revisionDue;

    public String key() {
        return host + "/" + disk;
    }

    public boolean hasIostat() {
        return iostat.samples > 0 && iostat.intervalNs > 0;
    }

    /** Whether a diskstats sample said what class of disk this is, even one without an interval yet. */
    public boolean classKnown() {
        return iostat.classKnown || hasIostat();
    }

    public boolean rotational() {
        return classKnown() && iostat.rotational;
    }

    /** The rotation rate a rotational disk reports; 0 where it does not (or does not rotate). */
    public long rpm() {
        return rotational() ? iostat.rpm : 0;
    }

    public long iostatCompleted() {
        return iostat.counters.readsCompleted + iostat.counters.writesCompleted + iostat.counters.discardsCompleted;
    }

    /** The window's throughput and mean I/O latency, as its iostat line gives them: what peers are compared on. */
    public WindowSample throughputAndLatency() {
        double seconds = iostat.intervalNs / (NS_PER_MS * MS_PER_S);
        long sectors = iostat.counters.sectorsRead + iostat.counters.sectorsWritten + iostat.counters.sectorsDiscarded;
        long timeMs = iostat.counters.readTimeMs + iostat.counters.writeTimeMs + iostat.counters.discardTimeMs;
        long completed = iostatCompleted();
        WindowSample s = new WindowSample(host, disk, startNs, endNs, sectors / SECTORS_PER_KIB / seconds,
                completed == 0 ? 0 : (double) timeMs / completed);
        s.peerClass = WindowSample.peerClass(iostat.rotational, iostat.model);
        return s;
    }

    /**
     * The window's small reads dispatched at a shallow queue, for comparing a flash drive
     * with the other drives of its model; empty unless the drive is flash, tells its model
     * (a real device's, not a virtual disk's), spent no more of its time writing than reading (programming and erasing its NAND
     * holds its dies from its own reads, which its peers need not share) and some such
     * reads were sampled.
     */
    public java.util.Optional<ShallowReads> shallowReads() {
        if (!hasIostat() || iostat.rotational || !ModelPeers.comparable(iostat.model) || iostat.counters.writeTimeMs > iostat.counters.readTimeMs) {
            return java.util.Optional.empty();
        }
        List<IoEvent> small = events.stream().filter(e -> e.op.equals("R") && e.error == 0 && e.inflight > 0
                && e.inflight <= ModelPeers.SHALLOW_QUEUE && e.bytes <= ModelPeers.SMALL_IO_BYTES).toList();
        if (small.isEmpty()) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(ShallowReads.of(host, disk, iostat.model, startNs, endNs,
                small.stream().mapToDouble(e -> e.deviceNs() / 1000.0).toArray(), small.stream().mapToDouble(e -> e.sampleWeight).toArray()));
    }

    /** aqu-sz: mean requests in flight over the window. */
    public double queueSize() {
        return iostat.counters.weightedIoTimeMs / (iostat.intervalNs / NS_PER_MS);
    }

    public double utilFraction() {
        return Math.min(1.0, iostat.counters.ioTimeMs / (iostat.intervalNs / NS_PER_MS));
    }

    /** svctm: busy time per completed I/O. The mean service time of a disk that serves one I/O at a time. */
    public double serviceMs() {
        long completed = iostatCompleted();
        return completed == 0 ? 0 : (double) iostat.counters.ioTimeMs / completed;
    }

    /** await of every op together: time from submission to completion per I/O. */
    public double awaitMs() {
        long completed = iostatCompleted();
        long timeMs = iostat.counters.readTimeMs + iostat.counters.writeTimeMs + iostat.counters.discardTimeMs;
        return completed == 0 ? 0 : (double) timeMs / completed;
    }

    public double completedPerS() {
        return iostatCompleted() / (iostat.intervalNs / NS_PER_MS / MS_PER_S);
    }

    /** Mean bytes per completed I/O from diskstats (512-byte sectors). */
    public double bytesPerIo() {
        long completed = iostatCompleted();
        long sectors = iostat.counters.sectorsRead + iostat.counters.sectorsWritten + iostat.counters.sectorsDiscarded;
        return completed == 0 ? 0 : sectors * 512.0 / completed;
    }

    /** Device time of every op together. */
    public Log2Histogram deviceAllOps() {
        Log2Histogram all = new Log2Histogram();
        for (OpLatency op : ops.values()) {
            all.merge(op.device());
        }
        return all;
    }

    public long errors() {
        long n = 0;
        for (OpLatency op : ops.values()) {
            n = Saturating.add(n, op.errors());
        }
        return n;
    }

    /** Keeps one event, or counts it once the window holds MAX_EVENTS. */
    public void keep(IoEvent e) {
        if (events.size() < MAX_EVENTS) {
            events.add(e);
        } else {
            eventsOverCap++;
        }
    }

    /** Adds another window's diskstats sums and latency histograms of this disk to this one's (not its events). */
    public DiskWindow absorbMeasures(DiskWindow o) {
        host = host != null ? host : o.host;
        disk = disk != null ? disk : o.disk;
        iostat.merge(o.iostat);
        for (Map.Entry<String, OpLatency> e : o.ops.entrySet()) {
            op(e.getKey()).merge(e.getValue());
        }
        return this;
    }

    /** A copy of the measures and events, to send while this one is kept and may still change. */
    public DiskWindow copy() {
        DiskWindow copy = new DiskWindow().absorbMeasures(this);
        copy.events = new ArrayList<>(events);
        copy.eventsOverCap = eventsOverCap;
        copy.startNs = startNs;
        copy.endNs = endNs;
        copy.windowSeconds = windowSeconds;
        return copy;
    }

    /** Whether a record of this identity is new to the window; remembers it, and which were kernel histograms. */
    public boolean firstSeen(long identity, boolean kernelHistogram) {
        LongHashSet ids = LongHashSet.of(seen);
        seen = ids;
        if (!ids.addLong(identity)) {
            return false;
        }
        if (kernelHistogram) {
            LongHashSet histograms = LongHashSet.of(seenHistograms);
            seenHistograms = histograms;
            histograms.addLong(identity);
        }
        return true;
    }

    /** A closed window takes no more records: what it saw need not travel on. */
    public void forgetWhatWasSeen() {
        seen = new LongHashSet();
        seenHistograms = new LongHashSet();
    }

    public OpLatency op(String op) {
        return ops.computeIfAbsent(op, o -> new OpLatency());
    }

    /** The op that did the most I/O: whose histogram a summary shows. */
    public String busiestOp() {
        return ops.entrySet().stream().max(Comparator.comparingLong(e -> e.getValue().count()))
                .map(Map.Entry::getKey).orElse("R");
    }

    /**
     * The events of one op, when they are every I/O of it in this window (not a sample):
     * a capture of every I/O says so (sample_reason "all"); events sampled otherwise
     * (a flight recording, outliers) are every I/O only if none weighs more than one
     * and they are at least as many as the histograms counted. Never where some were
     * not kept (timed from the queue, or past the cap).
     */
    public List<IoEvent> fullCapture(String op) {
        List<IoEvent> mine = new ArrayList<>();
        boolean declaredEvery = true;
        for (IoEvent e : events) {
            if (e.op.equals(op)) {
                if (e.sampleWeight != 1.0) {
                    return List.of();
                }
                declaredEvery &= EVERY_IO.equals(e.sampleReason);
                mine.add(e);
            }
        }
        OpLatency latency = ops.get(op);
        if (eventsOverCap > 0 || mine.isEmpty() || (latency != null && mine.size() < latency.events)) {
            return List.of();
        }
        long count = latency == null ? 0 : latency.count();
        return declaredEvery || mine.size() >= count ? mine : List.of();
    }

    /** Mean in-flight depth at dispatch of the events that know it, every op together; NaN if none does. */
    public double meanEventDepth() {
        double sum = 0;
        double weight = 0;
        for (OpLatency op : ops.values()) {
            sum += op.eventDepthSum;
            weight += op.eventDepthWeight;
        }
        return weight == 0 ? Double.NaN : sum / weight;
    }

    /** Queue depth: aqu-sz where diskstats are known, else the events' depth at dispatch. */
    public double depth() {
        return hasIostat() ? queueSize() : meanEventDepth();
    }

    /**
     * The queue the window's I/Os met: requests in flight averaged over the time any was
     * (weighted_io_time / io_time). aqu-sz averages over the whole window, idle time too,
     * so a burst at a depth of 125 in a window otherwise idle has an aqu-sz under 4. Where
     * diskstats say nothing of busy time, {@link #depth()}.
     */
    public double busyDepth() {
        return hasIostat() && iostat.counters.ioTimeMs > 0 ? (double) iostat.counters.weightedIoTimeMs / iostat.counters.ioTimeMs : depth();
    }

    public void sortEvents() {
        events.sort(Comparator.comparingLong((IoEvent e) -> e.issueNs).thenComparingLong(e -> e.completeNs));
    }
}
