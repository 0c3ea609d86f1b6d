package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.detect.OpLatency;
import io.iopipe.jobs.records.OutputRecord;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

class DetectAnomaliesTest {
    static final long WINDOW_START_NS = 1_763_700_000_000_000_000L;
    static final long TEN_SECONDS_NS = 10_000_000_000L;
    static final long FORGET_AFTER_MS = 600_000L;

    /** A window of a dusty disk: 40 reads of 250 ms each at a queue of two. */
    private static DiskWindow dustyWindow(long startNs) {
        DiskWindow w = new DiskWindow();
        w.host = "web-17";
        w.disk = "sdb";
        w.startNs = startNs;
        w.endNs = startNs + TEN_SECONDS_NS;
        w.iostat.host = "web-17";
        w.iostat.disk = "sdb";
        w.iostat.rotational = true;
        w.iostat.samples = 10;
        w.iostat.intervalNs = TEN_SECONDS_NS;
        w.iostat.readsCompleted = 40;
        w.iostat.sectorsRead = 40 * 256;
        w.iostat.readTimeMs = 40 * 500;
        w.iostat.ioTimeMs = 10_000;
        w.iostat.weightedIoTimeMs = 20_000;
        OpLatency r = w.op("R");
        r.device.add(500_000, 40);
        return w;
    }

    @Test
    void detectsPerDiskAndForgetsADiskThatDisappears() throws Exception {
        KeyedOneInputStreamOperatorTestHarness<String, DiskWindow, OutputRecord> harness =
                new KeyedOneInputStreamOperatorTestHarness<>(new KeyedProcessOperator<>(new DetectAnomalies(FORGET_AFTER_MS)),
                        DiskWindow::key, Types.STRING);
        harness.open();
        harness.setProcessingTime(0);
        DiskWindow w = dustyWindow(WINDOW_START_NS);
        harness.processElement(new StreamRecord<>(w, w.endNs / 1_000_000L));
        assertEquals(java.util.List.of("io.anomaly.v1", "io.health.v1"),
                harness.extractOutputValues().stream().map(r -> r.schema).toList());
        assertTrue(harness.numKeyedStateEntries() > 0, "the disk's history is kept");
        assertEquals(1, harness.numProcessingTimeTimers());

        harness.setProcessingTime(FORGET_AFTER_MS);
        assertEquals(0, harness.numKeyedStateEntries(), "a disk silent on the wall clock leaves no state");
        assertEquals(0, harness.numProcessingTimeTimers(), "nor timers");
        assertEquals(0, harness.numEventTimeTimers());
        harness.close();
    }
}
