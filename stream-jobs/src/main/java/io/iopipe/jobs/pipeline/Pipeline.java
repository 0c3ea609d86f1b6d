package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.detect.DiskHealth;
import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.detect.PeerVerdict;
import io.iopipe.jobs.detect.ShallowReads;
import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.LatencyPeriods;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.PipelineTimings;
import io.iopipe.jobs.records.RawRecord;
import io.iopipe.jobs.records.Topics;
import io.iopipe.jobs.records.WindowSample;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.Serializable;
import java.time.Duration;
import java.util.List;
import org.apache.flink.metrics.Counter;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamUtils;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * The job graph, independent of where records come from and go to: the live job
 * wires it between Kafka topics, offline mode between files. Its input is agent records,
 * and windows (io.window.v1) to compare drives with their peers. What it emits comes out
 * of two streams ({@link Outputs}): the agent records it accepted, as they were sent, and
 * everything it made of them (windows, latency rollups, anomalies, health, dead letters),
 * told apart by `schema` and `acceptedInput`.
 */
public final class Pipeline {
    public static final OutputTag<OutputRecord> DEAD_LETTERS = new OutputTag<>("dead-letters") {};
    static final OutputTag<OutputRecord> ACCEPTED = new OutputTag<>("accepted") {};
    static final OutputTag<DiskRecord> LATE_RECORDS = new OutputTag<>("late-records", DiskRecordSerializer.TYPE);
    static final OutputTag<WindowSample> INPUT_WINDOWS = new OutputTag<>("input-windows") {};

    /** Tunables; defaults are what the live job runs with, its timings those of schema/pipeline.json. */
    public static final class Config implements Serializable {
        /**
         * Window lengths. The records are windowed by the first, which the detectors read
         * and which alone keeps the events; the others are rolled up from it, so each is
         * a multiple of the first.
         */
        public List<Integer> windowSeconds = PipelineTimings.WINDOW_SECONDS;
        /** How far behind its latest record a disk's clock stays, for records that overtake each other. */
        public Duration outOfOrderness = PipelineTimings.OUT_OF_ORDERNESS;
        /** How long a disk's clock waits for a kind of record (diskstats, histograms) it stopped hearing. */
        public Duration kindIdleness = PipelineTimings.KIND_IDLENESS;
        /** A disk silent this long on the wall clock has its open windows closed. */
        public Duration diskIdleness = PipelineTimings.DISK_IDLENESS;
        /** A disk silent this long on the wall clock is forgotten, with its state and timers. */
        public Duration diskForgottenAfter = PipelineTimings.DISK_FORGOTTEN_AFTER;
        /**
         * How long after its window closed a late kernel histogram is still counted in the
         * latency rollups; at most their shortest period, so it amends that period or the one before.
         */
        public Duration allowedLateness = PipelineTimings.ALLOWED_LATENESS;
        /** The latency rollups' periods (io.latency.v1), shortest first: each a multiple of the first window length. */
        public List<Integer> latencyPeriodSeconds = LatencyPeriods.seconds();
        /**
         * How long after an hour ends a host's drives are compared over it: the drives keep
         * their own clocks, and one idle for {@link #diskIdleness} still closes its windows late.
         */
        public Duration peerGrace = PipelineTimings.PEER_GRACE;
        /** How long (event time) a disk's windows must say nothing about it before its health steps down a level. */
        public Duration healthRecovery = DiskHealth.DEFAULT_RECOVERY;
        /**
         * The share of the JVM's heap each subtask of the windows may spend keeping what its
         * disks' open records in state are, so that a window closing reads nothing back
         * ({@link DiskWindows}). A TaskManager of four slots spends a quarter of its heap at
         * most so. A disk keeps its records there from the barrier after they came until their
         * window closes: at the fleet's rates (13 parts a second) about 25 KB on average, at
         * most a window and its out-of-orderness of them (15 s, 75 KB).
         */
        public double openRecordsHeapShare = 1.0 / 16;
        /**
         * The file of the fleet's master secret ({@link HostSignatures}): with it, a record
         * is taken only with its host's signature; null takes records unsigned (files,
         * tests). Read where the job runs, so the secret is not in the job graph.
         */
        public String signingSecret;
    }

    private Pipeline() {}

    static boolean isKnownRecord(String schema) {
        return Topics.records().contains(schema);
    }

    /**
     * What the graph emits: the agent records it accepted, as they were sent, apart from
     * everything it made of them (windows, rollups, verdicts, dead letters). The live job
     * writes the accepted ones where they were decoded, chained there, so the largest
     * records it handles cross no shuffle on their way to Kafka.
     */
    public record Outputs(DataStream<OutputRecord> accepted, DataStream<OutputRecord> derived) {
        public DataStream<OutputRecord> all() {
            return derived.union(accepted);
        }
    }

    /** The graph over `input`: the accepted records and the rest, apart. */
    public static Outputs outputs(DataStream<RawRecord> input, Config config) {
        // Longer windows and the latency rollups are summed from the first windows.
        requireMultiplesOfFirstWindow(config.windowSeconds, "window lengths", config);
        requireMultiplesOfFirstWindow(config.latencyPeriodSeconds, "latency rollup periods", config);
        if (config.allowedLateness.isNegative() || config.allowedLateness.toSeconds() > config.latencyPeriodSeconds.get(0)) {
            throw new IllegalArgumentException("allowed lateness " + config.allowedLateness + ": from 0 to the shortest "
                    + "latency rollup period, " + config.latencyPeriodSeconds.get(0) + " s, whose rollups it amends");
        }
        // Chained operators hand records on without copying them: every function here makes
        // new objects for what it emits and never changes what it receives.
        input.getExecutionEnvironment().getConfig().enableObjectReuse();
        SingleOutputStreamOperator<DiskRecord> decoded = input
                .process(new DecodeRecords(config.signingSecret)).returns(DiskRecordSerializer.TYPE)
                .name("decode records").uid("decode-records");
        // No watermarks: each disk keeps its own event-time clock (DiskWindows). The final
        // watermark of a bounded input still closes every window.
        // A side output belongs to the operator that wrote it: keep each process function's
        // own stream to read its dead letters from, not the stream of what follows it.
        // Every disk record through its disk's deltas (a sample made a delta, an interval's
        // histograms with it, the rest as they came), then on to its windows: one path, so a
        // disk's records reach its windows in the order they were read, whatever their kind.
        SingleOutputStreamOperator<DiskRecord> deltas = decoded
                .keyBy(DiskRecord::key)
                .transform("diskstats deltas", DiskRecordSerializer.TYPE, DiskstatsToDeltas.operator(config.diskForgottenAfter.toMillis()))
                .uid("diskstats-deltas");

        DataStream<OutputRecord> out = decoded.getSideOutput(DEAD_LETTERS).union(deltas.getSideOutput(DEAD_LETTERS));
        int base = config.windowSeconds.get(0);
        // The deltas send each record on from its own disk's key: keyed as they are, the
        // windows chain to them, and a record crosses no second shuffle, nor is it serialized
        // again, on its way to its windows.
        SingleOutputStreamOperator<DiskWindow> windowsAndAmendments = DataStreamUtils
                .reinterpretAsKeyedStream(deltas, DiskRecord::key)
                .transform(base + "s windows", DiskWindowSerializer.TYPE, DiskWindows.operator(base, config))
                .uid("windows-" + base + "s");
        // Amendments and revisions travel with the windows, so nothing sees one before its window.
        DataStream<DiskWindow> windows = windowsAndAmendments
                .filter(w -> !w.amendsClosedWindow && w.revision == 0).name(base + "s windows, not amendments")
                .uid("windows-not-amendments");
        // A window closed on silence and sent again whole replaces its earlier copy; only the records carry it.
        DataStream<DiskWindow> windowsAndRevisions = windowsAndAmendments
                .filter(w -> !w.amendsClosedWindow).name(base + "s windows and revisions").uid("windows-and-revisions");
        out = out.union(records(windowsAndRevisions, base),
                windowsAndAmendments.getSideOutput(LATE_RECORDS).map(new LateRecordToDeadLetter(base, config.allowedLateness))
                        .name("late records").uid("late-records"),
                detectors(windows, decoded.getSideOutput(INPUT_WINDOWS), config),
                latencyRollups(windowsAndAmendments.filter(w -> w.revision == 0).name(base + "s windows and amendments")
                        .uid("windows-and-amendments"), config));
        for (int seconds : config.windowSeconds.subList(1, config.windowSeconds.size())) {
            SingleOutputStreamOperator<DiskWindow> longer = sameDisk(windows)
                    .transform(seconds + "s windows", DiskWindowSerializer.TYPE,
                            RollUpWindows.operator(seconds, config.diskIdleness.toMillis(), config.diskForgottenAfter.toMillis()))
                    .uid("windows-" + seconds + "s");
            out = out.union(records(longer, seconds), longer.getSideOutput(DEAD_LETTERS));
        }
        return new Outputs(decoded.getSideOutput(ACCEPTED), out);
    }

    /**
     * The per-disk detectors and the comparisons of each drive with its peers: per host, over
     * the same windows (and over windows given as input); per model of flash drive, over their
     * shallow reads. The comparisons' verdicts join each disk's health.
     */
    private static DataStream<OutputRecord> detectors(DataStream<DiskWindow> windows, DataStream<WindowSample> inputWindows,
                                                      Config config) {
        SingleOutputStreamOperator<OutputRecord> peers = windows
                .filter(DiskWindow::hasIostat).name("windows with iostat").uid("windows-with-iostat")
                .map(DiskWindow::throughputAndLatency).returns(WindowSample.class).name("throughput and latency")
                .uid("throughput-and-latency")
                .union(inputWindows)
                .keyBy(WindowSample::peersKey)
                .process(new ComparePeers(config.peerGrace.toNanos()))
                .name("slow vs peers").uid("slow-vs-peers");
        SingleOutputStreamOperator<OutputRecord> models = windows
                .flatMap((DiskWindow w, Collector<ShallowReads> c) -> w.shallowReads().ifPresent(c::collect))
                .returns(ShallowReads.class).name("shallow reads of flash").uid("shallow-reads")
                .keyBy(r -> r.model)
                .process(new CompareModelPeers())
                .name("flash vs its model").uid("flash-vs-model");
        DataStream<PeerVerdict> verdicts = peers.getSideOutput(ComparePeers.VERDICTS)
                .union(models.getSideOutput(CompareModelPeers.VERDICTS));
        DataStream<OutputRecord> perDisk = windows.keyBy(DiskWindow::key)
                .connect(verdicts.keyBy(PeerVerdict::key))
                .process(new DetectAnomalies(config.diskForgottenAfter.toMillis(), config.healthRecovery.toNanos()))
                .name("detectors").uid("detectors");
        return perDisk.union(peers, models);
    }

    private static void requireMultiplesOfFirstWindow(List<Integer> seconds, String what, Config config) {
        int first = config.windowSeconds.get(0);
        if (seconds.stream().anyMatch(s -> s <= 0 || s % first != 0)) {
            throw new IllegalArgumentException(what + " " + seconds + " s: each must be a positive multiple of the first "
                    + "window length, " + first + " s, which they are summed from");
        }
    }

    /**
     * A disk's windows, keyed by their disk as they already are: each comes out of its disk's
     * first windows, so the longer windows and the latency rollups chain to them, and a window
     * is neither serialized nor handed to another thread on its way there (its events and all).
     */
    private static KeyedStream<DiskWindow, String> sameDisk(DataStream<DiskWindow> windows) {
        return DataStreamUtils.reinterpretAsKeyedStream(windows, DiskWindow::key);
    }

    private static DataStream<OutputRecord> latencyRollups(DataStream<DiskWindow> windows, Config config) {
        SingleOutputStreamOperator<OutputRecord> rollups = sameDisk(windows)
                .transform("latency rollups", TypeInformation.of(OutputRecord.class), LatencyRollups.operator(
                        config.latencyPeriodSeconds, config.diskIdleness.toMillis(), config.diskForgottenAfter.toMillis()))
                .uid("latency-rollups");
        return rollups.union(rollups.getSideOutput(DEAD_LETTERS));
    }

    private static DataStream<OutputRecord> records(DataStream<DiskWindow> windows, int seconds) {
        return windows
                .flatMap((DiskWindow w, Collector<OutputRecord> c) -> WindowRecord.of(w).ifPresent(c::collect))
                .returns(OutputRecord.class)
                .name(seconds + "s window records").uid("window-records-" + seconds + "s");
    }

    /** A late record is counted and kept as a dead letter: late data is never dropped silently. */
    static final class LateRecordToDeadLetter extends RichMapFunction<DiskRecord, OutputRecord> {
        private final int windowSeconds;
        private final long allowedLatenessS;
        private transient Counter late;

        LateRecordToDeadLetter(int windowSeconds, Duration allowedLateness) {
            this.windowSeconds = windowSeconds;
            this.allowedLatenessS = allowedLateness.toSeconds();
        }

        @Override
        public void open(OpenContext openContext) {
            late = getRuntimeContext().getMetricGroup().counter("records_late_total");
        }

        @Override
        public OutputRecord map(DiskRecord r) {
            late.inc();
            String reason = "late: the " + windowSeconds + " s window holding this " + r.describe() + " had already closed"
                    + (r.hist == null ? "" : " (if it closed within " + allowedLatenessS + " s, the latency rollups count it)");
            ObjectNode raw = Json.object();
            raw.put("host", r.host).put("disk", r.disk).put("ts_ns", r.tsNs);
            return DeadLetters.of("stream-jobs/windows", r.key(), reason, Json.write(raw), DeadLetters.wallClockNs());
        }
    }
}
