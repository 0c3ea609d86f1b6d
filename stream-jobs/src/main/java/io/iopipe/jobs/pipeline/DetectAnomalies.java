package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.detect.DiskDetector;
import io.iopipe.jobs.detect.DiskHealth;
import io.iopipe.jobs.detect.DiskHistory;
import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.detect.PeerVerdict;
import io.iopipe.jobs.records.OutputRecord;
import java.util.List;
import java.util.function.Function;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Per disk: the detectors over its windows, in event-time order, with what they learnt
 * kept as keyed state, and its health weighing their findings with what comparing it with
 * its peers concluded ({@link ComparePeers}). A disk silent for {@code forgetAfterMs} of wall-clock time is
 * forgotten: no state or timer outlives it; unless it holds a ticket, which its silence
 * does not resolve: that is said on the ticket, and the disk's history is kept without a
 * timer for its return, which goes on with the ticket ({@link DiskHealth#silent}).
 */
public class DetectAnomalies extends KeyedCoProcessFunction<String, DiskWindow, PeerVerdict, OutputRecord> {
    private final long forgetAfterMs;
    private final long healthRecoveryNs;
    private transient ValueState<DiskHistory> history;
    private transient Silence silence;
    private transient Counter anomalies;
    private transient Counter forgotten;
    private transient Counter silentWithTicket;

    public DetectAnomalies(long forgetAfterMs, long healthRecoveryNs) {
        this.forgetAfterMs = forgetAfterMs;
        this.healthRecoveryNs = healthRecoveryNs;
    }

    @Override
    public void open(OpenContext openContext) {
        history = getRuntimeContext().getState(new ValueStateDescriptor<>("disk-history", DiskHistory.class));
        silence = new Silence(getRuntimeContext());
        anomalies = getRuntimeContext().getMetricGroup().counter("detector_records_total");
        forgotten = getRuntimeContext().getMetricGroup().counter("disks_forgotten_total");
        silentWithTicket = getRuntimeContext().getMetricGroup().counter("disks_silent_with_a_ticket_total");
    }

    @Override
    public void processElement1(DiskWindow w, Context ctx, Collector<OutputRecord> out) throws Exception {
        step(h -> DiskDetector.onWindow(w, h, healthRecoveryNs), ctx, out);
    }

    @Override
    public void processElement2(PeerVerdict v, Context ctx, Collector<OutputRecord> out) throws Exception {
        step(h -> DiskDetector.onPeerVerdict(v, h, healthRecoveryNs), ctx, out);
    }

    /** One step of the disk's detectors on what it learnt so far; what they conclude goes out. */
    private void step(Function<DiskHistory, List<OutputRecord>> detectors, Context ctx, Collector<OutputRecord> out)
            throws Exception {
        DiskHistory h = history.value();
        if (h == null) {
            h = new DiskHistory();
        }
        for (OutputRecord r : detectors.apply(h)) {
            out.collect(r);
            anomalies.inc();
        }
        history.update(h);
        silence.heard(ctx.timerService(), forgetAfterMs);
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<OutputRecord> out) throws Exception {
        long silentForMs = silence.silentForMs(ctx.timerService());
        if (silentForMs < forgetAfterMs) {
            silence.checkAfterLastHeard(ctx.timerService(), forgetAfterMs);
            return;
        }
        silence.clear();
        DiskHistory h = history.value();
        if (h == null || h.ticketId == null) {
            history.clear();
            forgotten.inc();
            return;
        }
        long nowNs = ctx.timerService().currentProcessingTime() * 1_000_000L;
        long silentForS = (silentForMs == Long.MAX_VALUE ? forgetAfterMs : silentForMs) / 1000;
        DiskHealth.silent(h, nowNs, silentForS).ifPresent(out::collect);
        history.update(h);
        silentWithTicket.inc();
    }
}
