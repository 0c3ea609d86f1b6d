package io.iopipe.jobs.records;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.testing.SchemaFiles;
import org.junit.jupiter.api.Test;

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
            assertEquals(example.get("weighted_io_time_ms").asLong(), s.weightedIoTimeMs);
        }
    }

    @Test
    void rejectsEverySharedInvalidDiskstatsExample() {
        for (JsonNode example : SchemaFiles.invalidExamples("io.diskstats.v1")) {
            DecodeException e = assertThrows(DecodeException.class,
                    () -> RecordDecoder.diskstats(example.get("record"), "test", NOW_NS), example.get("why").asText());
            assertTrue(!e.getMessage().isBlank());
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
    void rejectsEverySharedInvalidHistogramAndEventExample() {
        for (JsonNode example : SchemaFiles.invalidExamples("io.hist.v1")) {
            assertThrows(DecodeException.class, () -> RecordDecoder.hist(example.get("record"), NOW_NS), example.get("why").asText());
        }
        for (JsonNode example : SchemaFiles.invalidExamples("io.event.v1")) {
            assertThrows(DecodeException.class, () -> RecordDecoder.event(example.get("record"), NOW_NS), example.get("why").asText());
        }
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
        assertEquals(0, s.discardsCompleted);
        assertEquals(0, s.flushesCompleted);
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
        DecodeException skew = assertThrows(DecodeException.class, () -> RecordDecoder.diskstats(valid, "t", recordNs - 16 * minuteNs));
        assertTrue(skew.getMessage().startsWith("clock skew") && skew.getMessage().contains("NTP"), skew.getMessage());
        assertEquals(recordNs, RecordDecoder.diskstats(valid, "t", recordNs - 14 * minuteNs).tsNs, "a clock a little ahead is tolerated");
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
        assertEquals(java.util.Set.of(), SchemaFiles.violations("io.deadletter.v1", dl.json));
        assertTrue(dl.json.contains("\"raw_truncated\":true"));
    }
}
