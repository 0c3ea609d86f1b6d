package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.detect.ModelPeers;
import io.iopipe.jobs.detect.PeerVerdict;
import io.iopipe.jobs.detect.ShallowReads;
import io.iopipe.jobs.records.OutputRecord;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * Per model of flash drive, fleet-wide: each drive's shallow small reads against the
 * model's baseline ({@link ModelPeers}). Its failing_disk anomalies come out here; each
 * drive's verdict goes on to its own health state. The baseline is recomputed about once
 * a window of every drive (and at most once more a window's time, for a drive that looks
 * slow), so a record costs its own drive's state, not the whole model's, however many of
 * its drives look slow; drives not heard from within the horizon of the wall clock leave the model then
 * (their findings lapse), and a model silent that long is forgotten.
 */
public class CompareModelPeers extends KeyedProcessFunction<String, ShallowReads, OutputRecord> {
    public static final OutputTag<PeerVerdict> VERDICTS = new OutputTag<>("model-verdicts") {};
    private static final long FORGET_AFTER_MS = ModelPeers.HORIZON_NS / 1_000_000L;
    private transient MapState<String, ModelPeers.Drive> drives;
    private transient ValueState<ModelPeers.Baseline> baseline;
    private transient Silence silence;
    private transient Counter windowsJudged;
    private transient Counter modelsForgotten;

    @Override
    public void open(OpenContext openContext) {
        drives = getRuntimeContext().getMapState(new MapStateDescriptor<>("model-drives", String.class, ModelPeers.Drive.class));
        baseline = getRuntimeContext().getState(new ValueStateDescriptor<>("model-baseline", ModelPeers.Baseline.class));
        silence = new Silence(getRuntimeContext());
        windowsJudged = getRuntimeContext().getMetricGroup().counter("model_windows_judged_total");
        modelsForgotten = getRuntimeContext().getMetricGroup().counter("models_forgotten_total");
    }

    @Override
    public void processElement(ShallowReads r, Context ctx, Collector<OutputRecord> out) throws Exception {
        long nowMs = ctx.timerService().currentProcessingTime();
        ModelPeers.Drive d = drives.get(r.key());
        if (d == null) {
            d = new ModelPeers.Drive();
        }
        d.add(r);
        d.lastHeardMs = nowMs;
        // Stored before the baseline reads the model's drives back from state (RocksDB hands
        // out copies), and again below with what judging changed.
        drives.put(r.key(), d);
        ModelPeers.Baseline b = baseline.value();
        if (b == null || b.dueFor(d, r)) {
            b = ModelPeers.Baseline.of(drivesHeardSince(nowMs - FORGET_AFTER_MS, r.endNs, ctx), r.endNs);
        }
        baseline.update(b);
        ModelPeers.Judgement j = ModelPeers.judge(r, d, b);
        drives.put(r.key(), d);
        j.anomaly().ifPresent(out::collect);
        j.verdict().ifPresent(v -> ctx.output(VERDICTS, v));
        windowsJudged.inc();
        silence.heard(ctx.timerService(), FORGET_AFTER_MS);
    }

    /**
     * The model's drives heard from since `sinceMs` on the wall clock (each drive's own
     * clock may differ from the others'); the others leave the model, their findings lapsing.
     */
    private List<ModelPeers.Drive> drivesHeardSince(long sinceMs, long nowNs, Context ctx) throws Exception {
        List<ModelPeers.Drive> heard = new ArrayList<>();
        Iterator<Map.Entry<String, ModelPeers.Drive>> it = drives.iterator();
        while (it.hasNext()) {
            ModelPeers.Drive d = it.next().getValue();
            if (d.lastHeardMs < sinceMs) {
                ModelPeers.lapsed(d, nowNs).ifPresent(v -> ctx.output(VERDICTS, v));
                it.remove();
            } else {
                heard.add(d);
            }
        }
        return heard;
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<OutputRecord> out) throws Exception {
        if (silence.silentForMs(ctx.timerService()) >= FORGET_AFTER_MS) {
            for (ModelPeers.Drive d : drives.values()) {
                ModelPeers.lapsed(d, d.endNs.isEmpty() ? 0 : d.endNs.get(d.endNs.size() - 1)).ifPresent(v -> ctx.output(VERDICTS, v));
            }
            drives.clear();
            baseline.clear();
            silence.clear();
            modelsForgotten.inc();
        } else {
            silence.checkAfterLastHeard(ctx.timerService(), FORGET_AFTER_MS);
        }
    }
}
