package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.iopipe.jobs.detect.DiskWindow;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class RollUpWindowsTest {
    static final long T0_NS = 1_763_700_000_000_000_000L;
    static final long TEN_S_NS = 10_000_000_000L;
    static final long IDLE_MS = 60_000L;
    static final long FORGET_MS = 600_000L;

    private KeyedOneInputStreamOperatorTestHarness<String, DiskWindow, DiskWindow> harness;

    private long checkpoints;

    @BeforeEach
    void open() throws Exception {
        harness = started(null);
    }

    /** The operator, restored from `checkpoint` if given. */
    private static KeyedOneInputStreamOperatorTestHarness<String, DiskWindow, DiskWindow> started(
            OperatorSubtaskState checkpoint) throws Exception {
        KeyedOneInputStreamOperatorTestHarness<String, DiskWindow, DiskWindow> h = new KeyedOneInputStreamOperatorTestHarness<>(
                RollUpWindows.operator(60, IDLE_MS, FORGET_MS), DiskWindow::key, Types.STRING);
        h.setProcessingTime(0);
        if (checkpoint != null) {
            h.initializeState(checkpoint);
        }
        h.open();
        return h;
    }

    /** A checkpoint as a barrier takes it: the operator first writes what it holds on the heap. */
    private OperatorSubtaskState checkpoint() throws Exception {
        checkpoints++;
        harness.prepareSnapshotPreBarrier(checkpoints);
        return harness.snapshot(checkpoints, 0L);
    }

    /** The keyed state a checkpoint taken now holds. */
    private int stateEntriesAtACheckpoint() throws Exception {
        checkpoints++;
        harness.prepareSnapshotPreBarrier(checkpoints);
        return harness.numKeyedStateEntries();
    }

    @AfterEach
    void close() throws Exception {
        harness.close();
    }

    /** The `index`-th 10 s window from T0 of one disk: `reads` reads of 4-8 ms, and their diskstats. */
    private void tenSeconds(int index, long reads) throws Exception {
        DiskWindow w = new DiskWindow();
        w.host = "web-1";
        w.disk = "sdb";
        w.startNs = T0_NS + index * TEN_S_NS;
        w.endNs = w.startNs + TEN_S_NS;
        w.windowSeconds = 10;
        w.iostat.counters.readsCompleted = reads;
        w.iostat.samples = 10;
        w.op("R").device.add(6_000, reads);
        harness.processElement(new StreamRecord<>(w, w.endNs / 1_000_000L));
    }

    private List<String> minutes() {
        return harness.extractOutputValues().stream().map(w -> (w.startNs - T0_NS) / TEN_S_NS + "+" + w.windowSeconds + "s:"
                + w.iostat.counters.readsCompleted + "/" + w.op("R").count() + "/" + w.iostat.samples).toList();
    }

    @Test
    void sixTenSecondWindowsMakeOneMinuteExactly() throws Exception {
        for (int i = 0; i < 6; i++) {
            tenSeconds(i, 10 + i);
        }
        assertEquals(List.of("0+60s:75/75/60"), minutes(), "closed by its last part, sums exact");
        assertEquals(2, stateEntriesAtACheckpoint(), "only the disk's silence watch remains (when last heard, next check)");
    }

    @Test
    void aMinutePartlyTakenComesBackWithACheckpointAsItWasAtTheBarrier() throws Exception {
        for (int i = 0; i < 3; i++) {
            tenSeconds(i, 10 + i);
        }
        assertEquals(3, stateEntriesAtACheckpoint(), "the span, and the disk's silence watch");
        OperatorSubtaskState atTheBarrier = checkpoint();
        tenSeconds(3, 1_000);  // taken after the barrier: lost with the failure, read again from the checkpoint's offsets
        harness.close();
        harness = started(atTheBarrier);
        for (int i = 3; i < 6; i++) {
            tenSeconds(i, 10 + i);
        }
        assertEquals(List.of("0+60s:75/75/60"), minutes(), "the minute whole, nothing taken after the barrier");
    }

    @Test
    void aLaterMinuteClosesAnEarlierOneWithGaps() throws Exception {
        tenSeconds(1, 5);
        tenSeconds(3, 5);
        tenSeconds(7, 5);
        assertEquals(List.of("0+60s:10/10/20"), minutes());
        harness.processWatermark(new Watermark(Long.MAX_VALUE));
        assertEquals(List.of("0+60s:10/10/20", "6+60s:5/5/10"), minutes(), "the end of the input closes the last");
    }

    @Test
    void aSilentDiskHasItsMinuteSentThenIsForgotten() throws Exception {
        tenSeconds(0, 5);
        harness.setProcessingTime(IDLE_MS);
        assertEquals(List.of("0+60s:5/5/10"), minutes());
        harness.setProcessingTime(FORGET_MS);
        assertEquals(List.of("0+60s:5/5/10"), minutes(), "sent once");
        assertEquals(0, stateEntriesAtACheckpoint());
        assertEquals(0, harness.numProcessingTimeTimers() + harness.numEventTimeTimers());
    }

    @Test
    void aDiskHeardAgainWithinTheMinuteItWasSilentInHasTheWholeMinuteSentAgain() throws Exception {
        tenSeconds(0, 5);
        harness.setProcessingTime(IDLE_MS);
        tenSeconds(3, 7);
        tenSeconds(5, 2);
        tenSeconds(6, 1);
        assertEquals(List.of("0+60s:5/5/10", "0+60s:14/14/30"), minutes(), "the later one holds the first part too");
        harness.setProcessingTime(IDLE_MS + FORGET_MS);
        assertEquals(List.of("0+60s:5/5/10", "0+60s:14/14/30", "6+60s:1/1/10"), minutes());
    }

    @Test
    void aSilenceCheckFiringLateSendsTheMinuteBeforeForgettingIt() throws Exception {
        tenSeconds(0, 5);
        harness.setProcessingTime(FORGET_MS);
        assertEquals(List.of("0+60s:5/5/10"), minutes());
        assertEquals(0, stateEntriesAtACheckpoint());
    }

    @Test
    void aMinuteSentOnSilenceIsNotSentAgainWhenTheNextBegins() throws Exception {
        tenSeconds(0, 5);
        harness.setProcessingTime(IDLE_MS);
        tenSeconds(7, 3);
        harness.processWatermark(new Watermark(Long.MAX_VALUE));
        assertEquals(List.of("0+60s:5/5/10", "6+60s:3/3/10"), minutes());
    }
}
