package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.detect.OpLatency;
import io.iopipe.jobs.iostat.DiskstatsDelta;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.typeutils.GenericTypeInfo;
import org.apache.flink.api.java.typeutils.ObjectArrayTypeInfo;
import org.apache.flink.api.java.typeutils.PojoField;
import org.apache.flink.api.java.typeutils.PojoTypeInfo;
import org.apache.flink.api.java.typeutils.runtime.PojoSerializer;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.metrics.Counter;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.metrics.groups.InternalOperatorMetricGroup;
import org.apache.flink.runtime.metrics.util.InterceptingOperatorMetricGroup;
import org.apache.flink.runtime.metrics.util.InterceptingTaskMetricGroup;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.operators.testutils.MockEnvironmentBuilder;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A batch in a disk's windows ({@link DiskWindows}): the histograms of an interval, or a
 * batch of events, give exactly what their parts sent one by one at the same moment give:
 * the same windows, revisions and amendments in the same order, the same records sent
 * aside as late, the same duplicates counted, through restores from checkpoints too, on
 * the heap and in RocksDB. The open records a build before batches kept come back after
 * an upgrade.
 */
class DiskWindowsBatchesTest {
    /** A multiple of the 10 s windows: window k holds seconds (10k, 10k + 10] of its records' end times. */
    static final long T0_MS = 1_763_700_000_000L;
    static final long SECOND_MS = 1_000L;
    static final int WINDOW_SECONDS = 10;
    static final String HOST = "web-1";
    static final String DISK = "sdb";
    /** Every counter DiskWindows keeps: a batch must move each as its parts would. */
    static final List<String> COUNTERS = List.of("records_duplicate_total", "windows_closed_idle_total",
            "late_histograms_rolled_up_total", "windows_revised_total");
    static final String DUPLICATES = "records_duplicate_total";

    private final Pipeline.Config config = new Pipeline.Config();

    DiskWindowsBatchesTest() {
        config.outOfOrderness = Duration.ofSeconds(5);
        config.diskIdleness = Duration.ofMinutes(1);
        config.diskForgottenAfter = Duration.ofMinutes(10);
        config.kindIdleness = Duration.ofSeconds(10);
    }

    /** Where DiskWindows keeps its state, and how a snapshot of it is taken. */
    enum Backend {
        HEAP_CHECKPOINT, ROCKSDB_CHECKPOINT, ROCKSDB_CANONICAL_SAVEPOINT;

        boolean rocksDb() {
            return this != HEAP_CHECKPOINT;
        }
    }

    /** What an agent's record is at a moment of the wall clock (ms since the run began); null: the wall clock moving on alone. */
    record Step(long atMs, DiskRecord record) {}

    /** Everything DiskWindows sent, through every restore: windows, records aside as late, counters. */
    record Outcome(List<String> windows, List<String> late, Map<String, Long> counted) {}


    private static HistRecord histogram(long endS, String op, String latency, long count) {
        HistRecord h = new HistRecord();
        h.host = HOST;
        h.disk = DISK;
        h.op = op;
        h.latency = latency;
        h.startNs = (T0_MS + (endS - 1) * SECOND_MS) * 1_000_000L;
        h.endNs = (T0_MS + endS * SECOND_MS) * 1_000_000L;
        h.bucketsLog2Us = new long[13];
        h.bucketsLog2Us[latency.equals("queue") ? 6 : 12] = count;
        h.count = count;
        h.sumUs = count * (latency.equals("queue") ? 100 : 6_000);
        h.maxUs = latency.equals("queue") ? 120 : 7_000;
        return h;
    }

    /** The histograms of the second ending at `endS`: its reads at the device and queued, a write at the device. */
    static DiskRecord interval(long endS, long reads) {
        return DiskRecord.ofHistograms(List.of(histogram(endS, "R", "device", reads), histogram(endS, "R", "queue", reads),
                histogram(endS, "W", "device", 1)));
    }

    /** The second ending at `endS` as the deltas send an interval on: its diskstats' delta, and its histograms if it did I/O. */
    static DiskRecord intervalWithItsDiskstats(long endS, long reads) {
        return DiskRecord.ofInterval(diskstats(endS, reads).delta, reads == 0 ? null : interval(endS, reads).histograms);
    }

    /** A sampled read of 6 ms completing at `completeMs` after T0, standing for `weight` reads. */
    static IoEvent event(long completeMs, long weight) {
        IoEvent e = new IoEvent();
        e.host = HOST;
        e.disk = DISK;
        e.op = "R";
        e.bytes = 4096;
        e.sector = completeMs;
        e.completeNs = (T0_MS + completeMs) * 1_000_000L;
        e.issueNs = e.completeNs - 6_000_000L;
        e.queueNs = 100_000L;
        e.inflight = 1;
        e.sampleReason = "uniform";
        e.sampleWeight = weight;
        return e;
    }

    /**
     * `count` reads sampled evenly over the second ending at `endS`, the last completing
     * at its very end: the batch of a second ending on a window's boundary straddles it.
     */
    static List<IoEvent> sampled(long endS, int count, long reads) {
        List<IoEvent> events = new ArrayList<>();
        for (int i = 1; i <= count; i++) {
            events.add(event((endS - 1) * SECOND_MS + i * SECOND_MS / count, Math.max(1, reads / count)));
        }
        return events;
    }

    static DiskRecord diskstats(long endS, long reads) {
        DiskstatsDelta d = new DiskstatsDelta();
        d.host = HOST;
        d.disk = DISK;
        d.startNs = (T0_MS + (endS - 1) * SECOND_MS) * 1_000_000L;
        d.endNs = (T0_MS + endS * SECOND_MS) * 1_000_000L;
        d.counters.readsCompleted = reads;
        return DiskRecord.of(d);
    }

    /** Each second from `firstS` to `lastS` as the agent sends it, read that second: diskstats, histograms, two events. */
    private static List<Step> steady(long firstS, long lastS, long reads) {
        List<Step> steps = new ArrayList<>();
        for (long s = firstS; s <= lastS; s++) {
            steps.add(new Step(s * SECOND_MS, diskstats(s, reads)));
            steps.add(new Step(s * SECOND_MS, interval(s, reads)));
            steps.add(new Step(s * SECOND_MS, DiskRecord.ofEvents(sampled(s, 2, reads))));
        }
        return steps;
    }

    private static List<Step> then(List<Step> script, Step... more) {
        List<Step> steps = new ArrayList<>(script);
        steps.addAll(List.of(more));
        return steps;
    }


    /** DiskWindows over a script, fed each record whole or part by part, restored as a job is; what it sent through it all. */
    private final class Run {
        private final boolean partByPart;
        private final Backend backend;
        private final List<DiskWindow> windows = new ArrayList<>();
        private final List<DiskRecord> late = new ArrayList<>();
        private final Map<String, Long> counted = new TreeMap<>();
        private KeyedOneInputStreamOperatorTestHarness<String, DiskRecord, DiskWindow> harness;
        /** What the open-record lists held in state as it was last restored. */
        private List<List<String>> openRecordsAtRestore;
        private InterceptingOperatorMetricGroup metrics;
        private MockEnvironment environment;

        Run(boolean partByPart, Backend backend) throws Exception {
            this(partByPart, backend, null);
        }

        /** From `snapshot`, a checkpoint or savepoint: null to start afresh. */
        Run(boolean partByPart, Backend backend, OperatorSubtaskState snapshot) throws Exception {
            this.partByPart = partByPart;
            this.backend = backend;
            start(snapshot);
        }

        private void start(OperatorSubtaskState from) throws Exception {
            metrics = new InterceptingOperatorMetricGroup();
            InterceptingOperatorMetricGroup operatorMetrics = metrics;
            environment = new MockEnvironmentBuilder().setManagedMemorySize(3 * 1024 * 1024)
                    .setMetricGroup(new InterceptingTaskMetricGroup() {
                        @Override
                        public InternalOperatorMetricGroup getOrAddOperator(OperatorID id, String name,
                                Map<String, String> variables) {
                            return operatorMetrics;
                        }
                    }).build();
            harness = new KeyedOneInputStreamOperatorTestHarness<>(DiskWindows.operator(WINDOW_SECONDS, config),
                    DiskRecord::key, Types.STRING, environment);
            if (backend.rocksDb()) {
                harness.setStateBackend(new EmbeddedRocksDBStateBackend());
            }
            harness.setProcessingTime(0);
            if (from != null) {
                harness.initializeState(from);
            }
            harness.open();
        }

        void play(List<Step> steps) throws Exception {
            play(steps, Long.MIN_VALUE);
        }

        /** The steps, a checkpoint taken (and kept by no one) after every `every` of them; returns the last checkpoint's id. */
        long playCheckpointing(List<Step> steps, int every, long lastId) throws Exception {
            for (int from = 0; from < steps.size(); from += every) {
                List<Step> some = steps.subList(from, Math.min(steps.size(), from + every));
                play(some);
                if (from + every < steps.size()) {
                    snapshot(++lastId, some.get(some.size() - 1).atMs());
                }
            }
            return lastId;
        }

        /** The steps, none before `notBeforeMs` on the wall clock: what came meanwhile is read at once. */
        void play(List<Step> steps, long notBeforeMs) throws Exception {
            for (Step step : steps) {
                harness.setProcessingTime(Math.max(step.atMs(), notBeforeMs));
                if (step.record() != null) {
                    for (DiskRecord r : partByPart ? step.record().parts() : List.of(step.record())) {
                        harness.processElement(new StreamRecord<>(r, r.tsNs / 1_000_000L));
                    }
                }
            }
        }

        void endOfInput() throws Exception {
            harness.processWatermark(new Watermark(Long.MAX_VALUE));
        }

        /**
         * Runs on until the disk, silent, has been forgotten (a restored job counts silence
         * from its restart: one restored after the disk's last record hears it no more):
         * none of its state or timers is left.
         */
        /** (A job restored that read nothing again waits one disk idleness for its input before the silence counts.) */
        void assertItsDiskForgottenOnceSilent() throws Exception {
            harness.setProcessingTime(harness.getProcessingTime() + config.diskIdleness.toMillis()
                    + config.diskForgottenAfter.toMillis() + config.kindIdleness.toMillis());
            if (!backend.rocksDb()) {  // RocksDB does not count its entries
                assertEquals(0, harness.numKeyedStateEntries(), "a disk gone for good leaves no state");
            }
            assertEquals(0, harness.numProcessingTimeTimers() + harness.numEventTimeTimers(), "nor timers");
        }

        /** A checkpoint or savepoint as a barrier takes it: the operator first writes what it holds on the heap to its state. */
        OperatorSubtaskState snapshot(long id, long atMs) throws Exception {
            harness.prepareSnapshotPreBarrier(id);
            if (backend == Backend.ROCKSDB_CANONICAL_SAVEPOINT) {
                return harness.snapshotWithLocalState(id, atMs, SavepointType.savepoint(SavepointFormatType.CANONICAL))
                        .getJobManagerOwnedState();
            }
            return harness.snapshot(id, atMs);
        }

        /** Fails and is restored from `snapshot`: what it sent before stays sent (the sink is at least once). */
        void restoreFrom(OperatorSubtaskState snapshot) throws Exception {
            stop();
            start(snapshot);
            openRecordsAtRestore = openRecordsInState();
        }

        /** What the disk's open-record lists in state hold, list by list: each part's kind, second after T0 and identity. */
        private List<List<String>> openRecordsInState() throws Exception {
            KeyedStateBackend<String> state = ((AbstractStreamOperator<?>) harness.getOperator()).getKeyedStateBackend();
            state.setCurrentKey(OutputRecord.diskKey(HOST, DISK));
            List<List<String>> lists = new ArrayList<>();
            for (int i = 0; i < DiskWindows.OPEN_RECORD_LISTS; i++) {
                ListState<DiskRecord> list = state.getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE,
                        new ListStateDescriptor<>("open-window-records-" + i, DiskRecordSerializer.TYPE));
                List<String> records = new ArrayList<>();
                Iterable<DiskRecord> held = list.get();
                if (held != null) {
                    held.forEach(r -> records.add((r.hist != null ? "histogram " : r.event != null ? "event " : "diskstats ")
                            + (r.tsNs / 1_000_000L - T0_MS) / SECOND_MS + " s " + Long.toHexString(r.identity())));
                }
                lists.add(records);
            }
            return lists;
        }

        private void stop() throws Exception {
            windows.addAll(harness.extractOutputValues());
            ConcurrentLinkedQueue<StreamRecord<DiskRecord>> aside = harness.getSideOutput(Pipeline.LATE_RECORDS);
            if (aside != null) {
                aside.forEach(r -> late.add(r.getValue()));
            }
            for (String name : COUNTERS) {
                Counter counter = (Counter) metrics.get(name);
                counted.merge(name, counter.getCount(), Long::sum);
            }
            harness.close();
            environment.close();
        }

        Outcome outcome() throws Exception {
            stop();
            return new Outcome(windows.stream().map(DiskWindowsBatchesTest::json).toList(),
                    late.stream().map(DiskWindowsBatchesTest::json).toList(), counted);
        }

        /**
         * Each window sent: its start (s after T0), the reads its device histograms hold and
         * its sampled reads, r and its number for a revision, a for an amendment.
         */
        List<String> windowsSent() {
            return windows.stream().map(w -> {
                OpLatency reads = w.ops.get("R");
                return (w.startNs / 1_000_000L - T0_MS) / SECOND_MS + "s:" + (reads == null ? 0 : reads.count()) + "/"
                        + (reads == null ? 0 : reads.events) + (w.revision > 0 ? " r" + w.revision : "")
                        + (w.amendsClosedWindow ? " a" : "");
            }).toList();
        }
    }

    private static String json(Object o) {
        try {
            return Json.MAPPER.writeValueAsString(o);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The script through DiskWindows with every record whole, then with every batch's parts sent one by one: the same outcome. */
    private Run batchedAsItsParts(List<Step> script) throws Exception {
        Run oneByOne = new Run(true, Backend.HEAP_CHECKPOINT);
        oneByOne.play(script);
        oneByOne.endOfInput();
        Run batched = new Run(false, Backend.HEAP_CHECKPOINT);
        batched.play(script);
        batched.endOfInput();
        assertEquals(oneByOne.outcome(), batched.outcome());
        return batched;
    }


    @Test
    void aDiskRecordTravelsAsAPojoItsBatchesToo() throws Exception {
        TypeInformation<DiskRecord> type = TypeInformation.of(DiskRecord.class);
        assertInstanceOf(PojoTypeInfo.class, type);
        assertEquals(List.of(), kryoFallbacks(type, "DiskRecord"), "no part of a record is serialized by Kryo");
        PojoTypeInfo<DiskRecord> pojo = (PojoTypeInfo<DiskRecord>) type;
        assertInstanceOf(PojoTypeInfo.class, ((ObjectArrayTypeInfo<?, ?>) pojo.getTypeAt("histograms")).getComponentInfo());
        assertInstanceOf(PojoTypeInfo.class, ((ObjectArrayTypeInfo<?, ?>) pojo.getTypeAt("events")).getComponentInfo());

        TypeSerializer<DiskRecord> serializer = type.createSerializer(new SerializerConfigImpl());
        for (DiskRecord r : List.of(interval(3, 10), DiskRecord.ofEvents(sampled(3, 4, 10)), diskstats(3, 10))) {
            DataOutputSerializer out = new DataOutputSerializer(256);
            serializer.serialize(r, out);
            DiskRecord copy = serializer.deserialize(new DataInputDeserializer(out.getCopyOfBuffer()));
            assertEquals(json(r.parts()), json(copy.parts()));
        }
    }

    /** Where in `type` a value would go through Kryo (a generic type), by its path. */
    private static List<String> kryoFallbacks(TypeInformation<?> type, String path) {
        List<String> found = new ArrayList<>();
        if (type instanceof GenericTypeInfo<?>) {
            found.add(path + ": " + type);
        } else if (type instanceof ObjectArrayTypeInfo<?, ?> array) {
            found.addAll(kryoFallbacks(array.getComponentInfo(), path + "[]"));
        } else if (type instanceof PojoTypeInfo<?> pojo) {
            for (int i = 0; i < pojo.getArity(); i++) {
                PojoField field = pojo.getPojoFieldAt(i);
                found.addAll(kryoFallbacks(field.getTypeInformation(), path + "." + field.getField().getName()));
            }
        }
        return found;
    }

    @Test
    void aBatchOfEventsStraddlingTwoWindowsPutsEachEventInItsOwn() throws Exception {
        Run batched = batchedAsItsParts(steady(1, 25, 10));
        // Each second's batch: an event half-way, one at its end; the batch of 10 s puts its second in the next window.
        assertEquals(List.of("0s:90/19", "10s:100/20", "20s:60/11"), batched.windowsSent());
    }

    @Test
    void aResentBatchAndAnEventTwiceInOneBatchAreCountedOnceAsTheirPartsAre() throws Exception {
        IoEvent twice = event(1_500, 5);
        Run batched = batchedAsItsParts(List.of(
                new Step(SECOND_MS, diskstats(2, 10)),
                new Step(SECOND_MS, interval(2, 10)),
                new Step(SECOND_MS, interval(2, 10)),
                new Step(SECOND_MS, DiskRecord.ofEvents(List.of(twice, event(1_700, 5), twice)))));
        assertEquals(List.of("0s:10/2"), batched.windowsSent());
        assertEquals(3 + 1, batched.counted.get(DUPLICATES), "the interval's three histograms again, the event twice in its batch");
    }

    /**
     * An interval of 3 s sent again after its window closed, with a histogram it lacked
     * (the writes' queue time): the two read histograms it had are resends, counted; the
     * new one is late for the detectors and amends the window's rollups. Events of 4 s
     * sent again are late.
     */
    @Test
    void aLateBatchAmendsTheRollupsWithTheHistogramsItsWindowLacked() throws Exception {
        Run batched = batchedAsItsParts(then(steady(1, 21, 10),
                new Step(22 * SECOND_MS, DiskRecord.ofHistograms(List.of(histogram(3, "R", "device", 10),
                        histogram(3, "W", "queue", 1), histogram(3, "R", "queue", 10)))),
                new Step(22 * SECOND_MS, DiskRecord.ofEvents(sampled(4, 2, 10)))));
        assertEquals(List.of("0s:90/19", "0s:0/0 a", "10s:100/20", "20s:20/3"), batched.windowsSent());
        assertEquals(List.of("W", "R", "R"), batched.late.stream().map(r -> r.hist != null ? r.hist.op : r.event.op).toList());
        assertEquals(2, batched.counted.get(DUPLICATES));
        assertEquals(1, batched.counted.get("late_histograms_rolled_up_total"));
    }

    /** The disk's clock has closed the window of 0-10 s, not that of 10-20 s: a batch across both sends aside only its part for the first. */
    @Test
    void aBatchPartlyLateSendsAsideOnlyItsLateParts() throws Exception {
        Run batched = batchedAsItsParts(then(steady(1, 16, 10),
                new Step(17 * SECOND_MS, DiskRecord.ofEvents(List.of(event(9_700, 1), event(10_700, 1))))));
        assertEquals(List.of("0s:90/19", "10s:70/14"), batched.windowsSent());
        assertEquals(List.of(T0_MS + 9_700), batched.late.stream().map(r -> r.tsNs / 1_000_000L).toList());
    }

    /**
     * Every Kafka node away for longer than the disk idleness: the open window closes on
     * silence, then the backlog's batches come, histograms first, and the window takes
     * them and is sent again whole.
     */
    @Test
    void batchesForAWindowClosedOnSilenceAreTakenIntoItAndItIsSentAgainWhole() throws Exception {
        List<Step> script = new ArrayList<>(steady(1, 14, 10));
        script.add(new Step(14 * SECOND_MS + config.diskIdleness.toMillis() + config.kindIdleness.toMillis(), null));
        for (long s = 15; s <= 40; s++) {
            script.add(new Step(100 * SECOND_MS, interval(s, 10)));
            script.add(new Step(100 * SECOND_MS, DiskRecord.ofEvents(sampled(s, 2, 10))));
        }
        for (long s = 15; s <= 40; s++) {
            script.add(new Step(100 * SECOND_MS, diskstats(s, 10)));
        }
        script.add(new Step(100 * SECOND_MS + config.kindIdleness.toMillis(), null));  // the disk's next check
        Run batched = batchedAsItsParts(script);
        List<String> sent = batched.windowsSent();
        assertEquals(List.of("0s:90/19", "10s:50/9", "20s:100/20", "10s:100/20 r1"),
                sent.stream().filter(w -> !w.endsWith(" a")).limit(4).toList());
        assertTrue(batched.counted.get("windows_revised_total") >= 1);
    }

    /**
     * A disk's random life, as {@link DiskWindowsTest}'s, its histograms and events sent
     * batched: each second's diskstats, interval and events (in half the lives the
     * diskstats ride with the interval, as the deltas send it on), each kind delivered in order
     * a few seconds late at most except for an outage of its own; a batch of events now and
     * then holding one event twice, and any record sent again now and then, up to 90 s later.
     */
    private static List<Step> randomLife(Random rnd) {
        int seconds = 20 + rnd.nextInt(60);
        long[] readsOf = new long[seconds + 1];
        for (int s = 1; s <= seconds; s++) {
            readsOf[s] = rnd.nextInt(3) == 0 ? 0 : 1 + rnd.nextInt(20);
        }
        List<Step> steps = new ArrayList<>();
        // As the deltas send an interval on: its diskstats' delta with its histograms, one record.
        boolean intervalsWithTheirDiskstats = rnd.nextBoolean();
        for (int kind = intervalsWithTheirDiskstats ? 1 : 0; kind < 3; kind++) {
            long outageFromS = 1 + rnd.nextInt(seconds);
            long outageToS = rnd.nextInt(2) == 0 ? outageFromS : outageFromS + rnd.nextInt(90);
            long deliveredMs = 0;
            for (int s = 1; s <= seconds; s++) {
                if (kind > 0 && readsOf[s] == 0 && !(kind == 1 && intervalsWithTheirDiskstats)) {
                    continue;  // no I/O: no histogram, no event
                }
                long atMs = s * SECOND_MS + rnd.nextInt(3_000);
                if (s >= outageFromS && s < outageToS) {
                    atMs = Math.max(atMs, outageToS * SECOND_MS + rnd.nextInt(5_000));
                }
                deliveredMs = Math.max(deliveredMs, atMs);
                DiskRecord sent = switch (kind) {
                    case 0 -> diskstats(s, readsOf[s]);
                    case 1 -> intervalsWithTheirDiskstats ? intervalWithItsDiskstats(s, readsOf[s]) : interval(s, readsOf[s]);
                    default -> DiskRecord.ofEvents(eventsOfSecond(rnd, s, readsOf[s]));
                };
                steps.add(new Step(deliveredMs, sent));
                if (rnd.nextInt(15) == 0) {
                    steps.add(new Step(deliveredMs + rnd.nextInt(90_000), sent));
                }
            }
        }
        steps.sort(Comparator.comparingLong(Step::atMs));
        steps.add(new Step(steps.get(steps.size() - 1).atMs() + 900 * SECOND_MS, null));
        return steps;
    }

    private static List<IoEvent> eventsOfSecond(Random rnd, long s, long reads) {
        List<IoEvent> events = new ArrayList<>(sampled(s, 1 + rnd.nextInt(4), reads));
        if (rnd.nextInt(10) == 0) {
            events.add(events.get(0));
        }
        return events;
    }

    /**
     * Random lives, each failed at a random step some steps after a checkpoint and restored
     * from it after a random pause (what came after the checkpoint read again, at once):
     * batched, they send what their parts sent one by one send, in the same order.
     */
    @Test
    void randomLivesSentBatchedSendWhatTheirPartsSentOneByOneSendAcrossRestores() throws Exception {
        Map<String, Long> exercised = everyLifeAsItsParts(300, Backend.HEAP_CHECKPOINT);
        for (String path : List.of(DUPLICATES, "late_histograms_rolled_up_total", "windows_revised_total", "late")) {
            assertTrue(exercised.getOrDefault(path, 0L) > 0, "the lives took each path: " + exercised);
        }
    }

    @ParameterizedTest
    @EnumSource(value = Backend.class, names = {"ROCKSDB_CHECKPOINT", "ROCKSDB_CANONICAL_SAVEPOINT"})
    void randomLivesSentBatchedSendWhatTheirPartsSentOneByOneSendAcrossRestoresInRocksDb(Backend backend) throws Exception {
        everyLifeAsItsParts(30, backend);
    }

    /** What the lives of `lives` seeds exercised, summed: each counter, and records sent aside as late. */
    private Map<String, Long> everyLifeAsItsParts(int lives, Backend backend) throws Exception {
        Map<String, Long> exercised = new TreeMap<>();
        for (int seed = 0; seed < lives; seed++) {
            Random rnd = new Random(seed);
            List<Step> script = randomLife(rnd);
            int cut = 1 + rnd.nextInt(script.size() - 1);
            int failedAt = Math.min(script.size() - 1, cut + rnd.nextInt(40));
            long pauseMs = new long[] {0, 5_000, 30_000, 90_000}[rnd.nextInt(4)];
            Outcome oneByOne = lifeWithARestore(new Run(true, backend), script, cut, failedAt, pauseMs);
            Outcome batched = lifeWithARestore(new Run(false, backend), script, cut, failedAt, pauseMs);
            assertEquals(oneByOne, batched, "seed " + seed + ": checkpoint after step " + cut + ", failed at step " + failedAt
                    + ", restarted " + pauseMs + " ms later");
            batched.counted().forEach((name, n) -> exercised.merge(name, n, Long::sum));
            exercised.merge("late", (long) batched.late().size(), Long::sum);
        }
        return exercised;
    }

    private Outcome lifeWithARestore(Run run, List<Step> script, int cut, int failedAt, long pauseMs) throws Exception {
        return lifeWithARestore(run, script, cut, failedAt, pauseMs, Integer.MAX_VALUE);
    }

    /** As above, with a checkpoint every `checkpointEvery` steps besides, none of them restored. */
    private Outcome lifeWithARestore(Run run, List<Step> script, int cut, int failedAt, long pauseMs, int checkpointEvery)
            throws Exception {
        long checkpoints = run.playCheckpointing(script.subList(0, cut), checkpointEvery, 0);
        OperatorSubtaskState checkpoint = run.snapshot(checkpoints + 1, script.get(cut - 1).atMs());
        run.playCheckpointing(script.subList(cut, failedAt), checkpointEvery, checkpoints + 1);
        run.restoreFrom(checkpoint);
        run.play(script.subList(cut, script.size()), script.get(failedAt - 1).atMs() + pauseMs);
        run.assertItsDiskForgottenOnceSilent();
        return run.outcome();
    }

    /**
     * Random lives checkpointed every few steps, before and after the checkpoint they are
     * restored from, send what the same lives checkpointed once send: after each snapshot
     * the heap keeps what the disk wrote (DiskWindows.Held), and a window closing clears it
     * from state unread, so each checkpoint holds exactly what the heap does. So do they
     * with a heap that keeps only a few parts of it, each list past that read back.
     */
    @ParameterizedTest
    @EnumSource(value = Backend.class, names = {"HEAP_CHECKPOINT", "ROCKSDB_CHECKPOINT"})
    void randomLivesCheckpointedOftenRestoreAsTheSameLivesCheckpointedOnce(Backend backend) throws Exception {
        for (int seed = 0; seed < 30; seed++) {
            Random rnd = new Random(seed);
            List<Step> script = randomLife(rnd);
            int cut = 1 + rnd.nextInt(script.size() - 1);
            int failedAt = Math.min(script.size() - 1, cut + rnd.nextInt(40));
            long pauseMs = new long[] {0, 5_000, 30_000, 90_000}[rnd.nextInt(4)];
            int checkpointEvery = 1 + rnd.nextInt(20);
            int partsKept = rnd.nextInt(30);
            Run once = new Run(false, backend);
            Run often = new Run(false, backend);
            Outcome onceSent = lifeWithARestore(once, script, cut, failedAt, pauseMs);
            Outcome oftenSent = lifeWithARestore(often, script, cut, failedAt, pauseMs, checkpointEvery);
            String life = "seed " + seed + ": checkpoint every " + checkpointEvery + " steps, restored from the one after step "
                    + cut + ", failed at step " + failedAt;
            // Records left in state by a window closed would never be sent again: only the state shows them.
            assertEquals(once.openRecordsAtRestore, often.openRecordsAtRestore, life + ": the open records restored");
            assertEquals(onceSent, oftenSent, life);
            double heapShare = config.openRecordsHeapShare;
            config.openRecordsHeapShare = (partsKept + 0.5) * DiskWindows.BYTES_PER_PART / Runtime.getRuntime().maxMemory();
            try {
                assertEquals(partsKept, DiskWindows.heldPartsAtMost(config.openRecordsHeapShare), "the share's parts");
                Run keepingFew = new Run(false, backend);
                Outcome keepingFewSent = lifeWithARestore(keepingFew, script, cut, failedAt, pauseMs, checkpointEvery);
                assertEquals(once.openRecordsAtRestore, keepingFew.openRecordsAtRestore,
                        life + ", " + partsKept + " parts kept: the open records restored");
                assertEquals(onceSent, keepingFewSent, life + ", " + partsKept + " parts kept");
            } finally {
                config.openRecordsHeapShare = heapShare;
            }
        }
    }

    /**
     * What the build before batches kept of a disk: its clock, and the records of its open
     * windows each as that build's serializer wrote a DiskRecord (without the batch fields);
     * its timers armed as it armed them.
     */
    private static final class BuildBeforeBatches extends KeyedProcessFunction<String, DiskRecord, DiskWindow> {
        private final WindowFunctions.Accumulate accumulate = new WindowFunctions.Accumulate(WINDOW_SECONDS);
        private final Pipeline.Config config;
        private transient ListState<DiskRecord> openRecords;
        private transient ValueState<DiskClock> clock;

        BuildBeforeBatches(Pipeline.Config config) {
            this.config = config;
        }

        @Override
        public void open(OpenContext openContext) {
            openRecords = getRuntimeContext().getListState(new ListStateDescriptor<>("open-window-records", recordSerializer()));
            clock = getRuntimeContext().getState(new ValueStateDescriptor<>("disk-clock", DiskClock.class));
        }

        /** DiskRecord's serializer before it held batches: a POJO of these fields alone. */
        private static TypeSerializer<DiskRecord> recordSerializer() {
            List<String> fields = List.of("delta", "disk", "event", "hist", "host", "sample", "tsNs");
            SerializerConfigImpl serializerConfig = new SerializerConfigImpl();
            Field[] pojoFields = new Field[fields.size()];
            TypeSerializer<?>[] serializers = new TypeSerializer<?>[fields.size()];
            for (int i = 0; i < fields.size(); i++) {
                try {
                    pojoFields[i] = DiskRecord.class.getField(fields.get(i));
                } catch (NoSuchFieldException e) {
                    throw new IllegalStateException(e);
                }
                serializers[i] = TypeInformation.of(pojoFields[i].getType()).createSerializer(serializerConfig);
            }
            return new PojoSerializer<>(DiskRecord.class, serializers, pojoFields, serializerConfig);
        }

        @Override
        public void processElement(DiskRecord r, Context ctx, Collector<DiskWindow> out) throws Exception {
            DiskClock c = clock.value() == null ? DiskClock.ofNewDisk() : clock.value();
            c.openRecordsByWindow = false;  // a field that build's clock did not have
            long nowMs = ctx.timerService().currentProcessingTime();
            long kindIdleMs = config.kindIdleness.toMillis();
            c.saw(r, Math.floorDiv(r.tsNs, 1_000_000L), nowMs, kindIdleMs);
            if (c.checkAtMs == DiskClock.NONE) {
                c.checkAtMs = nowMs + kindIdleMs;
                ctx.timerService().registerProcessingTimeTimer(c.checkAtMs);
            }
            long startMs = accumulate.windowStartMs(r);
            if (c.opens(startMs)) {
                ctx.timerService().registerEventTimeTimer(startMs + WINDOW_SECONDS * SECOND_MS - 1);
            }
            openRecords.add(r);
            c.closedThroughMs = Math.max(c.closedThroughMs,
                    c.watermark(config.outOfOrderness.toMillis(), kindIdleMs, config.diskIdleness.toMillis(), nowMs, DiskClock.NONE));
            clock.update(c);
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext ctx, Collector<DiskWindow> out) throws Exception {
            DiskClock c = clock.value();
            c.checkAtMs = timestamp + config.kindIdleness.toMillis();  // checked on while the disk speaks
            ctx.timerService().registerProcessingTimeTimer(c.checkAtMs);
            clock.update(c);
        }
    }

    /** Seconds 1 to 13 of the disk, one by one, in the state the build before batches kept; its last second's wall clock. */
    private OperatorSubtaskState stateOfTheBuildBeforeBatches(Backend backend, List<Step> script) throws Exception {
        try (KeyedOneInputStreamOperatorTestHarness<String, DiskRecord, DiskWindow> before =
                new KeyedOneInputStreamOperatorTestHarness<>(new KeyedProcessOperator<>(new BuildBeforeBatches(config)),
                        DiskRecord::key, Types.STRING)) {
            if (backend.rocksDb()) {
                before.setStateBackend(new EmbeddedRocksDBStateBackend());
            }
            before.setProcessingTime(0);
            before.open();
            for (Step step : script) {
                before.setProcessingTime(step.atMs());
                for (DiskRecord r : step.record().parts()) {
                    before.processElement(new StreamRecord<>(r, r.tsNs / 1_000_000L));
                }
            }
            long atMs = script.get(script.size() - 1).atMs();
            if (backend == Backend.ROCKSDB_CANONICAL_SAVEPOINT) {
                return before.snapshotWithLocalState(1L, atMs, SavepointType.savepoint(SavepointFormatType.CANONICAL))
                        .getJobManagerOwnedState();
            }
            return before.snapshot(1L, atMs);
        }
    }

    /**
     * A job upgraded from a savepoint or checkpoint of the build before batches: the open
     * records that build kept are read, resends among them counted once, and its windows
     * close as if the job had run this build all along.
     */
    @ParameterizedTest
    @EnumSource(Backend.class)
    void theOpenRecordsOfTheBuildBeforeBatchesComeBackAfterAnUpgrade(Backend backend) throws Exception {
        List<Step> script = steady(1, 31, 10);
        int stepsPerSecond = 3;  // diskstats, the interval's histograms, the events
        Run uninterrupted = new Run(false, backend);
        uninterrupted.play(script);
        uninterrupted.endOfInput();
        Run upgraded = new Run(false, backend, stateOfTheBuildBeforeBatches(backend, script.subList(0, 13 * stepsPerSecond)));
        upgraded.play(script.subList(11 * stepsPerSecond, script.size()));  // from 12 s: read again from the savepoint's offsets
        upgraded.endOfInput();
        Outcome expected = uninterrupted.outcome();
        Outcome outcome = upgraded.outcome();
        assertEquals(List.of("0s:90/19", "10s:100/20", "20s:100/20", "30s:20/3"), upgraded.windowsSent());
        assertEquals(expected.windows(), outcome.windows());
        assertEquals(expected.late(), outcome.late());
        assertEquals(2 + 3 * 2 + 2 * 2, outcome.counted().get(DUPLICATES),
                "seconds 12 and 13 read again: their diskstats, histograms and events, each counted once");
    }
}
