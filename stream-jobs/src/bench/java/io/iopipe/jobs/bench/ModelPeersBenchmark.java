package io.iopipe.jobs.bench;

import io.iopipe.jobs.Args;
import io.iopipe.jobs.detect.ShallowReads;
import io.iopipe.jobs.pipeline.CompareModelPeers;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.PipelineTimings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

/**
 * What a model of many flash drives costs the one subtask that judges it. The job keys
 * "flash vs its model" by model ({@link CompareModelPeers}), so every drive of a model is
 * judged on one subtask, whatever the parallelism: a fleet of one model of 10,000 drives
 * sends that subtask one window per drive per 10 s, 1,000 windows a second.
 *
 * Each run judges the same number of windows, one subtask, RocksDB state and incremental
 * checkpoints as the live job has them, for a model of each size given (drives spread over
 * hosts of 8, one in a hundred 4x slower than the rest, so the slow-drive path runs too).
 * Beside them, the same windows through a keyed step that only reads and writes a count per
 * drive in the model's map state: what the source, the shuffle, RocksDB's per-record cost and the job's start
 * cost without the model's comparison. The rounds alternate the order of the runs; each
 * figure is the median of the rounds, with their spread.
 *
 * Options: --drives (comma-separated model sizes, default 100,1000,10000), --windows (per
 * run, default 300000), --rounds (default 3).
 */
public final class ModelPeersBenchmark {
    static final String MODEL = "NVMe-3.84T";
    static final int DRIVES_PER_HOST = 8;
    static final int READS_PER_WINDOW = 24;
    static final int SLOW_ONE_IN = 100;
    static final long WINDOW_NS = PipelineTimings.WINDOW_SECONDS.get(0) * 1_000_000_000L;
    static final long START_NS = 1_763_683_200_000_000_000L;
    static final String NO_COMPARISON = "the keyed step alone: a count per drive, read and written";

    private ModelPeersBenchmark() {}

    public static void main(String[] argv) throws Exception {
        Args args = new Args(argv);
        List<Integer> sizes = new ArrayList<>();
        for (String s : args.get("drives", "100,1000,10000").split(",")) {
            sizes.add(Integer.parseInt(s.trim()));
        }
        long windows = Long.parseLong(args.get("windows", "300000"));
        int rounds = Integer.parseInt(args.get("rounds", "3"));
        slotManagedMemory = StreamBenchmark.slotManagedMemory(args);
        Map<String, List<Double>> seconds = new HashMap<>();
        List<String> runs = new ArrayList<>();
        runs.add(NO_COMPARISON);
        sizes.forEach(n -> runs.add(label(n)));
        for (int round = 1; round <= rounds; round++) {
            for (String run : StreamBenchmark.inRoundOrder(runs, round)) {
                int drives = run.equals(NO_COMPARISON) ? sizes.get(sizes.size() - 1) : sizeOf(run, sizes);
                double s = runSeconds(drives, windows, !run.equals(NO_COMPARISON));
                seconds.computeIfAbsent(run, k -> new ArrayList<>()).add(s);
                StreamBenchmark.say("round %d: %s: %,d windows in %.1f s", round, run, windows, s);
            }
        }
        System.out.println(report(sizes, windows, rounds, seconds));
    }

    static String label(int drives) {
        return String.format(Locale.ROOT, "a model of %,d drives", drives);
    }

    private static int sizeOf(String run, List<Integer> sizes) {
        return sizes.stream().filter(n -> label(n).equals(run)).findFirst().orElseThrow();
    }

    /** Seconds to judge `windows` windows of a model of `drives` drives, start to end of the job. */
    static double runSeconds(int drives, long windows, boolean compare) throws Exception {
        Path checkpoints = Files.createTempDirectory("iopipe-bench-models-");
        try {
            StreamExecutionEnvironment env = environment(checkpoints);
            DataStream<ShallowReads> reads = env.fromSequence(0, windows - 1).map(new DriveWindow(drives)).name("drives' windows");
            DataStream<OutputRecord> judged = compare
                    ? reads.keyBy(r -> r.model).process(new CompareModelPeers()).name("flash vs its model")
                    : reads.keyBy(r -> r.model).process(new OneValuePerDrive()).name(NO_COMPARISON);
            judged.sinkTo(new DiscardingSink<>()).name("discard");
            long start = System.nanoTime();
            env.execute("iopipe bench: model peers");
            return (System.nanoTime() - start) / 1e9;
        } finally {
            StreamBenchmark.deleteTree(checkpoints);
        }
    }

    /** The managed memory (RocksDB's) of a slot of the stack's TaskManagers: the one slot here has as much. */
    private static MemorySize slotManagedMemory;

    /** One subtask with a stack TaskManager's slot's memory, RocksDB and incremental checkpoints at the live job's interval. */
    private static StreamExecutionEnvironment environment(Path checkpoints) {
        Configuration conf = new Configuration();
        conf.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, slotManagedMemory);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        conf.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints.toUri().toString());
        conf.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, true);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, conf);
        env.enableCheckpointing(PipelineTimings.CHECKPOINT_INTERVAL.toMillis());
        return env;
    }

    /** Window i of the run: drive i mod `drives`, its (i / drives)th window, small reads at a shallow queue. */
    static final class DriveWindow implements MapFunction<Long, ShallowReads> {
        private final int drives;

        DriveWindow(int drives) {
            this.drives = drives;
        }

        @Override
        public ShallowReads map(Long i) {
            int drive = (int) (i % drives);
            long startNs = START_NS + (i / drives) * WINDOW_NS;
            double level = drive % SLOW_ONE_IN == SLOW_ONE_IN - 1 ? 4 * 90.0 : 70.0 + (drive * 7919 % 40);
            double[] deviceUs = new double[READS_PER_WINDOW];
            double[] weights = new double[READS_PER_WINDOW];
            for (int k = 0; k < READS_PER_WINDOW; k++) {
                deviceUs[k] = level * (0.8 + 0.4 * ((k * 37 + i) % 101) / 100.0);
                weights[k] = 1000;
            }
            return ShallowReads.of("host-" + drive / DRIVES_PER_HOST, "nvme" + drive % DRIVES_PER_HOST + "n1", MODEL,
                    startNs, startNs + WINDOW_NS, deviceUs, weights);
        }
    }

    /** A keyed step of the same shape without the comparison: each drive's count of windows, in the model's map state. */
    static final class OneValuePerDrive extends KeyedProcessFunction<String, ShallowReads, OutputRecord> {
        private transient MapState<String, Long> seen;

        @Override
        public void open(OpenContext openContext) {
            seen = getRuntimeContext().getMapState(new MapStateDescriptor<>("windows-seen", String.class, Long.class));
        }

        @Override
        public void processElement(ShallowReads r, Context ctx, Collector<OutputRecord> out) throws Exception {
            Long windows = seen.get(r.key());
            seen.put(r.key(), windows == null ? 1 : windows + 1);
        }
    }

    static String report(List<Integer> sizes, long windows, int rounds, Map<String, List<Double>> seconds) {
        double base = StreamBenchmark.median(seconds.get(NO_COMPARISON));
        StringBuilder out = new StringBuilder(String.format(Locale.ROOT,
                "| run (%,d windows of one model, one subtask, RocksDB, checkpoints every %d s) | seconds, median of %d "
                + "(spread) | µs per window beyond the keyed step alone | windows/s over the whole run (the job's start included) |%n|---|---|---|---|%n",
                windows, PipelineTimings.CHECKPOINT_INTERVAL.toSeconds(), rounds));
        out.append(String.format(Locale.ROOT, "| %s (%,d drives) | %.1f (%s) | - | - |%n", NO_COMPARISON,
                sizes.get(sizes.size() - 1), base, spread(seconds.get(NO_COMPARISON))));
        for (int n : sizes) {
            double s = StreamBenchmark.median(seconds.get(label(n)));
            double us = (s - base) * 1e6 / windows;
            out.append(String.format(Locale.ROOT, "| %s | %.1f (%s) | %.1f | %,.0f |%n", label(n), s,
                    spread(seconds.get(label(n))), us, windows / s));
        }
        int largest = sizes.get(sizes.size() - 1);
        double usLargest = (StreamBenchmark.median(seconds.get(label(largest))) - base) * 1e6 / windows;
        double perSecond = largest / (WINDOW_NS / 1e9);
        out.append(String.format(Locale.ROOT, "%nA model of %,d drives sends its subtask %,.0f windows a second (one per "
                + "drive per %d s): %.1f%% of a core for the comparison, beside the keyed step's own cost.%n",
                largest, perSecond, PipelineTimings.WINDOW_SECONDS.get(0), perSecond * usLargest / 1e4));
        return out.toString();
    }

    static String spread(List<Double> values) {
        double lo = values.stream().min(Double::compare).orElseThrow();
        double hi = values.stream().max(Double::compare).orElseThrow();
        return String.format(Locale.ROOT, "%.1f-%.1f", lo, hi);
    }
}
