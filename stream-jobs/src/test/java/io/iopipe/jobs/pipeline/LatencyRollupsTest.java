package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.LatencyPeriods;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.testing.SchemaFiles;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class LatencyRollupsTest {
    /** 2025-11-21 00:00:00 UTC: a day, an hour and a minute start here. */
    static final long DAY_NS = 1_763_683_200_000_000_000L;
    static final long MINUTE_NS = 60_000_000_000L;
    static final long FORGET_MS = 600_000L;

    private KeyedOneInputStreamOperatorTestHarness<String, DiskWindow, OutputRecord> harness;

    @BeforeEach
    void open() throws Exception {
        harness = new KeyedOneInputStreamOperatorTestHarness<>(
                new KeyedProcessOperator<>(new LatencyRollups(LatencyPeriods.seconds(), FORGET_MS)), DiskWindow::key, Types.STRING);
        harness.setProcessingTime(0);
        harness.open();
    }

    @AfterEach
    void close() throws Exception {
        harness.close();
    }

    /** One disk's 1 min window `minute` minutes into the day: `reads` kernel-counted reads of 6 ms, `errors` of them failed. */
    private void minute(long minute, long reads, long errors) throws Exception {
        DiskWindow w = new DiskWindow();
        w.host = "web-1";
        w.disk = "sdb";
        w.startNs = DAY_NS + minute * MINUTE_NS;
        w.endNs = w.startNs + MINUTE_NS;
        w.windowSeconds = 60;
        w.op("R").addDeviceInterval(new long[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, reads}, reads, reads * 6_000, 6_000);
        w.op("R").queue.add(30, reads);
        w.op("R").total.add(6_030, reads);
        w.op("R").errors = errors;
        harness.processElement(new StreamRecord<>(w, w.endNs / 1_000_000L));
    }

    private List<JsonNode> sent() {
        return harness.extractOutputValues().stream().map(r -> {
            try {
                return Json.MAPPER.readTree(r.json);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }).toList();
    }

    /** "period_s@minutes into the day r<revision>:count/errors" of each device-time record. */
    private List<String> deviceRollups() {
        return sent().stream().filter(r -> r.get("latency").asText().equals("device"))
                .map(r -> r.get("period_s").asInt() + "@" + (r.get("period_start_ns").asLong() - DAY_NS) / MINUTE_NS
                        + " r" + r.get("revision").asInt() + ":" + r.get("count").asLong() + "/" + r.get("errors").asLong())
                .toList();
    }

    @Test
    void eachWindowSendsItsMinuteAndTheHourAndDaySoFar() throws Exception {
        minute(0, 10, 1);
        minute(1, 20, 0);
        assertEquals(List.of("60@0 r1:10/1", "3600@0 r1:10/1", "86400@0 r1:10/1",
                "60@1 r1:20/0", "3600@0 r2:30/1", "86400@0 r2:30/1"), deviceRollups());
        for (JsonNode r : sent()) {
            assertEquals(List.of(), List.copyOf(SchemaFiles.violations(LatencyPeriods.SCHEMA, r.toString())), r.toString());
        }
        assertEquals(18, sent().size(), "device, queue and total of each period");
    }

    @Test
    void aLaterHourStartsItsOwnAndTheDayGoesOn() throws Exception {
        minute(59, 10, 0);
        minute(60, 5, 0);
        assertEquals(List.of("60@59 r1:10/0", "3600@0 r1:10/0", "86400@0 r1:10/0",
                "60@60 r1:5/0", "3600@60 r1:5/0", "86400@0 r2:15/0"), deviceRollups());
    }

    @Test
    void aMinuteSentInTwoPartsIsSummedNotReplaced() throws Exception {
        // The 1 min window of a disk that went quiet is closed early; the rest of its minute comes later.
        minute(3, 10, 0);
        minute(3, 4, 0);
        assertEquals(List.of("60@3 r1:10/0", "3600@0 r1:10/0", "86400@0 r1:10/0",
                "60@3 r2:14/0", "3600@0 r2:14/0", "86400@0 r2:14/0"), deviceRollups());
    }

    @Test
    void aWindowFromAPeriodAlreadyLeftIsADeadLetterNotACount() throws Exception {
        minute(61, 10, 0);
        minute(59, 7, 0);
        assertEquals(List.of("60@61 r1:10/0", "3600@60 r1:10/0", "86400@0 r1:10/0",
                "86400@0 r2:17/0"), deviceRollups(), "the day is still open");
        List<String> deadLetters = harness.getSideOutput(Pipeline.DEAD_LETTERS).stream().map(r -> r.getValue().json).toList();
        assertEquals(2, deadLetters.size(), deadLetters.toString());
        assertTrue(deadLetters.get(1).contains("its 3600 s latency rollup had moved on"), deadLetters.toString());
    }

    @Test
    void aDiskSilentLongEnoughIsForgotten() throws Exception {
        minute(0, 10, 0);
        harness.setProcessingTime(FORGET_MS);
        assertEquals(0, harness.numKeyedStateEntries());
        assertEquals(0, harness.numProcessingTimeTimers());
    }

    @Test
    void eventsStandInsAreNoKernelCount() throws Exception {
        DiskWindow w = new DiskWindow();
        w.host = "web-1";
        w.disk = "sdb";
        w.startNs = DAY_NS;
        w.endNs = DAY_NS + MINUTE_NS;
        w.windowSeconds = 60;
        w.op("W").eventDevice.add(900, 4);
        harness.processElement(new StreamRecord<>(w, w.endNs / 1_000_000L));
        assertEquals(List.of(), sent());
    }
}
