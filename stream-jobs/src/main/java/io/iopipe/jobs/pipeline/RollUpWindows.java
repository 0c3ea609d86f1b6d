package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.records.DeadLetters;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.TimeDomain;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Per disk, longer windows made of the shorter ones: each is the windows of the first
 * length it spans, merged exactly (diskstats sums add, histograms add bucket by bucket).
 * The records are windowed once, on the disk's own clock, and lateness means one thing.
 * A disk's short windows come in time order, so a window from a later span, or the
 * last one of the span, closes the span. A disk silent for {@code idleMs} of wall
 * clock has its span sent as it stands and kept: if the disk speaks again within the
 * span, the span is sent again whole when it closes, and replaces the partial one
 * (a window's identity is its disk, length and start). Silent for {@code forgetAfterMs},
 * it is forgotten. The final watermark of a bounded input closes every span.
 *
 * <p>Its state stays on the heap ({@link HeldValue}), written at snapshots: a window costs
 * no read or write of RocksDB.
 */
public final class RollUpWindows extends KeyedProcessFunction<String, DiskWindow, DiskWindow>
        implements WritingBack.Function {
    static final String STAGE = "stream-jobs/roll-up";
    private final int windowSeconds;
    private final long lengthNs;
    private final long idleMs;
    private final long forgetAfterMs;
    private transient HeldValue<DiskWindow> span;
    /** Whether the span was sent as it stands (on silence): nothing new to send at its close. */
    private transient HeldValue<Boolean> spanSent;
    private transient HeldValue<Long> lastHeardMs;
    private transient HeldValue<Long> checkAtMs;
    private transient Silence silence;
    private transient Counter outOfOrder;

    /** The operator that rolls windows up into `windowSeconds`: it writes back what they hold on the heap. */
    public static WritingBack<DiskWindow, DiskWindow> operator(int windowSeconds, long idleMs, long forgetAfterMs) {
        return new WritingBack<>(new RollUpWindows(windowSeconds, idleMs, forgetAfterMs));
    }

    private RollUpWindows(int windowSeconds, long idleMs, long forgetAfterMs) {
        this.windowSeconds = windowSeconds;
        this.lengthNs = windowSeconds * 1_000_000_000L;
        this.idleMs = idleMs;
        this.forgetAfterMs = forgetAfterMs;
    }

    @Override
    public void open(OpenContext openContext) {
        span = HeldValue.in(getRuntimeContext(), new ValueStateDescriptor<>("open-span", DiskWindow.class));
        spanSent = HeldValue.in(getRuntimeContext(), new ValueStateDescriptor<>("open-span-sent", Boolean.class));
        lastHeardMs = HeldValue.in(getRuntimeContext(), Silence.lastHeardState());
        checkAtMs = HeldValue.in(getRuntimeContext(), Silence.checkAtState());
        silence = new Silence(lastHeardMs, checkAtMs);
        outOfOrder = getRuntimeContext().getMetricGroup().counter("rolled_up_windows_out_of_order_total");
    }

    @Override
    public void writeBack(WritingBack.KeySetter toKey) throws Exception {
        HeldValue.writeBack(toKey, span, spanSent, lastHeardMs, checkAtMs);
    }

    /** Points the held state at the disk being taken. */
    private void atDisk(String key) {
        span.of(key);
        spanSent.of(key);
        lastHeardMs.of(key);
        checkAtMs.of(key);
    }

    @Override
    public void processElement(DiskWindow w, Context ctx, Collector<DiskWindow> out) throws Exception {
        atDisk(ctx.getCurrentKey());
        silence.heard(ctx.timerService(), idleMs);
        long startNs = w.startNs - Math.floorMod(w.startNs, lengthNs);
        DiskWindow open = span.value();
        if (open != null && startNs < open.startNs) {
            outOfOrder.inc();
            String reason = "out of order: a " + w.windowSeconds + " s window of " + w.key() + " at " + w.startNs
                    + " came after its " + windowSeconds + " s window had closed";
            ctx.output(Pipeline.DEAD_LETTERS, DeadLetters.of(STAGE, w.key(), reason, "{}", DeadLetters.wallClockNs()));
            return;
        }
        if (open != null && startNs > open.startNs) {
            if (spanSent.value() == null) {
                close(open, ctx, out);
            } else {
                forget(open, ctx);
            }
            open = null;
        }
        if (open == null) {
            open = new DiskWindow();
            open.startNs = startNs;
            open.endNs = startNs + lengthNs;
            open.windowSeconds = windowSeconds;
            ctx.timerService().registerEventTimeTimer(open.endNs / 1_000_000L - 1);
        }
        open.absorbMeasures(w);
        spanSent.clear();
        if (w.endNs == open.endNs) {
            close(open, ctx, out);
        } else {
            span.update(open);
        }
    }

    private void close(DiskWindow w, Context ctx, Collector<DiskWindow> out) {
        out.collect(w);
        forget(w, ctx);
    }

    private static DiskWindow copyOf(DiskWindow w) {
        DiskWindow copy = new DiskWindow().absorbMeasures(w);
        copy.startNs = w.startNs;
        copy.endNs = w.endNs;
        copy.windowSeconds = w.windowSeconds;
        return copy;
    }

    private void forget(DiskWindow w, Context ctx) {
        ctx.timerService().deleteEventTimeTimer(w.endNs / 1_000_000L - 1);
        span.clear();
        spanSent.clear();
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<DiskWindow> out) throws Exception {
        atDisk(ctx.getCurrentKey());
        DiskWindow open = span.value();
        if (ctx.timeDomain() == TimeDomain.EVENT_TIME) {
            if (open != null && spanSent.value() == null) {
                close(open, ctx, out);
            }
            return;
        }
        long silentMs = silence.silentForMs(ctx.timerService());
        if (silentMs < idleMs) {
            silence.checkAfterLastHeard(ctx.timerService(), idleMs);
            return;
        }
        if (open != null && spanSent.value() == null) {
            // A copy: the span kept may take more windows, and what was emitted is never changed.
            out.collect(copyOf(open));
            spanSent.update(true);
        }
        if (open == null || silentMs >= forgetAfterMs) {
            if (open != null) {
                forget(open, ctx);
            }
            silence.clear();
        } else {
            silence.checkAfterLastHeard(ctx.timerService(), forgetAfterMs);
        }
    }
}
