package io.iopipe.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.pipeline.Pipeline;
import io.iopipe.jobs.testing.SchemaFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The whole job graph on a MiniCluster at parallelism 2, bounded over a file. */
class OfflineJobTest {
    static final long START_NS = 1_763_700_000_000_000_000L;
    static final long SECOND_NS = 1_000_000_000L;
    static final int SAMPLES = 25;

    private static String diskstats(String disk, int second, long reads) {
        return "{\"schema\":\"io.diskstats.v1\",\"host\":\"web-17\",\"disk\":\"" + disk + "\",\"ts_ns\":" + (START_NS + second * SECOND_NS)
                + ",\"rotational\":true,\"reads_completed\":" + reads + ",\"reads_merged\":0,\"sectors_read\":" + reads * 256
                + ",\"read_time_ms\":" + reads * 10 + ",\"writes_completed\":0,\"writes_merged\":0,\"sectors_written\":0,"
                + "\"write_time_ms\":0,\"in_flight\":1,\"io_time_ms\":" + second * 900L + ",\"weighted_io_time_ms\":" + second * 1000L + "}";
    }

    @Test
    void windowsEveryDiskAndRejectsBadLinesWithoutStopping(@TempDir Path dir) throws Exception {
        List<String> lines = new ArrayList<>();
        for (int second = 0; second < SAMPLES; second++) {
            lines.add(diskstats("sda", second, 7L * second));
            lines.add(diskstats("sdb", second, 50L * second));
            if (second == 12) {
                lines.add("not json at all");
                lines.add("{\"schema\":\"io.diskstats.v1\",\"host\":\"web-17\"}");
                lines.add("{\"schema\":\"io.unknown.v9\"}");
            }
        }
        Path input = dir.resolve("in.ndjson");
        Files.write(input, lines);
        Path output = dir.resolve("out.ndjson");
        Path rejects = dir.resolve("rejects.ndjson");

        Pipeline.Config tenSecondsAndAMinute = new Pipeline.Config();
        tenSecondsAndAMinute.windowSeconds = List.of(10, 60);
        OfflineJob.Counts counts = OfflineJob.run(input, output, rejects, tenSecondsAndAMinute);

        List<JsonNode> records = SchemaFiles.ndjson(output);
        assertEquals(records.size(), counts.records());
        // 25 one-second samples from t=0: deltas end at 1..24 s, so 10 s windows [0,10) [10,20)
        // [20,30) per disk, and one 60 s window each.
        assertEquals(List.of(10, 10, 10, 10, 10, 10, 60, 60), records.stream()
                .filter(r -> r.get("schema").asText().equals("io.window.v1")).map(r -> r.get("window_s").asInt()).sorted().toList());
        assertEquals(List.of(), records.stream().filter(r -> !r.get("schema").asText().equals("io.window.v1")).toList(),
                "a steady healthy disk raises nothing");
        for (JsonNode w : records) {
            assertEquals(Set.of(), SchemaFiles.violations("io.window.v1", w.toString()));
            double expectedReadsPerS = w.get("disk").asText().equals("sda") ? 7.0 : 50.0;
            assertEquals(expectedReadsPerS, w.get("reads_per_s").asDouble(), 1e-9);
            assertEquals(10.0, w.get("read_await_ms").asDouble(), 1e-9);
            assertEquals(90.0, w.get("util_pct").asDouble(), 1e-9);
        }
        List<JsonNode> rejected = SchemaFiles.ndjson(rejects);
        assertEquals(3, rejected.size());
        assertEquals(3, counts.rejects());
        List<String> sources = rejected.stream().map(r -> r.get("source").asText()).sorted().toList();
        assertEquals(List.of("in.ndjson:27", "in.ndjson:28", "in.ndjson:29"), sources);
        assertTrue(rejected.stream().anyMatch(r -> r.get("reason").asText().equals("missing field: disk")));
        assertTrue(rejected.stream().anyMatch(r -> r.get("reason").asText().equals("unknown schema: io.unknown.v9")));
    }

    @Test
    void aSampleFromAHostWhoseClockSteppedBackIsADeadLetter(@TempDir Path dir) throws Exception {
        Path input = dir.resolve("in.ndjson");
        Files.write(input, List.of(diskstats("sda", 10, 70), diskstats("sda", 11, 77), diskstats("sda", 5, 35)));
        Path rejects = dir.resolve("rejects.ndjson");

        OfflineJob.Counts counts = OfflineJob.run(input, dir.resolve("out.ndjson"), rejects, new Pipeline.Config());

        List<JsonNode> rejected = SchemaFiles.ndjson(rejects);
        assertEquals(1, counts.rejects());
        assertEquals(1, rejected.size());
        JsonNode deadLetter = rejected.get(0);
        assertEquals(Set.of(), SchemaFiles.violations("io.deadletter.v1", deadLetter.toString()));
        assertEquals("in.ndjson:3", deadLetter.get("source").asText());
        assertTrue(deadLetter.get("reason").asText().startsWith("out of order: ts_ns " + (START_NS + 5 * SECOND_NS)),
                deadLetter.get("reason").asText());
    }
}
