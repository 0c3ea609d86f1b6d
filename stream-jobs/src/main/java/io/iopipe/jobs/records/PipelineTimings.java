package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * How the job keeps time, as schema/pipeline.json (packed into the jar) says: the job's
 * defaults, read where the dashboards, the demo and the benchmarks read them too. What
 * each means: schema/pipeline.schema.json.
 */
public final class PipelineTimings {
    private static final String FILE = "schema/pipeline.json";
    private static final JsonNode PIPELINE_JSON = load();

    public static final List<Integer> WINDOW_SECONDS = windowSeconds();
    public static final Duration OUT_OF_ORDERNESS = seconds("out_of_orderness_s");
    public static final Duration KIND_IDLENESS = seconds("kind_idleness_s");
    public static final Duration DISK_IDLENESS = seconds("disk_idleness_s");
    public static final Duration DISK_FORGOTTEN_AFTER = seconds("disk_forgotten_after_s");
    public static final Duration ALLOWED_LATENESS = seconds("allowed_lateness_s");
    public static final Duration MAX_CLOCK_AHEAD = seconds("max_clock_ahead_s");
    public static final Duration PEER_GRACE = seconds("peer_grace_s");
    public static final Duration HEALTH_RECOVERY = seconds("health_recovery_s");
    public static final Duration CHECKPOINT_INTERVAL = seconds("checkpoint_interval_s");
    public static final Duration AGENT_INTERVAL = seconds("agent_interval_s");

    private PipelineTimings() {}

    private static List<Integer> windowSeconds() {
        List<Integer> seconds = new ArrayList<>();
        for (JsonNode length : field("window_s")) {
            seconds.add(length.intValue());
        }
        return List.copyOf(seconds);
    }

    private static Duration seconds(String key) {
        return Duration.ofSeconds(field(key).longValue());
    }

    private static JsonNode field(String key) {
        JsonNode value = PIPELINE_JSON.get(key);
        if (value == null) {
            throw new IllegalStateException(FILE + " has no " + key);
        }
        return value;
    }

    private static JsonNode load() {
        try (InputStream in = PipelineTimings.class.getResourceAsStream("/" + FILE)) {
            if (in == null) {
                throw new IllegalStateException(FILE + " is missing from the classpath: rebuild the jar");
            }
            return Json.MAPPER.readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
