package io.iopipe.jobs.pipeline;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.detect.Log2Histogram;
import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.LatencyPeriods;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.RecordSchema;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.TimeDomain;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * io.latency.v1: per disk, op and latency kind, the kernel's histograms summed over
 * each minute, hour and day, from the disk's windows. The windows already count each
 * kernel histogram once however often Kafka redelivered it, so a rollup is exact; its
 * revision is how many of those histograms it sums, so a store that keeps the highest
 * revision of each period stays exact when the job replays from a checkpoint (which may
 * cut the same histograms into other windows and amendments) or a sink sends twice.
 *
 * <p>Each minute, when it closes, sends itself and the hour and day it belongs to, with
 * everything so far: the current hour and day are always there, a minute behind. A
 * minute closes with its last window, with a window of a later minute, with the last
 * window before its disk fell silent, or when no window came for {@code idleMs} of wall
 * clock (the disk's clock may have closed its last window before it fell silent); if the
 * disk resumes within it, the minute is sent again with more and a higher revision.
 *
 * <p>An amendment (kernel histograms that came after their window closed, see {@link
 * DiskWindows}) is added to its periods, the current ones or the ones just before, which
 * are then sent again with a higher revision at the next send. A disk silent for {@code
 * forgetAfterMs} of wall clock is forgotten. Its silence watch stays on the heap ({@link
 * HeldValue}), written at snapshots.
 */
public final class LatencyRollups extends KeyedProcessFunction<String, DiskWindow, OutputRecord>
        implements WritingBack.Function {
    static final String STAGE = "stream-jobs/latency-rollups";
    /** The latency kinds a rollup is of, in the schema's order. */
    static final List<String> KINDS = List.copyOf(RecordSchema.of(LatencyPeriods.SCHEMA).allowed("latency"));
    private final List<Integer> periodSeconds;
    private final long minuteNs;
    private final long idleMs;
    private final long forgetAfterMs;
    /** Per period length, the current period. */
    private transient MapState<Integer, LatencySpan> spans;
    /** Per period length, the period before the current one: late histograms may still amend it. */
    private transient MapState<Integer, LatencySpan> earlier;
    private transient HeldValue<Long> lastHeardMs;
    private transient HeldValue<Long> checkAtMs;
    private transient Silence silence;
    private transient Counter outOfOrder;

    /** The operator that rolls up latencies over `periodSeconds`: it writes back what it holds on the heap. */
    public static WritingBack<DiskWindow, OutputRecord> operator(List<Integer> periodSeconds, long idleMs, long forgetAfterMs) {
        return new WritingBack<>(new LatencyRollups(periodSeconds, idleMs, forgetAfterMs));
    }

    private LatencyRollups(List<Integer> periodSeconds, long idleMs, long forgetAfterMs) {
        this.periodSeconds = List.copyOf(periodSeconds);
        this.minuteNs = periodSeconds.get(0) * 1_000_000_000L;
        this.idleMs = idleMs;
        this.forgetAfterMs = forgetAfterMs;
    }

    @Override
    public void open(OpenContext openContext) {
        spans = getRuntimeContext().getMapState(new MapStateDescriptor<>(
                "latency-spans", Types.INT, TypeInformation.of(LatencySpan.class)));
        earlier = getRuntimeContext().getMapState(new MapStateDescriptor<>(
                "latency-earlier-spans", Types.INT, TypeInformation.of(LatencySpan.class)));
        lastHeardMs = HeldValue.in(getRuntimeContext(), Silence.lastHeardState());
        checkAtMs = HeldValue.in(getRuntimeContext(), Silence.checkAtState());
        silence = new Silence(lastHeardMs, checkAtMs);
        outOfOrder = getRuntimeContext().getMetricGroup().counter("latency_windows_out_of_order_total");
    }

    @Override
    public void writeBack(WritingBack.KeySetter toKey) throws Exception {
        HeldValue.writeBack(toKey, lastHeardMs, checkAtMs);
    }

    /** Points the held state at the disk being taken. */
    private void atDisk(String key) {
        lastHeardMs.of(key);
        checkAtMs.of(key);
    }

    @Override
    public void processElement(DiskWindow w, Context ctx, Collector<OutputRecord> out) throws Exception {
        atDisk(ctx.getCurrentKey());
        silence.heard(ctx.timerService(), idleMs);
        if (w.amendsClosedWindow) {
            amend(w, ctx);
            return;
        }
        LatencySpan minute = spans.get(periodSeconds.get(0));
        if (minute != null && w.startNs >= minute.startNs + minuteNs) {
            sendUnsent(out);
        }
        for (int seconds : periodSeconds) {
            absorb(w, seconds, ctx);
        }
        if (Math.floorMod(w.endNs, minuteNs) == 0 || w.lastBeforeSilence) {
            sendUnsent(out);
        }
    }

    private static long periodStartNs(long ns, int seconds) {
        return ns - Math.floorMod(ns, seconds * 1_000_000_000L);
    }

    private void absorb(DiskWindow w, int seconds, Context ctx) throws Exception {
        long startNs = periodStartNs(w.startNs, seconds);
        LatencySpan span = spans.get(seconds);
        if (span != null && startNs < span.startNs) {
            outOfOrder.inc();
            deadLetter(w, "out of order: a " + w.windowSeconds + " s window of " + w.key() + " at " + w.startNs
                    + " came after its " + seconds + " s latency rollup had moved on to " + span.startNs, ctx);
            return;
        }
        if (span == null || startNs > span.startNs) {
            LatencySpan next = new LatencySpan(w.host, w.disk, startNs);
            if (span != null) {
                earlier.put(seconds, span);
            }
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
    }

    /** Adds late histograms to each period they fall in, if every one of them is still held. */
    private void amend(DiskWindow w, Context ctx) throws Exception {
        List<MapState<Integer, LatencySpan>> holders = new ArrayList<>();
        for (int seconds : periodSeconds) {
            long startNs = periodStartNs(w.startNs, seconds);
            MapState<Integer, LatencySpan> holder = holds(spans, seconds, startNs) ? spans
                    : holds(earlier, seconds, startNs) ? earlier : null;
            if (holder == null) {
                outOfOrder.inc();
                deadLetter(w, "too late: histograms of " + w.key() + " for its " + w.windowSeconds + " s window at "
                        + w.startNs + " came after its " + seconds + " s latency rollup had moved on", ctx);
                return;
            }
            holders.add(holder);
        }
        for (int i = 0; i < periodSeconds.size(); i++) {
            LatencySpan span = holders.get(i).get(periodSeconds.get(i));
            span.absorb(w.ops);
            holders.get(i).put(periodSeconds.get(i), span);
        }
    }

    private static boolean holds(MapState<Integer, LatencySpan> spans, int seconds, long startNs) throws Exception {
        LatencySpan span = spans.get(seconds);
        return span != null && span.startNs == startNs;
    }

    private static void deadLetter(DiskWindow w, String reason, Context ctx) {
        ctx.output(Pipeline.DEAD_LETTERS, DeadLetters.of(STAGE, w.key(), reason, "{}", DeadLetters.wallClockNs()));
    }

    private long minuteEndMs(LatencySpan minute) {
        return (minute.startNs + minuteNs) / 1_000_000L - 1;
    }

    private void sendUnsent(Collector<OutputRecord> out) throws Exception {
        for (int seconds : periodSeconds) {
            for (MapState<Integer, LatencySpan> held : List.of(earlier, spans)) {
                LatencySpan span = held.get(seconds);
                if (span != null && span.unsent) {
                    send(seconds, span, out);
                    span.unsent = false;
                    held.put(seconds, span);
                }
            }
        }
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
        atDisk(ctx.getCurrentKey());
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
            earlier.clear();
            silence.clear();
        } else {
            silence.checkAfterLastHeard(ctx.timerService(), silentMs >= idleMs ? forgetAfterMs : idleMs);
        }
    }
}
