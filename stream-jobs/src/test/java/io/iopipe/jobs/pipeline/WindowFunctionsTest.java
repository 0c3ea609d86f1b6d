package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.detect.OpLatency;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.RecordDecoder;
import org.junit.jupiter.api.Test;

class WindowFunctionsTest {
    static final long T0_NS = 1_763_700_000_000_000_000L;

    private static IoEvent decoded(String json) throws Exception {
        return RecordDecoder.event(Json.parseObject(json), T0_NS);
    }

    private static String read(long totalUs, String timedFrom, long queueNs) {
        return "{\"schema\":\"io.event.v1\",\"host\":\"h\",\"disk\":\"sdb\",\"op\":\"R\",\"bytes\":4096,\"sector\":8,"
                + "\"issue_ns\":" + T0_NS + ",\"complete_ns\":" + (T0_NS + totalUs * 1000) + ",\"queue_ns\":" + queueNs
                + ",\"inflight\":" + ("queue".equals(timedFrom) ? 0 : 1) + ",\"error\":0,\"comm\":\"fio\",\"pid\":1,\"sample_reason\":\"all\",\"sample_weight\":1"
                + (timedFrom == null ? "" : ",\"timed_from\":\"" + timedFrom + "\"") + "}";
    }

    @Test
    void anIoTimedFromTheQueueGivesATotalTimeAndNoDeviceTimeOrDepth() throws Exception {
        DiskWindow w = new DiskWindow();
        for (int i = 0; i < 3; i++) {
            WindowFunctions.Accumulate.addEvent(w, decoded(read(12_000, "queue", 0)));
        }
        OpLatency r = w.ops.get("R");
        assertEquals(3, r.total().count);
        assertEquals(0, r.device().count, "its device time is unknown");
        assertEquals(0, r.queue().count);
        assertTrue(Double.isNaN(r.meanInflight()), "its depth at dispatch is unknown");
        assertTrue(w.events.isEmpty(), "no detector judges device time by it");
        ObjectNode published = WindowRecord.op(r, w.fullCapture("R"));
        assertEquals(3, published.get("count").asLong(), "the window counts it");
        assertEquals(0, published.get("device").get("buckets_log2_us").size());
    }

    @Test
    void anIoTimedFromItsDispatchAddsItsQueueToItsTotal() throws Exception {
        DiskWindow w = new DiskWindow();
        WindowFunctions.Accumulate.addEvent(w, decoded(read(12_000, null, 3_000_000)));
        WindowFunctions.Accumulate.addEvent(w, decoded(read(12_000, "dispatch", 3_000_000)));
        OpLatency r = w.ops.get("R");
        assertEquals(2, r.device().count);
        assertEquals(15_000 * 2, r.total().sumUs, "device time and the queue before it");
        assertEquals(2, w.events.size());
    }

    @Test
    void anOpWhoseIosAreTimedBothWaysHasNoExactQuantiles() throws Exception {
        DiskWindow w = new DiskWindow();
        WindowFunctions.Accumulate.addEvent(w, decoded(read(12_000, null, 0)));
        WindowFunctions.Accumulate.addEvent(w, decoded(read(12_000, "queue", 0)));
        assertTrue(w.fullCapture("R").isEmpty(), "the kept event is not every I/O the totals count");
        assertEquals("log2_buckets", WindowRecord.op(w.ops.get("R"), w.fullCapture("R")).get("quantiles").asText());
    }
}
