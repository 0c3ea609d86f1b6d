package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.detect.DiskWindow;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.TimeDomain;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Per disk, tumbling event-time windows on the disk's own clock ({@link DiskClock}):
 * how far its records have come, less the allowed out-of-orderness. A host whose clock
 * runs ahead or behind moves only its own disks' windows; with one watermark per Kafka
 * partition it would make every other host in that partition late, or hold them back.
 *
 * <p>A record for a window the disk's clock has passed is late (a side output, then a
 * dead letter). A late kernel histogram within {@code allowedLateness} of its window's
 * close also comes out as an amendment of that window, which only the latency rollups
 * read: a histogram topic read behind the diskstats (on a loaded machine, after a kind
 * went idle) loses no I/O from the rollups. A histogram or event already in its window,
 * or a histogram already in a window closed within that time (a resend), is counted and
 * merged once. A disk silent for {@code idleMs} of wall-clock time has its open windows
 * closed; silent for {@code forgetAfterMs}, it is forgotten. At the end of a bounded
 * input (the final watermark) every open window closes.
 */
public class DiskWindows extends KeyedProcessFunction<String, DiskRecord, DiskWindow> {
    private final int windowSeconds;
    private final long lengthMs;
    private final long outOfOrdernessMs;
    private final long kindIdleMs;
    private final long idleMs;
    private final long forgetAfterMs;
    private final long allowedLatenessMs;
    private final WindowFunctions.Accumulate accumulate;
    private transient MapState<Long, DiskWindow> open;
    /** Per window closed within allowedLateness, the identities of the kernel histograms it counted. */
    private transient MapState<Long, HashSet<Long>> closedHistograms;
    private transient ValueState<DiskClock> clock;
    private transient Counter duplicates;
    private transient Counter closedIdle;
    private transient Counter lateHistogramsRolledUp;

    public DiskWindows(int windowSeconds, Pipeline.Config config) {
        this.windowSeconds = windowSeconds;
        this.lengthMs = windowSeconds * 1000L;
        this.outOfOrdernessMs = config.outOfOrderness.toMillis();
        this.kindIdleMs = config.kindIdleness.toMillis();
        this.idleMs = config.diskIdleness.toMillis();
        this.forgetAfterMs = config.diskForgottenAfter.toMillis();
        this.allowedLatenessMs = config.allowedLateness.toMillis();
        this.accumulate = new WindowFunctions.Accumulate();
    }

    @Override
    public void open(OpenContext openContext) {
        open = getRuntimeContext().getMapState(new MapStateDescriptor<>("open-windows", Long.class, DiskWindow.class));
        clock = getRuntimeContext().getState(new ValueStateDescriptor<>("disk-clock", DiskClock.class));
        closedHistograms = getRuntimeContext().getMapState(new MapStateDescriptor<>(
                "closed-window-histograms", Types.LONG, TypeInformation.of(new TypeHint<HashSet<Long>>() {})));
        duplicates = getRuntimeContext().getMetricGroup().counter("records_duplicate_total");
        closedIdle = getRuntimeContext().getMetricGroup().counter("windows_closed_idle_total");
        lateHistogramsRolledUp = getRuntimeContext().getMetricGroup().counter("late_histograms_rolled_up_total");
    }

    @Override
    public void processElement(DiskRecord r, Context ctx, Collector<DiskWindow> out) throws Exception {
        long tsMs = Math.floorDiv(r.tsNs, 1_000_000L);
        long startMs = tsMs - Math.floorMod(tsMs, lengthMs);
        DiskClock c = clock();
        long nowMs = ctx.timerService().currentProcessingTime();
        c.saw(r, tsMs, nowMs, kindIdleMs);
        if (c.checkAtMs == DiskClock.NONE || c.checkAtMs > nowMs + kindIdleMs) {
            // Checked every kindIdleMs while it speaks: a kind holding the clock back may have gone idle.
            // A check re-armed for forgetting a silent disk is brought forward, or the windows it
            // opens now would wait that long to be closed when it falls silent again.
            if (c.checkAtMs != DiskClock.NONE) {
                ctx.timerService().deleteProcessingTimeTimer(c.checkAtMs);
            }
            checkAt(c, nowMs + kindIdleMs, ctx);
        }
        if (startMs + lengthMs <= c.closedThroughMs) {
            late(r, startMs, ctx, out);
        } else {
            add(r, startMs, ctx);
        }
        advance(c, nowMs, ctx, out);
    }

    private void add(DiskRecord r, long startMs, Context ctx) throws Exception {
        DiskWindow w = open.get(startMs);
        if (w == null) {
            w = accumulate.createAccumulator();
            // Fires only with the final watermark of a bounded input: the disk's own clock closes windows before.
            ctx.timerService().registerEventTimeTimer(startMs + lengthMs - 1);
        }
        if (w.firstSeen(r.identity(), r.hist != null)) {
            open.put(startMs, accumulate.add(r, w));
        } else {
            duplicates.inc();
        }
    }

    /**
     * A record for a closed window is late for it; a kernel histogram it has not counted,
     * within allowedLateness of its close, also amends it for the latency rollups.
     */
    private void late(DiskRecord r, long startMs, Context ctx, Collector<DiskWindow> out) throws Exception {
        HashSet<Long> counted = r.hist == null ? null : closedHistograms.get(startMs);
        if (counted != null && !counted.add(r.identity())) {
            duplicates.inc();
            return;
        }
        ctx.output(Pipeline.LATE_RECORDS, r);
        if (counted != null) {
            closedHistograms.put(startMs, counted);
            DiskWindow amendment = stamped(accumulate.add(r, accumulate.createAccumulator()), startMs);
            amendment.amendsClosedWindow = true;
            out.collect(amendment);
            lateHistogramsRolledUp.inc();
        }
    }

    /** Moves the disk's clock to its watermark now and closes the windows it passed. */
    private void advance(DiskClock c, long nowMs, Context ctx, Collector<DiskWindow> out) throws Exception {
        long watermark = c.watermark(outOfOrdernessMs, kindIdleMs, nowMs);
        if (watermark > c.closedThroughMs) {
            c.closedThroughMs = watermark;
            closeUpTo(watermark, false, ctx, out);
        }
        clock.update(c);
    }

    private void checkAt(DiskClock c, long atMs, Context ctx) {
        ctx.timerService().registerProcessingTimeTimer(atMs);
        c.checkAtMs = atMs;
    }

    private DiskClock clock() throws Exception {
        DiskClock c = clock.value();
        return c == null ? new DiskClock() : c;
    }

    /**
     * Emits, in time order, every open window that ends at or before `clock`; with
     * `silent`, the last of them says its disk fell silent after it.
     */
    private void closeUpTo(long clock, boolean silent, Context ctx, Collector<DiskWindow> out) throws Exception {
        List<Long> due = new ArrayList<>();
        for (Long startMs : open.keys()) {
            if (startMs + lengthMs <= clock) {
                due.add(startMs);
            }
        }
        due.sort(null);
        for (long startMs : due) {
            ctx.timerService().deleteEventTimeTimer(startMs + lengthMs - 1);
            DiskWindow w = open.get(startMs);
            if (allowedLatenessMs > 0) {
                closedHistograms.put(startMs, new HashSet<>(w.seenHistograms));
            }
            stamped(w, startMs);
            w.lastBeforeSilence = silent && startMs == due.get(due.size() - 1);
            out.collect(w);
            open.remove(startMs);
        }
        forgetHistogramsClosedBefore(clock - allowedLatenessMs);
    }

    private void forgetHistogramsClosedBefore(long closedMs) throws Exception {
        List<Long> past = new ArrayList<>();
        for (Long startMs : closedHistograms.keys()) {
            if (startMs + lengthMs <= closedMs) {
                past.add(startMs);
            }
        }
        for (long startMs : past) {
            closedHistograms.remove(startMs);
        }
    }

    private DiskWindow stamped(DiskWindow w, long startMs) {
        w.startNs = startMs * 1_000_000L;
        w.endNs = (startMs + lengthMs) * 1_000_000L;
        w.windowSeconds = windowSeconds;
        w.forgetWhatWasSeen();
        return w;
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<DiskWindow> out) throws Exception {
        if (ctx.timeDomain() == TimeDomain.EVENT_TIME) {
            closeUpTo(timestamp + 1, false, ctx, out);
            return;
        }
        DiskClock c = clock();
        c.checkAtMs = DiskClock.NONE;
        long silentMs = timestamp - c.lastHeardAtMs;
        if (silentMs >= idleMs && !open.isEmpty()) {
            // The disk went quiet: close what it sent, and move its clock past it so a straggler is late, not a second window.
            long lastEndMs = 0;
            for (Long startMs : open.keys()) {
                lastEndMs = Math.max(lastEndMs, startMs + lengthMs);
            }
            c.closedThroughMs = Math.max(c.closedThroughMs, lastEndMs);
            closeUpTo(lastEndMs, true, ctx, out);
            closedIdle.inc();
        } else if (!open.isEmpty()) {
            advance(c, timestamp, ctx, out);
        }
        if (silentMs >= forgetAfterMs) {
            clock.clear();
            closedHistograms.clear();
            return;
        }
        checkAt(c, open.isEmpty() ? c.lastHeardAtMs + forgetAfterMs : timestamp + kindIdleMs, ctx);
        clock.update(c);
    }
}
