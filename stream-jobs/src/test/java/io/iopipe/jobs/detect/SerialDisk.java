package io.iopipe.jobs.detect;

import io.iopipe.jobs.records.IoEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;

/**
 * A device serving one I/O at a time in arrival order (or `units` at a time, as flash
 * does), for building the windows detectors see: every I/O becomes an event, the
 * kernel-style histogram and the diskstats sums of the window, integrated as the kernel does.
 */
final class SerialDisk {
    static final long WINDOW_START_NS = 1_763_700_000_000_000_000L;
    static final long WINDOW_NS = 10_000_000_000L;
    static final long MS_NS = 1_000_000L;

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
        e.host = "web-17";
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

    /** The window of the I/Os that completed in it, as the job builds it. */
    DiskWindow window(long startNs) {
        DiskWindow w = new DiskWindow();
        w.host = "web-17";
        w.disk = disk;
        w.startNs = startNs;
        w.endNs = startNs + WINDOW_NS;
        w.windowSeconds = 10;
        w.iostat.host = "web-17";
        w.iostat.disk = disk;
        w.iostat.rotational = rotational;
        w.iostat.samples = 10;
        w.iostat.intervalNs = WINDOW_NS;
        long busyNs = 0;
        long coveredUntil = startNs;
        for (IoEvent e : ios) {
            if (e.completeNs <= startNs || e.completeNs > w.endNs) {
                continue;
            }
            long latencyMs = e.deviceNs() / MS_NS;
            if (e.op.equals("W")) {
                w.iostat.writesCompleted++;
                w.iostat.sectorsWritten += e.bytes / 512;
                w.iostat.writeTimeMs += latencyMs;
            } else {
                w.iostat.readsCompleted++;
                w.iostat.sectorsRead += e.bytes / 512;
                w.iostat.readTimeMs += latencyMs;
            }
            w.iostat.weightedIoTimeMs += latencyMs;
            long from = Math.max(e.issueNs, coveredUntil);
            busyNs += Math.max(0, e.completeNs - from);
            coveredUntil = Math.max(coveredUntil, e.completeNs);
            OpLatency op = w.op(e.op);
            op.device.add(e.deviceNs() / 1000, 1);
            op.total.add(e.deviceNs() / 1000, 1);
            op.queue.add(0, 1);
            if (e.error != 0) {
                op.errors++;
            }
            w.events.add(e);
        }
        w.iostat.ioTimeMs = busyNs / MS_NS;
        return w;
    }

    DiskWindow window() {
        return window(WINDOW_START_NS);
    }
}
