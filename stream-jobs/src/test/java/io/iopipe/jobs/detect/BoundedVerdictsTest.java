package io.iopipe.jobs.detect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.Topics;
import io.iopipe.jobs.testing.SchemaFiles;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * A verdict always goes out, within its schema's bounds and the sink's record size,
 * whatever a finding says: a summary or evidence too long is cut, never the record lost
 * as "too large" (which would lose the verdict) or failing the sink.
 */
class BoundedVerdictsTest {
    private static final long START_NS = 1_700_000_000_000_000_000L;
    private static final String ID = "0123456789abcdef01234567";

    @Test
    void anEvidenceTooLongLosesItsLongestFieldsAndSaysWhich() throws Exception {
        ObjectNode evidence = Json.object();
        evidence.put("window_start_ns", START_NS);
        evidence.put("service_ms", 180.5);
        evidence.put("comm", "\"é\\\u0001".repeat(200_000));  // escapes at their worst
        IntStream.range(0, 20_000).forEach(evidence.putArray("burst")::add);
        OutputRecord r = DiskDetector.anomalyRecord(ID, "web-17", "sdb", Finding.Kind.FAILING_DISK,
                Finding.Severity.CRITICAL, START_NS, START_NS + 10_000_000_000L, "s".repeat(100_000), evidence);

        assertEquals(Set.of(), SchemaFiles.violations(DiskDetector.ANOMALY_SCHEMA, r.json));
        assertTrue(r.json.getBytes(StandardCharsets.UTF_8).length <= Topics.maxRecordBytes());
        JsonNode a = Json.MAPPER.readTree(r.json);
        JsonNode shown = a.get("evidence");
        assertEquals(List.of("comm", "burst"), Json.MAPPER.convertValue(shown.get(Evidence.CUT), List.class));
        assertEquals(START_NS, shown.get("window_start_ns").asLong());
        assertEquals(180.5, shown.get("service_ms").asDouble());
        assertEquals(shown, Json.MAPPER.readTree(a.get("evidence_json").asText()));
        assertEquals(DiskDetector.MAX_SUMMARY_CHARS, a.get("summary").asText().length());
        assertTrue(a.get("summary").asText().endsWith("…"));
    }

    @Test
    void anEvidenceWithinItsBoundIsShownWhole() {
        ObjectNode evidence = Json.object().put("service_ms", 180.5).put("comm", "x".repeat(1000));
        assertSame(evidence, Evidence.within(evidence, DiskDetector.MAX_EVIDENCE_CHARS));
    }

    @Test
    void aHealthReasonTooLongIsCutAndItsAnomaliesListedUpToTheirBound() throws Exception {
        Finding failing = new Finding(Finding.Kind.FAILING_DISK, Finding.Severity.CRITICAL, "r".repeat(100_000),
                Json.object(), Finding.HealthEffect.FAILING);
        List<String> ids = IntStream.range(0, 1000).mapToObj(i -> String.format("%024x", i)).toList();
        OutputRecord r = DiskHealth.step(new DiskHealth.Span("web-17", "sdb", START_NS, START_NS + 10_000_000_000L),
                new DiskHistory(), List.of(failing), ids, DiskHealth.DEFAULT_RECOVERY.toNanos()).orElseThrow();

        assertEquals(Set.of(), SchemaFiles.violations(DiskHealth.SCHEMA, r.json));
        JsonNode h = Json.MAPPER.readTree(r.json);
        assertEquals(DiskHealth.MAX_REASON_CHARS, h.get("reason").asText().length());
        assertEquals(ids.subList(0, DiskHealth.MAX_ANOMALY_IDS),
                Json.MAPPER.convertValue(h.get("anomaly_ids"), List.class));
    }
}
