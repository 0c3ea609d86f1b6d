package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.iopipe.jobs.detect.DiskHealth;
import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.detect.OpLatency;
import io.iopipe.jobs.records.OutputRecord;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import io.iopipe.jobs.detect.PeerVerdict;
import org.apache.flink.streaming.api.operators.co.KeyedCoProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
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
        w.iostat.counters.readsCompleted = 40;
        w.iostat.counters.sectorsRead = 40 * 256;
        w.iostat.counters.readTimeMs = 40 * 500;
        w.iostat.counters.ioTimeMs = 10_000;
        w.iostat.counters.weightedIoTimeMs = 20_000;
        OpLatency r = w.op("R");
        r.device.add(500_000, 40);
        return w;
    }

    @Test
    void detectsPerDiskAndForgetsADiskWithoutATicketThatDisappears() throws Exception {
        KeyedTwoInputStreamOperatorTestHarness<String, DiskWindow, PeerVerdict, OutputRecord> harness = harness();
        harness.open();
        harness.setProcessingTime(0);
        DiskWindow w = quietWindow(WINDOW_START_NS);
        harness.processElement1(new StreamRecord<>(w, w.endNs / 1_000_000L));
        assertTrue(harness.numKeyedStateEntries() > 0, "the disk's history is kept");
        assertEquals(1, harness.numProcessingTimeTimers());

        harness.setProcessingTime(FORGET_AFTER_MS);
        assertEquals(0, harness.numKeyedStateEntries(), "a disk silent on the wall clock leaves no state");
        assertEquals(0, harness.numProcessingTimeTimers(), "nor timers");
        assertEquals(0, harness.numEventTimeTimers());
        assertEquals(List.of(), harness.extractOutputValues());
        harness.close();
    }

    @Test
    void aFailingDiskSilentForLongKeepsItsTicketOpenSaysWhyOnceAndResolvesItOnceBackAndHealthy() throws Exception {
        KeyedTwoInputStreamOperatorTestHarness<String, DiskWindow, PeerVerdict, OutputRecord> harness = harness();
        harness.open();
        harness.setProcessingTime(0);
        harness.processElement1(new StreamRecord<>(dustyWindow(WINDOW_START_NS), 0L));
        assertEquals(List.of("healthy->failing open"), ticketSteps(harness));
        String ticket = ticketIds(harness).get(0);

        harness.setProcessingTime(FORGET_AFTER_MS);
        harness.setProcessingTime(3 * FORGET_AFTER_MS);
        assertEquals(List.of("healthy->failing open", "failing->failing update"), ticketSteps(harness));
        assertTrue(healthRecords(harness).get(1).json.contains("no window for 600 s"), healthRecords(harness).get(1).json);
        assertTrue(harness.numKeyedStateEntries() > 0, "the history of a disk holding a ticket is kept");
        assertEquals(0, harness.numProcessingTimeTimers(), "without a timer: the disk's return arms it again");

        // Back after 11 minutes of silence, quiet: the silence did not count as quiet, so it
        // steps down one recovery time after it was heard again, then resolves its ticket.
        long back = WINDOW_START_NS + 66 * TEN_SECONDS_NS;
        long recoveryWindows = DiskHealth.DEFAULT_RECOVERY.toNanos() / TEN_SECONDS_NS;
        for (int i = 0; i <= 2 * recoveryWindows; i++) {
            harness.processElement1(new StreamRecord<>(quietWindow(back + i * TEN_SECONDS_NS), 0L));
            if (i == recoveryWindows - 2) {
                assertEquals(2, transitions(harness).size(), "the silence was no quiet spell: no step down at once");
            }
        }
        assertEquals(List.of("healthy->failing", "failing->failing", "failing->suspect", "suspect->healthy"), transitions(harness));
        assertEquals(List.of("healthy->failing open", "failing->failing update", "suspect->healthy resolve"), ticketSteps(harness));
        assertEquals(List.of(ticket), ticketIds(harness).stream().distinct().toList(), "one ticket");
        harness.close();
    }

    private static List<OutputRecord> healthRecords(KeyedTwoInputStreamOperatorTestHarness<String, DiskWindow, PeerVerdict, OutputRecord> h) {
        return h.extractOutputValues().stream().filter(r -> r.schema.equals("io.health.v1")).toList();
    }

    /** Each health record with a ticket: `from->to action`. */
    private static List<String> ticketSteps(KeyedTwoInputStreamOperatorTestHarness<String, DiskWindow, PeerVerdict, OutputRecord> h) {
        return healthRecords(h).stream().filter(r -> r.json.contains("\"ticket\""))
                .map(r -> r.json.replaceAll(".*\"from_state\":\"(\\w+)\",\"to_state\":\"(\\w+)\".*\"action\":\"(\\w+)\".*", "$1->$2 $3"))
                .toList();
    }

    private static List<String> ticketIds(KeyedTwoInputStreamOperatorTestHarness<String, DiskWindow, PeerVerdict, OutputRecord> h) {
        return healthRecords(h).stream().filter(r -> r.json.contains("\"ticket_id\""))
                .map(r -> r.json.replaceAll(".*\"ticket_id\":\"(\\w+)\".*", "$1")).toList();
    }

    private static KeyedTwoInputStreamOperatorTestHarness<String, DiskWindow, PeerVerdict, OutputRecord> harness() throws Exception {
        return new KeyedTwoInputStreamOperatorTestHarness<>(new KeyedCoProcessOperator<>(new DetectAnomalies(FORGET_AFTER_MS, DiskHealth.DEFAULT_RECOVERY.toNanos())),
                DiskWindow::key, PeerVerdict::key, Types.STRING);
    }

    private static DiskWindow quietWindow(long startNs) {
        DiskWindow w = dustyWindow(startNs);
        w.iostat.counters.readTimeMs = 40 * 5;
        w.iostat.counters.weightedIoTimeMs = 200;
        w.iostat.counters.ioTimeMs = 200;
        w.ops.clear();
        w.op("R").device.add(5_000, 40);
        return w;
    }

    private static PeerVerdict verdict(String effect, long hourStartNs) {
        PeerVerdict v = new PeerVerdict();
        v.host = "web-17";
        v.disk = "sdb";
        v.hourStartNs = hourStartNs;
        v.hourEndNs = hourStartNs + 3_600_000_000_000L;
        v.effect = effect;
        v.reason = "sdb is 2.00x slower than its 11 peers";
        v.anomalyId = effect.equals("NONE") ? null : "a1";
        v.news = !effect.equals("NONE");
        return v;
    }

    @Test
    void aDriveSlowerThanItsPeersStaysSuspectThroughQuietWindowsUntilTheyAcquitIt() throws Exception {
        KeyedTwoInputStreamOperatorTestHarness<String, DiskWindow, PeerVerdict, OutputRecord> harness = harness();
        harness.open();
        harness.processElement2(new StreamRecord<>(verdict("SUSPECT", WINDOW_START_NS), 0L));
        assertEquals(java.util.List.of("healthy->suspect"), transitions(harness));
        harness.getOutput().clear();
        long tenMinutesOfWindows = 60;
        for (int i = 1; i <= tenMinutesOfWindows; i++) {
            harness.processElement1(new StreamRecord<>(quietWindow(WINDOW_START_NS + i * TEN_SECONDS_NS), 0L));
        }
        assertEquals(java.util.List.of(), transitions(harness), "quiet windows do not acquit a drive its peers outpace");
        harness.processElement2(new StreamRecord<>(verdict("NONE", WINDOW_START_NS + 3_600_000_000_000L), 0L));
        harness.processElement1(new StreamRecord<>(quietWindow(WINDOW_START_NS + 7_300_000_000_000L), 0L));
        assertEquals(java.util.List.of("suspect->healthy"), transitions(harness));
        harness.close();
    }

    private static java.util.List<String> transitions(KeyedTwoInputStreamOperatorTestHarness<String, DiskWindow, PeerVerdict, OutputRecord> h) {
        return h.extractOutputValues().stream().filter(r -> r.schema.equals("io.health.v1"))
                .map(r -> r.json.replaceAll(".*\"from_state\":\"(\\w+)\",\"to_state\":\"(\\w+)\".*", "$1->$2")).toList();
    }
}
