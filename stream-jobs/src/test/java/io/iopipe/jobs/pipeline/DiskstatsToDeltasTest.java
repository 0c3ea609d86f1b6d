package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.iopipe.jobs.iostat.DiskstatsDelta;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.OutputRecord;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class DiskstatsToDeltasTest {
    static final long FIRST_SAMPLE_MS = 1_763_700_000_000L;
    static final long ONE_SECOND_MS = 1_000L;
    static final long DISK_FORGOTTEN_AFTER_MS = 600_000L;

    private KeyedOneInputStreamOperatorTestHarness<String, DiskRecord, DiskRecord> harness;

    @BeforeEach
    void open() throws Exception {
        harness = new KeyedOneInputStreamOperatorTestHarness<>(
                DiskstatsToDeltas.operator(DISK_FORGOTTEN_AFTER_MS), DiskRecord::key, Types.STRING);
        harness.open();
    }

    @AfterEach
    void close() throws Exception {
        harness.close();
    }

    private static DiskstatsSample sample(long tsMs, long reads) {
        DiskstatsSample s = new DiskstatsSample();
        s.source = "test:" + tsMs;
        s.host = "web-17";
        s.disk = "sdb";
        s.tsNs = tsMs * 1_000_000L;
        s.rotational = true;
        s.counters.readsCompleted = reads;
        s.counters.sectorsRead = reads * 256;
        s.counters.readTimeMs = reads * 8;
        s.counters.ioTimeMs = tsMs - FIRST_SAMPLE_MS;
        return s;
    }

    private void feed(DiskstatsSample s) throws Exception {
        harness.processElement(new StreamRecord<>(DiskRecord.of(s), s.tsNs / 1_000_000L));
    }

    /** What was sent on: the deltas, the first sample's class among them. */
    private List<DiskstatsDelta> sent() {
        return harness.extractOutputValues().stream().map(r -> r.delta).toList();
    }

    /** The deltas over an interval, without the first sample's class. */
    private List<DiskstatsDelta> deltas() {
        return sent().stream().filter(d -> !d.classOnly()).toList();
    }

    private List<String> deadLetterReasons() {
        return harness.getSideOutput(Pipeline.DEAD_LETTERS) == null ? List.of()
                : harness.getSideOutput(Pipeline.DEAD_LETTERS).stream().map(r -> ((OutputRecord) r.getValue()).json).toList();
    }

    @Test
    void consecutiveSamplesBecomeDeltasOverTheirInterval() throws Exception {
        feed(sample(FIRST_SAMPLE_MS, 100));
        feed(sample(FIRST_SAMPLE_MS + ONE_SECOND_MS, 107));
        feed(sample(FIRST_SAMPLE_MS + 2 * ONE_SECOND_MS, 120));
        List<DiskstatsDelta> out = deltas();
        assertEquals(2, out.size());
        assertEquals(7, out.get(0).counters.readsCompleted);
        assertEquals(7 * 256, out.get(0).counters.sectorsRead);
        assertEquals(13, out.get(1).counters.readsCompleted);
        assertEquals(ONE_SECOND_MS * 1_000_000L, out.get(1).endNs - out.get(1).startNs);
    }

    @Test
    void aDisksFirstSampleSaysWhatClassOfDiskItIsBeforeAnyInterval() throws Exception {
        DiskstatsSample first = sample(FIRST_SAMPLE_MS, 100);
        first.model = "ST4000NM0035";
        feed(first);
        List<DiskstatsDelta> out = sent();
        assertEquals(1, out.size());
        assertTrue(out.get(0).classOnly() && out.get(0).rotational);
        assertEquals("ST4000NM0035", out.get(0).model);
        assertEquals(0, out.get(0).counters.readsCompleted, "no interval yet: nothing counted");
        feed(sample(FIRST_SAMPLE_MS + ONE_SECOND_MS, 107));
        assertEquals(2, sent().size(), "one class, then intervals only");
    }

    @Test
    void outOfOrderSampleIsDeadLetteredAndDoesNotDisturbTheBaseline() throws Exception {
        feed(sample(FIRST_SAMPLE_MS + ONE_SECOND_MS, 107));
        feed(sample(FIRST_SAMPLE_MS, 100));
        feed(sample(FIRST_SAMPLE_MS + 2 * ONE_SECOND_MS, 120));
        assertEquals(1, deltas().size());
        assertEquals(13, deltas().get(0).counters.readsCompleted);
        List<String> reasons = deadLetterReasons();
        assertEquals(1, reasons.size());
        assertTrue(reasons.get(0).contains("out of order"), reasons.get(0));
    }

    @Test
    void duplicateSampleIsCountedNotDoubled() throws Exception {
        feed(sample(FIRST_SAMPLE_MS, 100));
        feed(sample(FIRST_SAMPLE_MS, 100));
        feed(sample(FIRST_SAMPLE_MS + ONE_SECOND_MS, 107));
        assertEquals(1, deltas().size());
        assertEquals(List.of(), deadLetterReasons());
    }

    private static HistRecord reads(DiskstatsSample s) {
        HistRecord h = new HistRecord();
        h.host = s.host;
        h.disk = s.disk;
        h.op = "R";
        h.latency = "device";
        h.endNs = s.tsNs;
        h.startNs = s.tsNs - ONE_SECOND_MS * 1_000_000L;
        h.bucketsLog2Us = new long[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};
        h.count = 7;
        return h;
    }

    private void feedInterval(DiskstatsSample s) throws Exception {
        harness.processElement(new StreamRecord<>(DiskRecord.ofInterval(s, List.of(reads(s))), s.tsNs / 1_000_000L));
    }

    /** What each record sent on held: its delta's reads (or "class", or "-"), then its histograms. */
    private List<String> intervalsSent() {
        return harness.extractOutputValues().stream().map(r -> (r.delta == null ? "-" : r.delta.classOnly() ? "class"
                : String.valueOf(r.delta.counters.readsCompleted)) + "+" + (r.histograms == null ? 0 : r.histograms.length)).toList();
    }

    /** An interval's histograms go on to its windows with its sample's delta, in one record, whatever became of the sample. */
    @Test
    void anIntervalsHistogramsGoOnWithItsDeltaWhateverBecameOfItsSample() throws Exception {
        feedInterval(sample(FIRST_SAMPLE_MS, 100));
        feedInterval(sample(FIRST_SAMPLE_MS + ONE_SECOND_MS, 107));
        feedInterval(sample(FIRST_SAMPLE_MS + ONE_SECOND_MS, 107));  // resent
        feedInterval(sample(FIRST_SAMPLE_MS, 100));  // out of order
        feed(sample(FIRST_SAMPLE_MS + 2 * ONE_SECOND_MS, 120));  // a sample alone
        assertEquals(List.of("class+1", "7+1", "-+1", "-+1", "13+0"), intervalsSent());
        assertEquals(1, deadLetterReasons().size());
    }

    /** A disk's records that hold no sample pass through as they came, in order, and touch no state. */
    @Test
    void aDisksOtherRecordsPassThroughInTheirOrderTouchingNoState() throws Exception {
        DiskstatsSample s = sample(FIRST_SAMPLE_MS, 100);
        DiskRecord histograms = DiskRecord.ofHistograms(List.of(reads(s)));
        DiskRecord alone = DiskRecord.of(reads(sample(FIRST_SAMPLE_MS + ONE_SECOND_MS, 107)));
        harness.processElement(new StreamRecord<>(histograms, 0));
        harness.processElement(new StreamRecord<>(alone, 0));
        assertEquals(List.of(histograms.tsNs + " 1 histograms", alone.tsNs + " a histogram"), harness.extractOutputValues().stream()
                .map(r -> r.tsNs + (r.histograms != null ? " " + r.histograms.length + " histograms" : r.hist != null ? " a histogram" : ""))
                .toList());
        assertEquals(0, harness.numKeyedStateEntries());
        assertEquals(0, harness.numProcessingTimeTimers());
    }

    @Test
    void counterResetStartsANewBaselineWithoutANegativeDelta() throws Exception {
        feed(sample(FIRST_SAMPLE_MS, 5_000));
        feed(sample(FIRST_SAMPLE_MS + ONE_SECOND_MS, 10));
        feed(sample(FIRST_SAMPLE_MS + 2 * ONE_SECOND_MS, 17));
        assertEquals(1, deltas().size());
        assertEquals(7, deltas().get(0).counters.readsCompleted);
    }

    @Test
    void aDiskThatFallsSilentOnTheWallClockLeavesNoStateOrTimers() throws Exception {
        harness.setProcessingTime(0);
        feed(sample(FIRST_SAMPLE_MS, 100));
        harness.setProcessingTime(ONE_SECOND_MS);
        feed(sample(FIRST_SAMPLE_MS + ONE_SECOND_MS, 107));
        assertEquals(1, harness.numProcessingTimeTimers(), "one timer per disk, not one per sample");
        harness.setProcessingTime(DISK_FORGOTTEN_AFTER_MS);
        assertTrue(stateEntriesAtACheckpoint(1) > 0, "heard from a second later: not silent long enough yet");
        assertEquals(1, harness.numProcessingTimeTimers());
        harness.setProcessingTime(ONE_SECOND_MS + DISK_FORGOTTEN_AFTER_MS);
        assertEquals(0, harness.numProcessingTimeTimers());
        assertEquals(0, stateEntriesAtACheckpoint(2));
    }

    /** The keyed state a checkpoint taken now holds: the operator writes what it holds on the heap first, as at a barrier. */
    private int stateEntriesAtACheckpoint(long checkpointId) throws Exception {
        harness.prepareSnapshotPreBarrier(checkpointId);
        return harness.numKeyedStateEntries();
    }

    /** Each disk's last sample comes back with a checkpoint: the first sample after a restore makes a delta, not a class. */
    @Test
    void theLastSampleOfEachDiskComesBackWithACheckpoint() throws Exception {
        feed(sample(FIRST_SAMPLE_MS, 100));
        feed(sample(FIRST_SAMPLE_MS + ONE_SECOND_MS, 107));
        harness.prepareSnapshotPreBarrier(1L);
        OperatorSubtaskState checkpoint = harness.snapshot(1L, 0L);
        harness.close();
        harness = new KeyedOneInputStreamOperatorTestHarness<>(
                DiskstatsToDeltas.operator(DISK_FORGOTTEN_AFTER_MS), DiskRecord::key, Types.STRING);
        harness.initializeState(checkpoint);
        harness.open();
        feed(sample(FIRST_SAMPLE_MS + 2 * ONE_SECOND_MS, 117));
        assertEquals(List.of(10L), sent().stream().map(d -> d.counters.readsCompleted).toList(),
                "the interval from the checkpoint's last sample, not the disk taken for new");
        assertEquals(1, harness.numProcessingTimeTimers(), "and its check for silence");
    }
}
