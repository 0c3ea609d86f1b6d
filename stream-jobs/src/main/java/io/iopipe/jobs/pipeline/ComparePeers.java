package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.detect.PeerHistory;
import io.iopipe.jobs.detect.PeerVerdict;
import io.iopipe.jobs.detect.SlowVsPeers;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.WindowSample;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.TimeDomain;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * Per host and class of drive ({@link WindowSample#peersKey}): their windows gathered by hour of event time, each hour compared across
 * the drives once every drive's windows of it are in ({@link SlowVsPeers}). slow_vs_peers
 * anomalies come out here; each drive's verdict goes on to its own health state. A host's
 * drives keep their own event-time clocks, so an hour is compared when the host's latest
 * window ends a grace period after it; a window of an hour already compared is counted and
 * left out of the comparison (the window itself is published whole). At the end of a
 * bounded input every hour still open is compared.
 */
public class ComparePeers extends KeyedProcessFunction<String, WindowSample, OutputRecord> {
    public static final OutputTag<PeerVerdict> VERDICTS = new OutputTag<>("peer-verdicts") {};
    private static final long NS_PER_MS = 1_000_000L;
    private static final long FORGET_AFTER_MS = SlowVsPeers.HORIZON_NS / NS_PER_MS;
    private final long graceNs;
    private transient ListState<WindowSample> pending;
    private transient ValueState<Long> earliestPendingHourNs;
    private transient ValueState<Long> comparedUpToNs;
    private transient ValueState<Long> latestEndNs;
    private transient MapState<String, PeerHistory> drives;
    private transient Silence silence;
    private transient Counter hoursCompared;
    private transient Counter windowsTooLate;
    private transient Counter hostsForgotten;

    public ComparePeers(long graceNs) {
        this.graceNs = graceNs;
    }

    @Override
    public void open(OpenContext openContext) {
        pending = getRuntimeContext().getListState(new ListStateDescriptor<>("peer-windows", WindowSample.class));
        earliestPendingHourNs = getRuntimeContext().getState(new ValueStateDescriptor<>("peer-earliest-hour-ns", Long.class));
        comparedUpToNs = getRuntimeContext().getState(new ValueStateDescriptor<>("peer-compared-up-to-ns", Long.class));
        latestEndNs = getRuntimeContext().getState(new ValueStateDescriptor<>("peer-latest-end-ns", Long.class));
        drives = getRuntimeContext().getMapState(new MapStateDescriptor<>("peer-drives", String.class, PeerHistory.class));
        silence = new Silence(getRuntimeContext());
        hoursCompared = getRuntimeContext().getMetricGroup().counter("peer_hours_compared_total");
        windowsTooLate = getRuntimeContext().getMetricGroup().counter("peer_windows_too_late_total");
        hostsForgotten = getRuntimeContext().getMetricGroup().counter("peer_hosts_forgotten_total");
    }

    /** The hour a window belongs to: the one holding its middle. */
    static long hourOf(WindowSample w) {
        long middle = w.startNs + (w.endNs - w.startNs) / 2;
        return Math.floorDiv(middle, SlowVsPeers.HOUR_NS) * SlowVsPeers.HOUR_NS;
    }

    @Override
    public void processElement(WindowSample w, Context ctx, Collector<OutputRecord> out) throws Exception {
        long hour = hourOf(w);
        Long compared = comparedUpToNs.value();
        if (compared != null && hour < compared) {
            windowsTooLate.inc();
            return;
        }
        pending.add(w);
        Long earliest = earliestPendingHourNs.value();
        if (earliest == null || hour < earliest) {
            earliestPendingHourNs.update(hour);
        }
        Long latest = latestEndNs.value();
        long latestNow = latest == null ? w.endNs : Math.max(latest, w.endNs);
        latestEndNs.update(latestNow);
        // Fires only at the end of a bounded input: the live job runs without watermarks.
        ctx.timerService().registerEventTimeTimer((hour + SlowVsPeers.HOUR_NS) / NS_PER_MS - 1);
        compareHoursEndingBy(latestNow - graceNs, ctx, out);
        silence.heard(ctx.timerService(), FORGET_AFTER_MS);
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<OutputRecord> out) throws Exception {
        if (ctx.timeDomain() == TimeDomain.EVENT_TIME) {
            compareHoursEndingBy((timestamp + 1) * NS_PER_MS, ctx, out);
        } else if (silence.silentForMs(ctx.timerService()) >= FORGET_AFTER_MS) {
            pending.clear();
            earliestPendingHourNs.clear();
            comparedUpToNs.clear();
            latestEndNs.clear();
            drives.clear();
            silence.clear();
            hostsForgotten.inc();
        } else {
            silence.checkAfterLastHeard(ctx.timerService(), FORGET_AFTER_MS);
        }
    }

    private void compareHoursEndingBy(long limitNs, Context ctx, Collector<OutputRecord> out) throws Exception {
        Long earliest = earliestPendingHourNs.value();
        if (earliest == null || earliest + SlowVsPeers.HOUR_NS > limitNs) {
            return;
        }
        TreeMap<Long, List<WindowSample>> byHour = new TreeMap<>();
        for (WindowSample w : pending.get()) {
            byHour.computeIfAbsent(hourOf(w), h -> new ArrayList<>()).add(w);
        }
        Map<String, PeerHistory> history = new HashMap<>();
        for (Map.Entry<String, PeerHistory> d : drives.entries()) {
            history.put(d.getKey(), d.getValue());
        }
        while (!byHour.isEmpty() && byHour.firstKey() + SlowVsPeers.HOUR_NS <= limitNs) {
            Map.Entry<Long, List<WindowSample>> hour = byHour.pollFirstEntry();
            SlowVsPeers.Assessment a = SlowVsPeers.assessHour(hour.getValue().get(0).host, hour.getKey(), hour.getValue(), history);
            a.anomalies().forEach(out::collect);
            a.verdicts().forEach(v -> ctx.output(VERDICTS, v));
            comparedUpToNs.update(hour.getKey() + SlowVsPeers.HOUR_NS);
            hoursCompared.inc();
        }
        drives.clear();
        drives.putAll(history);
        List<WindowSample> rest = new ArrayList<>();
        byHour.values().forEach(rest::addAll);
        pending.update(rest);
        if (byHour.isEmpty()) {
            earliestPendingHourNs.clear();
        } else {
            earliestPendingHourNs.update(byHour.firstKey());
        }
    }
}
