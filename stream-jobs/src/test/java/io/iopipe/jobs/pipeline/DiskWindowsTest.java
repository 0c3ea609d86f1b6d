package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.detect.Log2Histogram;
import io.iopipe.jobs.iostat.DiskstatsDelta;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.RecordDecoder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class DiskWindowsTest {
    static final long T0_MS = 1_763_700_000_000L;
    static final long SECOND_MS = 1_000L;
    static final long HOUR_MS = 3_600_000L;
    /** The windows' length in the tests, s. */
    static final long WINDOW_S = 10;

    private final Pipeline.Config config = new Pipeline.Config();
    private KeyedOneInputStreamOperatorTestHarness<String, DiskRecord, DiskWindow> harness;

    @BeforeEach
    void open() throws Exception {
        config.outOfOrderness = Duration.ofSeconds(5);
        config.diskIdleness = Duration.ofMinutes(1);
        config.diskForgottenAfter = Duration.ofMinutes(10);
        config.kindIdleness = Duration.ofSeconds(10);
        harness = new KeyedOneInputStreamOperatorTestHarness<>(
                DiskWindows.operator((int) WINDOW_S, config), DiskRecord::key, Types.STRING);
        harness.setProcessingTime(0);
        harness.open();
    }

    @AfterEach
    void close() throws Exception {
        harness.close();
    }

    /** A checkpoint as a barrier takes it: the operator first writes what it holds on the heap to its state. */
    private OperatorSubtaskState checkpoint(long id, long atMs) throws Exception {
        harness.prepareSnapshotPreBarrier(id);
        return harness.snapshot(id, atMs);
    }

    /** The operator again, from the state `snapshot` holds: a job restored from a checkpoint or savepoint. */
    private void restoreFrom(OperatorSubtaskState snapshot) throws Exception {
        harness.close();
        harness = new KeyedOneInputStreamOperatorTestHarness<>(
                DiskWindows.operator((int) WINDOW_S, config), DiskRecord::key, Types.STRING);
        harness.setProcessingTime(0);
        harness.initializeState(snapshot);
        harness.open();
    }

    /** One second of `count` reads of 4-8 ms, ending at `endMs`. */
    private static DiskRecord reads(String host, long endMs, long count) {
        HistRecord h = new HistRecord();
        h.host = host;
        h.disk = "sdb";
        h.op = "R";
        h.latency = "device";
        h.startNs = (endMs - SECOND_MS) * 1_000_000L;
        h.endNs = endMs * 1_000_000L;
        h.bucketsLog2Us = new long[13];
        h.bucketsLog2Us[12] = count;
        h.count = count;
        h.sumUs = count * 6_000;
        h.maxUs = 7_000;
        return DiskRecord.of(h);
    }

    /** One sampled read of 6 ms completing at `endMs` (`reads` is what the second holds, unsampled). */
    private static DiskRecord event(String host, long endMs, long reads) {
        IoEvent e = new IoEvent();
        e.host = host;
        e.disk = "sdb";
        e.op = "R";
        e.bytes = 4096;
        e.completeNs = endMs * 1_000_000L;
        e.issueNs = e.completeNs - 6_000_000L;
        e.sampleReason = "uniform";
        e.sampleWeight = reads;
        return DiskRecord.of(e);
    }

    /** A diskstats delta of one second ending at `endMs`. */
    private static DiskRecord diskstats(String host, long endMs, long reads) {
        DiskstatsDelta d = new DiskstatsDelta();
        d.host = host;
        d.disk = "sdb";
        d.startNs = (endMs - SECOND_MS) * 1_000_000L;
        d.endNs = endMs * 1_000_000L;
        d.counters.readsCompleted = reads;
        return DiskRecord.of(d);
    }

    /** What an agent sends for a disk each second: its diskstats and its histograms. */
    private void second(String host, long endMs, long reads) throws Exception {
        feed(diskstats(host, endMs, reads));
        feed(reads(host, endMs, reads));
    }

    private void feed(DiskRecord r) throws Exception {
        harness.processElement(new StreamRecord<>(r, r.tsNs / 1_000_000L));
    }

    /** What the agent sends for web-1 each second up to `lastS`, read as it is sent (10 reads a second). */
    private void steadyUpTo(long lastS) throws Exception {
        for (long s = 1; s <= lastS; s++) {
            harness.setProcessingTime(s * SECOND_MS);
            second("web-1", T0_MS + s * SECOND_MS, 10);
        }
    }

    interface RecordOfSecond {
        DiskRecord of(String host, long endMs, long reads);
    }

    /** One kind of web-1's records, 10 reads a second, from `firstS` to `lastS`, read at once: a backlog. */
    private void backlog(RecordOfSecond kind, long firstS, long lastS) throws Exception {
        for (long s = firstS; s <= lastS; s++) {
            feed(kind.of("web-1", T0_MS + s * SECOND_MS, 10));
        }
    }

    private List<String> windows() {
        return harness.extractOutputValues().stream()
                .map(w -> w.key() + "@" + (w.startNs / 1_000_000L - T0_MS) / SECOND_MS + "s:" + w.op("R").count()).toList();
    }

    private int late() {
        ConcurrentLinkedQueue<StreamRecord<DiskRecord>> late = harness.getSideOutput(Pipeline.LATE_RECORDS);
        return late == null ? 0 : late.size();
    }

    @Test
    void aHostWhoseClockRunsAnHourAheadMakesNoOtherHostLate() throws Exception {
        for (long s = 1; s <= 9; s++) {
            second("web-1", T0_MS + s * SECOND_MS, 10);
            second("skewed", T0_MS + HOUR_MS + s * SECOND_MS, 3);
        }
        for (long s = 10; s <= 16; s++) {
            second("web-1", T0_MS + s * SECOND_MS, 10);
        }
        assertEquals(0, late(), "the skewed host's clock is its own");
        assertEquals(List.of("web-1/sdb@0s:90"), windows(), "web-1's clock (16 s - 5 s) closed its first window");
        second("skewed", T0_MS + HOUR_MS + 16 * SECOND_MS, 3);
        assertEquals(List.of("web-1/sdb@0s:90", "skewed/sdb@3600s:27"), windows());
    }

    @Test
    void aResentHistogramIsCountedOnce() throws Exception {
        feed(reads("web-1", T0_MS + SECOND_MS, 10));
        feed(reads("web-1", T0_MS + SECOND_MS, 10));
        feed(reads("web-1", T0_MS + 2 * SECOND_MS, 10));
        harness.processWatermark(new Watermark(Long.MAX_VALUE));
        assertEquals(List.of("web-1/sdb@0s:20"), windows());
    }

    @Test
    void aRecordForAWindowItsDisksClockPassedIsLateNotDropped() throws Exception {
        second("web-1", T0_MS + 21 * SECOND_MS, 10);
        second("web-1", T0_MS + 3 * SECOND_MS, 10);
        second("web-1", T0_MS + 17 * SECOND_MS, 10);
        assertEquals(2, late(), "3 s is behind its disk's clock (21 s - 5 s): its 0-10 s window was done");
        harness.processWatermark(new Watermark(Long.MAX_VALUE));
        assertEquals(List.of("web-1/sdb@10s:10", "web-1/sdb@20s:10"), windows(), "17 s is within the out-of-orderness");
    }

    private List<Integer> revisions() {
        return harness.extractOutputValues().stream().map(w -> w.revision).toList();
    }

    private List<Boolean> amendments() {
        return harness.extractOutputValues().stream().map(w -> w.amendsClosedWindow).toList();
    }

    @Test
    void aLateHistogramAmendsItsClosedWindowOnceForTheRollups() throws Exception {
        second("web-1", T0_MS + SECOND_MS, 10);
        second("web-1", T0_MS + 21 * SECOND_MS, 10);
        feed(reads("web-1", T0_MS + 3 * SECOND_MS, 4));
        feed(reads("web-1", T0_MS + 3 * SECOND_MS, 4));
        feed(reads("web-1", T0_MS + SECOND_MS, 10));
        feed(diskstats("web-1", T0_MS + 3 * SECOND_MS, 4));
        assertEquals(List.of("web-1/sdb@0s:10", "web-1/sdb@0s:4"), windows());
        assertEquals(List.of(false, true), amendments());
        assertEquals(2, late(), "the new histogram and the diskstats are late for the detectors; the resends were counted");
    }

    @Test
    void aHistogramLaterThanTheAllowedLatenessIsOnlyLate() throws Exception {
        second("web-1", T0_MS + SECOND_MS, 10);
        second("web-1", T0_MS + 21 * SECOND_MS, 10);
        long closedMs = T0_MS + 10 * SECOND_MS + config.outOfOrderness.toMillis() + config.allowedLateness.toMillis();
        second("web-1", closedMs + 10 * SECOND_MS, 10);
        feed(reads("web-1", T0_MS + 3 * SECOND_MS, 4));
        assertEquals(List.of(false, false), amendments());
        assertEquals(1, late());
    }

    @Test
    void aSilentDiskHasItsWindowsClosedThenIsForgottenWithItsTimers() throws Exception {
        feed(reads("web-1", T0_MS + SECOND_MS, 10));
        harness.setProcessingTime(config.diskIdleness.toMillis());
        assertEquals(List.of("web-1/sdb@0s:10"), windows(), "closed once the disk went quiet");
        feed(reads("web-1", T0_MS + 2 * SECOND_MS, 10));
        assertEquals(0, late(), "a straggler for a window closed on silence is taken into it");
        harness.setProcessingTime(2 * config.diskIdleness.toMillis());
        assertEquals(List.of("web-1/sdb@0s:10", "web-1/sdb@0s:10", "web-1/sdb@0s:20"), windows(),
                "never a second window: a rollup amendment, then the window again whole once the disk fell silent again");
        assertEquals(List.of(0, 0, 1), revisions());
        harness.setProcessingTime(config.diskIdleness.toMillis() + config.diskForgottenAfter.toMillis());
        assertEquals(0, harness.numKeyedStateEntries(), "a disk gone for good leaves no state");
        assertEquals(0, harness.numProcessingTimeTimers() + harness.numEventTimeTimers(), "nor timers");
    }

    @Test
    void theLastWindowBeforeASilenceSaysSo() throws Exception {
        feed(reads("web-1", T0_MS + 5 * SECOND_MS, 3));
        feed(reads("web-1", T0_MS + 14 * SECOND_MS, 4));
        harness.setProcessingTime(config.diskIdleness.toMillis());
        assertEquals(List.of("web-1/sdb@0s:3", "web-1/sdb@10s:4"), windows());
        assertEquals(List.of(false, true), harness.extractOutputValues().stream().map(w -> w.lastBeforeSilence).toList());
    }

    @Test
    void aDiskHeardAgainAfterItsWindowsClosedOnSilenceHasItsNextOnesClosedAMinuteAfterItFallsSilentAgain() throws Exception {
        feed(reads("web-1", T0_MS + SECOND_MS, 10));
        harness.setProcessingTime(2 * config.diskIdleness.toMillis());  // closed; next check: to forget it
        feed(reads("web-1", T0_MS + 21 * SECOND_MS, 7));
        harness.setProcessingTime(3 * config.diskIdleness.toMillis());
        assertEquals(List.of("web-1/sdb@0s:10", "web-1/sdb@20s:7"), windows());
    }

    @Test
    void theEndOfABoundedInputClosesEveryWindowInOrder() throws Exception {
        feed(reads("web-1", T0_MS + 12 * SECOND_MS, 4));
        feed(reads("web-1", T0_MS + 9 * SECOND_MS, 5));
        harness.processWatermark(new Watermark(Long.MAX_VALUE));
        assertEquals(List.of("web-1/sdb@0s:5", "web-1/sdb@10s:4"), windows());
        assertTrue(harness.extractOutputValues().stream().noneMatch(w -> w.lastBeforeSilence), "an end is no silence");
    }

    @Test
    void histogramsRacingAheadOfTheDisksDiskstatsWaitForThem() throws Exception {
        for (long s = 1; s <= 25; s++) {
            feed(reads("web-1", T0_MS + s * SECOND_MS, 10));
        }
        assertEquals(List.of(), windows(), "diskstats have not come: the clock waits for them");
        for (long s = 1; s <= 25; s++) {
            feed(diskstats("web-1", T0_MS + s * SECOND_MS, 10));
        }
        assertEquals(0, late());
        assertEquals(List.of("web-1/sdb@0s:90", "web-1/sdb@10s:100"), windows());
        assertEquals(90, harness.extractOutputValues().get(0).iostat.counters.readsCompleted);
    }

    @Test
    void windowsOpenBeyondTheirListsEachCloseWithAllTheirRecords() throws Exception {
        long openWindows = DiskWindows.OPEN_RECORD_LISTS + 3;
        long lastS = openWindows * WINDOW_S - 5;
        for (long s = 1; s <= lastS; s++) {
            feed(reads("web-1", T0_MS + s * SECOND_MS, 10));
        }
        for (long s = 1; s <= lastS; s++) {
            feed(diskstats("web-1", T0_MS + s * SECOND_MS, 10));
        }
        List<String> expected = new java.util.ArrayList<>(List.of("web-1/sdb@0s:90"));
        for (long w = 1; w < openWindows - 1; w++) {
            expected.add("web-1/sdb@" + w * WINDOW_S + "s:100");
        }
        assertEquals(expected, windows(), "windows sharing a list of open records keep each other's");
    }

    /** The earliest timestamp a record may carry: 2001-09-09, in ns. */
    static final long EARLIEST_ACCEPTED_NS = 1_000_000_000_000_000_000L;

    private static DiskRecord decoded(String json, boolean isEvent) throws Exception {
        long nowNs = (T0_MS + HOUR_MS) * 1_000_000L;
        return isEvent ? DiskRecord.of(RecordDecoder.event(Json.parseObject(json), nowNs))
                : DiskRecord.of(RecordDecoder.hist(Json.parseObject(json), nowNs));
    }

    private Log2Histogram closedWindowsDeviceTime() throws Exception {
        harness.processWatermark(new Watermark(Long.MAX_VALUE));
        List<DiskWindow> closed = harness.extractOutputValues();
        assertEquals(1, closed.size());
        return closed.get(0).op("R").device();
    }

    @Test
    void histogramsWhoseCountsAddBeyondALongHoldThereInsteadOfWrapping() throws Exception {
        long endNs = (T0_MS + SECOND_MS) * 1_000_000L;
        // Each spans decades from its own start, so each may count one I/O per ns of it;
        // thirteen such count more than a long holds.
        for (int k = 0; k < 13; k++) {
            long startNs = EARLIEST_ACCEPTED_NS + k;
            long count = endNs - startNs;
            feed(decoded("{\"schema\":\"io.hist.v1\",\"host\":\"web-1\",\"disk\":\"sdb\",\"op\":\"R\",\"latency\":\"device\","
                    + "\"start_ns\":" + startNs + ",\"end_ns\":" + endNs + ",\"buckets_log2_us\":[0,0,0,0,0,0,0,0,0,0,0,0," + count + "],"
                    + "\"count\":" + count + ",\"sum_us\":" + Long.MAX_VALUE + ",\"max_us\":7000}", false));
        }
        Log2Histogram device = closedWindowsDeviceTime();
        assertEquals(Long.MAX_VALUE, device.count);
        assertEquals(Long.MAX_VALUE, device.sumUs);
        double p50 = device.quantileUs(0.5);
        assertTrue(p50 >= 4096 && p50 <= 7000, "the median stays in the 4-8 ms bucket that holds every I/O, was " + p50);
    }

    /** The largest weight the contract allows (the kernel's 32-bit count; a larger one is a dead letter). */
    @Test
    void eventsOfTheLargestWeightCountEveryIoTheyStandFor() throws Exception {
        long completeNs = (T0_MS + SECOND_MS) * 1_000_000L;
        for (int sector = 0; sector < 2; sector++) {
            feed(decoded("{\"schema\":\"io.event.v1\",\"host\":\"web-1\",\"disk\":\"sdb\",\"op\":\"R\",\"bytes\":4096,"
                    + "\"sector\":" + sector + ",\"issue_ns\":" + (completeNs - 5_000_000L) + ",\"complete_ns\":" + completeNs
                    + ",\"queue_ns\":0,\"inflight\":1,\"error\":0,\"comm\":\"dd\",\"pid\":1,"
                    + "\"sample_reason\":\"uniform\",\"sample_weight\":4294967295}", true));
        }
        Log2Histogram device = closedWindowsDeviceTime();
        assertEquals(2 * 4_294_967_295L, device.count);
        double p50 = device.quantileUs(0.5);
        assertTrue(p50 >= 4096 && p50 <= 5000, "both I/Os took 5 ms, the median was " + p50);
    }

    @Test
    void aKindQuietOnTheWallClockIsNoLongerWaitedFor() throws Exception {
        feed(reads("web-1", T0_MS + SECOND_MS, 10));
        for (long s = 1; s <= 20; s++) {
            harness.setProcessingTime(s * SECOND_MS);
            feed(diskstats("web-1", T0_MS + s * SECOND_MS, 0));
        }
        assertEquals(List.of("web-1/sdb@0s:10"), windows(),
                "the disk's I/O stopped at 1 s; its diskstats went on to 20 s, and its histograms were not waited for after "
                        + config.kindIdleness.toSeconds() + " s");
    }

    @Test
    void aDiskHeardAgainAfterASilenceWaitsForEachKindAnew() throws Exception {
        steadyUpTo(20);
        // The host's records stop for 20 s of wall clock (a Kafka outage), then its backlog is
        // read one topic ahead of the other: all its histograms, then all its diskstats.
        harness.setProcessingTime(40 * SECOND_MS);
        backlog(DiskWindowsTest::reads, 21, 40);
        backlog(DiskWindowsTest::diskstats, 21, 40);
        assertEquals(0, late(), "the diskstats read after the histograms are not late");
        assertEquals(List.of("web-1/sdb@0s:90", "web-1/sdb@10s:100", "web-1/sdb@20s:100"), windows());
        assertEquals(100, harness.extractOutputValues().get(2).iostat.counters.readsCompleted);
    }

    /**
     * A window closed on silence whose records come after its disk's clock passed it (here
     * its events, read after the other kinds' backlog; after a restore, the records read
     * again): it takes each, and is sent again once, at the disk's next check, not once a record.
     */
    @Test
    void recordsForAKeptWindowItsClockPassedMakeOneRevision() throws Exception {
        steadyUpTo(14);
        harness.setProcessingTime(14 * SECOND_MS + config.diskIdleness.toMillis() + config.kindIdleness.toMillis());
        harness.setProcessingTime(100 * SECOND_MS);
        backlog(DiskWindowsTest::reads, 15, 40);
        backlog(DiskWindowsTest::diskstats, 15, 40);
        harness.setProcessingTime(100 * SECOND_MS + config.kindIdleness.toMillis());
        backlog(DiskWindowsTest::event, 15, 19);
        harness.setProcessingTime(100 * SECOND_MS + 2 * config.kindIdleness.toMillis());
        List<DiskWindow> revisions = harness.extractOutputValues().stream().filter(w -> w.revision > 0).toList();
        assertEquals(List.of(1, 2), revisions.stream().map(w -> w.revision).toList(),
                "one revision with the other kinds' backlog, one with the 5 events after it");
        assertEquals(5, revisions.get(1).op("R").events);
        assertEquals(0, late());
    }

    @Test
    void aWindowClosedOnASilenceLongerThanTheDiskIdlenessTakesItsBacklogAndIsSentAgainWhole() throws Exception {
        steadyUpTo(14);
        // Every Kafka node away for longer than the disk idleness: the job hears nothing of the
        // host, closes its open window on silence, then reads the agent's backlog, histograms first.
        harness.setProcessingTime(14 * SECOND_MS + config.diskIdleness.toMillis() + config.kindIdleness.toMillis());
        assertEquals(List.of("web-1/sdb@0s:90", "web-1/sdb@10s:50"), windows(), "checked every " + config.kindIdleness);
        harness.setProcessingTime(100 * SECOND_MS);
        backlog(DiskWindowsTest::reads, 15, 40);
        backlog(DiskWindowsTest::diskstats, 15, 40);
        harness.setProcessingTime(100 * SECOND_MS + config.kindIdleness.toMillis());  // the disk's next check
        assertEquals(0, late(), "the backlog is late for no window");
        List<DiskWindow> out = harness.extractOutputValues();
        List<DiskWindow> sent = out.stream().filter(w -> !w.amendsClosedWindow).toList();
        assertEquals(List.of("0s:90 r0", "10s:50 r0", "20s:100 r0", "10s:100 r1"), sent.stream()
                .map(w -> (w.startNs / 1_000_000L - T0_MS) / SECOND_MS + "s:" + w.op("R").count() + " r" + w.revision).toList());
        assertEquals(100, sent.get(3).iostat.counters.readsCompleted, "the revision holds the backlog's diskstats too");
        assertEquals(50, out.stream().filter(w -> w.amendsClosedWindow).mapToLong(w -> w.op("R").count()).sum(),
                "the rollups take the closed window's late histograms as amendments");
        feed(reads("web-1", T0_MS + 16 * SECOND_MS, 10));
        assertEquals(sent.size(), harness.extractOutputValues().stream().filter(w -> !w.amendsClosedWindow).count(),
                "a resent histogram changes nothing");
    }

    /**
     * Steady to 20 s, then a Kafka outage: the host's records stop for 20 s of wall clock; the
     * `first` kind's partition is back first, the `later` kinds' 15 s after it, longer than a
     * kind is waited for when it may have gone quiet. Until they come, only the window the
     * disk's clock passed before the outage is closed.
     */
    private void outageWithOneKindBackFirst(RecordOfSecond first, RecordOfSecond... later) throws Exception {
        steadyUpTo(20);
        harness.setProcessingTime(40 * SECOND_MS);
        backlog(first, 21, 40);
        harness.setProcessingTime(55 * SECOND_MS);
        assertEquals(List.of("web-1/sdb@0s:90"), windows(), "the records that came first prove the others on their way");
        for (RecordOfSecond kind : later) {
            backlog(kind, 21, 40);
        }
    }

    @Test
    void diskstatsThatShowIoHaveItsHistogramsWaitedForLongerThanAQuietKind() throws Exception {
        outageWithOneKindBackFirst(DiskWindowsTest::diskstats, DiskWindowsTest::reads);
        assertEquals(0, late());
        assertEquals(List.of("web-1/sdb@0s:90", "web-1/sdb@10s:100", "web-1/sdb@20s:100"), windows());
    }

    @Test
    void windowsClosedBeforeTheHistogramsTheirDiskstatsProveTakeThemWhenTheyCome() throws Exception {
        steadyUpTo(20);
        // The histograms stop coming while the diskstats go on showing reads, for longer
        // than the disk idleness: the windows close without them, and take them when they
        // come, within the allowed lateness of the disk's clock.
        long owedUntilS = 20 + config.diskIdleness.toSeconds() + 10;
        for (long s = 21; s <= owedUntilS; s++) {
            harness.setProcessingTime(s * SECOND_MS);
            feed(diskstats("web-1", T0_MS + s * SECOND_MS, 10));
        }
        assertTrue(windows().contains("web-1/sdb@30s:0"), "waited for " + config.diskIdleness + ": " + windows());
        backlog(DiskWindowsTest::reads, 21, owedUntilS);
        harness.setProcessingTime((owedUntilS + 1) * SECOND_MS);
        second("web-1", T0_MS + (owedUntilS + 20) * SECOND_MS, 10);
        List<DiskWindow> sent = harness.extractOutputValues().stream().filter(w -> !w.amendsClosedWindow).toList();
        java.util.Map<Long, Long> lastCopy = new java.util.TreeMap<>();
        sent.forEach(w -> lastCopy.put((w.startNs / 1_000_000L - T0_MS) / SECOND_MS, w.op("R").count()));
        for (long start = 20; start + 10 <= owedUntilS; start += 10) {
            assertEquals(100, lastCopy.get(start), "the last copy of window " + start + " s: " + lastCopy);
        }
        assertEquals(0, late(), "no histogram is late for its window");
    }

    @Test
    void eventsReadFirstAfterAnOutageCloseNoWindowBeforeTheDiskstatsAndHistogramsTheyProve() throws Exception {
        outageWithOneKindBackFirst(DiskWindowsTest::event, DiskWindowsTest::diskstats, DiskWindowsTest::reads);
        assertEquals(0, late());
        assertEquals(List.of("web-1/sdb@0s:90", "web-1/sdb@10s:100", "web-1/sdb@20s:100"), windows());
        assertEquals(100, harness.extractOutputValues().get(2).iostat.counters.readsCompleted);
    }

    @Test
    void theRecordsOfOpenWindowsComeBackWithACheckpointAndAResentOneIsStillCountedOnce() throws Exception {
        for (long s = 1; s <= 12; s++) {
            second("web-1", T0_MS + s * SECOND_MS, 10);
        }
        feed(event("web-1", T0_MS + 11 * SECOND_MS, 10));
        OperatorSubtaskState checkpoint = checkpoint(1L, 0L);
        restoreFrom(checkpoint);
        for (long s = 12; s <= 21; s++) {  // 12 s again: the replay from the checkpoint's offsets
            second("web-1", T0_MS + s * SECOND_MS, 10);
        }
        harness.processWatermark(new Watermark(Long.MAX_VALUE));
        assertEquals(List.of("web-1/sdb@0s:90", "web-1/sdb@10s:100", "web-1/sdb@20s:20"), windows());
        assertEquals(1, harness.extractOutputValues().get(1).op("R").events, "the event of 11 s came back with its window's records");
        assertEquals(0, late());
    }

    /**
     * What a build that kept each open window whole left in its state: the windows under
     * "open-windows", each record added as it came, and a disk clock with no open starts
     * (a field it did not have); its check timer armed as that build armed it, every
     * kind idleness while the disk speaks.
     */
    private static final class EarlierBuildWindows extends KeyedProcessFunction<String, DiskRecord, DiskWindow> {
        private final WindowFunctions.Accumulate accumulate = new WindowFunctions.Accumulate(10);
        private final long kindIdleMs;
        private transient MapState<Long, DiskWindow> open;
        private transient ValueState<DiskClock> clock;

        EarlierBuildWindows(long kindIdleMs) {
            this.kindIdleMs = kindIdleMs;
        }

        @Override
        public void open(OpenContext openContext) {
            open = getRuntimeContext().getMapState(new MapStateDescriptor<>("open-windows", Long.class, DiskWindow.class));
            clock = getRuntimeContext().getState(new ValueStateDescriptor<>("disk-clock", DiskClock.class));
        }

        @Override
        public void processElement(DiskRecord r, Context ctx, Collector<DiskWindow> out) throws Exception {
            DiskClock c = clock.value() == null ? new DiskClock() : clock.value();
            long nowMs = ctx.timerService().currentProcessingTime();
            c.saw(r, Math.floorDiv(r.tsNs, 1_000_000L), nowMs, kindIdleMs);
            if (c.checkAtMs == DiskClock.NONE) {
                c.checkAtMs = nowMs + kindIdleMs;
                ctx.timerService().registerProcessingTimeTimer(c.checkAtMs);
            }
            long startMs = accumulate.windowStartMs(r);
            DiskWindow w = open.get(startMs) == null ? accumulate.openWindow() : open.get(startMs);
            if (w.firstSeen(r.identity(), r.hist != null)) {
                open.put(startMs, accumulate.add(r, w));
            }
            clock.update(c);
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext ctx, Collector<DiskWindow> out) throws Exception {
            DiskClock c = clock.value();
            c.checkAtMs = timestamp + kindIdleMs;  // checked on while the disk speaks
            ctx.timerService().registerProcessingTimeTimer(c.checkAtMs);
            clock.update(c);
        }
    }

    /** web-1's first `lastS` seconds (10 reads each, an event at 5 s) in the state the earlier build kept. */
    private OperatorSubtaskState earlierBuildsStateAfter(long lastS) throws Exception {
        try (KeyedOneInputStreamOperatorTestHarness<String, DiskRecord, DiskWindow> earlier =
                new KeyedOneInputStreamOperatorTestHarness<>(new KeyedProcessOperator<>(
                        new EarlierBuildWindows(config.kindIdleness.toMillis())), DiskRecord::key, Types.STRING)) {
            earlier.setProcessingTime(0);
            earlier.open();
            for (long s = 1; s <= lastS; s++) {
                earlier.setProcessingTime(s * SECOND_MS);
                for (DiskRecord r : s == 5 ? List.of(diskstats("web-1", T0_MS + s * SECOND_MS, 10), reads("web-1", T0_MS + s * SECOND_MS, 10),
                        event("web-1", T0_MS + s * SECOND_MS, 10)) : List.of(diskstats("web-1", T0_MS + s * SECOND_MS, 10),
                        reads("web-1", T0_MS + s * SECOND_MS, 10))) {
                    earlier.processElement(new StreamRecord<>(r, r.tsNs / 1_000_000L));
                }
            }
            return earlier.snapshot(1L, lastS * SECOND_MS);
        }
    }

    @Test
    void aJobUpgradedFromABuildThatKeptWindowsWholeClosesThemWithWhatTheyHeldAndWhatCameSince() throws Exception {
        restoreFrom(earlierBuildsStateAfter(13));
        for (long s = 12; s <= 31; s++) {  // 12 and 13 s again: the replay from the checkpoint's offsets
            harness.setProcessingTime((s + 2) * SECOND_MS);
            second("web-1", T0_MS + s * SECOND_MS, 10);
        }
        harness.processWatermark(new Watermark(Long.MAX_VALUE));
        assertEquals(List.of("web-1/sdb@0s:90", "web-1/sdb@10s:100", "web-1/sdb@20s:100", "web-1/sdb@30s:20"), windows());
        assertEquals(1, harness.extractOutputValues().get(0).op("R").events, "the earlier build's event stayed in its window");
        assertEquals(0, late());
    }

    @Test
    void anUpgradedJobWhoseDiskFallsSilentClosesTheEarlierBuildsWindowsOnItsTimer() throws Exception {
        restoreFrom(earlierBuildsStateAfter(13));
        long silentFromMs = 15 * SECOND_MS;
        harness.setProcessingTime(silentFromMs);
        // Restored, it waits one idleness for its input to resume, then the disk's idleness.
        long closesFromMs = silentFromMs + 2 * config.diskIdleness.toMillis();
        for (long nowMs = silentFromMs; nowMs < closesFromMs; nowMs += SECOND_MS) {
            harness.setProcessingTime(nowMs);
        }
        assertEquals(List.of(), windows(), "nothing closes before the disk has been silent its idleness");
        for (long nowMs = closesFromMs; nowMs <= closesFromMs + config.kindIdleness.toMillis(); nowMs += SECOND_MS) {
            harness.setProcessingTime(nowMs);
        }
        assertEquals(List.of("web-1/sdb@0s:90", "web-1/sdb@10s:40"), windows());
        assertTrue(harness.extractOutputValues().get(1).lastBeforeSilence);
    }

    /** A step of a disk's life as the operator sees it: the wall clock moving on, or a record. */
    private record Step(long atMs, DiskRecord record) {}

    /** Steady, a Kafka outage whose backlog comes a kind at a time, steady again, then silence. */
    private static List<Step> outageScript() {
        List<Step> steps = new java.util.ArrayList<>();
        for (long s = 1; s <= 20; s++) {
            steps.add(new Step(s * SECOND_MS, diskstats("web-1", T0_MS + s * SECOND_MS, 10)));
            steps.add(new Step(s * SECOND_MS, reads("web-1", T0_MS + s * SECOND_MS, 10)));
            steps.add(new Step(s * SECOND_MS, event("web-1", T0_MS + s * SECOND_MS, 10)));
        }
        for (long s = 21; s <= 40; s++) {
            steps.add(new Step(40 * SECOND_MS, event("web-1", T0_MS + s * SECOND_MS, 10)));
        }
        for (long s = 21; s <= 40; s++) {
            steps.add(new Step(55 * SECOND_MS, diskstats("web-1", T0_MS + s * SECOND_MS, 10)));
        }
        for (long s = 21; s <= 40; s++) {
            steps.add(new Step(56 * SECOND_MS, reads("web-1", T0_MS + s * SECOND_MS, 10)));
        }
        for (long s = 41; s <= 60; s++) {
            steps.add(new Step((s + 16) * SECOND_MS, diskstats("web-1", T0_MS + s * SECOND_MS, 10)));
            steps.add(new Step((s + 16) * SECOND_MS, reads("web-1", T0_MS + s * SECOND_MS, 10)));
        }
        steps.add(new Step(400 * SECOND_MS, null));
        return steps;
    }

    private void play(List<Step> steps) throws Exception {
        play(steps, Long.MIN_VALUE);
    }

    /**
     * The restored job runs on after the script's last step until its disks' silence has
     * been heard since its input resumed: a restored job counts silence from its first
     * record (it heard nothing while it was down), or, given none, from one idleness after
     * its start. A script whose end came just after the restore would otherwise leave its
     * last windows open.
     */
    private void runOnAfterRestore(List<Step> script) throws Exception {
        long lastMs = Math.max(script.get(script.size() - 1).atMs(), harness.getProcessingTime());
        harness.setProcessingTime(lastMs + 2 * config.diskIdleness.toMillis() + config.kindIdleness.toMillis());
    }

    /** The steps, none before `notBeforeMs` on the wall clock: what came meanwhile is read at once. */
    private void play(List<Step> steps, long notBeforeMs) throws Exception {
        for (Step step : steps) {
            harness.setProcessingTime(Math.max(step.atMs(), notBeforeMs));
            if (step.record() != null) {
                feed(step.record());
            }
        }
    }

    /** Window start (s) -> reads in the last copy sent of it. */
    private static java.util.Map<Long, Long> lastCopies(List<DiskWindow> sent) {
        java.util.Map<Long, Long> last = new java.util.TreeMap<>();
        sent.stream().filter(w -> !w.amendsClosedWindow)
                .forEach(w -> last.put((w.startNs / 1_000_000L - T0_MS) / SECOND_MS, w.op("R").count()));
        return last;
    }

    /**
     * A disk idle (its diskstats alone) since its agent started, then reading: its first
     * reads' events come first, their histograms only once its diskstats passed their window.
     */
    private static List<Step> firstReadsScript() {
        List<Step> steps = new java.util.ArrayList<>();
        for (long s = 1; s <= 25; s++) {
            steps.add(new Step(s * SECOND_MS, diskstats("web-1", T0_MS + s * SECOND_MS, s < 21 ? 0 : 10)));
        }
        for (long s = 21; s <= 25; s++) {
            steps.add(new Step(25 * SECOND_MS, event("web-1", T0_MS + s * SECOND_MS, 10)));
        }
        for (long s = 26; s <= 37; s++) {
            steps.add(new Step(s * SECOND_MS, diskstats("web-1", T0_MS + s * SECOND_MS, 10)));
            steps.add(new Step(s * SECOND_MS, event("web-1", T0_MS + s * SECOND_MS, 10)));
        }
        for (long s = 21; s <= 37; s++) {
            steps.add(new Step(38 * SECOND_MS, reads("web-1", T0_MS + s * SECOND_MS, 10)));
        }
        for (long s = 38; s <= 60; s++) {
            steps.add(new Step(s * SECOND_MS, diskstats("web-1", T0_MS + s * SECOND_MS, 10)));
            steps.add(new Step(s * SECOND_MS, reads("web-1", T0_MS + s * SECOND_MS, 10)));
        }
        steps.add(new Step(400 * SECOND_MS, null));
        return steps;
    }

    @Test
    void aJobRestoredFromACheckpointTakenAfterAnyRecordSendsTheWindowsItWouldHaveSent() throws Exception {
        assertEveryRestoreSendsTheWindowsOf(outageScript());
    }

    @Test
    void aDisksFirstReadsWindowsSurviveARestoreAfterAnyRecord() throws Exception {
        List<Step> script = firstReadsScript();
        play(script);
        java.util.Map<Long, Long> uninterrupted = lastCopies(harness.extractOutputValues());
        assertEquals(400L, uninterrupted.values().stream().mapToLong(Long::longValue).sum(), "every read in a window: " + uninterrupted);
        assertEveryRestoreSendsTheWindowsOf(script);
    }

    /**
     * A job restored minutes after its checkpoint (longer than the disk idleness) finds its
     * disks' timers overdue; what the disks sent since the checkpoint is read again a moment
     * later. No window closes on that silence with only what the checkpoint held: each is
     * sent once, whole, as without the failure, and the detectors judge no part of one.
     */
    @Test
    void aJobRestoredLongAfterItsCheckpointSendsNoWindowBeforeReadingAgainWhatCameSince() throws Exception {
        assertARestoreSendsEachWindowOnceWhole((sinceCheckpoint, checkpointMs) -> play(sinceCheckpoint, checkpointMs + 5 * 60 * SECOND_MS));
    }

    /**
     * A job restored whose input resumes only after longer than the disk idleness (its
     * sources still restoring, their brokers slow to answer: the windows operator runs, and
     * its overdue timers fire, well before the first record comes again). Its disks were
     * not silent: nothing was read. No window closes with only what the checkpoint held,
     * on silence or on a kind that merely looks idle; each is sent once, whole.
     */
    @Test
    void aJobRestoredWhoseInputResumesLateSendsNoWindowBeforeReadingAgainWhatCameSince() throws Exception {
        assertARestoreSendsEachWindowOnceWhole((sinceCheckpoint, checkpointMs) -> {
            long restartedMs = checkpointMs + 60 * SECOND_MS;
            long resumedMs = restartedMs + config.diskIdleness.toMillis() + 30 * SECOND_MS;
            for (long ms = restartedMs; ms < resumedMs; ms += SECOND_MS) {
                harness.setProcessingTime(ms);  // its timers fire, nothing comes
            }
            play(sinceCheckpoint, resumedMs);
        });
    }

    /** How a restored job reads again what came after its checkpoint (taken at `checkpointMs` on the wall clock). */
    private interface ReadAgain {
        void play(List<Step> sinceCheckpoint, long checkpointMs) throws Exception;
    }

    /**
     * 20 s of every kind, steady, checkpointed after 15 s (the window of 10-20 s half read)
     * and restored, `readAgain` playing what came since: the windows are those sent without
     * the failure, and each is sent once after the restore, none in part.
     */
    private void assertARestoreSendsEachWindowOnceWhole(ReadAgain readAgain) throws Exception {
        List<Step> script = new java.util.ArrayList<>(outageScript().subList(0, 60));
        script.add(new Step(400 * SECOND_MS, null));
        play(script);
        java.util.Map<Long, Long> uninterrupted = lastCopies(harness.extractOutputValues());
        close();
        open();
        int cut = 45;
        play(script.subList(0, cut));
        OperatorSubtaskState checkpoint = checkpoint(cut, script.get(cut - 1).atMs());
        List<DiskWindow> sent = new java.util.ArrayList<>(harness.extractOutputValues());
        restoreFrom(checkpoint);
        readAgain.play(script.subList(cut, script.size()), script.get(cut - 1).atMs());
        runOnAfterRestore(script);
        List<DiskWindow> sentAfterRestore = harness.extractOutputValues().stream().filter(w -> !w.amendsClosedWindow).toList();
        sent.addAll(sentAfterRestore);
        assertEquals(uninterrupted, lastCopies(sent));
        assertEquals(sentAfterRestore.size(), lastCopies(sentAfterRestore).size(),
                "each window sent once after the restore, none in part: " + sentAfterRestore.stream().map(w -> w.startNs).toList());
    }

    /**
     * For every step: the job checkpointed after it, went on for a while (what it sent then
     * stays sent: the sink is at least once), failed, and was restored from the checkpoint,
     * its sources read again from there. The last copy of every window is what it would
     * have been without the failure.
     */
    private void assertEveryRestoreSendsTheWindowsOf(List<Step> script) throws Exception {
        close();
        open();
        play(script);
        java.util.Map<Long, Long> uninterrupted = lastCopies(harness.extractOutputValues());
        for (int cut = 1; cut < script.size(); cut++) {
            for (int failedAfter : new int[] {0, 7, 40}) {
                close();
                open();
                play(script.subList(0, cut));
                OperatorSubtaskState checkpoint = checkpoint(cut, script.get(cut - 1).atMs());
                play(script.subList(cut, Math.min(script.size() - 1, cut + failedAfter)));
                List<DiskWindow> sent = new java.util.ArrayList<>(harness.extractOutputValues());
                restoreFrom(checkpoint);
                play(script.subList(cut, script.size()));
                runOnAfterRestore(script);
                sent.addAll(harness.extractOutputValues());
                assertEquals(uninterrupted, lastCopies(sent), "checkpointed after step " + cut + ", failed " + failedAfter + " steps on");
            }
        }
    }

    /**
     * A disk's random life: a second's reads in its diskstats, histograms and events alike;
     * each kind delivered in order, a few seconds late at most, except for an outage of
     * its own that holds its records back and then delivers them at once.
     */
    private static List<Step> randomLife(java.util.Random rnd) {
        int seconds = 20 + rnd.nextInt(60);
        long[] readsOf = new long[seconds + 1];
        for (int s = 1; s <= seconds; s++) {
            readsOf[s] = rnd.nextInt(3) == 0 ? 0 : 1 + rnd.nextInt(20);
        }
        List<Step> steps = new java.util.ArrayList<>();
        RecordOfSecond[] kinds = {DiskWindowsTest::diskstats, DiskWindowsTest::reads, DiskWindowsTest::event};
        for (int kind = 0; kind < kinds.length; kind++) {
            long outageFromS = 1 + rnd.nextInt(seconds);
            long outageToS = rnd.nextInt(2) == 0 ? outageFromS : outageFromS + rnd.nextInt(90);
            long deliveredMs = 0;
            for (int s = 1; s <= seconds; s++) {
                if (kind > 0 && readsOf[s] == 0) {
                    continue;  // no I/O: no histogram, no event
                }
                long atMs = s * SECOND_MS + rnd.nextInt(3_000);
                if (s >= outageFromS && s < outageToS) {
                    atMs = Math.max(atMs, outageToS * SECOND_MS + rnd.nextInt(5_000));
                }
                deliveredMs = Math.max(deliveredMs, atMs);
                steps.add(new Step(deliveredMs, kinds[kind].of("web-1", T0_MS + s * SECOND_MS, readsOf[s])));
                if (rnd.nextInt(20) == 0) {  // sent again: the agent retried what Kafka had taken
                    steps.add(new Step(deliveredMs + rnd.nextInt(20_000), kinds[kind].of("web-1", T0_MS + s * SECOND_MS, readsOf[s])));
                }
            }
        }
        steps.sort(java.util.Comparator.comparingLong(Step::atMs));
        steps.add(new Step(steps.get(steps.size() - 1).atMs() + 900 * SECOND_MS, null));
        return steps;
    }

    /** Window start (s) -> reads its disk's histograms hold, each histogram once. */
    private static java.util.Map<Long, Long> readsInHistograms(List<Step> steps) {
        java.util.Map<Long, DiskRecord> histograms = new java.util.HashMap<>();
        steps.stream().filter(step -> step.record() != null && step.record().hist != null)
                .forEach(step -> histograms.put(step.record().identity(), step.record()));
        return readsByWindow(histograms.values());
    }

    /** Window start (s) -> the reads of these histograms. */
    private static java.util.Map<Long, Long> readsByWindow(java.util.Collection<DiskRecord> histograms) {
        java.util.Map<Long, Long> reads = new java.util.TreeMap<>();
        histograms.forEach(r -> reads.merge(windowStartS(r), r.hist.count, Long::sum));
        return reads;
    }

    private static long windowStartS(DiskRecord r) {
        return (r.tsNs / 1_000_000L - T0_MS) / SECOND_MS / 10 * 10;
    }

    /** The histograms sent aside as late, each once, by window start (s) -> their reads. */
    private void addLateReads(java.util.Map<Long, DiskRecord> late) {
        ConcurrentLinkedQueue<StreamRecord<DiskRecord>> aside = harness.getSideOutput(Pipeline.LATE_RECORDS);
        if (aside != null) {
            aside.stream().map(StreamRecord::getValue).filter(r -> r.hist != null).forEach(r -> late.put(r.identity(), r));
        }
    }

    /**
     * Random lives, each failed at a random step some steps after a checkpoint and restored
     * from it after a random pause (what came after the checkpoint read again, at once): every
     * read of the histograms is in the last copy of its window or was sent aside as late.
     */
    @Test
    void noReadIsLostAcrossARestoreInARandomLife() throws Exception {
        for (int seed = 0; seed < 500; seed++) {
            java.util.Random rnd = new java.util.Random(seed);
            List<Step> script = randomLife(rnd);
            int cut = 1 + rnd.nextInt(script.size() - 1);
            int failedAt = Math.min(script.size() - 1, cut + rnd.nextInt(40));
            long pauseMs = new long[] {0, 5_000, 30_000, 90_000}[rnd.nextInt(4)];
            close();
            open();
            play(script.subList(0, cut));
            OperatorSubtaskState checkpoint = checkpoint(cut, script.get(cut - 1).atMs());
            play(script.subList(cut, failedAt));
            List<DiskWindow> sent = new java.util.ArrayList<>(harness.extractOutputValues());
            java.util.Map<Long, DiskRecord> late = new java.util.HashMap<>();
            addLateReads(late);
            long restartedMs = script.get(failedAt - 1).atMs() + pauseMs;
            restoreFrom(checkpoint);
            play(script.subList(cut, script.size()), restartedMs);
            runOnAfterRestore(script);
            sent.addAll(harness.extractOutputValues());
            addLateReads(late);
            // The sink and the dead letters are at least once: what the failed run sent aside as late may be in a window now.
            java.util.Map<Long, Long> inWindows = lastCopies(sent);
            java.util.Map<Long, Long> lateReads = readsByWindow(late.values());
            java.util.Map<Long, String> wrong = new java.util.TreeMap<>();
            readsInHistograms(script).forEach((startS, reads) -> {
                long windowed = inWindows.getOrDefault(startS, 0L);
                if (windowed > reads || windowed + lateReads.getOrDefault(startS, 0L) < reads) {
                    wrong.put(startS, reads + " read, " + windowed + " in its window, " + lateReads.get(startS) + " late");
                }
            });
            assertEquals(java.util.Map.of(), wrong, "seed " + seed + ": checkpoint after step " + cut
                    + ", failed at step " + failedAt + ", restarted " + pauseMs + " ms later");
        }
    }
}
