package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.detect.DiskDetector;
import io.iopipe.jobs.detect.DiskHistory;
import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.records.OutputRecord;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Per disk: the detectors over its windows, in event-time order, with what they learnt
 * kept as keyed state. A disk silent for {@code forgetAfterMs} of wall-clock time is
 * forgotten: no state or timer outlives it.
 */
public class DetectAnomalies extends KeyedProcessFunction<String, DiskWindow, OutputRecord> {
    private final long forgetAfterMs;
    private transient ValueState<DiskHistory> history;
    private transient Silence silence;
    private transient Counter anomalies;
    private transient Counter forgotten;

    public DetectAnomalies(long forgetAfterMs) {
        this.forgetAfterMs = forgetAfterMs;
    }

    @Override
    public void open(OpenContext openContext) {
        history = getRuntimeContext().getState(new ValueStateDescriptor<>("disk-history", DiskHistory.class));
        silence = new Silence(getRuntimeContext());
        anomalies = getRuntimeContext().getMetricGroup().counter("detector_records_total");
        forgotten = getRuntimeContext().getMetricGroup().counter("disks_forgotten_total");
    }

    @Override
    public void processElement(DiskWindow w, Context ctx, Collector<OutputRecord> out) throws Exception {
        DiskHistory h = history.value();
        if (h == null) {
            h = new DiskHistory();
        }
        for (OutputRecord r : DiskDetector.onWindow(w, h)) {
            out.collect(r);
            anomalies.inc();
        }
        history.update(h);
        silence.heard(ctx.timerService(), forgetAfterMs);
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<OutputRecord> out) throws Exception {
        if (silence.silentForMs(ctx.timerService()) >= forgetAfterMs) {
            history.clear();
            silence.clear();
            forgotten.inc();
        } else {
            silence.checkAfterLastHeard(ctx.timerService(), forgetAfterMs);
        }
    }
}
