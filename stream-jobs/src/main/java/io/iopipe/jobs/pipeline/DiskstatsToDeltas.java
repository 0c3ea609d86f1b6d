package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.iostat.DiskstatsDelta;
import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.DiskstatsSample;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Per disk: turns consecutive cumulative samples into deltas, and a disk's first sample
 * into what class of disk it is (a delta of no time). Keeps only the disk's
 * last sample, and forgets it when the disk has been silent for {@code idleMs} of
 * wall-clock time (a disk that disappears leaves no state behind).
 *
 * <p>An interval's histograms came with its sample and go on with its delta, as one record
 * to the disk's windows
 * ({@link DiskRecord#ofInterval(DiskstatsDelta, io.iopipe.jobs.records.HistRecord[])}),
 * whatever became of the sample: an interval crosses to the windows, and reaches their
 * state, once. The disk's other records pass through as they came, touching no state: all
 * of a disk's records take this one path to its windows, so they arrive there in the order
 * they were read. (With the samples alone coming this way, the intervals carrying them
 * could run ahead of the events sent beside them, and the disk's clock close windows
 * before their events came: in a replayed capture, seconds of them.)
 *
 * <p>It sends on only records of the disk it is taking a record of, and nothing from its
 * timers: its output is keyed as its input was, which the windows chained to it rely on
 * ({@link Pipeline}).
 *
 * <p>Its state stays on the heap ({@link HeldValue}), written at snapshots: an interval costs
 * no read or write of RocksDB.
 */
public final class DiskstatsToDeltas extends KeyedProcessFunction<String, DiskRecord, DiskRecord>
        implements WritingBack.Function {
    static final String STAGE = "stream-jobs/diskstats-deltas";
    private final long idleMs;
    private transient HeldValue<DiskstatsSample> lastSample;
    private transient HeldValue<Long> lastHeardMs;
    private transient HeldValue<Long> checkAtMs;
    private transient Silence silence;
    private transient Counter duplicates;
    private transient Counter outOfOrder;
    private transient Counter counterResets;

    /** The operator that runs the deltas, forgetting a disk silent for `idleMs`: it writes back what they hold on the heap. */
    public static WritingBack<DiskRecord, DiskRecord> operator(long idleMs) {
        return new WritingBack<>(new DiskstatsToDeltas(idleMs));
    }

    private DiskstatsToDeltas(long idleMs) {
        this.idleMs = idleMs;
    }

    @Override
    public void open(OpenContext openContext) {
        lastSample = HeldValue.in(getRuntimeContext(), new ValueStateDescriptor<>("last-sample", DiskstatsSample.class));
        lastHeardMs = HeldValue.in(getRuntimeContext(), Silence.lastHeardState());
        checkAtMs = HeldValue.in(getRuntimeContext(), Silence.checkAtState());
        silence = new Silence(lastHeardMs, checkAtMs);
        duplicates = getRuntimeContext().getMetricGroup().counter("diskstats_duplicates_total");
        outOfOrder = getRuntimeContext().getMetricGroup().counter("diskstats_out_of_order_total");
        counterResets = getRuntimeContext().getMetricGroup().counter("diskstats_counter_resets_total");
    }

    @Override
    public void writeBack(WritingBack.KeySetter toKey) throws Exception {
        HeldValue.writeBack(toKey, lastSample, lastHeardMs, checkAtMs);
    }

    /** Points the held state at the disk being taken. */
    private void atDisk(String key) {
        lastSample.of(key);
        lastHeardMs.of(key);
        checkAtMs.of(key);
    }

    @Override
    public void processElement(DiskRecord r, Context ctx, Collector<DiskRecord> out) throws Exception {
        if (r.sample == null) {
            out.collect(r);
            return;
        }
        atDisk(ctx.getCurrentKey());
        DiskRecord onward = DiskRecord.ofInterval(delta(r.sample, ctx), r.histograms);
        if (onward != null) {
            out.collect(onward);
        }
        silence.heard(ctx.timerService(), idleMs);
    }

    /** The sample's delta from the disk's last one (its class, for its first); null if it makes none. */
    private DiskstatsDelta delta(DiskstatsSample sample, Context ctx) throws Exception {
        DiskstatsSample prev = lastSample.value();
        if (prev == null) {
            lastSample.update(sample);
            return DiskstatsDelta.classOf(sample);
        }
        switch (DiskstatsDelta.classify(prev, sample)) {
            case DELTA -> {
                lastSample.update(sample);
                return DiskstatsDelta.between(prev, sample);
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
        return null;
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<DiskRecord> out) throws Exception {
        atDisk(ctx.getCurrentKey());
        if (silence.silentForMs(ctx.timerService()) >= idleMs) {
            lastSample.clear();
            silence.clear();
        } else {
            silence.checkAfterLastHeard(ctx.timerService(), idleMs);
        }
    }
}
