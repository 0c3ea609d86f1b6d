package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.iostat.DiskstatsDelta;
import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.RawRecord;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.Serializable;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.metrics.Counter;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.util.OutputTag;

/**
 * The job graph, independent of where records come from and go to: the live job
 * wires it between Kafka topics, offline mode between files. Everything it emits
 * (windows, dead letters) comes out of one stream, told apart by `schema`.
 */
public final class Pipeline {
    public static final OutputTag<OutputRecord> DEAD_LETTERS = new OutputTag<>("dead-letters") {};
    static final OutputTag<DiskstatsDelta> LATE_DELTAS = new OutputTag<>("late-deltas") {};
    private static final Set<String> KNOWN_RECORDS = Set.of(
            "io.event.v1", "io.hist.v1", "io.diskstats.v1", "io.window.v1",
            "io.anomaly.v1", "io.health.v1", "io.deadletter.v1");

    /** Tunables; defaults are what the live job runs with. */
    public static final class Config implements Serializable {
        public List<Integer> windowSeconds = List.of(10);
        public Duration outOfOrderness = Duration.ofSeconds(5);
        public Duration sourceIdleness = Duration.ofMinutes(1);
        public Duration diskForgottenAfter = Duration.ofMinutes(10);
    }

    private Pipeline() {}

    static boolean isKnownRecord(String schema) {
        return KNOWN_RECORDS.contains(schema);
    }

    public static DataStream<OutputRecord> build(DataStream<RawRecord> input, Config config) {
        SingleOutputStreamOperator<DiskstatsSample> samples = input
                .process(new DecodeRecords()).name("decode records").uid("decode-records");
        SingleOutputStreamOperator<DiskstatsDelta> deltas = samples
                .assignTimestampsAndWatermarks(WatermarkStrategy
                        .<DiskstatsSample>forBoundedOutOfOrderness(config.outOfOrderness)
                        .withTimestampAssigner((sample, previous) -> sample.tsNs / 1_000_000L)
                        .withIdleness(config.sourceIdleness))
                .name("event time").uid("event-time")
                .keyBy(DiskstatsSample::key)
                .process(new DiskstatsToDeltas(config.diskForgottenAfter.toMillis()))
                .name("diskstats deltas").uid("diskstats-deltas");

        DataStream<OutputRecord> out = samples.getSideOutput(DEAD_LETTERS).union(deltas.getSideOutput(DEAD_LETTERS));
        for (int seconds : config.windowSeconds) {
            SingleOutputStreamOperator<OutputRecord> windows = deltas
                    .keyBy(DiskstatsDelta::key)
                    .window(TumblingEventTimeWindows.of(Duration.ofSeconds(seconds)))
                    .sideOutputLateData(LATE_DELTAS)
                    .aggregate(new IostatWindowFunctions.SumDeltas(), new IostatWindowFunctions.EmitWindow(seconds))
                    .name("iostat " + seconds + "s windows").uid("iostat-windows-" + seconds + "s");
            DataStream<OutputRecord> late = windows.getSideOutput(LATE_DELTAS)
                    .map(new LateDeltaToDeadLetter(seconds))
                    .name("late " + seconds + "s deltas").uid("late-deltas-" + seconds + "s");
            out = out.union(windows, late);
        }
        return out;
    }

    /** A late delta is counted and kept as a dead letter: late data is never dropped silently. */
    static final class LateDeltaToDeadLetter extends RichMapFunction<DiskstatsDelta, OutputRecord> {
        private final int windowSeconds;
        private transient Counter late;

        LateDeltaToDeadLetter(int windowSeconds) {
            this.windowSeconds = windowSeconds;
        }

        @Override
        public void open(OpenContext openContext) {
            late = getRuntimeContext().getMetricGroup().counter("deltas_late_total");
        }

        @Override
        public OutputRecord map(DiskstatsDelta d) {
            late.inc();
            String reason = "late: the " + windowSeconds + " s window holding ts_ns " + d.endNs + " had already closed";
            ObjectNode raw = Json.object();
            raw.put("host", d.host).put("disk", d.disk).put("start_ns", d.startNs).put("end_ns", d.endNs);
            return DeadLetters.of("stream-jobs/iostat-window", d.key(), reason, Json.write(raw), DeadLetters.wallClockNs());
        }
    }
}
