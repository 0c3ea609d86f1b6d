package io.iopipe.jobs.records;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.testing.SchemaFiles;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class RecordDecoderTest {
    static final long NOW_NS = 1_763_700_100_000_000_000L;

    private static JsonNode json(String text) throws DecodeException {
        return Json.parseObject(text);
    }

    @Test
    void decodesEverySharedValidDiskstatsExample() throws Exception {
        for (JsonNode example : SchemaFiles.validExamples("io.diskstats.v1")) {
            DiskstatsSample s = RecordDecoder.diskstats(example, "test", NOW_NS);
            assertEquals(example.get("disk").asText(), s.disk);
            assertEquals(example.get("weighted_io_time_ms").asLong(), s.counters.weightedIoTimeMs);
        }
    }

    /**
     * Whether a reason names the field, as a whole word: "count", not a "counter". An
     * example names an item of an array by its index (buckets_log2_us.0), a reason in
     * brackets (buckets_log2_us[0]).
     */
    private static boolean names(String reason, String field) {
        String named = field.replaceAll("\\.(\\d+)", "[$1]");
        return Pattern.compile("(^|[^A-Za-z0-9_.])" + Pattern.quote(named) + "($|[^A-Za-z0-9_])").matcher(reason).find();
    }

    /** Decoding the example fails, for the fault in the field it names: a rule never reached fails this. */
    private static DecodeException assertRefusedForItsField(JsonNode example, Executable decode) {
        String why = example.get("why").asText();
        String field = example.get("field").asText();
        DecodeException e = assertThrows(DecodeException.class, decode, why);
        assertTrue(names(e.getMessage(), field), why + ": the reason should name " + field + ", was: " + e.getMessage());
        String path = field.replaceAll("\\.(\\d+)", "[$1]");
        assertTrue(e.field() != null && (e.field().equals(path) || e.field().startsWith(path + "[")),
                why + ": the refusal should be of " + path + " (or an entry of it), was of " + e.field());
        return e;
    }

    /**
     * A batch's example is refused, its reason led by the batch's field at fault, with the
     * index of the part where the fault is in one (hist_count[1]: a rule the schema cannot
     * state names the array alone), and that part.
     */
    private static void assertBatchRefusedForItsField(JsonNode example, Executable decode) {
        DecodeException e = assertRefusedForItsField(example, decode);
        assertTrue(e.getMessage().startsWith(e.field()), example.get("why").asText() + ": " + e.getMessage());
        if (e.field().matches("[a-z_]+\\[\\d+\\].*")) {
            String index = e.field().replaceAll("^[a-z_]+\\[(\\d+)\\].*", "$1");
            assertTrue(e.getMessage().matches("^\\S+ \\((histogram|event) " + index + "\\b.*"),
                    example.get("why").asText() + ": the reason should name the part, was: " + e.getMessage());
        }
    }

    @Test
    void rejectsEverySharedInvalidDiskstatsExampleForTheFieldItNames() {
        for (JsonNode example : SchemaFiles.invalidExamples("io.diskstats.v1")) {
            assertRefusedForItsField(example, () -> RecordDecoder.diskstats(example.get("record"), "test", NOW_NS));
        }
    }

    @Test
    void decodesEverySharedValidHistogramAndEventExample() throws Exception {
        for (JsonNode example : SchemaFiles.validExamples("io.hist.v1")) {
            HistRecord h = RecordDecoder.hist(example, NOW_NS);
            assertEquals(example.get("count").asLong(), h.count);
        }
        for (JsonNode example : SchemaFiles.validExamples("io.event.v1")) {
            IoEvent e = RecordDecoder.event(example, NOW_NS);
            assertEquals(example.get("complete_ns").asLong() - example.get("issue_ns").asLong(), e.deviceNs());
        }
    }

    @Test
    void rejectsEverySharedInvalidHistogramAndEventExampleForTheFieldItNames() {
        for (JsonNode example : SchemaFiles.invalidExamples("io.hist.v1")) {
            assertRefusedForItsField(example, () -> RecordDecoder.hist(example.get("record"), NOW_NS));
        }
        for (JsonNode example : SchemaFiles.invalidExamples("io.event.v1")) {
            assertRefusedForItsField(example, () -> RecordDecoder.event(example.get("record"), NOW_NS));
        }
    }

    /** What a decoded record holds, field by field: two decoded alike are equal trees. */
    private static JsonNode fields(Object decoded) {
        return Json.MAPPER.valueToTree(decoded);
    }

    /** Whether the two records are of one disk and agree on `fields`. */
    private static boolean ofDisk(JsonNode record, JsonNode other, String... fields) {
        return Stream.concat(Stream.of("host", "disk"), Stream.of(fields)).allMatch(f -> record.get(f).equals(other.get(f)));
    }

    /** An interval's fields of its sample, as the io.diskstats.v1 record they were. */
    private static JsonNode sampleOf(JsonNode interval) {
        ObjectNode sample = interval.deepCopy();
        sample.put("schema", DiskstatsSample.SCHEMA);
        sample.remove(List.of("start_ns", "end_ns"));
        interval.fieldNames().forEachRemaining(f -> {
            if (f.startsWith("hist_")) {
                sample.remove(f);
            }
        });
        return sample;
    }

    /**
     * Each valid interval is one of the valid diskstats samples and the valid histograms of
     * its disk and span (none, for a disk that completed no I/O), each decoded as if sent alone.
     */
    @Test
    void decodesEverySharedValidIntervalIntoTheSampleAndHistogramsItBatches() throws Exception {
        List<JsonNode> samples = SchemaFiles.validExamples(DiskstatsSample.SCHEMA);
        List<JsonNode> histograms = SchemaFiles.validExamples(HistRecord.SCHEMA);
        int intervals = 0;
        for (JsonNode example : SchemaFiles.validExamples(IntervalRecord.SCHEMA)) {
            IntervalRecord interval = RecordDecoder.interval(example, "test", NOW_NS);
            JsonNode itsSample = sampleOf(example);
            assertTrue(samples.contains(itsSample), example.toString());
            assertEquals(fields(RecordDecoder.diskstats(itsSample, "test", NOW_NS)), fields(interval.sample));
            List<JsonNode> expected = new ArrayList<>();
            for (JsonNode h : histograms.stream().filter(h -> ofDisk(h, example, "start_ns", "end_ns")).toList()) {
                expected.add(fields(RecordDecoder.hist(h, NOW_NS)));
            }
            assertEquals(expected, interval.histograms.stream().map(RecordDecoderTest::fields).toList(), example.toString());
            intervals++;
        }
        assertEquals(samples.size(), intervals, "an interval of each sample");
    }

    /** Each valid batch of events is the valid events of its disk, each decoded as if sent alone. */
    @Test
    void decodesEverySharedValidEventBatchIntoTheEventsItBatches() throws Exception {
        List<JsonNode> events = SchemaFiles.validExamples(IoEvent.SCHEMA);
        int batched = 0;
        for (JsonNode example : SchemaFiles.validExamples(EventBatch.SCHEMA)) {
            EventBatch batch = RecordDecoder.eventBatch(example, NOW_NS);
            List<JsonNode> expected = new ArrayList<>();
            for (JsonNode e : events.stream().filter(e -> ofDisk(e, example)).toList()) {
                expected.add(fields(RecordDecoder.event(e, NOW_NS)));
            }
            assertEquals(expected, batch.events.stream().map(RecordDecoderTest::fields).toList(), example.toString());
            batched += batch.events.size();
        }
        assertEquals(events.size(), batched, "every event in a batch");
    }

    @Test
    void rejectsEverySharedInvalidBatchNamingTheFieldAndThePartAtFault() {
        for (JsonNode example : SchemaFiles.invalidExamples(IntervalRecord.SCHEMA)) {
            assertBatchRefusedForItsField(example, () -> RecordDecoder.interval(example.get("record"), "test", NOW_NS));
        }
        for (JsonNode example : SchemaFiles.invalidExamples(EventBatch.SCHEMA)) {
            assertBatchRefusedForItsField(example, () -> RecordDecoder.eventBatch(example.get("record"), NOW_NS));
        }
    }

    @Test
    void onlyRecordsTheDecoderRefusesHaveFaultsTheSchemaCannotExpress() {
        Set<String> decoded = Set.of(DiskstatsSample.SCHEMA, HistRecord.SCHEMA, IoEvent.SCHEMA, IntervalRecord.SCHEMA,
                EventBatch.SCHEMA, WindowDecoder.SCHEMA);
        for (String record : SchemaFiles.records()) {
            for (JsonNode example : SchemaFiles.invalidExamples(record)) {
                boolean schemaCanExpress = example.path("schema_can_express").asBoolean(true);
                String why = record + ": " + example.get("why").asText();
                assertEquals(schemaCanExpress, !SchemaFiles.violations(record, example.get("record").toString()).isEmpty(), why);
                assertTrue(schemaCanExpress || decoded.contains(record), why + ": nothing would refuse it");
            }
        }
    }

    @Test
    void theSchemasAgreeOnTheBoundsTheDecoderSharesAcrossFields() {
        for (String record : List.of("io.diskstats.v1", "io.hist.v1", "io.event.v1", "io.window.v1", IntervalRecord.SCHEMA,
                EventBatch.SCHEMA)) {
            JsonNode properties = SchemaFiles.schema(record).get("properties");
            for (String timestamp : List.of("ts_ns", "start_ns", "end_ns", "issue_ns", "complete_ns", "window_start_ns", "window_end_ns")) {
                if (properties.has(timestamp)) {
                    // A batch's array of timestamps bounds each of its entries.
                    JsonNode bounds = properties.get(timestamp).has("items") ? properties.get(timestamp).get("items") : properties.get(timestamp);
                    assertEquals(RecordDecoder.EARLIEST_PLAUSIBLE_NS, bounds.get("minimum").asLong(), record + " " + timestamp);
                }
            }
        }
        assertEquals(1_000_000_000_000_000_000L, RecordDecoder.EARLIEST_PLAUSIBLE_NS, "what reasons call 2001");
        assertEquals(RecordDecoder.MAX_IO_LATENCY_NS, RecordDecoder.MAX_IO_LATENCY_US * 1000, "a day in both units");
    }

    private static String event(long issueNs, long completeNs, long queueNs) {
        return SchemaFiles.validExamples("io.event.v1").get(0).toString()
                .replace("\"issue_ns\":1763700000077960000", "\"issue_ns\":" + issueNs)
                .replace("\"complete_ns\":1763700000155920000", "\"complete_ns\":" + completeNs)
                .replace("\"queue_ns\":4000", "\"queue_ns\":" + queueNs);
    }

    @Test
    void acceptsADyingDisksMinuteLongIoAndRefusesOneLongerThanADay() throws Exception {
        long completeNs = 1_763_700_000_000_000_000L;
        long minuteNs = 60 * 1_000_000_000L;
        long dayNs = RecordDecoder.MAX_IO_LATENCY_NS;
        assertEquals(minuteNs, RecordDecoder.event(json(event(completeNs - minuteNs, completeNs, minuteNs)), NOW_NS).deviceNs());
        assertEquals(dayNs, RecordDecoder.event(json(event(completeNs - dayNs, completeNs, dayNs)), NOW_NS).deviceNs());
        DecodeException device = assertThrows(DecodeException.class,
                () -> RecordDecoder.event(json(event(completeNs - dayNs - 1, completeNs, 0)), NOW_NS));
        assertTrue(device.getMessage().startsWith("issue_ns is 86400 s before complete_ns"), device.getMessage());
        DecodeException queue = assertThrows(DecodeException.class,
                () -> RecordDecoder.event(json(event(completeNs - 1, completeNs, dayNs + 1)), NOW_NS));
        assertTrue(queue.getMessage().startsWith("queue_ns 86400000000001 is beyond the 86400 s"), queue.getMessage());
    }

    @Test
    void refusesAnEventIssuedAtTimeZeroRatherThanCallItDecadesAtTheDevice() {
        DecodeException e = assertThrows(DecodeException.class,
                () -> RecordDecoder.event(json(event(0, 1_763_700_000_000_000_000L, 0)), NOW_NS));
        assertEquals("issue_ns 0 is before 2001: not nanoseconds since the epoch", e.getMessage());
    }

    private static String hist(long startNs, long endNs, String buckets, long count) {
        return "{\"schema\":\"io.hist.v1\",\"host\":\"web-17\",\"disk\":\"nvme0n1\",\"op\":\"R\",\"latency\":\"device\","
                + "\"start_ns\":" + startNs + ",\"end_ns\":" + endNs + ",\"buckets_log2_us\":" + buckets
                + ",\"count\":" + count + ",\"sum_us\":" + count + ",\"max_us\":1}";
    }

    @Test
    void refusesBucketsWhoseSumWrapsAroundToTheCount() {
        long max = Long.MAX_VALUE;
        String wrapsToOne = hist(1_763_700_000_000_000_000L, 1_763_700_001_000_000_000L, "[" + max + "," + max + ",3]", 1);
        DecodeException e = assertThrows(DecodeException.class, () -> RecordDecoder.hist(json(wrapsToOne), NOW_NS));
        assertTrue(e.getMessage().startsWith("buckets_log2_us hold more than 2^63-1 I/Os"), e.getMessage());
    }

    @Test
    void countsAtMostOneIoPerNanosecondOfAtLeastASecond() throws Exception {
        long endNs = 1_763_700_001_000_000_000L;
        long secondNs = RecordDecoder.MIN_COUNTED_SPAN_NS;
        long tenSecondsNs = 10 * secondNs;
        assertEquals(tenSecondsNs, RecordDecoder.hist(json(hist(endNs - tenSecondsNs, endNs, "[" + tenSecondsNs + "]", tenSecondsNs)), NOW_NS).count);
        DecodeException tooMany = assertThrows(DecodeException.class, () -> RecordDecoder.hist(
                json(hist(endNs - tenSecondsNs, endNs, "[" + (tenSecondsNs + 1) + "]", tenSecondsNs + 1)), NOW_NS));
        assertTrue(tooMany.getMessage().startsWith("count 10000000001 is more than one I/O per ns of the 10000000000 ns"),
                tooMany.getMessage());
        assertEquals(7, RecordDecoder.hist(json(hist(endNs, endNs, "[7]", 7)), NOW_NS).count,
                "the agent's last interval at shutdown can span no time on its clock and still hold I/Os");
        assertThrows(DecodeException.class, () -> RecordDecoder.hist(json(hist(endNs, endNs, "[" + (secondNs + 1) + "]", secondNs + 1)), NOW_NS));
    }

    @Test
    void refusesAHistogramWhoseBucketsDisagreeWithItsCount() throws Exception {
        JsonNode valid = SchemaFiles.validExamples("io.hist.v1").get(0);
        String wrongCount = valid.toString().replace("\"count\":368", "\"count\":369");
        DecodeException e = assertThrows(DecodeException.class, () -> RecordDecoder.hist(json(wrongCount), NOW_NS));
        assertEquals("buckets_log2_us hold 368 I/Os but count is 369", e.getMessage());
    }

    @Test
    void olderKernelsWithoutDiscardOrFlushCountersDecodeAsZero() throws Exception {
        JsonNode oldKernel = SchemaFiles.validExamples("io.diskstats.v1").get(2);
        DiskstatsSample s = RecordDecoder.diskstats(oldKernel, "test", NOW_NS);
        assertEquals(0, s.counters.discardsCompleted);
        assertEquals(0, s.counters.flushesCompleted);
    }

    @Test
    void namesTheProblemOfAHugeValue() {
        String huge = "{\"schema\":\"io.diskstats.v1\",\"host\":\"h\",\"disk\":\"d\",\"ts_ns\":1763700000000000000,"
                + "\"rotational\":false,\"reads_completed\":99999999999999999999999,\"reads_merged\":0,\"sectors_read\":0,"
                + "\"read_time_ms\":0,\"writes_completed\":0,\"writes_merged\":0,\"sectors_written\":0,\"write_time_ms\":0,"
                + "\"in_flight\":0,\"io_time_ms\":0,\"weighted_io_time_ms\":0}";
        DecodeException e = assertThrows(DecodeException.class, () -> RecordDecoder.diskstats(json(huge), "t", NOW_NS));
        assertTrue(e.getMessage().contains("reads_completed is beyond 2^63-1"), e.getMessage());
    }

    @Test
    void refusesTimestampsInSecondsAndClocksFarAhead() throws Exception {
        JsonNode valid = SchemaFiles.validExamples("io.diskstats.v1").get(0);
        String seconds = valid.toString().replace("1763700000000000000", "1763700000");
        DecodeException unit = assertThrows(DecodeException.class, () -> RecordDecoder.diskstats(json(seconds), "t", NOW_NS));
        assertTrue(unit.getMessage().contains("not nanoseconds"), unit.getMessage());
        long recordNs = 1_763_700_000_000_000_000L;
        long minuteNs = 60 * 1_000_000_000L;
        long farAheadNs = RecordDecoder.MAX_CLOCK_AHEAD_NS + minuteNs;
        DecodeException skew = assertThrows(DecodeException.class, () -> RecordDecoder.diskstats(valid, "t", recordNs - farAheadNs));
        assertTrue(skew.getMessage().startsWith("clock skew") && skew.getMessage().contains("NTP"), skew.getMessage());
        long aLittleAheadNs = RecordDecoder.MAX_CLOCK_AHEAD_NS - minuteNs;
        assertEquals(recordNs, RecordDecoder.diskstats(valid, "t", recordNs - aLittleAheadNs).tsNs, "a clock a little ahead is tolerated");
    }

    @Test
    void saysWhatIsWrongWithNonJsonAndNonObjects() {
        assertEquals("empty record", assertThrows(DecodeException.class, () -> json("  ")).getMessage());
        assertTrue(assertThrows(DecodeException.class, () -> json("{\"a\":")).getMessage().startsWith("not JSON"));
        assertEquals("not a JSON object", assertThrows(DecodeException.class, () -> json("[1,2]")).getMessage());
    }

    @Test
    void deadLettersValidateAndCutLongInput() {
        String longRaw = "x".repeat(DeadLetters.MAX_RAW_CHARS + 10);
        OutputRecord dl = DeadLetters.of("stage", "file:3", "reason", longRaw, NOW_NS);
        assertEquals(Set.of(), SchemaFiles.violations("io.deadletter.v1", dl.json));
        assertTrue(dl.json.contains("\"raw_truncated\":true"));
        // A reason quoting a host of a megabyte, cut in a surrogate pair's middle: within every bound, and it encodes.
        String emoji = "\uD83D\uDCBE".repeat(1 << 19);
        OutputRecord quoting = DeadLetters.of(emoji, emoji, "unverified host: " + emoji, emoji, NOW_NS);
        assertEquals(Set.of(), SchemaFiles.violations("io.deadletter.v1", quoting.json));
        assertTrue(quoting.json.length() < 8 * 1024, "of " + quoting.json.length());
        assertEquals(quoting.json, new String(quoting.json.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8),
                "no half pair, which UTF-8 cannot encode");
    }
}
