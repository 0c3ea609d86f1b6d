package io.iopipe.jobs.iostat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.testing.SchemaFiles;
import java.util.Set;
import org.junit.jupiter.api.Test;

class IostatWindowTest {
    static final long TEN_SECONDS_NS = 10_000_000_000L;
    static final long WINDOW_START_NS = 1_763_700_000_000_000_000L;

    /** The retrying disk's iostat line (seed S2) as ten seconds of counter deltas. */
    private static IostatSums retryingDiskOverTenSeconds() {
        IostatSums s = new IostatSums();
        s.host = "web-17";
        s.disk = "sdb";
        s.rotational = true;
        s.samples = 10;
        s.intervalNs = TEN_SECONDS_NS;
        s.counters.readsCompleted = 3214;
        s.counters.sectorsRead = 822_780;
        s.counters.readTimeMs = 16_424;
        s.counters.weightedIoTimeMs = 16_400;
        s.counters.ioTimeMs = 9_688;
        return s;
    }

    private static JsonNode window(IostatSums s) throws Exception {
        OutputRecord r = IostatWindow.record(s, WINDOW_START_NS, WINDOW_START_NS + TEN_SECONDS_NS, 10);
        assertEquals(Set.of(), SchemaFiles.violations("io.window.v1", r.json));
        assertEquals("web-17/sdb", r.key);
        return Json.parseObject(r.json);
    }

    @Test
    void aDisksClassAloneCountsNoIntervalAndSurvivesAMerge() {
        DiskstatsSample first = new DiskstatsSample();
        first.host = "web-17";
        first.disk = "sdb";
        first.tsNs = WINDOW_START_NS;
        first.rotational = true;
        IostatSums classOnly = new IostatSums().add(DiskstatsDelta.classOf(first));
        assertEquals(0, classOnly.samples);
        assertEquals(0, classOnly.intervalNs);
        assertTrue(classOnly.classKnown && classOnly.rotational);
        IostatSums longer = new IostatSums().merge(classOnly);
        assertTrue(longer.classKnown && longer.rotational && longer.samples == 0);
        assertEquals(10, longer.merge(retryingDiskOverTenSeconds()).samples);
    }

    @Test
    void reproducesTheRetryingDisksIostatLine() throws Exception {
        JsonNode w = window(retryingDiskOverTenSeconds());
        assertEquals(321.4, w.get("reads_per_s").asDouble(), 1e-9);
        assertEquals(41139.0, w.get("read_kib_per_s").asDouble(), 1e-9);
        assertEquals(5.11, w.get("read_await_ms").asDouble(), 0.005);
        assertEquals(128.0, w.get("read_req_kib").asDouble(), 0.01);
        assertEquals(1.64, w.get("queue_size").asDouble(), 1e-9);
        assertEquals(96.88, w.get("util_pct").asDouble(), 1e-9);
    }

    @Test
    void ratesDivideByTheSpanTheSamplesCoverNotTheNominalWindow() throws Exception {
        IostatSums s = retryingDiskOverTenSeconds();
        s.intervalNs = TEN_SECONDS_NS / 2;
        JsonNode w = window(s);
        assertEquals(642.8, w.get("reads_per_s").asDouble(), 1e-9);
        assertEquals(5.0, w.get("interval_s").asDouble(), 0);
    }

    @Test
    void idleOpsReportZeroNotNaN() throws Exception {
        JsonNode w = window(retryingDiskOverTenSeconds());
        for (String field : new String[] {"write_await_ms", "write_req_kib", "write_merges_pct", "discard_await_ms", "flush_await_ms"}) {
            assertEquals(0.0, w.get(field).asDouble(), 0, field);
        }
    }

    @Test
    void mergedShareIsOfAllRequestsBeforeMerging() {
        assertEquals(20.0, IostatWindow.mergedPct(25, 100), 1e-12);
        assertEquals(0.0, IostatWindow.mergedPct(0, 0), 0);
    }
}
