package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.records.DeadLetters;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.TimeDomain;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Per disk, longer windows made of the shorter ones: a 1 min window is its six 10 s
 * windows merged, exactly (diskstats sums add, histograms add bucket by bucket). The
 * records are windowed once, on the disk's own clock, and lateness means one thing.
 * A disk's short windows come in time order, so a window from a later span, or the
 * last one of the span, closes the span. A disk silent for {@code idleMs} of wall
 * clock has its span closed; the final watermark of a bounded input closes every span.
 */
public class RollUpWindows extends KeyedProcessFunction<String, DiskWindow, DiskWindow> {
    static final String STAGE = "stream-jobs/roll-up";
    private final int windowSeconds;
    private final long lengthNs;
    private final long idleMs;
    private transient ValueState<DiskWindow> span;
    private transient Silence silence;
    private transient Counter outOfOrder;

    public RollUpWindows(int windowSeconds, long idleMs) {
        this.windowSeconds = windowSeconds;
        this.lengthNs = windowSeconds * 1_000_000_000L;
        this.idleMs = idleMs;
    }

    @Override
    public void open(OpenContext openContext) {
        span = getRuntimeContext().getState(new ValueStateDescriptor<>("open-span", DiskWindow.class));
        silence = new Silence(getRuntimeContext());
        outOfOrder = getRuntimeContext().getMetricGroup().counter("rolled_up_windows_out_of_order_total");
    }

    @Override
    public void processElement(DiskWindow w, Context ctx, Collector<DiskWindow> out) throws Exception {
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
            close(open, ctx, out);
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
        if (w.endNs == open.endNs) {
            close(open, ctx, out);
        } else {
            span.update(open);
        }
    }

    private void close(DiskWindow w, Context ctx, Collector<DiskWindow> out) {
        ctx.timerService().deleteEventTimeTimer(w.endNs / 1_000_000L - 1);
        out.collect(w);
        span.clear();
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<DiskWindow> out) throws Exception {
        if (ctx.timeDomain() == TimeDomain.EVENT_TIME) {
            DiskWindow open = span.value();
            if (open != null) {
                close(open, ctx, out);
            }
            return;
        }
        if (silence.silentForMs(ctx.timerService()) >= idleMs) {
            DiskWindow open = span.value();
            if (open != null) {
                close(open, ctx, out);
            }
            silence.clear();
        } else {
            silence.checkAfterLastHeard(ctx.timerService(), idleMs);
        }
    }
}
