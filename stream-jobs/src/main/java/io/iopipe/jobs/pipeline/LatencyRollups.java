package io.iopipe.jobs.pipeline;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.detect.Log2Histogram;
import io.iopipe.jobs.detect.OpLatency;
import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.LatencyPeriods;
import io.iopipe.jobs.records.OutputRecord;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * io.latency.v1: per disk, op and latency kind, the kernel's histograms summed over
 * each minute, hour and day, from the disk's 1 min windows. The windows already count
 * each kernel histogram once however often Kafka redelivered it, so a rollup is exact;
 * a store that keeps the highest revision of each period stays exact when the job
 * replays from a checkpoint or a sink sends twice (each send is the same record).
 *
 * <p>Every window re-sends each open period with everything so far: the current hour
 * and day are always there, a minute later at most. A period ends when a window of a
 * later one arrives; a disk silent for {@code forgetAfterMs} of wall clock is forgotten.
 */
public class LatencyRollups extends KeyedProcessFunction<String, DiskWindow, OutputRecord> {
    static final String STAGE = "stream-jobs/latency-rollups";
    static final List<String> KINDS = List.of("device", "queue", "total");
    private final List<Integer> periodSeconds;
    private final long forgetAfterMs;
    private transient MapState<Integer, LatencySpan> spans;
    private transient Silence silence;
    private transient Counter outOfOrder;

    public LatencyRollups(List<Integer> periodSeconds, long forgetAfterMs) {
        this.periodSeconds = List.copyOf(periodSeconds);
        this.forgetAfterMs = forgetAfterMs;
    }

    @Override
    public void open(OpenContext openContext) {
        spans = getRuntimeContext().getMapState(new MapStateDescriptor<>(
                "latency-spans", Types.INT, TypeInformation.of(LatencySpan.class)));
        silence = new Silence(getRuntimeContext());
        outOfOrder = getRuntimeContext().getMetricGroup().counter("latency_windows_out_of_order_total");
    }

    @Override
    public void processElement(DiskWindow w, Context ctx, Collector<OutputRecord> out) throws Exception {
        silence.heard(ctx.timerService(), forgetAfterMs);
        for (int seconds : periodSeconds) {
            long lengthNs = seconds * 1_000_000_000L;
            long startNs = w.startNs - Math.floorMod(w.startNs, lengthNs);
            LatencySpan span = spans.get(seconds);
            if (span != null && startNs < span.startNs) {
                outOfOrder.inc();
                String reason = "out of order: a " + w.windowSeconds + " s window of " + w.key() + " at " + w.startNs
                        + " came after its " + seconds + " s latency rollup had moved on to " + span.startNs;
                ctx.output(Pipeline.DEAD_LETTERS, DeadLetters.of(STAGE, w.key(), reason, "{}", DeadLetters.wallClockNs()));
                continue;
            }
            if (span == null || startNs > span.startNs) {
                span = new LatencySpan(startNs);
            }
            span.absorb(w.ops);
            spans.put(seconds, span);
            emit(w, seconds, span, out);
        }
    }

    private static void emit(DiskWindow w, int seconds, LatencySpan span, Collector<OutputRecord> out) {
        for (Map.Entry<String, OpLatency> op : span.ops.entrySet()) {
            for (String kind : KINDS) {
                Log2Histogram h = LatencySpan.kind(op.getValue(), kind);
                if (h.count > 0) {
                    out.collect(record(w, op.getKey(), kind, seconds, span, h, op.getValue().errors));
                }
            }
        }
    }

    static OutputRecord record(DiskWindow w, String op, String kind, int seconds, LatencySpan span, Log2Histogram h, long errors) {
        ObjectNode r = Json.object();
        r.put("schema", LatencyPeriods.SCHEMA);
        r.put("host", w.host).put("disk", w.disk).put("op", op).put("latency", kind);
        r.put("period_s", seconds).put("period_start_ns", span.startNs).put("revision", span.revision);
        r.putPOJO("buckets_log2_us", h.trimmedBuckets());
        r.put("count", h.count).put("sum_us", h.sumUs).put("max_us", h.maxUs).put("errors", errors);
        return new OutputRecord(LatencyPeriods.SCHEMA, w.key(), Json.write(r));
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<OutputRecord> out) throws Exception {
        if (silence.silentForMs(ctx.timerService()) >= forgetAfterMs) {
            spans.clear();
            silence.clear();
        } else {
            silence.checkAfterLastHeard(ctx.timerService(), forgetAfterMs);
        }
    }
}
