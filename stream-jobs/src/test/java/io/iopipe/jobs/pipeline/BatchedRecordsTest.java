package io.iopipe.jobs.pipeline;

import java.nio.charset.StandardCharsets;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.DiskstatsFields;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.EventBatch;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.IntervalRecord;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.RawRecord;
import io.iopipe.jobs.records.Topics;
import io.iopipe.jobs.testing.SchemaFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;

/**
 * The batched agent records (io.interval.v1, io.eventbatch.v1) through the whole graph: a
 * batch is its records sent one by one, and a batch with a bad part is one dead letter of
 * which nothing goes further.
 */
class BatchedRecordsTest {
    static final String HOST = "web-17";
    static final List<String> DISKS = List.of("sda", "sdb");
    static final long START_NS = 1_763_700_000_000_000_000L;
    static final long SECOND_NS = 1_000_000_000L;
    /** Enough seconds for two 10 s windows and a minute's window of each disk. */
    static final int SECONDS = 25;
    static final long READS_PER_S = 40;
    static final long READ_DEVICE_US = 6_000;
    /** The histograms of each second: reads at the device and queued, writes at the device. */
    static final List<List<String>> OP_LATENCIES = List.of(List.of("R", "device"), List.of("R", "queue"), List.of("W", "device"));
    /** The second whose interval of sdb is sent with a bad histogram, in the test of a refused batch. */
    static final int BAD_SECOND = 12;
    static final String BAD_DISK = "sdb";

    /** What the agent reads of one disk in one second: its sample, its histograms, its sampled I/Os. */
    record Second(ObjectNode sample, List<ObjectNode> histograms, List<ObjectNode> events) {
        List<ObjectNode> records() {
            List<ObjectNode> all = new ArrayList<>(List.of(sample));
            all.addAll(histograms);
            all.addAll(events);
            return all;
        }
    }

    private static List<Second> workload() {
        return workload(2);
    }

    /** Each second of each disk, its `eventsPerSecond` events a third of a second apart: a third completes at its end. */
    private static List<Second> workload(int eventsPerSecond) {
        List<Second> seconds = new ArrayList<>();
        for (int s = 1; s <= SECONDS; s++) {
            for (String disk : DISKS) {
                List<ObjectNode> histograms = new ArrayList<>();
                for (List<String> opLatency : OP_LATENCIES) {
                    histograms.add(histogram(disk, s, opLatency.get(0), opLatency.get(1)));
                }
                List<ObjectNode> events = new ArrayList<>();
                for (int i = 1; i <= eventsPerSecond; i++) {
                    events.add(event(disk, s, i));
                }
                seconds.add(new Second(sample(disk, s), histograms, events));
            }
        }
        return seconds;
    }

    private static ObjectNode sample(String disk, int second) {
        long reads = READS_PER_S * second;
        ObjectNode n = Json.object().put("schema", DiskstatsSample.SCHEMA).put("host", HOST).put("disk", disk)
                .put("ts_ns", START_NS + second * SECOND_NS).put("rotational", true);
        DiskstatsFields.COUNTERS.forEach(counter -> n.put(counter, 0L));
        return n.put("reads_completed", reads).put("sectors_read", reads * 8).put("read_time_ms", reads * READ_DEVICE_US / 1000)
                .put("in_flight", 1).put("io_time_ms", second * 240L).put("weighted_io_time_ms", reads * READ_DEVICE_US / 1000);
    }

    /** One second's histogram: every read of 4-8 ms at the device, 64-128 us queued; a write a second. */
    private static ObjectNode histogram(String disk, int second, String op, String latency) {
        long count = op.equals("R") ? READS_PER_S : 1;
        int bucket = latency.equals("queue") ? 6 : 12;
        ArrayNode buckets = Json.MAPPER.createArrayNode();
        for (int b = 0; b <= bucket; b++) {
            buckets.add(b == bucket ? count : 0);
        }
        long latencyUs = latency.equals("queue") ? 100 : READ_DEVICE_US;
        ObjectNode n = Json.object().put("schema", HistRecord.SCHEMA).put("host", HOST).put("disk", disk).put("op", op)
                .put("latency", latency).put("start_ns", START_NS + (second - 1) * SECOND_NS)
                .put("end_ns", START_NS + second * SECOND_NS);
        n.set("buckets_log2_us", buckets);
        return n.put("count", count).put("sum_us", count * latencyUs).put("max_us", latencyUs + 500).put("errors", 0);
    }

    /** The i-th read sampled in a second, standing for its share of the second's reads. */
    private static ObjectNode event(String disk, int second, int i) {
        long completeNs = START_NS + (second - 1) * SECOND_NS + i * SECOND_NS / 3;
        return Json.object().put("schema", IoEvent.SCHEMA).put("host", HOST).put("disk", disk).put("op", "R")
                .put("bytes", 4096).put("sector", 2048L * second + i).put("issue_ns", completeNs - READ_DEVICE_US * 1000)
                .put("complete_ns", completeNs).put("queue_ns", 100_000).put("inflight", 1).put("error", 0)
                .put("comm", "postgres").put("pid", 812).put("sample_reason", "uniform")
                .put("sample_weight", READS_PER_S / 2.0).put("timed_from", IoEvent.TIMED_FROM_DISPATCH);
    }

    /** The second's sample and histograms as one interval, as the agent batches them. */
    private static ObjectNode interval(Second second) {
        ObjectNode interval = second.sample().deepCopy().put("schema", IntervalRecord.SCHEMA);
        JsonNode first = second.histograms().get(0);
        interval.put("start_ns", first.get("start_ns").asLong()).put("end_ns", first.get("end_ns").asLong());
        return columns(interval, IntervalRecord.SCHEMA, "hist_", second.histograms());
    }

    private static ObjectNode eventBatch(Second second) {
        ObjectNode batch = Json.object().put("schema", EventBatch.SCHEMA).put("host", HOST)
                .put("disk", second.sample().get("disk").asText());
        return columns(batch, EventBatch.SCHEMA, "", second.events());
    }

    /** Each array of the batch's schema, `prefix` and a field of the parts: that field of each part. */
    private static ObjectNode columns(ObjectNode batch, String schema, String prefix, List<ObjectNode> parts) {
        SchemaFiles.schema(schema).get("properties").properties().forEach(property -> {
            if (property.getValue().path("type").asText().equals("array")) {
                ArrayNode column = batch.putArray(property.getKey());
                parts.forEach(part -> column.add(part.get(property.getKey().substring(prefix.length()))));
            }
        });
        return batch;
    }

    private static RawRecord onItsTopic(JsonNode record) {
        String schema = record.get("schema").asText();
        return RawRecord.fromTopic(Topics.forRecord(schema), schema + " " + record.get("disk").asText(),
                record.toString().getBytes(StandardCharsets.UTF_8), null);
    }

    private static List<RawRecord> oneByOne(List<Second> seconds) {
        return seconds.stream().flatMap(s -> s.records().stream()).map(BatchedRecordsTest::onItsTopic).toList();
    }

    private static List<RawRecord> batched(List<Second> seconds) {
        return seconds.stream().flatMap(s -> List.of(interval(s), eventBatch(s)).stream()).map(BatchedRecordsTest::onItsTopic)
                .toList();
    }

    @Test
    void aBatchYieldsWhatItsRecordsSentOneByOneDo() throws Exception {
        List<Second> seconds = workload();
        List<RawRecord> batches = batched(seconds);

        List<OutputRecord> fromBatches = run(batches);

        assertEquals(made(run(oneByOne(seconds))), made(fromBatches));
        assertEquals(Set.of(10, 60), windowLengths(fromBatches), "windows of each length came out");
        assertEquals(List.of(), refusedAtDecode(fromBatches));
        assertEquals(batches.stream().map(r -> Topics.acceptedOf(schemaOf(r.text())) + " " + r.text()).sorted().toList(),
                accepted(fromBatches), "each batch passed on once, as sent, to its accepted topic");
    }

    /**
     * An interval whose second histogram's buckets disagree with its count: the dead letter
     * names the field, the histogram and the rule, and the sample and the other histograms
     * reach no window, which are those of the records sent without that interval's.
     */
    @Test
    void aBatchWithABadPartIsOneDeadLetterOfWhichNothingGoesFurther() throws Exception {
        List<Second> seconds = workload();
        Second bad = seconds.stream().filter(BatchedRecordsTest::isTheBadSecond).findFirst().orElseThrow();
        ObjectNode badQueueHistogram = bad.histograms().get(1);
        long count = badQueueHistogram.get("count").asLong();
        badQueueHistogram.put("count", count + 1);
        List<RawRecord> batches = batched(seconds);
        List<RawRecord> withoutTheBadInterval = new ArrayList<>();
        for (Second s : seconds) {
            List<ObjectNode> sent = isTheBadSecond(s) ? s.events() : s.records();
            sent.forEach(r -> withoutTheBadInterval.add(onItsTopic(r)));
        }

        List<OutputRecord> fromBatches = run(batches);

        List<JsonNode> refused = refusedAtDecode(fromBatches);
        assertEquals(1, refused.size(), refused.toString());
        assertEquals("hist_count[1] (histogram 1, op R, latency queue): buckets_log2_us hold " + count
                + " I/Os but count is " + (count + 1), refused.get(0).get("reason").asText());
        assertEquals(IntervalRecord.SCHEMA + " " + BAD_DISK, refused.get(0).get("source").asText());
        assertEquals(made(run(withoutTheBadInterval)), made(fromBatches));
        assertNotEquals(made(run(oneByOne(seconds))), made(fromBatches), "the interval's parts would have shown");
        String badInterval = Topics.acceptedOf(IntervalRecord.SCHEMA) + " " + interval(bad);
        assertEquals(batches.size() - 1, accepted(fromBatches).size(), "every batch but the bad one passed on");
        assertFalse(accepted(fromBatches).contains(badInterval));
    }

    /**
     * Each second's events end with one at the very end of its interval, so the batches of
     * 10 s and 20 s straddle two windows; sda's interval and events of 24 s are sent again
     * while their window is open, and sdb's events of 22 s come with one of them twice:
     * the batches give what their records sent one by one give, each resend merged once.
     */
    @Test
    void straddlingAndResentBatchesGiveWhatTheirRecordsSentOneByOneDo() throws Exception {
        List<Second> seconds = workload(3);
        List<Second> sent = new ArrayList<>(seconds);
        sent.add(secondOf(seconds, "sda", 24));
        Second twice = secondOf(seconds, "sdb", 22);
        List<ObjectNode> withOneTwice = new ArrayList<>(twice.events());
        withOneTwice.add(twice.events().get(0));
        sent.set(sent.indexOf(twice), new Second(twice.sample(), twice.histograms(), withOneTwice));

        List<OutputRecord> fromBatches = run(batched(sent));

        assertEquals(made(run(oneByOne(sent))), made(fromBatches));
        assertEquals(List.of(29, 30, 16), readEventsOfTenSecondWindows(fromBatches, "sda"),
                "the batches of 10 s and 20 s: their first two events in one window, the last in the next");
        assertEquals(madeBesidesDeadLetters(run(batched(seconds))), madeBesidesDeadLetters(fromBatches),
                "nothing sent again is counted twice");
    }

    private static Second secondOf(List<Second> seconds, String disk, int second) {
        return seconds.stream().filter(s -> s.sample().get("disk").asText().equals(disk)
                && s.sample().get("ts_ns").asLong() == START_NS + second * SECOND_NS).findFirst().orElseThrow();
    }

    /** The sampled reads in each 10 s window of `disk`, in time order. */
    private static List<Integer> readEventsOfTenSecondWindows(List<OutputRecord> out, String disk) {
        return out.stream().filter(r -> r.schema.equals("io.window.v1")).map(r -> read(r.text()))
                .filter(w -> w.get("window_s").asInt() == 10 && w.get("disk").asText().equals(disk))
                .sorted(java.util.Comparator.comparingLong(w -> w.get("window_start_ns").asLong()))
                .map(w -> w.get("latency").get("R").get("events").asInt()).toList();
    }

    private static List<String> madeBesidesDeadLetters(List<OutputRecord> out) {
        return made(out).stream().filter(r -> !r.startsWith(DeadLetters.SCHEMA + " ")).toList();
    }

    private static boolean isTheBadSecond(Second s) {
        return s.sample().get("disk").asText().equals(BAD_DISK)
                && s.sample().get("ts_ns").asLong() == START_NS + BAD_SECOND * SECOND_NS;
    }

    /**
     * What the graph made of its input: every output but the input passed on and the
     * decoder's dead letters, sorted; a dead letter without the wall clock it was written at
     * and the source of the record it refused (a batch's parts come from the batch's topic).
     */
    private static List<String> made(List<OutputRecord> out) {
        return out.stream().filter(r -> !r.acceptedInput && !isRefusedAtDecode(r))
                .map(r -> r.schema + " " + (DeadLetters.SCHEMA.equals(r.schema) ? whatItRefused(r.text()) : r.key + " " + r.text()))
                .sorted().toList();
    }

    private static String whatItRefused(String deadLetter) {
        ObjectNode refused = (ObjectNode) read(deadLetter);
        refused.remove(List.of("ts_ns", "source"));
        return refused.toString();
    }

    private static boolean isRefusedAtDecode(OutputRecord r) {
        return DeadLetters.SCHEMA.equals(r.schema) && read(r.text()).get("stage").asText().equals(DecodeRecords.STAGE);
    }

    private static List<JsonNode> refusedAtDecode(List<OutputRecord> out) {
        return out.stream().filter(BatchedRecordsTest::isRefusedAtDecode).map(r -> read(r.text())).toList();
    }

    private static List<String> accepted(List<OutputRecord> out) {
        return out.stream().filter(r -> r.acceptedInput).map(r -> Topics.of(r) + " " + r.text()).sorted().toList();
    }

    private static Set<Integer> windowLengths(List<OutputRecord> out) {
        return out.stream().filter(r -> r.schema.equals("io.window.v1")).map(r -> read(r.text()).get("window_s").asInt())
                .collect(Collectors.toSet());
    }

    private static String schemaOf(String text) {
        return read(text).get("schema").asText();
    }

    private static JsonNode read(String json) {
        try {
            return Json.MAPPER.readTree(json);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The graph over `input` at parallelism 1: each disk's records reach the decoder in the
     * order sent, as one Kafka partition gives them. At 2, a source of one list deals them
     * to two decoders, whose records overtake each other by more than a window's grace.
     */
    private static List<OutputRecord> run(List<RawRecord> input) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        List<OutputRecord> out = new ArrayList<>();
        try (CloseableIterator<OutputRecord> results = Pipeline.outputs(env.fromData(input), new Pipeline.Config()).all()
                .executeAndCollect("batched records")) {
            results.forEachRemaining(out::add);
        }
        return out;
    }
}
