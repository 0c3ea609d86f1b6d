package io.iopipe.jobs.detect;

import io.iopipe.jobs.iostat.DiskstatsDelta;
import io.iopipe.jobs.pipeline.DiskRecord;
import io.iopipe.jobs.pipeline.WindowFunctions;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.PipelineTimings;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.TreeMap;

/**
 * A device serving one I/O at a time in arrival order (or `units` at a time, as flash
 * does), and the agent watching it: it sends every I/O as an event (io.event.v1) and, each
 * second, the disk's /proc/diskstats counters, integrated as the kernel does
 * (io.diskstats.v1), and each op's histograms of the I/Os completed in that second
 * (io.hist.v1). Its windows are the job's: the samples made deltas as the job makes them,
 * and every record folded into its window by the job's own window functions.
 */
final class SerialDisk {
    static final int WINDOW_SECONDS = PipelineTimings.WINDOW_SECONDS.get(0);
    static final long WINDOW_START_NS = 1_763_700_000_000_000_000L;
    static final long SECOND_NS = 1_000_000_000L;
    static final long WINDOW_NS = WINDOW_SECONDS * SECOND_NS;
    static final long MS_NS = 1_000_000L;
    static final String HOST = "web-17";
    /**
     * The agent's intervals end a nanosecond before each whole second, so the histograms and
     * diskstats of an interval (windowed by when it ended) fall in the window that holds its
     * I/Os' events (windowed by when each completed).
     */
    static final long AGENT_TICK_BEFORE_SECOND_NS = 1;
    /** /proc/diskstats counts 512-byte sectors whatever the device's block size (iostats.rst). */
    static final long SECTOR_BYTES = 512;

    private final String disk;
    private final boolean rotational;
    private final List<IoEvent> ios = new ArrayList<>();
    private final PriorityQueue<Long> inDevice = new PriorityQueue<>();
    /** When each unit is next free. */
    private final PriorityQueue<Long> unitsFreeAtNs = new PriorityQueue<>();

    SerialDisk(String disk, boolean rotational) {
        this(disk, rotational, 1);
    }

    SerialDisk(String disk, boolean rotational, int units) {
        this.disk = disk;
        this.rotational = rotational;
        for (int i = 0; i < units; i++) {
            unitsFreeAtNs.add(WINDOW_START_NS);
        }
    }

    /** Dispatches one I/O at `atNs`; it completes after those ahead of it hold the units, and its own service time. */
    IoEvent submit(String op, long bytes, long atNs, double serviceMs) {
        while (!inDevice.isEmpty() && inDevice.peek() <= atNs) {
            inDevice.poll();
        }
        IoEvent e = new IoEvent();
        e.host = HOST;
        e.disk = disk;
        e.op = op;
        e.bytes = bytes;
        e.sector = ios.size() * 64L;
        e.issueNs = atNs;
        e.completeNs = Math.max(atNs, unitsFreeAtNs.poll()) + (long) (serviceMs * MS_NS);
        e.inflight = inDevice.size() + 1;
        e.comm = "test";
        e.sampleReason = "all";
        e.sampleWeight = 1;
        unitsFreeAtNs.add(e.completeNs);
        inDevice.add(e.completeNs);
        ios.add(e);
        return e;
    }

    /** `streams` synchronous issuers for the whole window, each I/O taking service.next(). */
    SerialDisk closedLoop(int streams, String op, long bytes, java.util.function.DoubleSupplier serviceMs) {
        long[] readyAt = new long[streams];
        java.util.Arrays.fill(readyAt, WINDOW_START_NS);
        while (true) {
            int next = 0;
            for (int s = 1; s < streams; s++) {
                if (readyAt[s] < readyAt[next]) {
                    next = s;
                }
            }
            if (readyAt[next] >= WINDOW_START_NS + WINDOW_NS) {
                return this;
            }
            readyAt[next] = submit(op, bytes, readyAt[next], serviceMs.getAsDouble()).completeNs;
        }
    }

    /** The window starting at `startNs` as the job builds it from what the agent sent. */
    DiskWindow window(long startNs) {
        WindowFunctions.Accumulate windows = new WindowFunctions.Accumulate(WINDOW_SECONDS);
        long startMs = startNs / MS_NS;
        DiskWindow w = windows.openWindow();
        for (DiskRecord r : sentAround(startNs)) {
            if (windows.windowStartMs(r) == startMs) {
                windows.add(r, w);
            }
        }
        return windows.stamped(w, startMs);
    }

    DiskWindow window() {
        return window(WINDOW_START_NS);
    }

    /**
     * What reaches the window operator of the agent's records from the interval ending just
     * before `startNs` to the last of that window, in event time: every event, each interval's
     * histograms, and the diskstats samples made deltas (a disk's first sample says only its class).
     */
    private List<DiskRecord> sentAround(long startNs) {
        List<DiskRecord> sent = new ArrayList<>();
        for (IoEvent e : ios) {
            sent.add(DiskRecord.of(e));
        }
        DiskstatsSample previous = null;
        for (int second = 0; second <= WINDOW_SECONDS; second++) {
            long tickNs = startNs + second * SECOND_NS - AGENT_TICK_BEFORE_SECOND_NS;
            DiskstatsSample sample = diskstatsAt(tickNs);
            if (previous == null) {
                sent.add(DiskRecord.of(DiskstatsDelta.classOf(sample)));
            } else {
                if (DiskstatsDelta.classify(previous, sample) != DiskstatsDelta.Outcome.DELTA) {
                    throw new IllegalStateException("the agent's samples of " + disk + " are in order");
                }
                sent.add(DiskRecord.of(DiskstatsDelta.between(previous, sample)));
                for (HistRecord h : histograms(previous.tsNs, tickNs)) {
                    sent.add(DiskRecord.of(h));
                }
            }
            previous = sample;
        }
        sent.sort(Comparator.comparingLong(r -> r.tsNs));
        return sent;
    }

    /** The disk's cumulative counters at `atNs`: each I/O counted, and its time added, when it completes. */
    private DiskstatsSample diskstatsAt(long atNs) {
        DiskstatsSample s = new DiskstatsSample();
        s.host = HOST;
        s.disk = disk;
        s.tsNs = atNs;
        s.rotational = rotational;
        long readNs = 0;
        long writeNs = 0;
        for (IoEvent e : ios) {
            if (e.completeNs > atNs) {
                s.counters.inFlight += e.issueNs <= atNs ? 1 : 0;
                continue;
            }
            switch (e.op) {
                case "R" -> {
                    s.counters.readsCompleted++;
                    s.counters.sectorsRead += e.bytes / SECTOR_BYTES;
                    readNs += e.totalNs();
                }
                case "W" -> {
                    s.counters.writesCompleted++;
                    s.counters.sectorsWritten += e.bytes / SECTOR_BYTES;
                    writeNs += e.totalNs();
                }
                default -> throw new IllegalArgumentException("a SerialDisk serves reads and writes, not " + e.op);
            }
        }
        s.counters.readTimeMs = readNs / MS_NS;
        s.counters.writeTimeMs = writeNs / MS_NS;
        s.counters.weightedIoTimeMs = (readNs + writeNs) / MS_NS;
        s.counters.ioTimeMs = busyNsUpTo(atNs) / MS_NS;
        return s;
    }

    /** How long up to `atNs` the disk had an I/O in flight. */
    private long busyNsUpTo(long atNs) {
        List<IoEvent> byIssue = new ArrayList<>(ios);
        byIssue.sort(Comparator.comparingLong(e -> e.issueNs));
        long busyNs = 0;
        long coveredUntil = Long.MIN_VALUE;
        for (IoEvent e : byIssue) {
            if (e.issueNs >= atNs) {
                break;
            }
            busyNs += Math.max(0, Math.min(e.completeNs, atNs) - Math.max(e.issueNs, coveredUntil));
            coveredUntil = Math.max(coveredUntil, e.completeNs);
        }
        return busyNs;
    }

    /** Each op's device, queue and total histograms of the I/Os completed in (fromNs, toNs], as the agent sends them. */
    private List<HistRecord> histograms(long fromNs, long toNs) {
        Map<String, Log2Histogram[]> byOp = new TreeMap<>();
        Map<String, Long> errors = new TreeMap<>();
        for (IoEvent e : ios) {
            if (e.completeNs <= fromNs || e.completeNs > toNs) {
                continue;
            }
            Log2Histogram[] kinds = byOp.computeIfAbsent(e.op,
                    op -> new Log2Histogram[] {new Log2Histogram(), new Log2Histogram(), new Log2Histogram()});
            kinds[0].add(e.deviceNs() / 1000, 1);
            kinds[1].add(e.queueNs / 1000, 1);
            kinds[2].add(e.totalNs() / 1000, 1);
            errors.merge(e.op, e.error != 0 ? 1L : 0L, Long::sum);
        }
        List<HistRecord> sent = new ArrayList<>();
        String[] latencies = {"device", "queue", "total"};
        byOp.forEach((op, kinds) -> {
            for (int k = 0; k < latencies.length; k++) {
                HistRecord h = new HistRecord();
                h.host = HOST;
                h.disk = disk;
                h.op = op;
                h.latency = latencies[k];
                h.startNs = fromNs;
                h.endNs = toNs;
                h.bucketsLog2Us = kinds[k].trimmedBuckets();
                h.count = kinds[k].count;
                h.sumUs = kinds[k].sumUs;
                h.maxUs = kinds[k].maxUs;
                h.errors = errors.get(op);
                sent.add(h);
            }
        });
        return sent;
    }
}
