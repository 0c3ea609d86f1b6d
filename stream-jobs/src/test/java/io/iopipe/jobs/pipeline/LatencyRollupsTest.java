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
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class LatencyRollupsTest {
    /** 2025-11-21 00:00:00 UTC: a day, an hour and a minute start here. */
    static final long DAY_NS = 1_763_683_200_000_000_000L;
    static final long MINUTE_NS = 60_000_000_000L;
    static final long TEN_S_NS = 10_000_000_000L;
    static final long IDLE_MS = 60_000L;
    static final long FORGET_MS = 600_000L;

    private KeyedOneInputStreamOperatorTestHarness<String, DiskWindow, OutputRecord> harness;

    @BeforeEach
    void open() throws Exception {
        harness = new KeyedOneInputStreamOperatorTestHarness<>(
                LatencyRollups.operator(LatencyPeriods.seconds(), IDLE_MS, FORGET_MS), DiskWindow::key, Types.STRING);
        harness.setProcessingTime(0);
        harness.open();
    }

    @AfterEach
    void close() throws Exception {
        harness.close();
    }

    /** One disk's `index`-th 10 s window of the day: `reads` kernel-counted reads of 6 ms, `errors` of them failed. */
    private void tenSeconds(long index, long reads, long errors) throws Exception {
        send(withReads(window(index), reads, errors));
    }

    /** The last 10 s window of minute `minute` of the day. */
    private void lastOfMinute(long minute, long reads) throws Exception {
        tenSeconds(minute * 6 + 5, reads, 0);
    }

    private static DiskWindow withReads(DiskWindow w, long reads, long errors) {
        w.op("R").addDeviceInterval(new long[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, reads}, reads, reads * 6_000, 6_000);
        w.op("R").queue.add(30, reads);
        w.op("R").total.add(6_030, reads);
        w.op("R").errors = errors;
        return w;
    }

    /** One disk's empty `index`-th 10 s window of the day. */
    private static DiskWindow window(long index) {
        DiskWindow w = new DiskWindow();
        w.host = "web-1";
        w.disk = "sdb";
        w.startNs = DAY_NS + index * TEN_S_NS;
        w.endNs = w.startNs + TEN_S_NS;
        w.windowSeconds = 10;
        return w;
    }

    private void send(DiskWindow w) throws Exception {
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
    void eachMinuteSendsItselfAndTheHourAndDaySoFarWhenItCloses() throws Exception {
        for (int i = 0; i < 5; i++) {
            tenSeconds(i, 10, 0);
        }
        assertEquals(List.of(), deviceRollups(), "the minute is still open");
        tenSeconds(5, 10, 1);
        for (int i = 6; i < 12; i++) {
            tenSeconds(i, 20, 0);
        }
        assertEquals(List.of("60@0 r6:60/1", "3600@0 r6:60/1", "86400@0 r6:60/1",
                "60@1 r6:120/0", "3600@0 r12:180/1", "86400@0 r12:180/1"), deviceRollups());
        for (JsonNode r : sent()) {
            assertEquals(List.of(), List.copyOf(SchemaFiles.violations(LatencyPeriods.SCHEMA, r.toString())), r.toString());
        }
        assertEquals(18, sent().size(), "device, queue and total of each period");
    }

    @Test
    void aWindowOfALaterMinuteClosesOneThatMissedItsLastAndTheEndOfTheInputClosesTheLast() throws Exception {
        tenSeconds(0, 10, 0);
        tenSeconds(1, 10, 0);
        tenSeconds(7, 5, 0);
        assertEquals(List.of("60@0 r2:20/0", "3600@0 r2:20/0", "86400@0 r2:20/0"), deviceRollups());
        harness.processWatermark(new Watermark(Long.MAX_VALUE));
        assertEquals(List.of("60@0 r2:20/0", "3600@0 r2:20/0", "86400@0 r2:20/0",
                "60@1 r1:5/0", "3600@0 r3:25/0", "86400@0 r3:25/0"), deviceRollups());
    }

    @Test
    void theLastWindowBeforeASilenceSendsItsMinuteAndMoreOfItLaterAddsUp() throws Exception {
        DiskWindow beforeSilence = withReads(window(0), 10, 0);
        beforeSilence.lastBeforeSilence = true;
        send(beforeSilence);
        assertEquals(List.of("60@0 r1:10/0", "3600@0 r1:10/0", "86400@0 r1:10/0"), deviceRollups(), "sent at once");
        tenSeconds(4, 3, 0);
        tenSeconds(5, 4, 0);
        assertEquals(List.of("60@0 r1:10/0", "3600@0 r1:10/0", "86400@0 r1:10/0",
                "60@0 r3:17/0", "3600@0 r3:17/0", "86400@0 r3:17/0"), deviceRollups(), "summed, not replaced");
    }

    @Test
    void aRevisionCountsTheHistogramsSummedSoTheFullestWinsWhicheverWindowsCarriedThem() throws Exception {
        // Before a crash: a window closed on silence with one interval, three more of it
        // late, as amendments, sent once the disk had been quiet a while.
        DiskWindow beforeSilence = withReads(window(0), 10, 0);
        beforeSilence.lastBeforeSilence = true;
        send(beforeSilence);
        for (long reads : new long[] {3, 2, 1}) {
            DiskWindow late = withReads(window(0), reads, 0);
            late.amendsClosedWindow = true;
            send(late);
        }
        harness.setProcessingTime(IDLE_MS);
        assertEquals(List.of("60@0 r1:10/0", "3600@0 r1:10/0", "86400@0 r1:10/0",
                "60@0 r4:16/0", "3600@0 r4:16/0", "86400@0 r4:16/0"), deviceRollups());
        // Restored from a checkpoint before all that: the four intervals come in one window,
        // then the minute's last window. Counted in windows, the fuller minute would be
        // revision 2 and lose to the 4 sent before the crash.
        close();
        open();
        DiskWindow whole = window(0);
        for (long reads : new long[] {10, 3, 2, 1}) {
            withReads(whole, reads, 0);
        }
        whole.lastBeforeSilence = true;
        send(whole);
        lastOfMinute(0, 4);
        assertEquals(List.of("60@0 r4:16/0", "3600@0 r4:16/0", "86400@0 r4:16/0",
                "60@0 r5:20/0", "3600@0 r5:20/0", "86400@0 r5:20/0"), deviceRollups(),
                "the same histograms, the same revision; one more, one higher");
    }

    @Test
    void aMinuteNoWindowCameForInAWhileIsSentWithoutOneSayingSo() throws Exception {
        // A disk's clock may close its last window before the disk falls silent: no window then says so.
        tenSeconds(0, 10, 0);
        harness.setProcessingTime(IDLE_MS - 1);
        assertEquals(List.of(), deviceRollups());
        harness.setProcessingTime(IDLE_MS);
        assertEquals(List.of("60@0 r1:10/0", "3600@0 r1:10/0", "86400@0 r1:10/0"), deviceRollups());
        harness.setProcessingTime(2 * IDLE_MS);
        assertEquals(3, deviceRollups().size(), "sent once");
    }

    @Test
    void aDiskHeardAgainAfterASilenceHasItsNextMinuteSentAMinuteAfterItFallsSilentAgain() throws Exception {
        lastOfMinute(0, 10);
        harness.setProcessingTime(2 * IDLE_MS);  // silent: the next check is for forgetting it
        tenSeconds(6, 5, 0);
        harness.setProcessingTime(3 * IDLE_MS);
        assertEquals(List.of("60@0 r1:10/0", "3600@0 r1:10/0", "86400@0 r1:10/0",
                "60@1 r1:5/0", "3600@0 r2:15/0", "86400@0 r2:15/0"), deviceRollups());
    }

    @Test
    void aLaterHourStartsItsOwnAndTheDayGoesOn() throws Exception {
        lastOfMinute(59, 10);
        lastOfMinute(60, 5);
        assertEquals(List.of("60@59 r1:10/0", "3600@0 r1:10/0", "86400@0 r1:10/0",
                "60@60 r1:5/0", "3600@60 r1:5/0", "86400@0 r2:15/0"), deviceRollups());
    }

    @Test
    void aWindowFromAPeriodAlreadyLeftIsADeadLetterNotACount() throws Exception {
        lastOfMinute(61, 10);
        lastOfMinute(59, 7);
        assertEquals(List.of("60@61 r1:10/0", "3600@60 r1:10/0", "86400@0 r1:10/0", "86400@0 r2:17/0"), deviceRollups(),
                "the day still takes it");
        List<String> deadLetters = harness.getSideOutput(Pipeline.DEAD_LETTERS).stream().map(r -> r.getValue().json).toList();
        assertEquals(2, deadLetters.size(), deadLetters.toString());
        assertTrue(deadLetters.get(1).contains("its 3600 s latency rollup had moved on"), deadLetters.toString());
    }

    /** Late kernel histograms of the disk's `index`-th 10 s window, after it closed. */
    private void amendment(long index, long reads) throws Exception {
        DiskWindow w = withReads(window(index), reads, 0);
        w.amendsClosedWindow = true;
        send(w);
    }

    @Test
    void anAmendmentOfTheCurrentMinuteIsSentWithIt() throws Exception {
        for (int i = 0; i < 5; i++) {
            tenSeconds(i, 10, 0);
        }
        amendment(2, 3);
        assertEquals(List.of(), deviceRollups(), "an amendment closes nothing");
        tenSeconds(5, 10, 0);
        assertEquals(List.of("60@0 r7:63/0", "3600@0 r7:63/0", "86400@0 r7:63/0"), deviceRollups());
    }

    @Test
    void anAmendmentOfTheMinuteBeforeSendsItAgainWithAHigherRevision() throws Exception {
        for (int i = 0; i < 7; i++) {
            tenSeconds(i, 10, 0);
        }
        amendment(4, 3);
        for (int i = 7; i < 12; i++) {
            tenSeconds(i, 10, 0);
        }
        assertEquals(List.of("60@0 r6:60/0", "3600@0 r6:60/0", "86400@0 r6:60/0",
                "60@0 r7:63/0", "60@1 r6:60/0", "3600@0 r13:123/0", "86400@0 r13:123/0"), deviceRollups());
    }

    @Test
    void anAmendmentOfAMinuteNoLongerHeldIsADeadLetterAndCountsNowhere() throws Exception {
        for (int minute = 0; minute < 3; minute++) {
            lastOfMinute(minute, 10);
        }
        amendment(3, 3);
        harness.setProcessingTime(IDLE_MS);
        assertEquals(9, deviceRollups().size(), "nothing is sent again: " + deviceRollups());
        List<String> deadLetters = harness.getSideOutput(Pipeline.DEAD_LETTERS).stream().map(r -> r.getValue().json).toList();
        assertEquals(1, deadLetters.size(), deadLetters.toString());
        assertTrue(deadLetters.get(0).contains("too late"), deadLetters.toString());
    }

    @Test
    void aDiskSilentLongEnoughIsForgotten() throws Exception {
        lastOfMinute(0, 10);
        lastOfMinute(1, 10);
        assertEquals(1, harness.numEventTimeTimers(), "one timer per disk, at the end of its minute");
        harness.prepareSnapshotPreBarrier(1L);
        assertTrue(harness.numKeyedStateEntries() > 0, "the spans, and the silence watch written at a barrier");
        harness.setProcessingTime(FORGET_MS);
        harness.prepareSnapshotPreBarrier(2L);
        assertEquals(0, harness.numKeyedStateEntries(), "none left at the next barrier");
        assertEquals(0, harness.numProcessingTimeTimers() + harness.numEventTimeTimers());
    }

    @Test
    void eventsStandInsAreNoKernelCount() throws Exception {
        DiskWindow w = window(5);
        w.op("W").eventDevice.add(900, 4);
        send(w);
        assertEquals(List.of(), sent());
    }
}
