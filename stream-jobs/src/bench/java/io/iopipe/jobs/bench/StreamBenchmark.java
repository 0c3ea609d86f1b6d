package io.iopipe.jobs.bench;

import io.iopipe.jobs.detect.DiskDetector;
import io.iopipe.jobs.detect.DiskHistory;
import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.io.KafkaClientConfig;
import io.iopipe.jobs.io.KafkaIo;
import io.iopipe.jobs.iostat.DiskstatsDelta;
import io.iopipe.jobs.iostat.IostatWindow;
import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.LatencyPeriods;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.pipeline.LatencySpan;
import io.iopipe.jobs.pipeline.DiskRecord;
import io.iopipe.jobs.pipeline.DiskRecordSerializer;
import io.iopipe.jobs.pipeline.Pipeline;
import io.iopipe.jobs.pipeline.DiskClock;
import io.iopipe.jobs.pipeline.WindowFunctions;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.EventBatch;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.HostSignatures;
import io.iopipe.jobs.records.IntervalRecord;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.PipelineTimings;
import io.iopipe.jobs.records.RawRecord;
import io.iopipe.jobs.records.RecordDecoder;
import io.iopipe.jobs.Args;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToLongFunction;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessUtils;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Throughput of the whole job graph against a plain Kafka consumer, over the same topic
 * in the same run, and the keyed state a disk costs.
 *
 * A fleet's records go into a fresh topic: the first --seconds of a {@link TemplateFleet}'s,
 * template disks of iopipe/synthetic/fleet.py copied onto --disks disks, each record signed
 * by its host as the agents sign theirs ({@link HostSignatures}, with a master secret made
 * for the run). Each round, a plain consumer reads them all (bytes, nothing else done),
 * then the live job's graph (decode, diskstats deltas, 10 s and 1 min windows, detectors)
 * reads them as a bounded Kafka source on a local cluster of PARALLELISM slots four times
 * ({@link Deployment}): as the live job runs (RocksDB, checkpoints, the Kafka sink,
 * signatures checked), the same without writing its accepted records again, and the graph
 * alone checking signatures and taking records unsigned,
 * in an order that changes every round. Running them all in every round lets a burst of
 * load on the machine hit them alike. Each rate is records over the time from the first
 * record read to the last output. Then the job as it runs over a smaller fleet with and
 * without its first disk flight-recording, and once more under Flight Recorder for where
 * its CPU goes ({@link CpuProfile}). The keyed state a disk costs is measured on each
 * template disk's records, all the template file holds. Each part of the report is written
 * as soon as it is measured.
 *
 * Options: --brokers, --kafka-config (optional: how to connect, {@link KafkaClientConfig}),
 * the fleet's ({@link TemplateFleet}), --seconds (of the fleet's records), --rounds (default
 * 5), --recording-fleet-disks (default 1000), --recorded-per-second (default 1000),
 * --recording-rounds (default 3), --recording-templates (the recording fleet's template file:
 * its disks' records one by one, the most records their I/O makes), --out (results file),
 * --taskmanager-process-size and --taskmanager-slots (the stack's TaskManagers: each slot of the
 * local cluster gets the managed memory one of theirs has),
 * --profile-out (the profile's file), --profile-recording (where to keep the profile's Flight
 * Recorder recording, for `jfr print` or JDK Mission Control; else it is deleted), --broker-cpu (the broker container's cgroup CPU account,
 * for the profile), --profile-only yes (only the warm-up and the profile), --state-only yes (only the state per disk: no Kafka).
 */
public final class StreamBenchmark {
    static final int PARALLELISM = 2;
    static final int PARTITIONS = 2;
    /** The detectors' window, as the live job runs it. */
    static final long WINDOW_NS = PipelineTimings.WINDOW_SECONDS.get(0) * 1_000_000_000L;
    static final long WINDOW_MS = WINDOW_NS / 1_000_000L;
    /** How many detectors' windows a longer window is summed from. */
    static final long PARTS_OF_LONGER_WINDOW = PipelineTimings.WINDOW_SECONDS.get(1) / PipelineTimings.WINDOW_SECONDS.get(0);
    /** The windows a disk's closed-histogram record stays for: those within the allowed lateness, and the open one. */
    static final long WINDOWS_REMEMBERING_HISTOGRAMS = PipelineTimings.ALLOWED_LATENESS.toNanos() / WINDOW_NS + 1;

    private StreamBenchmark() {}

    public static void main(String[] argv) throws Exception {
        Args args = new Args(argv);
        String brokers = args.get("brokers", "127.0.0.1:9092");
        KafkaClientConfig kafka = KafkaClientConfig.of(args);
        TemplateFleet fleet = TemplateFleet.of(args);
        int seconds = Integer.parseInt(args.required("seconds"));
        int rounds = Integer.parseInt(args.get("rounds", "5"));
        int recordedPerSecond = Integer.parseInt(args.get("recorded-per-second", "1000"));
        int recordingRounds = Integer.parseInt(args.get("recording-rounds", "3"));
        String topic = "iopipe-bench-" + Long.toHexString(System.nanoTime());
        Path masterSecret = writeMasterSecret(Path.of(System.getProperty("java.io.tmpdir")));
        Path out = args.has("out") ? Path.of(args.get("out", "")) : null;
        Path profileOut = args.has("profile-out") ? Path.of(args.get("profile-out", "")) : null;
        slotManagedMemory = slotManagedMemory(args);
        if (args.has("state-only")) {
            System.out.println(stateReport(statePerDisk(fleet)));
            return;
        }
        try {
            HostSignatures signatures = HostSignatures.fromFile(masterSecret);
            Produced produced = produce(brokers, kafka, topic, fleet, seconds, signatures);
            int warmUps;
            try (jdk.jfr.Recording unread = CpuProfile.samplingRecording()) {  // the JVM's first recording sets the JIT to work
                warmUps = warmUp(brokers, kafka, topic, produced.records(), masterSecret);
            }
            if (args.has("profile-only")) {
                write(profileOut, profileAsRun(brokers, kafka, topic, produced, fleet.disks(), seconds, masterSecret,
                        brokerCpu(args), profileRecording(args)));
                return;
            }
            Rates rates = measure(brokers, kafka, topic, produced.records(), rounds, masterSecret);
            String report = report(fleet, seconds, produced, rates, statePerDisk(fleet), warmUps)
                    + rerun(fleet.disks(), seconds, rounds);
            write(out, report);
            TemplateFleet recordingFleet = TemplateFleet.of(args, "recording-templates")
                    .withDisks(Integer.parseInt(args.get("recording-fleet-disks", "1000")));
            Produced quiet = produce(brokers, kafka, topic + "-quiet", recordingFleet, seconds, signatures);
            Produced oneRecording = produce(brokers, kafka, topic + "-recording", recordingFleet, seconds, signatures,
                    recordedPerSecond);
            report += recordingReport(recordingFleet.disks(), recordedPerSecond,
                    measureRecording(brokers, kafka, topic, quiet, oneRecording, recordingRounds, masterSecret));
            write(out, report);
            write(profileOut, profileAsRun(brokers, kafka, topic, produced, fleet.disks(), seconds, masterSecret,
                    brokerCpu(args), profileRecording(args)));
        } finally {
            Files.deleteIfExists(masterSecret);
        }
    }

    /** The report so far, printed and written to `out` (if any): a later part that fails loses no earlier one. */
    private static void write(Path out, String report) throws IOException {
        System.out.println(report);
        if (out != null) {
            Files.writeString(out, report);
            say("wrote %s", out);
        }
    }

    /**
     * Runs not measured, the job as it runs and the graph alone in turn, for at least
     * {@link #WARM_UP} and one of each: the rounds after them all start on a JIT they warmed
     * up, on the paths of each (RocksDB's calls and the Kafka sink's; the heap state's).
     * Timed rather than counted: the JIT takes about as long whatever the topic holds, and a
     * topic of batched records is read in seconds, before C2 has compiled what the job runs.
     * Returns how many ran.
     */
    private static int warmUp(String brokers, KafkaClientConfig kafka, String topic, long records, Path masterSecret)
            throws Exception {
        long until = System.nanoTime() + WARM_UP.toNanos();
        int runs = 0;
        do {
            Deployment deployment = runs % 2 == 0 ? Deployment.AS_RUN : Deployment.GRAPH_ALONE;
            runs++;
            say("warming up: %s over the topic, run %d (for %d s in all)",
                    deployment == Deployment.AS_RUN ? "the job as it runs" : "the graph alone", runs, WARM_UP.toSeconds());
            jobRate(brokers, kafka, topic, records, checkingSignatures(masterSecret), deployment);
        } while (runs < 2 || System.nanoTime() < until);
        return runs;
    }

    /** How long the job runs before any run is measured. */
    static final Duration WARM_UP = Duration.ofSeconds(120);

    static void say(String format, Object... values) {
        System.err.printf("[bench] " + format + "%n", values);
    }

    static final String PLAIN_CONSUMER = "plain KafkaConsumer";
    static final String JOB_AS_RUN = "the job as it runs: RocksDB, checkpoints, Kafka sink, host signatures checked";
    static final String ACCEPTED_NOT_WRITTEN = "the job as it runs, its accepted records not written again";
    static final String CHECKED_JOB_GRAPH = "job graph alone (heap state, outputs discarded), host signatures checked";
    static final String JOB_GRAPH = "job graph alone, records taken unsigned";

    /** Records per second of each reader, one per round; the checkpoints the job as it runs completed in each. */
    record Rates(List<Double> plain, List<Double> asRun, List<Double> acceptedNotWritten, List<Double> checked,
                 List<Double> job, List<Long> checkpoints) {
        Rates() {
            this(new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(),
                    new ArrayList<>());
        }
    }

    /**
     * Where the job graph keeps its state and what becomes of its outputs: as the live job
     * runs (the cluster's RocksDB with incremental checkpoints, infra/flink/start-flink.sh;
     * LiveJob's checkpoint interval and Kafka sink); the same with its accepted records
     * discarded, not written to the accepted topics again (what ClickHouse's raw tables read:
     * what that second write costs); or the graph alone.
     */
    enum Deployment {
        AS_RUN, AS_RUN_ACCEPTED_NOT_WRITTEN, GRAPH_ALONE;

        /** State in RocksDB, checkpoints on, as the live job runs. */
        boolean checkpointed() {
            return this != GRAPH_ALONE;
        }
    }

    /** One way of running the job graph, and its rate in each round. */
    private record JobRun(String reader, Pipeline.Config config, Deployment deployment, List<Double> rates) {}

    /** The live job's configuration given the master secret's file: it checks every record's signature. */
    private static Pipeline.Config checkingSignatures(Path masterSecret) {
        Pipeline.Config checked = new Pipeline.Config();
        checked.signingSecret = masterSecret.toString();
        return checked;
    }

    /** Every reader over the whole topic, each round; the checked run is given the master secret's file. */
    static Rates measure(String brokers, KafkaClientConfig kafka, String topic, long records, int rounds, Path masterSecret)
            throws Exception {
        Rates rates = new Rates();
        Pipeline.Config checked = checkingSignatures(masterSecret);
        List<JobRun> jobRuns = List.of(new JobRun(JOB_AS_RUN, checked, Deployment.AS_RUN, rates.asRun()),
                new JobRun(ACCEPTED_NOT_WRITTEN, checked, Deployment.AS_RUN_ACCEPTED_NOT_WRITTEN, rates.acceptedNotWritten()),
                new JobRun(CHECKED_JOB_GRAPH, checked, Deployment.GRAPH_ALONE, rates.checked()),
                new JobRun(JOB_GRAPH, new Pipeline.Config(), Deployment.GRAPH_ALONE, rates.job()));
        for (int round = 1; round <= rounds; round++) {
            rates.plain().add(plainConsumerRate(brokers, kafka, topic, records));
            say("round %d: %s %,.0f records/s", round, PLAIN_CONSUMER, last(rates.plain()));
            for (JobRun run : inRoundOrder(jobRuns, round)) {
                run.rates().add(jobRate(brokers, kafka, topic, records, run.config(), run.deployment()));
                say("round %d: %s %,.0f records/s", round, run.reader(), last(run.rates()));
                if (run.deployment() == Deployment.AS_RUN) {
                    rates.checkpoints().add(CHECKPOINTS.get());
                }
            }
        }
        return rates;
    }

    /**
     * The machine's CPU model, as " of model" (" of AMD EPYC"), or nothing where the kernel
     * does not say: machines of one size differ in speed, so figures of two are compared as
     * ratios measured side by side, never across them.
     */
    static String cpuModel() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    return " of " + line.substring(line.indexOf(':') + 1).trim();
                }
            }
        } catch (IOException e) {
            // No model to name.
        }
        return "";
    }

    /** The broker container's cgroup CPU account, if given (--broker-cpu): its CPU is the machine's too. */
    private static Path brokerCpu(Args args) {
        return args.has("broker-cpu") ? Path.of(args.get("broker-cpu", "")) : null;
    }

    private static Path profileRecording(Args args) {
        return args.has("profile-recording") ? Path.of(args.get("profile-recording", "")) : null;
    }

    /**
     * Where the job as it runs spends its CPU over the whole topic once more: its threads'
     * and the broker's CPU time ({@link ThreadCpu}), and its tasks' Java code sampled by
     * Flight Recorder ({@link CpuProfile}); the recording is kept at `keptRecording` where given.
     */
    static String profileAsRun(String brokers, KafkaClientConfig kafka, String topic, Produced produced, int disks,
                               int seconds, Path masterSecret, Path brokerCpu, Path keptRecording) throws Exception {
        long records = produced.records();
        Pipeline.Config checked = checkingSignatures(masterSecret);
        Path jfr = Files.createTempFile("iopipe-bench-", ".jfr");
        try {
            say("profiling the job as it runs");
            double[] rate = new double[1];
            ThreadCpu[] threads = new ThreadCpu[1];
            CpuProfile profile = CpuProfile.recording(jfr, () -> threads[0] = ThreadCpu.sampling(brokerCpu,
                    () -> rate[0] = jobRate(brokers, kafka, topic, records, checked, Deployment.AS_RUN)),
                    () -> new long[] {FIRST_RECORD_EPOCH_MS.get(), LAST_OUTPUT_EPOCH_MS.get()});
            ThreadCpu.Window cpu = threads[0].between(FIRST_RECORD_EPOCH_MS.get(), LAST_OUTPUT_EPOCH_MS.get());
            double diskSecondsPerS = rate[0] / recordsPerDiskSecond(produced, disks, seconds);
            return String.join("\n", "# Stream jobs: where the job as it runs spends its CPU", "",
                    String.format("Measured %s by `make bench-jobs` on %d CPUs%s (Java %d, Flink local cluster, parallelism %d): "
                            + "the job as it runs (RocksDB with incremental checkpoints, the Kafka sink, signatures checked; "
                            + "see RESULTS.md) over %,d records of %,d disks over %d s, after runs of the job as it runs "
                            + "and of the graph alone in turn for %d s to warm the JIT up (under a recording of their own: the JVM's "
                            + "first recording sets the JIT to work again), ", LocalDate.now(),
                            Runtime.getRuntime().availableProcessors(), cpuModel(), Runtime.version().feature(), PARALLELISM, records,
                            disks, seconds, WARM_UP.toSeconds())
                            + "sampled by the JDK's Flight Recorder "
                            + "from its first record read to its last output: every 10 ms up to 5 threads running Java "
                            + "code, and one thread in a native call in turn (a task's calls into RocksDB; also a thread "
                            + "waiting in one, so those are counted apart and for the tasks only). RocksDB's own "
                            + "background threads are not sampled; the kernel's accounting of every thread's CPU time "
                            + "covers them.", "",
                    String.format("## Every thread's CPU time%n%n"
                            + "While it measured (%.1f s, %,.0f records/s, %,.0f disks' worth), from the kernel's accounting "
                            + "of each thread of the JVM running the job and Kafka's clients (/proc/self/task), and of the "
                            + "broker's container (its cgroup%s), in cores and per disk-second; a thread pool's threads "
                            + "under one name (digits as #). The machine has %d cores.%n%n",
                            cpu.seconds(), rate[0], diskSecondsPerS, brokerCpu == null ? ": not given, so not counted" : "",
                            Runtime.getRuntime().availableProcessors())
                            + cpu.report(diskSecondsPerS, 20),
                    "## The tasks' Java code, sampled", "",
                    profile.report(15),
                    String.format("Rerun: `python3 -m iopipe.bench.jobs --disks %d --seconds %d --profile-only`, or "
                            + "`make bench-jobs` with every part.", disks, seconds), "");
        } finally {
            if (keptRecording != null && Files.exists(jfr)) {
                Files.move(jfr, keptRecording, StandardCopyOption.REPLACE_EXISTING);
                say("the profile's recording: " + keptRecording);
            }
            Files.deleteIfExists(jfr);
        }
    }

    /** The job as it runs over a quiet fleet's records and the same with one disk flight-recording, rounds of each. */
    record Recording(Produced quiet, Produced oneRecording, List<Double> quietRates, List<Double> recordingRates,
                     List<Long> quietCheckpoints, List<Long> recordingCheckpoints) {}

    /** The job as it runs over the two topics (`topic`-quiet and `topic`-recording), each round, taking turns at going first. */
    static Recording measureRecording(String brokers, KafkaClientConfig kafka, String topic, Produced quiet,
                                      Produced oneRecording, int rounds, Path masterSecret) throws Exception {
        Pipeline.Config checked = checkingSignatures(masterSecret);
        Recording recording = new Recording(quiet, oneRecording, new ArrayList<>(), new ArrayList<>(), new ArrayList<>(),
                new ArrayList<>());
        record Run(String name, String topic, long records, List<Double> rates, List<Long> checkpoints) {}
        List<Run> runs = List.of(new Run("quiet fleet", topic + "-quiet", quiet.records(), recording.quietRates(),
                        recording.quietCheckpoints()),
                new Run("one disk flight-recording", topic + "-recording", oneRecording.records(), recording.recordingRates(),
                        recording.recordingCheckpoints()));
        for (int round = 1; round <= rounds; round++) {
            for (Run run : inRoundOrder(runs, round)) {
                run.rates().add(jobRate(brokers, kafka, run.topic(), run.records(), checked, Deployment.AS_RUN));
                run.checkpoints().add(CHECKPOINTS.get());
                say("round %d: the job as it runs, %s: %,.0f records/s", round, run.name(), last(run.rates()));
            }
        }
        return recording;
    }

    /**
     * The job graph's runs in round `round` (from 1): each even round runs the round before
     * backwards, and each pair of rounds starts one run further on. So the runs take turns
     * at going first, and what one leaves behind (garbage, a cluster still shutting down, a
     * broker flushing its outputs) does not always fall on the same next run.
     */
    static <T> List<T> inRoundOrder(List<T> runs, int round) {
        List<T> order = new ArrayList<>(runs);
        java.util.Collections.rotate(order, -((round - 1) / 2 % runs.size()));
        if (round % 2 == 0) {
            java.util.Collections.reverse(order);
        }
        return order;
    }

    private static double last(List<Double> values) {
        return values.get(values.size() - 1);
    }

    /** A fresh master secret as the job reads one: 64 hex digits in a file of `dir` only its owner may read. */
    static Path writeMasterSecret(Path dir) throws IOException {
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        Path file = Files.createTempFile(dir, "iopipe-bench-master-secret-", "",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        return Files.writeString(file, HexFormat.of().formatHex(secret) + "\n", StandardCharsets.US_ASCII);
    }

    /** What went into the topic: its records, by schema, and how many hosts signed them (each a key the job derives). */
    record Produced(long records, Map<String, Long> bySchema, long hosts) {}

    static Properties adminConfig(String brokers, KafkaClientConfig kafka) {
        return kafka.with(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers));
    }

    static Properties producerConfig(String brokers, KafkaClientConfig kafka) {
        return kafka.with(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers,
                ProducerConfig.LINGER_MS_CONFIG, 20,
                ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024,
                ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4"));
    }

    /** A group of its own, from the topic's start, committing nothing. */
    static Properties consumerConfig(String brokers, KafkaClientConfig kafka) {
        return kafka.with(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers,
                ConsumerConfig.GROUP_ID_CONFIG, "plain-" + System.nanoTime(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false));
    }

    /** The fleet's first `seconds` of records into a fresh topic, each signed by the host it names. */
    static Produced produce(String brokers, KafkaClientConfig kafka, String topic, TemplateFleet fleet, int seconds,
                        HostSignatures signatures) throws Exception {
        return produce(brokers, kafka, topic, fleet, seconds, signatures, 0);
    }

    /** As above, the fleet's first disk flight-recording `recordedPerSecond` I/Os a second besides (when not 0). */
    static Produced produce(String brokers, KafkaClientConfig kafka, String topic, TemplateFleet fleet, int seconds,
                        HostSignatures signatures, int recordedPerSecond) throws Exception {
        try (Admin admin = Admin.create(adminConfig(brokers, kafka))) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get();
        }
        AtomicLong sent = new AtomicLong();
        Map<String, Long> bySchema = new TreeMap<>();
        say("producing %,d disks x %d s of records, signed by their hosts, into %s", fleet.disks(), seconds, topic);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig(brokers, kafka),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            TemplateFleet.RecordSink sink = (t, host, key, value) -> {
                producer.send(TemplateFleet.record(topic, host, key, value, signatures));
                bySchema.merge(t.schema(), 1L, Long::sum);
                if (sent.incrementAndGet() % 500_000 == 0) {
                    say("produced %,d records", sent.get());
                }
            };
            for (TemplateFleet.Send send : fleet.firstSeconds(seconds)) {
                fleet.send(send, sink);
                if (recordedPerSecond > 0) {
                    fleet.recording(send, 0, recordedPerSecond, sink);
                }
            }
        }
        say("produced %,d records of %,d hosts", sent.get(), fleet.hostCount());
        return new Produced(sent.get(), bySchema, fleet.hostCount());
    }

    private static JsonNode parse(String json) {
        try {
            return Json.parseObject(json);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Records per second of a KafkaConsumer reading the topic from its start, doing nothing else. */
    static double plainConsumerRate(String brokers, KafkaClientConfig kafka, String topic, long records) {
        long read = 0;
        long firstNs = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig(brokers, kafka),
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            while (read < records) {
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofSeconds(1));
                if (firstNs == 0 && !batch.isEmpty()) {
                    firstNs = System.nanoTime();
                }
                read += batch.count();
            }
        }
        return read / ((System.nanoTime() - firstNs) / 1e9);
    }

    /** When the graph decoded its first record: the local cluster runs in this JVM. */
    static final AtomicLong FIRST_RECORD_NS = new AtomicLong();

    static final class StampFirst implements MapFunction<RawRecord, RawRecord> {
        @Override
        public RawRecord map(RawRecord r) {
            if (FIRST_RECORD_NS.get() == 0 && FIRST_RECORD_NS.compareAndSet(0, System.nanoTime())) {
                FIRST_RECORD_EPOCH_MS.set(System.currentTimeMillis());
            }
            return r;
        }
    }

    /**
     * Records per second of the live job's graph over the whole topic, as a bounded source,
     * with `config` (whether it checks signatures), deployed as `deployment` says. The time
     * is from its first record read to its last output: a job as it runs waits at the end
     * of its input for a last checkpoint, which a live job never does.
     */
    static double jobRate(String brokers, KafkaClientConfig kafka, String topic, long records, Pipeline.Config config,
                          Deployment deployment) throws Exception {
        Path checkpoints = Files.createTempDirectory("iopipe-bench-checkpoints-");
        try {
            StreamExecutionEnvironment env = environment(deployment, checkpoints);
            DataStream<RawRecord> input = env
                    .fromSource(KafkaIo.boundedSource(brokers, kafka, topic), WatermarkStrategy.noWatermarks(), "bench topic")
                    .map(new StampFirst()).name("stamp first record");
            Pipeline.Outputs outputs = Pipeline.outputs(input, config);
            DataStream<OutputRecord> derived = outputs.derived().map(new CountOutputs()).name("count outputs");
            DataStream<OutputRecord> accepted = outputs.accepted().map(new CountOutputs()).name("count accepted");
            if (deployment == Deployment.AS_RUN) {
                // As the live job writes them (LiveJob.build): the accepted records by a sink of their own.
                derived.sinkTo(KafkaIo.sink(brokers, kafka)).name("output topics");
                accepted.sinkTo(KafkaIo.sink(brokers, kafka)).name("accepted topics");
            } else if (deployment == Deployment.AS_RUN_ACCEPTED_NOT_WRITTEN) {
                derived.sinkTo(KafkaIo.sink(brokers, kafka)).name("output topics");
                accepted.sinkTo(new DiscardingSink<>()).name("discard accepted");
            } else {
                derived.union(accepted).sinkTo(new DiscardingSink<>()).name("discard");
            }
            FIRST_RECORD_NS.set(0);
            LAST_OUTPUT_NS.set(0);
            FIRST_RECORD_EPOCH_MS.set(0);
            LAST_OUTPUT_EPOCH_MS.set(0);
            ACCEPTED.set(0);
            WINDOWS.set(0);
            DEAD_LETTERS.set(0);
            CHECKPOINTS.set(0);
            env.execute("iopipe bench");
        } finally {
            deleteTree(checkpoints);
        }
        double rate = records / ((LAST_OUTPUT_NS.get() - FIRST_RECORD_NS.get()) / 1e9);
        // A graph that refused its input (a signature it did not take, a record it could
        // not decode) would be measuring the wrong thing.
        if (ACCEPTED.get() != records || DEAD_LETTERS.get() > 0 || WINDOWS.get() == 0) {
            throw new IllegalStateException(String.format("%,d of %,d records accepted, %,d dead letters, %,d windows"
                    + " (signatures %s): the benchmark's records are not what the job expects", ACCEPTED.get(), records,
                    DEAD_LETTERS.get(), WINDOWS.get(), config.signingSecret == null ? "not checked" : "checked"));
        }
        say("%,d records accepted, %,d windows, no dead letters", ACCEPTED.get(), WINDOWS.get());
        return rate;
    }

    /** The managed memory (RocksDB's) of a slot of the stack's TaskManagers; the local cluster's slots each have as much. */
    private static MemorySize slotManagedMemory = MemorySize.ZERO;

    /** A slot's managed memory in the TaskManager --taskmanager-process-size and --taskmanager-slots describe. */
    static MemorySize slotManagedMemory(Args args) {
        return slotManagedMemory(args.required("taskmanager-process-size"), Integer.parseInt(args.required("taskmanager-slots")));
    }

    /** A slot's managed memory in a TaskManager of `processSize` and `slots`, as Flink divides that TaskManager's memory. */
    static MemorySize slotManagedMemory(String processSize, int slots) {
        Configuration taskManager = new Configuration();
        taskManager.set(TaskManagerOptions.TOTAL_PROCESS_MEMORY, MemorySize.parse(processSize));
        return TaskExecutorProcessUtils.processSpecFromConfig(taskManager).getManagedMemorySize().divide(slots);
    }

    /**
     * A local cluster of PARALLELISM slots, each with a stack TaskManager's slot's managed
     * memory; its state and checkpoints as `deployment` says, checkpoints under `checkpoints`.
     */
    private static StreamExecutionEnvironment environment(Deployment deployment, Path checkpoints) {
        Configuration conf = new Configuration();
        if (slotManagedMemory.getBytes() > 0) {
            conf.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, slotManagedMemory.multiply(PARALLELISM));
        }
        if (deployment.checkpointed()) {
            // A failure would restart the job for ever and count its replayed records twice: fail the run instead.
            conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
            conf.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
            conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints.toUri().toString());
            conf.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, true);
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(PARALLELISM, conf);
        if (deployment.checkpointed()) {
            env.enableCheckpointing(PipelineTimings.CHECKPOINT_INTERVAL.toMillis());
        }
        return env;
    }

    /** Deletes what is left under `root`; Flink may still be removing its finished checkpoints. */
    static void deleteTree(Path root) {
        try (java.util.stream.Stream<Path> paths = Files.walk(root)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException | java.io.UncheckedIOException e) {
            say("left checkpoints under %s: %s", root, e);
        }
    }

    static final AtomicLong ACCEPTED = new AtomicLong();
    static final AtomicLong WINDOWS = new AtomicLong();
    static final AtomicLong DEAD_LETTERS = new AtomicLong();
    static final AtomicLong LAST_OUTPUT_NS = new AtomicLong();
    /** When the run's first record was read and its last output made, on the wall clock (for the profile's samples). */
    static final AtomicLong FIRST_RECORD_EPOCH_MS = new AtomicLong();
    static final AtomicLong LAST_OUTPUT_EPOCH_MS = new AtomicLong();
    /** Checkpoints completed while a run measured: before a subtask's last output, the most of any subtask. */
    static final AtomicLong CHECKPOINTS = new AtomicLong();

    static final class CountOutputs extends RichMapFunction<OutputRecord, OutputRecord> implements CheckpointListener {
        /** This subtask's last output, told when it closes: the whole run's is the latest. */
        private long lastOutputNs;
        private final List<Long> checkpointsCompletedNs = new ArrayList<>();

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            checkpointsCompletedNs.add(System.nanoTime());
        }

        @Override
        public void close() {
            LAST_OUTPUT_NS.accumulateAndGet(lastOutputNs, Math::max);
            LAST_OUTPUT_EPOCH_MS.accumulateAndGet(System.currentTimeMillis() - (System.nanoTime() - lastOutputNs) / 1_000_000L,
                    Math::max);
            CHECKPOINTS.accumulateAndGet(checkpointsCompletedNs.stream().filter(ns -> ns <= lastOutputNs).count(), Math::max);
        }

        @Override
        public OutputRecord map(OutputRecord r) {
            lastOutputNs = System.nanoTime();
            if (r.acceptedInput) {
                ACCEPTED.incrementAndGet();
            } else if (DeadLetters.SCHEMA.equals(r.schema)) {
                DEAD_LETTERS.incrementAndGet();
            } else if (IostatWindow.SCHEMA.equals(r.schema)) {
                WINDOWS.incrementAndGet();
            }
            return r;
        }
    }

    /**
     * A disk's keyed state, part by part; its windows' are the records of its open 10 s
     * windows, its open longer window and its closed windows' histograms.
     */
    record StateBytes(long detector, long openRecords, long longerWindow, long closedHistograms, long clocks, long lastSample,
            long rollups) {
        long windows() {
            return openRecords + longerWindow + closedHistograms;
        }

        long total() {
            return detector + windows() + clocks + lastSample + rollups;
        }
    }

    /**
     * The keyed state per disk of the fleet's first disks, one of each template disk: its
     * mean, the largest, over how many disks and how many seconds of each one's records.
     */
    record State(StateBytes mean, long largest, int disks, long seconds) {}

    static State statePerDisk(TemplateFleet fleet) throws Exception {
        List<StateBytes> each = new ArrayList<>();
        for (int disk = 0; disk < Math.min(fleet.disks(), fleet.templateDisks); disk++) {
            each.add(stateBytes(fleet, disk));
        }
        StateBytes mean = new StateBytes(mean(each, StateBytes::detector), mean(each, StateBytes::openRecords),
                mean(each, StateBytes::longerWindow), mean(each, StateBytes::closedHistograms), mean(each, StateBytes::clocks),
                mean(each, StateBytes::lastSample), mean(each, StateBytes::rollups));
        long seconds = (fleet.sends.get(fleet.sends.size() - 1).atMs() - fleet.sends.get(0).atMs()) / 1000 + 1;
        return new State(mean, each.stream().mapToLong(StateBytes::total).max().orElseThrow(), each.size(), seconds);
    }

    private static long mean(List<StateBytes> each, ToLongFunction<StateBytes> part) {
        return Math.round(each.stream().mapToLong(part).average().orElseThrow());
    }

    /**
     * The keyed state of fleet disk `disk` after all its records of the templates, its
     * detectors having learnt their baselines: its detector history, the records of its
     * open 10 s windows at their most (a whole window's and the next one's first
     * out-of-orderness, as the window closes), its open 1 min window, the two window
     * operators' disk clocks, its last diskstats sample and its open latency rollups (a
     * minute, an hour, a day), each as the job's state serializers write it.
     */
    static StateBytes stateBytes(TemplateFleet fleet, int disk) throws Exception {
        WindowFunctions.Accumulate accumulate = new WindowFunctions.Accumulate(PipelineTimings.WINDOW_SECONDS.get(0));
        TreeMap<Long, List<DiskRecord>> byWindow = new TreeMap<>();
        DiskstatsSample[] previous = new DiskstatsSample[1];
        long nowNs = DeadLetters.wallClockNs();
        for (TemplateFleet.Send send : fleet.sends) {
            fleet.send(send, disk, (t, host, key, value) -> {
                // The open records hold a batch's parts, each in the window of its own time (DiskWindows).
                for (DiskRecord part : decode(parse(new String(value, StandardCharsets.UTF_8)), previous, nowNs)) {
                    byWindow.computeIfAbsent(accumulate.windowStartMs(part), w -> new ArrayList<>()).add(part);
                }
            });
        }
        DiskHistory history = new DiskHistory();
        DiskWindow last = null;
        List<DiskRecord> lastRecords = List.of();
        DiskWindow minute = new DiskWindow();
        for (Map.Entry<Long, List<DiskRecord>> window : byWindow.entrySet()) {
            long index = window.getKey() / WINDOW_MS;
            DiskWindow w = accumulated(accumulate, window.getValue());
            w.startNs = window.getKey() * 1_000_000L;
            w.endNs = w.startNs + WINDOW_NS;
            w.windowSeconds = (int) (WINDOW_NS / 1_000_000_000L);
            DiskDetector.onWindow(w, history);
            // The longer window as it stands before its last part: the most it holds open.
            minute = index % PARTS_OF_LONGER_WINDOW == 0 ? new DiskWindow() : minute;
            if (index % PARTS_OF_LONGER_WINDOW != PARTS_OF_LONGER_WINDOW - 1) {
                minute.absorbMeasures(w);
            }
            last = w;
            lastRecords = window.getValue();
        }
        // The histograms each window closed within the allowed lateness counted (for late ones).
        long closedHistograms = WINDOWS_REMEMBERING_HISTOGRAMS
                * serializedBytes(TypeInformation.of(new TypeHint<HashSet<Long>>() {}), new HashSet<>(last.seenHistograms));
        LatencySpan span = new LatencySpan(last.host, last.disk, minute.startNs);
        span.absorb(minute.ops);
        // Each period's current span and the one before it, which late histograms may amend.
        long rollups = 2 * LatencyPeriods.seconds().size() * serializedBytes(LatencySpan.class, span);
        return new StateBytes(serializedBytes(DiskHistory.class, history), openRecordsAtTheirMost(accumulate, lastRecords),
                serializedBytes(DiskWindow.class, minute), closedHistograms, 2 * serializedBytes(DiskClock.class, clockOfTwoOpenWindows()),
                serializedBytes(DiskstatsSample.class, previous[0]), rollups);
    }

    /** The records of a window (`records`), and of the next as far as the out-of-orderness, as state holds them. */
    private static long openRecordsAtTheirMost(WindowFunctions.Accumulate accumulate, List<DiskRecord> records) throws Exception {
        long outOfOrdernessMs = PipelineTimings.OUT_OF_ORDERNESS.toMillis();
        long bytes = 0;
        for (DiskRecord r : records) {
            long record = serializedBytes(DiskRecordSerializer.TYPE, r);
            long intoWindowMs = Math.floorDiv(r.tsNs, 1_000_000L) - accumulate.windowStartMs(r);
            bytes += intoWindowMs < outOfOrdernessMs ? 2 * record : record;
        }
        return bytes;
    }

    private static DiskClock clockOfTwoOpenWindows() {
        DiskClock c = DiskClock.ofNewDisk();
        c.opens(0);
        c.opens(WINDOW_MS);
        return c;
    }

    /** A window open over `records`, with the identities it keeps to merge a resend once. */
    private static DiskWindow accumulated(WindowFunctions.Accumulate accumulate, List<DiskRecord> records) {
        DiskWindow w = accumulate.openWindow();
        for (DiskRecord r : records) {
            if (w.firstSeen(r.identity(), r.hist != null)) {
                accumulate.add(r, w);
            }
        }
        return w;
    }

    /**
     * What the job's windows take of a record, decoded at `nowNs`: its parts, diskstats made
     * deltas (a disk's first sample says only its class), as DecodeRecords and
     * DiskstatsToDeltas pass them on (an interval's sample and histograms together, a batch's
     * events together; none of a batch of no events).
     */
    private static List<DiskRecord> decode(JsonNode n, DiskstatsSample[] previous, long nowNs) {
        try {
            DiskRecord record = switch (RecordDecoder.schemaOf(n)) {
                case DiskstatsSample.SCHEMA -> DiskRecord.of(delta(RecordDecoder.diskstats(n, "bench", nowNs), previous));
                case IntervalRecord.SCHEMA -> {
                    IntervalRecord interval = RecordDecoder.interval(n, "bench", nowNs);
                    DiskRecord sent = DiskRecord.ofInterval(interval.sample, interval.histograms);
                    yield DiskRecord.ofInterval(delta(sent.sample, previous), sent.histograms);
                }
                case EventBatch.SCHEMA -> {
                    EventBatch batch = RecordDecoder.eventBatch(n, nowNs);
                    yield batch.events.isEmpty() ? null : DiskRecord.ofEvents(batch.events);
                }
                case HistRecord.SCHEMA -> DiskRecord.of(RecordDecoder.hist(n, nowNs));
                default -> DiskRecord.of(RecordDecoder.event(n, nowNs));
            };
            return record == null ? List.of() : record.parts();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** The disk's delta since its previous sample (its class alone, for its first), which becomes `previous`. */
    private static DiskstatsDelta delta(DiskstatsSample sample, DiskstatsSample[] previous) {
        DiskstatsSample before = previous[0];
        previous[0] = sample;
        return before == null ? DiskstatsDelta.classOf(sample) : DiskstatsDelta.between(before, sample);
    }

    static <T> long serializedBytes(Class<T> type, T value) throws Exception {
        return serializedBytes(TypeInformation.of(type), value);
    }

    /** As the job's state writes `value` of `type` (the type its state descriptor names). */
    static <T> long serializedBytes(TypeInformation<T> type, T value) throws Exception {
        DataOutputSerializer out = new DataOutputSerializer(4096);
        type.createSerializer(new SerializerConfigImpl()).serialize(value, out);
        return out.length();
    }

    static String report(TemplateFleet fleet, int seconds, Produced produced, Rates rates, State state, int warmUps) {
        double plain = median(rates.plain());
        double job = median(rates.asRun());
        int cores = Runtime.getRuntime().availableProcessors();
        double perDiskSecond = recordsPerDiskSecond(produced, fleet.disks(), seconds);
        return String.join("\n",
                "# Stream jobs: throughput of the job graph and state per disk",
                "",
                "Measured " + LocalDate.now() + " by `make bench-jobs` on " + cores + " CPUs" + cpuModel() + " (Java "
                        + Runtime.version().feature()
                        + ", Flink local cluster, parallelism " + PARALLELISM + "; Kafka in a container on the same machine): "
                        + String.format("%,d records of %,d disks over %d s", produced.records(), fleet.disks(), seconds)
                        + " (the records of " + fleet.templateDisks + " of `iopipe/synthetic/fleet.py`'s healthy disks, every kind "
                        + "in every place on a host, each copied onto many hosts as `make bench-fleet` copies them; per disk-second "
                        + perDiskSecond(produced, fleet.disks(), seconds) + ") in one topic of " + PARTITIONS + " partitions, "
                        + "each record signed by its host as the agents sign theirs (an " + HostSignatures.HEADER + " header, "
                        + "schema/signing.json; " + String.format("%,d", produced.hosts()) + " hosts). "
                        + "Each round reads the whole topic with a plain KafkaConsumer (bytes only), then four times with the "
                        + "live job's graph (decode, diskstats deltas, 10 s and 1 min windows on each disk's clock, detectors, "
                        + "latency rollups) as a bounded source: as the live job runs (state in RocksDB with incremental "
                        + "checkpoints every " + PipelineTimings.CHECKPOINT_INTERVAL.toSeconds() + " s, its outputs to the "
                        + "output topics through the at-least-once Kafka sink, every record's signature checked against its "
                        + "host's key given the master secret's file, --" + HostSignatures.OPTION + "); the same with its "
                        + "accepted records discarded, not written to the accepted topics again (what that second write "
                        + "costs); then the graph alone "
                        + "(heap state, no checkpoints, outputs discarded), checking signatures and taking records unsigned. "
                        + "After " + warmUps + " runs of the job as it runs and of the graph alone in turn, over "
                        + WARM_UP.toSeconds() + " s, to warm the JIT up, the four take turns at going first, every other "
                        + "round backwards. Each accepts every record; its time runs from its first record read to its "
                        + "last output (not the last checkpoint a bounded job waits for, nor the local cluster's shutdown, "
                        + "which results before 2026-11-27 counted). Each slot of the local cluster has the managed memory "
                        + "(RocksDB's) of a slot of the stack's TaskManagers (infra/flink/start-flink.sh), "
                        + slotManagedMemory.toHumanReadableString() + "; before 2026-11-29 the local cluster's default, "
                        + "128 MiB for both slots. The Kafka broker taking the outputs shares the machine's CPUs, as every "
                        + "reader does. Medians over rounds.",
                "",
                "| reader | records/s | disks' worth | the machine's CPU per disk-second | vs plain consumer | vs the job as it runs |",
                "|---|---|---|---|---|---|",
                row(PLAIN_CONSUMER, rates.plain(), cores, perDiskSecond, plain, job),
                row(JOB_AS_RUN, rates.asRun(), cores, perDiskSecond, plain, job),
                row(ACCEPTED_NOT_WRITTEN, rates.acceptedNotWritten(), cores, perDiskSecond, plain, job),
                row(CHECKED_JOB_GRAPH, rates.checked(), cores, perDiskSecond, plain, job),
                row(JOB_GRAPH, rates.job(), cores, perDiskSecond, plain, job),
                "",
                "Checkpoints the job as it runs completed while it measured (before its last output), round by round: "
                        + joined(rates.checkpoints()) + ".",
                "",
                "RocksDB, checkpoints and the Kafka sink, round by round (as run / graph alone, both checking signatures): "
                        + ratios(rates.asRun(), rates.checked()) + ". Writing the accepted records again (as run / "
                        + "without that write): " + ratios(rates.asRun(), rates.acceptedNotWritten()) + ". Checking "
                        + "signatures (checked / unchecked graph alone): " + ratios(rates.checked(), rates.job()) + ".",
                "",
                stateReport(state),
                "",
                String.format("Disks' worth: records/s over the %.2f records a disk sends a second. The machine's CPU per "
                        + "disk-second: its %d CPUs over the disks' worth, in microseconds; the job and Kafka share them, so "
                        + "this bounds the job's own from above. Goal: the TaskManagers' CPU at most 50 µs per disk-second "
                        + "(make bench-fleet measures theirs on the cluster).", perDiskSecond, cores),
                "");
    }

    static String stateReport(State state) {
        return String.format("Keyed state per disk, as the job's serializers write it, after %d s of a disk's records: %,d bytes "
                + "on average over %d disks, one of each template disk (detector history %,d, its open 10 s and 1 min "
                + "windows %,d: the 10 s windows' records %,d, the 1 min window %,d, the histograms its closed windows "
                + "counted %,d; the windows' disk clocks %,d, last diskstats sample %,d, open latency rollups of the "
                + "minute, hour and day %,d); the largest disk's %,d bytes.", state.seconds(), state.mean().total(),
                state.disks(), state.mean().detector(), state.mean().windows(), state.mean().openRecords(),
                state.mean().longerWindow(), state.mean().closedHistograms(), state.mean().clocks(),
                state.mean().lastSample(), state.mean().rollups(), state.largest());
    }

    /** How to measure these figures again: the command, with the sizes this run measured. */
    static String rerun(int disks, int seconds, int rounds) {
        return String.format("Rerun: `python3 -m iopipe.bench.jobs --disks %d --seconds %d --rounds %d` (`make bench-jobs` runs "
                + "its defaults; it starts Kafka in a container), or `make bench` for every benchmark. Where the job's CPU goes: "
                + "[PROFILE.md](PROFILE.md).%n%n", disks, seconds, rounds);
    }

    static String recordingReport(int disks, int recordedPerSecond, Recording recording) {
        double quiet = median(recording.quietRates());
        double spread = (java.util.Collections.max(recording.quietRates()) - java.util.Collections.min(recording.quietRates()))
                / quiet;
        return String.join("\n",
                "## One disk flight-recording",
                "",
                String.format("The job as it runs over %,d disks' records sent one by one (%,d records), and over the same "
                        + "with the first "
                        + "disk flight-recording besides, %,d reads a second each sent as an event of its own (%,d records): "
                        + "each of its 10 s windows takes %,d events, which a job that rewrote a disk's open window per "
                        + "record would read and write again for each one.", disks, recording.quiet().records(),
                        recordedPerSecond, recording.oneRecording().records(),
                        recordedPerSecond * PipelineTimings.WINDOW_SECONDS.get(0)),
                "",
                "| fleet | records/s | vs quiet fleet |",
                "|---|---|---|",
                String.format("| quiet | %,.0f (rounds: %s) | 1.00 |", quiet, rounds(recording.quietRates())),
                String.format("| one disk flight-recording | %,.0f (rounds: %s) | %.2f |", median(recording.recordingRates()),
                        rounds(recording.recordingRates()), median(recording.recordingRates()) / quiet),
                "",
                String.format("Round by round (flight-recording / quiet; the two take turns at going first): %s. Noise: the "
                        + "quiet fleet's rounds spread over %.0f%% of their median. Checkpoints completed while each run "
                        + "measured, quiet: %s; flight-recording: %s.", ratios(recording.recordingRates(),
                        recording.quietRates()), 100 * spread, joined(recording.quietCheckpoints()),
                        joined(recording.recordingCheckpoints())),
                "");
    }

    private static String joined(List<Long> values) {
        return String.join(", ", values.stream().map(String::valueOf).toList());
    }

    /** Records per disk-second in all, and of each schema. */
    private static String perDiskSecond(Produced produced, int disks, int seconds) {
        double diskSeconds = (double) disks * seconds;
        List<String> each = new ArrayList<>();
        produced.bySchema().forEach((schema, count) -> each.add(String.format("%s %.2f", schema, count / diskSeconds)));
        return String.format("%.2f records: %s", recordsPerDiskSecond(produced, disks, seconds), String.join(", ", each));
    }

    private static double recordsPerDiskSecond(Produced produced, int disks, int seconds) {
        return produced.records() / ((double) disks * seconds);
    }

    private static String row(String reader, List<Double> rates, int cores, double recordsPerDiskSecond, double plainMedian,
                              double jobMedian) {
        double median = median(rates);
        double disks = median / recordsPerDiskSecond;
        return String.format("| %s | %,.0f (rounds: %s) | %,.0f | %.0f µs | %.2f | %.2f |", reader, median, rounds(rates),
                disks, cores * 1e6 / disks, median / plainMedian, median / jobMedian);
    }

    private static String ratios(List<Double> numerators, List<Double> denominators) {
        List<String> each = new ArrayList<>();
        for (int i = 0; i < numerators.size(); i++) {
            each.add(String.format("%.2f", numerators.get(i) / denominators.get(i)));
        }
        return String.join(", ", each);
    }

    private static String rounds(List<Double> values) {
        return String.join(", ", values.stream().map(v -> String.format("%,.0f", v)).toList());
    }

    static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}
