package io.iopipe.jobs.records;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.testing.SchemaFiles;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class WindowDecoderTest {
    static final long NOW_NS = 1_763_700_100_000_000_000L;

    @Test
    void everySharedValidWindowGivesItsThroughputAndLatency() throws Exception {
        for (JsonNode example : SchemaFiles.validExamples("io.window.v1")) {
            Optional<WindowSample> s = WindowDecoder.sample(example, NOW_NS);
            assertTrue(s.isPresent(), example.toString());
            assertEquals(example.get("disk").asText(), s.get().disk);
            if (example.has("kib_per_s")) {
                assertEquals(example.get("kib_per_s").asDouble(), s.get().kibPerS);
                assertEquals(example.get("await_ms").asDouble(), s.get().awaitMs);
            } else {
                assertEquals(example.get("read_kib_per_s").asDouble() + example.get("write_kib_per_s").asDouble()
                        + example.get("discard_kib_per_s").asDouble(), s.get().kibPerS, 1e-9);
            }
        }
    }

    @Test
    void anIostatWindowsAwaitIsItsOpsAwaitsWeightedByTheirCompletions() throws Exception {
        JsonNode w = Json.parseObject(SchemaFiles.validExamples("io.window.v1").get(0).toString()
                .replace("\"writes_completed\":0", "\"writes_completed\":27")
                .replace("\"write_await_ms\":0.0", "\"write_await_ms\":10.0"));
        assertEquals((73 * 269.7 + 27 * 10.0) / 100, WindowDecoder.sample(w, NOW_NS).orElseThrow().awaitMs, 1e-9);
    }

    @Test
    void everySharedInvalidWindowIsRefusedForTheFieldItNames() {
        for (JsonNode example : SchemaFiles.invalidExamples("io.window.v1")) {
            String why = example.get("why").asText();
            String field = example.get("field").asText();
            DecodeException e = assertThrows(DecodeException.class, () -> WindowDecoder.sample(example.get("record"), NOW_NS), why);
            assertTrue(e.getMessage().contains(field), why + ": the reason should name " + field + ", was: " + e.getMessage());
        }
    }

    @Test
    void aWindowOfOneOpSaysNothingAboutTheWholeDrive() throws Exception {
        JsonNode w = Json.parseObject(SchemaFiles.validExamples("io.window.v1").get(0).toString().replace("\"op\":\"all\"", "\"op\":\"R\""));
        assertEquals(Optional.empty(), WindowDecoder.sample(w, NOW_NS));
    }
}
