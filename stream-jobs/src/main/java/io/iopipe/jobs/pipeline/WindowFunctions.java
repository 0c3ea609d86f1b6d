package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.detect.OpLatency;
import io.iopipe.jobs.detect.Saturating;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.IoEvent;
import java.io.Serializable;

/** How a disk's records fold into its window as they come. */
public final class WindowFunctions {
    private WindowFunctions() {}

    /**
     * Opens a window, says which window a record belongs to, adds records to it and stamps
     * it as it is sent, for {@link DiskWindows}, which holds one (so it travels with the job
     * graph) and decides when each window closes.
     */
    public static final class Accumulate implements Serializable {
        private final int windowSeconds;
        private final long lengthMs;

        public Accumulate(int windowSeconds) {
            this.windowSeconds = windowSeconds;
            this.lengthMs = windowSeconds * 1000L;
        }

        /** The start of the window holding a record: windows tumble from the epoch, each holding [start, start + length) of event time. */
        public long windowStartMs(DiskRecord r) {
            long tsMs = Math.floorDiv(r.tsNs, 1_000_000L);
            return tsMs - Math.floorMod(tsMs, lengthMs);
        }

        /** A window with nothing in it yet. */
        public DiskWindow openWindow() {
            return new DiskWindow();
        }

        public DiskWindow add(DiskRecord r, DiskWindow w) {
            w.host = r.host;
            w.disk = r.disk;
            if (r.delta != null) {
                w.iostat.add(r.delta);
            } else if (r.hist != null) {
                addHist(w.op(r.hist.op), r.hist);
            } else if (r.event != null) {
                addEvent(w, r.event);
            }
            return w;
        }

        /** The window starting at `startMs` as it is sent: its span set, the identities it kept to merge resends forgotten. */
        public DiskWindow stamped(DiskWindow w, long startMs) {
            w.startNs = startMs * 1_000_000L;
            w.endNs = (startMs + lengthMs) * 1_000_000L;
            w.windowSeconds = windowSeconds;
            w.forgetWhatWasSeen();
            return w;
        }

        static void addHist(OpLatency op, HistRecord h) {
            switch (h.latency) {
                case "device" -> {
                    op.addDeviceInterval(h.bucketsLog2Us, h.count, h.sumUs, h.maxUs);
                    // The same errors ride on all three kinds; count them once.
                    op.errors = Saturating.add(op.errors, h.errors);
                }
                case "queue" -> op.queue.addBuckets(h.bucketsLog2Us, h.count, h.sumUs, h.maxUs);
                default -> op.total.addBuckets(h.bucketsLog2Us, h.count, h.sumUs, h.maxUs);
            }
        }

        /**
         * An I/O timed from its entry to the block layer has a total time alone: it joins
         * the total histogram and no more, so no verdict on device time or depth at
         * dispatch rests on it.
         */
        static void addEvent(DiskWindow w, IoEvent e) {
            OpLatency op = w.op(e.op);
            long weight = Math.round(e.sampleWeight);
            op.eventTotal.add(e.totalNs() / 1000, weight);
            op.events++;
            if (e.error != 0) {
                op.eventErrors = Saturating.add(op.eventErrors, weight);
            }
            if (e.timedFromQueue) {
                return;
            }
            op.eventDevice.add(e.deviceNs() / 1000, weight);
            op.eventQueue.add(e.queueNs / 1000, weight);
            if (e.inflight > 0) {
                op.eventDepthSum += e.inflight * e.sampleWeight;
                op.eventDepthWeight += e.sampleWeight;
            }
            w.keep(e);
        }
    }
}
