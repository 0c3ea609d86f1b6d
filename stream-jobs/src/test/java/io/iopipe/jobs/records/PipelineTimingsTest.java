package io.iopipe.jobs.records;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.pipeline.Pipeline;
import io.iopipe.jobs.testing.SchemaFiles;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The job runs with the timings of the repository's schema/pipeline.json, read here as plain JSON. */
class PipelineTimingsTest {
    private static final JsonNode PIPELINE_JSON = SchemaFiles.pipeline();

    @Test
    void thePipelinesDefaultsAreThoseOfPipelineJson() {
        Pipeline.Config defaults = new Pipeline.Config();
        assertEquals(windowSeconds(), defaults.windowSeconds);
        assertEquals(seconds("out_of_orderness_s"), defaults.outOfOrderness);
        assertEquals(seconds("kind_idleness_s"), defaults.kindIdleness);
        assertEquals(seconds("disk_idleness_s"), defaults.diskIdleness);
        assertEquals(seconds("disk_forgotten_after_s"), defaults.diskForgottenAfter);
        assertEquals(seconds("allowed_lateness_s"), defaults.allowedLateness);
        assertEquals(seconds("peer_grace_s"), defaults.peerGrace);
        assertEquals(seconds("health_recovery_s"), defaults.healthRecovery);
    }

    @Test
    void theDecodersClockAheadLimitIsThatOfPipelineJson() {
        assertEquals(seconds("max_clock_ahead_s").toNanos(), RecordDecoder.MAX_CLOCK_AHEAD_NS);
    }

    @Test
    void aHistogramsSpanCountsAsAtLeastTheAgentsDefaultInterval() {
        assertEquals(seconds("agent_interval_s").toNanos(), RecordDecoder.MIN_COUNTED_SPAN_NS);
    }

    private static List<Integer> windowSeconds() {
        List<Integer> seconds = new ArrayList<>();
        PIPELINE_JSON.get("window_s").forEach(length -> seconds.add(length.intValue()));
        return seconds;
    }

    private static Duration seconds(String key) {
        return Duration.ofSeconds(PIPELINE_JSON.get(key).longValue());
    }
}
