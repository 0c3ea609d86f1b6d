package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.iostat.DiskstatsDelta;
import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.DiskstatsSample;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Per disk: turns consecutive cumulative samples into deltas, and a disk's first sample
 * into what class of disk it is (a delta of no time). Keeps only the disk's
 * last sample, and forgets it when the disk has been silent for {@code idleMs} of
 * wall-clock time (a disk that disappears leaves no state behind).
 */
public class DiskstatsToDeltas extends KeyedProcessFunction<String, DiskstatsSample, DiskstatsDelta> {
    static final String STAGE = "stream-jobs/diskstats-deltas";
    private final long idleMs;
    private transient ValueState<DiskstatsSample> lastSample;
    private transient Silence silence;
    private transient Counter duplicates;
    private transient Counter outOfOrder;
    private transient Counter counterResets;

    public DiskstatsToDeltas(long idleMs) {
        this.idleMs = idleMs;
    }

    @Override
    public void open(OpenContext openContext) {
        lastSample = getRuntimeContext().getState(new ValueStateDescriptor<>("last-sample", DiskstatsSample.class));
        silence = new Silence(getRuntimeContext());
        duplicates = getRuntimeContext().getMetricGroup().counter("diskstats_duplicates_total");
        outOfOrder = getRuntimeContext().getMetricGroup().counter("diskstats_out_of_order_total");
        counterResets = getRuntimeContext().getMetricGroup().counter("diskstats_counter_resets_total");
    }

    @Override
    public void processElement(DiskstatsSample sample, Context ctx, Collector<DiskstatsDelta> out) throws Exception {
        DiskstatsSample prev = lastSample.value();
        if (prev == null) {
            out.collect(DiskstatsDelta.classOf(sample));
            lastSample.update(sample);
        } else {
            switch (DiskstatsDelta.classify(prev, sample)) {
                case DELTA -> {
                    out.collect(DiskstatsDelta.between(prev, sample));
                    lastSample.update(sample);
                }
                case DUPLICATE -> duplicates.inc();
                case OUT_OF_ORDER -> {
                    outOfOrder.inc();
                    String reason = "out of order: ts_ns " + sample.tsNs + " is before this disk's previous sample " + prev.tsNs;
                    ctx.output(Pipeline.DEAD_LETTERS, DeadLetters.of(STAGE, sample.source, reason, sample.toJson(), DeadLetters.wallClockNs()));
                }
                case COUNTER_RESET -> {
                    counterResets.inc();
                    lastSample.update(sample);
                }
            }
        }
        silence.heard(ctx.timerService(), idleMs);
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<DiskstatsDelta> out) throws Exception {
        if (silence.silentForMs(ctx.timerService()) >= idleMs) {
            lastSample.clear();
            silence.clear();
        } else {
            silence.checkAfterLastHeard(ctx.timerService(), idleMs);
        }
    }
}
