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
import io.iopipe.jobs.pipeline.Pipeline;
import io.iopipe.jobs.pipeline.DiskClock;
import io.iopipe.jobs.pipeline.WindowFunctions;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.HostSignatures;
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
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToLongFunction;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.core.memory.DataOutputSerializer;
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
 * reads them as a bounded Kafka source on a local cluster of PARALLELISM slots, once taking
 * them unsigned and once checking every record's signature as the live job given the
 * secret does (the two swap places every other round). Running all three in every round
 * lets a burst of load on the machine hit them alike. Each rate is records over the time
 * from the first record read to the last one processed. The keyed state a disk costs is
 * measured on each template disk's records, all the template file holds.
 *
 * Options: --brokers, --kafka-config (optional: how to connect, {@link KafkaClientConfig}),
 * the fleet's ({@link TemplateFleet}), --seconds (of the fleet's records), --rounds (default
 * 5: the first runs on a cold JIT), --out (results file).
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
        String topic = "iopipe-bench-" + Long.toHexString(System.nanoTime());
        Path masterSecret = writeMasterSecret(Path.of(System.getProperty("java.io.tmpdir")));
        Produced produced;
        Rates rates;
        try {
            produced = produce(brokers, kafka, topic, fleet, seconds, HostSignatures.fromFile(masterSecret));
            rates = measure(brokers, kafka, topic, produced.records(), rounds, masterSecret);
        } finally {
            Files.deleteIfExists(masterSecret);
        }
        State state = statePerDisk(fleet);
        String report = report(fleet, seconds, produced, rates, state);
        System.out.println(report);
        if (args.has("out")) {
            Files.writeString(Path.of(args.get("out", "")), report);
            say("wrote %s", args.get("out", ""));
        }
    }

    static void say(String format, Object... values) {
        System.err.printf("[bench] " + format + "%n", values);
    }

    static final String PLAIN_CONSUMER = "plain KafkaConsumer";
    static final String JOB_GRAPH = "job graph";
    static final String CHECKED_JOB_GRAPH = "job graph, host signatures checked";

    /** Records per second of each reader, one per round. */
    record Rates(List<Double> plain, List<Double> job, List<Double> checked) {
        Rates() {
            this(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        }
    }

    /** One way of running the job graph, and its rate in each round. */
    private record JobRun(String reader, Pipeline.Config config, List<Double> rates) {}

    /** Every reader over the whole topic, each round; the checked run is given the master secret's file. */
    static Rates measure(String brokers, KafkaClientConfig kafka, String topic, long records, int rounds, Path masterSecret)
            throws Exception {
        Rates rates = new Rates();
        Pipeline.Config checked = new Pipeline.Config();
        checked.signingSecret = masterSecret.toString();
        List<JobRun> jobRuns = List.of(new JobRun(JOB_GRAPH, new Pipeline.Config(), rates.job()),
                new JobRun(CHECKED_JOB_GRAPH, checked, rates.checked()));
        for (int round = 1; round <= rounds; round++) {
            rates.plain().add(plainConsumerRate(brokers, kafka, topic, records));
            say("round %d: %s %,.0f records/s", round, PLAIN_CONSUMER, last(rates.plain()));
            for (JobRun run : inRoundOrder(jobRuns, round)) {
                run.rates().add(jobRate(brokers, kafka, topic, records, run.config()));
                say("round %d: %s %,.0f records/s", round, run.reader(), last(run.rates()));
            }
        }
        return rates;
    }

    /**
     * The job graph's runs swap places every other round: the second of them runs on a JIT
     * the first warmed up, and neither should always be the one that does.
     */
    static <T> List<T> inRoundOrder(List<T> runs, int round) {
        return round % 2 == 1 ? runs : List.of(runs.get(1), runs.get(0));
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
        try (Admin admin = Admin.create(adminConfig(brokers, kafka))) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get();
        }
        AtomicLong sent = new AtomicLong();
        Map<String, Long> bySchema = new TreeMap<>();
        say("producing %,d disks x %d s of records, signed by their hosts, into %s", fleet.disks(), seconds, topic);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig(brokers, kafka),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            for (TemplateFleet.Send send : fleet.firstSeconds(seconds)) {
                fleet.send(send, (t, host, key, value) -> {
                    producer.send(TemplateFleet.record(topic, host, key, value, signatures));
                    bySchema.merge(t.schema(), 1L, Long::sum);
                    if (sent.incrementAndGet() % 500_000 == 0) {
                        say("produced %,d records", sent.get());
                    }
                });
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
            if (FIRST_RECORD_NS.get() == 0) {
                FIRST_RECORD_NS.compareAndSet(0, System.nanoTime());
            }
            return r;
        }
    }

    /**
     * Records per second of the live job's graph over the whole topic, as a bounded source,
     * with `config` (whether it checks signatures).
     */
    static double jobRate(String brokers, KafkaClientConfig kafka, String topic, long records, Pipeline.Config config)
            throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(PARALLELISM);
        DataStream<RawRecord> input = env
                .fromSource(KafkaIo.boundedSource(brokers, kafka, topic), WatermarkStrategy.noWatermarks(), "bench topic")
                .map(new StampFirst()).name("stamp first record");
        Pipeline.build(input, config).map(new CountOutputs()).name("count outputs")
                .sinkTo(new DiscardingSink<>()).name("discard");
        FIRST_RECORD_NS.set(0);
        ACCEPTED.set(0);
        WINDOWS.set(0);
        DEAD_LETTERS.set(0);
        env.execute("iopipe bench");
        double rate = records / ((System.nanoTime() - FIRST_RECORD_NS.get()) / 1e9);
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

    static final AtomicLong ACCEPTED = new AtomicLong();
    static final AtomicLong WINDOWS = new AtomicLong();
    static final AtomicLong DEAD_LETTERS = new AtomicLong();

    static final class CountOutputs implements MapFunction<OutputRecord, OutputRecord> {
        @Override
        public OutputRecord map(OutputRecord r) {
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

    record StateBytes(long detector, long windows, long clocks, long lastSample, long rollups) {
        long total() {
            return detector + windows + clocks + lastSample + rollups;
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
        StateBytes mean = new StateBytes(mean(each, StateBytes::detector), mean(each, StateBytes::windows),
                mean(each, StateBytes::clocks), mean(each, StateBytes::lastSample), mean(each, StateBytes::rollups));
        long seconds = (fleet.sends.get(fleet.sends.size() - 1).atMs() - fleet.sends.get(0).atMs()) / 1000 + 1;
        return new State(mean, each.stream().mapToLong(StateBytes::total).max().orElseThrow(), each.size(), seconds);
    }

    private static long mean(List<StateBytes> each, ToLongFunction<StateBytes> part) {
        return Math.round(each.stream().mapToLong(part).average().orElseThrow());
    }

    /**
     * The keyed state of fleet disk `disk` after all its records of the templates, its
     * detectors having learnt their baselines: its detector history, its open 10 s and
     * 1 min windows, the two window operators' disk clocks, its last diskstats sample and
     * its open latency rollups (a minute, an hour, a day), each as the job's state
     * serializers write it.
     */
    static StateBytes stateBytes(TemplateFleet fleet, int disk) throws Exception {
        WindowFunctions.Accumulate accumulate = new WindowFunctions.Accumulate(PipelineTimings.WINDOW_SECONDS.get(0));
        TreeMap<Long, List<DiskRecord>> byWindow = new TreeMap<>();
        DiskstatsSample[] previous = new DiskstatsSample[1];
        long nowNs = DeadLetters.wallClockNs();
        for (TemplateFleet.Send send : fleet.sends) {
            fleet.send(send, disk, (t, host, key, value) -> {
                DiskRecord record = decode(parse(new String(value, StandardCharsets.UTF_8)), previous, nowNs);
                byWindow.computeIfAbsent(accumulate.windowStartMs(record), w -> new ArrayList<>()).add(record);
            });
        }
        DiskHistory history = new DiskHistory();
        DiskWindow last = null;
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
        }
        // The histograms each window closed within the allowed lateness counted (for late ones).
        long closedHistograms = WINDOWS_REMEMBERING_HISTOGRAMS * serializedBytes(Long[].class, last.seenHistograms.toArray(new Long[0]));
        long windows = serializedBytes(DiskWindow.class, last) + serializedBytes(DiskWindow.class, minute) + closedHistograms;
        LatencySpan span = new LatencySpan(last.host, last.disk, minute.startNs);
        span.absorb(minute.ops);
        // Each period's current span and the one before it, which late histograms may amend.
        long rollups = 2 * LatencyPeriods.seconds().size() * serializedBytes(LatencySpan.class, span);
        return new StateBytes(serializedBytes(DiskHistory.class, history), windows,
                2 * serializedBytes(DiskClock.class, new DiskClock()), serializedBytes(DiskstatsSample.class, previous[0]), rollups);
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

    /** A record as the job's operators pass it on: decoded at `nowNs`, diskstats made deltas (a disk's first sample says only its class). */
    private static DiskRecord decode(JsonNode n, DiskstatsSample[] previous, long nowNs) {
        try {
            String schema = RecordDecoder.schemaOf(n);
            if (DiskstatsSample.SCHEMA.equals(schema)) {
                DiskstatsSample s = RecordDecoder.diskstats(n, "bench", nowNs);
                DiskstatsSample before = previous[0];
                previous[0] = s;
                return DiskRecord.of(before == null ? DiskstatsDelta.classOf(s) : DiskstatsDelta.between(before, s));
            }
            return HistRecord.SCHEMA.equals(schema) ? DiskRecord.of(RecordDecoder.hist(n, nowNs))
                    : DiskRecord.of(RecordDecoder.event(n, nowNs));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static <T> long serializedBytes(Class<T> type, T value) throws Exception {
        DataOutputSerializer out = new DataOutputSerializer(4096);
        TypeInformation.of(type).createSerializer(new SerializerConfigImpl()).serialize(value, out);
        return out.length();
    }

    static String report(TemplateFleet fleet, int seconds, Produced produced, Rates rates, State state) {
        double plain = median(rates.plain());
        double job = median(rates.job());
        int cores = Runtime.getRuntime().availableProcessors();
        return String.join("\n",
                "# Stream jobs: throughput of the job graph and state per disk",
                "",
                "Measured " + LocalDate.now() + " by `make bench-jobs` on " + cores + " CPUs (Java " + Runtime.version().feature()
                        + ", Flink local cluster, parallelism " + PARALLELISM + "; Kafka in a container on the same machine): "
                        + String.format("%,d records of %,d disks over %d s", produced.records(), fleet.disks(), seconds)
                        + " (the records of " + fleet.templateDisks + " of `iopipe/synthetic/fleet.py`'s healthy disks, every kind "
                        + "in every place on a host, each copied onto many hosts as `make bench-fleet` copies them; per disk-second "
                        + perDiskSecond(produced, fleet.disks(), seconds) + ") in one topic of " + PARTITIONS + " partitions, "
                        + "each record signed by its host as the agents sign theirs (an " + HostSignatures.HEADER + " header, "
                        + "schema/signing.json; " + String.format("%,d", produced.hosts()) + " hosts). "
                        + "Each round reads the whole topic with a plain KafkaConsumer (bytes only), then twice with the live "
                        + "job's graph (decode, diskstats deltas, 10 s and 1 min windows on each disk's clock, detectors, "
                        + "latency rollups) as a bounded source: once taking the records unsigned, once, given the master "
                        + "secret's file (--" + HostSignatures.OPTION + "), checking every record's signature against its "
                        + "host's key; the two swap places every other round, so neither always runs on a JIT the other "
                        + "warmed up. Both accept every record. Medians over rounds.",
                "",
                "| reader | records/s | records/s per core | vs plain consumer | vs job graph |",
                "|---|---|---|---|---|",
                row(PLAIN_CONSUMER, rates.plain(), cores, plain, job),
                row(JOB_GRAPH, rates.job(), cores, plain, job),
                row(CHECKED_JOB_GRAPH, rates.checked(), cores, plain, job),
                "",
                "Checking signatures, round by round (checked / unchecked job graph): " + ratios(rates.checked(), rates.job())
                        + ".",
                "",
                String.format("Keyed state per disk, as the job's serializers write it, after %d s of a disk's records: %,d bytes "
                        + "on average over %d disks, one of each template disk (detector history %,d, its open 10 s and 1 min "
                        + "windows %,d, the windows' disk clocks %,d, last diskstats sample %,d, open latency rollups of the "
                        + "minute, hour and day %,d); the largest disk's %,d bytes.", state.seconds(), state.mean().total(),
                        state.disks(), state.mean().detector(), state.mean().windows(), state.mean().clocks(),
                        state.mean().lastSample(), state.mean().rollups(), state.largest()),
                "",
                "Per core: records/s divided by the machine's CPUs; the job and Kafka share them. Goal: >= 100k records/s per core.",
                "",
                "Rerun: `make bench-jobs` (starts Kafka in a container), or `make bench` for every benchmark.",
                "");
    }

    /** Records per disk-second in all, and of each schema. */
    private static String perDiskSecond(Produced produced, int disks, int seconds) {
        double diskSeconds = (double) disks * seconds;
        List<String> each = new ArrayList<>();
        produced.bySchema().forEach((schema, count) -> each.add(String.format("%s %.2f", schema, count / diskSeconds)));
        return String.format("%.2f records: %s", produced.records() / diskSeconds, String.join(", ", each));
    }

    private static String row(String reader, List<Double> rates, int cores, double plainMedian, double jobMedian) {
        double median = median(rates);
        return String.format("| %s | %,.0f (rounds: %s) | %,.0f | %.2f | %.2f |", reader, median, rounds(rates),
                median / cores, median / plainMedian, median / jobMedian);
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

    private static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}
