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
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
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
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Throughput of the whole job graph against a plain Kafka consumer, over the same topic
 * in the same run, and the keyed state a disk costs.
 *
 * A fleet's records (FleetRecords) go into a fresh topic, each signed by its host as the
 * agents sign theirs ({@link HostSignatures}, with a master secret made for the run). Each
 * round, a plain consumer reads them all (bytes, nothing else done), then the live job's
 * graph (decode, diskstats deltas, 10 s and 1 min windows, detectors) reads them as a
 * bounded Kafka source on a local cluster of PARALLELISM slots, once taking them
 * unsigned and once checking every record's signature as the live job given the secret
 * does (the two swap places every other round). Running all three in every round lets a
 * burst of load on the machine hit them alike. Each rate is records over the time from
 * the first record read to the last one processed.
 *
 * Options: --brokers, --kafka-config (optional: how to connect, {@link KafkaClientConfig}),
 * --disks (default 3000), --seconds (of fleet time, default 60), --rounds (default 5: the
 * first runs on a cold JIT), --out (results file).
 */
public final class StreamBenchmark {
    static final int PARALLELISM = 2;
    static final int PARTITIONS = 2;
    /** The detectors' window, as the live job runs it. */
    static final long WINDOW_NS = PipelineTimings.WINDOW_SECONDS.get(0) * 1_000_000_000L;
    /** How many detectors' windows a longer window is summed from. */
    static final long PARTS_OF_LONGER_WINDOW = PipelineTimings.WINDOW_SECONDS.get(1) / PipelineTimings.WINDOW_SECONDS.get(0);
    /** The windows a disk's closed-histogram record stays for: those within the allowed lateness, and the open one. */
    static final long WINDOWS_REMEMBERING_HISTOGRAMS = PipelineTimings.ALLOWED_LATENESS.toNanos() / WINDOW_NS + 1;

    private StreamBenchmark() {}

    public static void main(String[] argv) throws Exception {
        Args args = new Args(argv);
        String brokers = args.get("brokers", "127.0.0.1:9092");
        KafkaClientConfig kafka = KafkaClientConfig.of(args);
        int disks = Integer.parseInt(args.get("disks", "3000"));
        int seconds = Integer.parseInt(args.get("seconds", "60"));
        int rounds = Integer.parseInt(args.get("rounds", "5"));
        String topic = "iopipe-bench-" + Long.toHexString(System.nanoTime());
        Path masterSecret = writeMasterSecret(Path.of(System.getProperty("java.io.tmpdir")));
        Produced produced;
        Rates rates;
        try {
            produced = produce(brokers, kafka, topic, disks, seconds, HostSignatures.fromFile(masterSecret));
            rates = measure(brokers, kafka, topic, produced.records(), rounds, masterSecret);
        } finally {
            Files.deleteIfExists(masterSecret);
        }
        StateBytes state = stateBytesPerDisk(seconds);
        String report = report(disks, seconds, produced, rates, state);
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

    /** A FleetRecords record as its host's producer sends it: keyed host/disk, signed with the host's key. */
    static ProducerRecord<byte[], byte[]> signedRecord(String topic, String diskKey, String json, HostSignatures signatures) {
        byte[] value = json.getBytes(StandardCharsets.UTF_8);
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, diskKey.getBytes(StandardCharsets.UTF_8), value);
        record.headers().add(HostSignatures.HEADER, signatures.sign(hostOf(diskKey), value).getBytes(StandardCharsets.US_ASCII));
        return record;
    }

    private static String hostOf(String diskKey) {
        return diskKey.substring(0, diskKey.indexOf('/'));
    }

    /** What went into the topic: its records, and how many hosts signed them (each a key the job derives). */
    record Produced(long records, int hosts) {}

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

    static Produced produce(String brokers, KafkaClientConfig kafka, String topic, int disks, int seconds,
                        HostSignatures signatures) throws Exception {
        try (Admin admin = Admin.create(adminConfig(brokers, kafka))) {
            admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get();
        }
        AtomicLong sent = new AtomicLong();
        Set<String> hosts = new HashSet<>();
        say("producing %d disks x %d s of records, signed by their hosts, into %s", disks, seconds, topic);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig(brokers, kafka),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            FleetRecords.generate(disks, seconds, 1, (key, json) -> {
                producer.send(signedRecord(topic, key, json, signatures));
                hosts.add(hostOf(key));
                if (sent.incrementAndGet() % 500_000 == 0) {
                    say("produced %,d records", sent.get());
                }
            });
        }
        say("produced %,d records of %,d hosts", sent.get(), hosts.size());
        return new Produced(sent.get(), hosts.size());
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
     * The keyed state of one disk once its detectors have learnt their baselines: its
     * detector history, its open 10 s and 1 min windows, the two window operators' disk
     * clocks, its last diskstats sample and its open latency rollups (a minute, an hour,
     * a day), each as the job's state serializers write it.
     */
    static StateBytes stateBytesPerDisk(int seconds) throws Exception {
        TreeMap<Long, List<DiskRecord>> byWindow = new TreeMap<>();
        DiskstatsSample[] previous = new DiskstatsSample[1];
        FleetRecords.generate(1, Math.max(seconds, 600), 7, (key, json) -> {
            DiskRecord record = decode(parse(json), previous);
            if (record != null) {
                byWindow.computeIfAbsent(record.tsNs / WINDOW_NS, w -> new ArrayList<>()).add(record);
            }
        });
        DiskHistory history = new DiskHistory();
        DiskWindow last = null;
        DiskWindow minute = new DiskWindow();
        for (Map.Entry<Long, List<DiskRecord>> window : byWindow.entrySet()) {
            DiskWindow w = accumulated(window.getValue());
            w.startNs = window.getKey() * WINDOW_NS;
            w.endNs = w.startNs + WINDOW_NS;
            w.windowSeconds = (int) (WINDOW_NS / 1_000_000_000L);
            DiskDetector.onWindow(w, history);
            // The longer window as it stands before its last part: the most it holds open.
            minute = window.getKey() % PARTS_OF_LONGER_WINDOW == 0 ? new DiskWindow() : minute;
            if (window.getKey() % PARTS_OF_LONGER_WINDOW != PARTS_OF_LONGER_WINDOW - 1) {
                minute.absorbMeasures(w);
            }
            last = w;
        }
        // The histograms each window closed within the allowed lateness counted (for late ones).
        long closedHistograms = WINDOWS_REMEMBERING_HISTOGRAMS * serializedBytes(Long[].class, last.seenHistograms.toArray(new Long[0]));
        long windows = serializedBytes(DiskWindow.class, last) + serializedBytes(DiskWindow.class, minute) + closedHistograms;
        LatencySpan span = new LatencySpan("host-00000", "sdb", minute.startNs);
        span.absorb(minute.ops);
        // Each period's current span and the one before it, which late histograms may amend.
        long rollups = 2 * LatencyPeriods.seconds().size() * serializedBytes(LatencySpan.class, span);
        return new StateBytes(serializedBytes(DiskHistory.class, history), windows,
                2 * serializedBytes(DiskClock.class, new DiskClock()), serializedBytes(DiskstatsSample.class, previous[0]), rollups);
    }

    /** A window open over `records`, with the identities it keeps to merge a resend once. */
    private static DiskWindow accumulated(List<DiskRecord> records) {
        WindowFunctions.Accumulate accumulate = new WindowFunctions.Accumulate(PipelineTimings.WINDOW_SECONDS.get(0));
        DiskWindow w = accumulate.createAccumulator();
        for (DiskRecord r : records) {
            if (w.firstSeen(r.identity(), r.hist != null)) {
                accumulate.add(r, w);
            }
        }
        return w;
    }

    private static DiskRecord decode(JsonNode n, DiskstatsSample[] previous) {
        try {
            if (DiskstatsSample.SCHEMA.equals(RecordDecoder.schemaOf(n))) {
                DiskstatsSample s = RecordDecoder.diskstats(n, "bench", decodedAtNs());
                DiskstatsSample before = previous[0];
                previous[0] = s;
                return before == null ? null : DiskRecord.of(DiskstatsDelta.between(before, s));
            }
            return DiskRecord.of(RecordDecoder.hist(n, decodedAtNs()));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** A decoding clock a day past the records: none is from the future. */
    private static long decodedAtNs() {
        return FleetRecords.START_NS + 86_400_000_000_000L;
    }

    static <T> long serializedBytes(Class<T> type, T value) throws Exception {
        DataOutputSerializer out = new DataOutputSerializer(4096);
        TypeInformation.of(type).createSerializer(new SerializerConfigImpl()).serialize(value, out);
        return out.length();
    }

    static String report(int disks, int seconds, Produced produced, Rates rates, StateBytes state) {
        double plain = median(rates.plain());
        double job = median(rates.job());
        int cores = Runtime.getRuntime().availableProcessors();
        return String.join("\n",
                "# Stream jobs: throughput of the job graph and state per disk",
                "",
                "Measured " + LocalDate.now() + " by `make bench` on " + cores + " CPUs (Java " + Runtime.version().feature()
                        + ", Flink local cluster, parallelism " + PARALLELISM + "; Kafka in a container on the same machine): "
                        + String.format("%,d", produced.records()) + " records of " + disks + " disks over " + seconds + " s "
                        + "(per disk and second one io.diskstats.v1 and io.hist.v1 device, queue and total for reads and writes; "
                        + "HDDs, SATA SSDs and NVMe in equal numbers) in one topic of " + PARTITIONS + " partitions, "
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
                String.format("Keyed state per disk, as the job's serializers write it: %,d bytes (detector history %,d, its open "
                        + "10 s and 1 min windows %,d, the windows' disk clocks %,d, last diskstats sample %,d, open latency "
                        + "rollups of the minute, hour and day %,d).", state.total(),
                        state.detector(), state.windows(), state.clocks(), state.lastSample(), state.rollups()),
                "",
                "Per core: records/s divided by the machine's CPUs; the job and Kafka share them. Goal: >= 100k records/s per core.",
                "",
                "Rerun: `make bench-jobs` (starts Kafka in a container), or `make bench` for every benchmark.",
                "");
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
