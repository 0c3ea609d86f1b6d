package io.iopipe.jobs.pipeline;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.detect.Log2Histogram;
import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.LatencyPeriods;
import io.iopipe.jobs.records.OutputRecord;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.TimeDomain;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * io.latency.v1: per disk, op and latency kind, the kernel's histograms summed over
 * each minute, hour and day, from the disk's windows. The windows already count each
 * kernel histogram once however often Kafka redelivered it, so a rollup is exact; a
 * store that keeps the highest revision of each period stays exact when the job replays
 * from a checkpoint or a sink sends twice (each send is the same record).
 *
 * <p>Each minute, when it closes, sends itself and the hour and day it belongs to, with
 * everything so far: the current hour and day are always there, a minute behind. A
 * minute closes with its last window, with a window of a later minute, with the last
 * window before its disk fell silent, or when no window came for {@code idleMs} of wall
 * clock (the disk's clock may have closed its last window before it fell silent); if the
 * disk resumes within it, the minute is sent again with more and a higher revision. A
 * disk silent for {@code forgetAfterMs} of wall clock is forgotten.
 */
public class LatencyRollups extends KeyedProcessFunction<String, DiskWindow, OutputRecord> {
    static final String STAGE = "stream-jobs/latency-rollups";
    static final List<String> KINDS = List.of("device", "queue", "total");
    private final List<Integer> periodSeconds;
    private final long minuteNs;
    private final long idleMs;
    private final long forgetAfterMs;
    private transient MapState<Integer, LatencySpan> spans;
    /** Whether the spans hold windows not sent yet. */
    private transient ValueState<Boolean> unsent;
    private transient Silence silence;
    private transient Counter outOfOrder;

    public LatencyRollups(List<Integer> periodSeconds, long idleMs, long forgetAfterMs) {
        this.periodSeconds = List.copyOf(periodSeconds);
        this.minuteNs = periodSeconds.get(0) * 1_000_000_000L;
        this.idleMs = idleMs;
        this.forgetAfterMs = forgetAfterMs;
    }

    @Override
    public void open(OpenContext openContext) {
        spans = getRuntimeContext().getMapState(new MapStateDescriptor<>(
                "latency-spans", Types.INT, TypeInformation.of(LatencySpan.class)));
        unsent = getRuntimeContext().getState(new ValueStateDescriptor<>("latency-unsent", Types.BOOLEAN));
        silence = new Silence(getRuntimeContext());
        outOfOrder = getRuntimeContext().getMetricGroup().counter("latency_windows_out_of_order_total");
    }

    @Override
    public void processElement(DiskWindow w, Context ctx, Collector<OutputRecord> out) throws Exception {
        silence.heard(ctx.timerService(), idleMs);
        LatencySpan minute = spans.get(periodSeconds.get(0));
        if (minute != null && w.startNs >= minute.startNs + minuteNs) {
            sendUnsent(out);
        }
        for (int seconds : periodSeconds) {
            absorb(w, seconds, ctx);
        }
        if (Boolean.TRUE.equals(unsent.value()) && (Math.floorMod(w.endNs, minuteNs) == 0 || w.lastBeforeSilence)) {
            sendUnsent(out);
        }
    }

    private void absorb(DiskWindow w, int seconds, Context ctx) throws Exception {
        long lengthNs = seconds * 1_000_000_000L;
        long startNs = w.startNs - Math.floorMod(w.startNs, lengthNs);
        LatencySpan span = spans.get(seconds);
        if (span != null && startNs < span.startNs) {
            outOfOrder.inc();
            String reason = "out of order: a " + w.windowSeconds + " s window of " + w.key() + " at " + w.startNs
                    + " came after its " + seconds + " s latency rollup had moved on to " + span.startNs;
            ctx.output(Pipeline.DEAD_LETTERS, DeadLetters.of(STAGE, w.key(), reason, "{}", DeadLetters.wallClockNs()));
            return;
        }
        if (span == null || startNs > span.startNs) {
            LatencySpan next = new LatencySpan(w.host, w.disk, startNs);
            if (seconds == periodSeconds.get(0)) {
                // One timer per disk, at the end of its minute. It fires only with the final
                // watermark of a bounded input: a live disk's windows close its minutes first.
                if (span != null) {
                    ctx.timerService().deleteEventTimeTimer(minuteEndMs(span));
                }
                ctx.timerService().registerEventTimeTimer(minuteEndMs(next));
            }
            span = next;
        }
        span.absorb(w.ops);
        spans.put(seconds, span);
        unsent.update(true);
    }

    private long minuteEndMs(LatencySpan minute) {
        return (minute.startNs + minuteNs) / 1_000_000L - 1;
    }

    private void sendUnsent(Collector<OutputRecord> out) throws Exception {
        if (!Boolean.TRUE.equals(unsent.value())) {
            return;
        }
        for (int seconds : periodSeconds) {
            LatencySpan span = spans.get(seconds);
            if (span != null) {
                send(seconds, span, out);
            }
        }
        unsent.update(false);
    }

    private static void send(int seconds, LatencySpan span, Collector<OutputRecord> out) {
        for (Map.Entry<String, LatencySpan.KernelLatency> op : span.ops.entrySet()) {
            for (String kind : KINDS) {
                Log2Histogram h = op.getValue().kind(kind);
                if (h.count > 0) {
                    out.collect(record(op.getKey(), kind, seconds, span, h, op.getValue().errors));
                }
            }
        }
    }

    static OutputRecord record(String op, String kind, int seconds, LatencySpan span, Log2Histogram h, long errors) {
        ObjectNode r = Json.object();
        r.put("schema", LatencyPeriods.SCHEMA);
        r.put("host", span.host).put("disk", span.disk).put("op", op).put("latency", kind);
        r.put("period_s", seconds).put("period_start_ns", span.startNs).put("revision", span.revision);
        r.putPOJO("buckets_log2_us", h.trimmedBuckets());
        r.put("count", h.count).put("sum_us", h.sumUs).put("max_us", h.maxUs).put("errors", errors);
        return new OutputRecord(LatencyPeriods.SCHEMA, OutputRecord.diskKey(span.host, span.disk), Json.write(r));
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<OutputRecord> out) throws Exception {
        if (ctx.timeDomain() == TimeDomain.EVENT_TIME) {
            sendUnsent(out);
            return;
        }
        long silentMs = silence.silentForMs(ctx.timerService());
        if (silentMs >= idleMs) {
            sendUnsent(out);
        }
        if (silentMs >= forgetAfterMs) {
            LatencySpan minute = spans.get(periodSeconds.get(0));
            if (minute != null) {
                ctx.timerService().deleteEventTimeTimer(minuteEndMs(minute));
            }
            spans.clear();
            unsent.clear();
            silence.clear();
        } else {
            silence.checkAfterLastHeard(ctx.timerService(), silentMs >= idleMs ? forgetAfterMs : idleMs);
        }
    }
}
