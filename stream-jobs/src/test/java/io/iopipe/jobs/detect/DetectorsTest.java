package io.iopipe.jobs.detect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The detectors on disks other than the seeds': other speeds, classes and sizes. They
 * reason from physics and the disk's own history, so the verdicts carry over.
 */
class DetectorsTest {
    static final double REVOLUTION_15K_MS = 4.0;
    static final double REVOLUTION_5400_MS = 11.11;
    static final long BURST_START_NS = SerialDisk.WINDOW_START_NS + 4_000_000_000L;

    private final Random random = new Random(7);

    private double uniform(double lo, double hi) {
        return lo + random.nextDouble() * (hi - lo);
    }

    private static List<String> verdicts(DiskWindow w, DiskHistory h) throws Exception {
        return DiskDetector.onWindow(w, h).stream().map(DetectorsTest::verdict).toList();
    }

    private static String verdict(OutputRecord r) {
        try {
            JsonNode n = Json.parseObject(r.json);
            return r.schema.equals(DiskDetector.ANOMALY_SCHEMA)
                    ? n.get("kind").asText() + " " + n.get("severity").asText()
                    : "health " + n.get("from_state").asText() + " -> " + n.get("to_state").asText();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void flagsA5400RpmDiskTakingHundredsOfMillisecondsAtAShallowQueue() throws Exception {
        DiskWindow w = new SerialDisk("sdc", true)
                .closedLoop(2, "R", 65536, () -> uniform(120, 400)).window();
        assertEquals(List.of("failing_disk critical", "health healthy -> failing"), verdicts(w, new DiskHistory()));
    }

    @Test
    void raisesNothingForA15kRpmDiskAtQueueDepthOneAndFullUtilisation() throws Exception {
        DiskWindow w = new SerialDisk("sdd", true)
                .closedLoop(1, "R", 4096, () -> uniform(0.3, 3.5) + uniform(0, REVOLUTION_15K_MS)).window();
        assertTrue(w.utilFraction() > 0.99);
        assertEquals(List.of(), verdicts(w, new DiskHistory()));
    }

    @Test
    void findsRetriesOneRevolutionApartOnA15kRpmDisk() throws Exception {
        DiskWindow w = new SerialDisk("sde", true).closedLoop(1, "R", 8192, () -> {
            double ms = uniform(0.8, 1.4);
            return random.nextDouble() < 0.1 ? ms + REVOLUTION_15K_MS : ms;
        }).window();
        List<OutputRecord> out = DiskDetector.onWindow(w, new DiskHistory());
        assertEquals(List.of("bimodal_retries warning", "health healthy -> suspect"), out.stream().map(DetectorsTest::verdict).toList());
        JsonNode anomaly = Json.parseObject(out.get(0).json);
        JsonNode evidence = anomaly.get("evidence");
        assertEquals(evidence, Json.parseObject(anomaly.get("evidence_json").asText()), "the text is the same evidence");
        assertEquals(REVOLUTION_15K_MS, evidence.get("gap_ms").asDouble(), 0.3);
        assertTrue(evidence.get("whole_revolutions").toString().contains("{\"rpm\":15000,\"revolutions\":1"), evidence.toString());
    }

    @Test
    void aWindowSpanningAChangeOfRegimeIsNotRetries() throws Exception {
        // Five seconds of 4 ms reads, then five of 150 ms ones (a disk turning slow), in
        // the kernel's one-second histograms; the same mix interleaved second by second is retries.
        long[] fast = buckets(Log2Histogram.bucketOf(4_000), 250);
        long[] slow = buckets(Log2Histogram.bucketOf(150_000), 7);
        assertEquals(List.of(), verdicts(windowOfIntervals(List.of(fast, fast, fast, fast, fast, slow, slow, slow, slow, slow)),
                new DiskHistory()));
        long[] mixed = buckets(Log2Histogram.bucketOf(150_000), 7);
        mixed[Log2Histogram.bucketOf(4_000)] = 250;
        List<String> interleaved = verdicts(windowOfIntervals(java.util.Collections.nCopies(10, mixed)), new DiskHistory());
        assertTrue(interleaved.contains("bimodal_retries warning"), interleaved.toString());
    }

    @Test
    void aSlowerModeTheQueueReachesIsWaitingNotRetries() throws Exception {
        // 97% at 8-16 ms and 3% at 32-64 ms, interleaved second by second: retries at no
        // depth; at 16 in flight on average, waiting behind the others reaches that far.
        long[] mixed = buckets(Log2Histogram.bucketOf(40_000), 7);
        mixed[Log2Histogram.bucketOf(10_000)] = 250;
        DiskWindow w = windowOfIntervals(java.util.Collections.nCopies(10, mixed));
        assertTrue(verdicts(w, new DiskHistory()).contains("bimodal_retries warning"));
        w.iostat.weightedIoTimeMs = 16 * w.iostat.intervalNs / 1_000_000;
        assertEquals(16, w.depth(), 1e-9);
        assertEquals(List.of(), verdicts(w, new DiskHistory()));
    }

    private static long[] buckets(int bucket, long count) {
        long[] b = new long[bucket + 1];
        b[bucket] = count;
        return b;
    }

    private static DiskWindow windowOfIntervals(List<long[]> intervals) {
        DiskWindow w = new SerialDisk("sdh", false).window();
        OpLatency reads = w.op("R");
        for (long[] b : intervals) {
            long count = java.util.Arrays.stream(b).sum();
            long maxUs = 1L << (b.length - 1);
            reads.addDeviceInterval(b, count, count * maxUs, maxUs);
        }
        return w;
    }

    @Test
    void doesNotTakeTrackCacheHitsForRetries() throws Exception {
        DiskWindow w = new SerialDisk("sdf", true).closedLoop(1, "R", 4096,
                () -> random.nextDouble() < 0.3 ? uniform(0.2, 0.4) : uniform(0.5, 9) + uniform(0, REVOLUTION_5400_MS)).window();
        assertEquals(List.of(), verdicts(w, new DiskHistory()));
    }

    @Test
    void aVirtualDiskThatSaysItRotatesIsNotRetryingWhenMostReadsHitTheHostsCache() throws Exception {
        DiskWindow w = new SerialDisk("vda", true).closedLoop(1, "R", 4096,
                () -> random.nextDouble() < 0.97 ? uniform(0.06, 0.12) : uniform(10, 13)).window();
        assertEquals(List.of(), verdicts(w, new DiskHistory()));
    }

    @Test
    void explainsAFlushBurstOnANearIdleDiskAsAQueueRampNotAFailure() throws Exception {
        SerialDisk disk = new SerialDisk("sdg", true);
        for (int i = 0; i < 8; i++) {
            disk.submit("W", 4096, BURST_START_NS + i * 100_000L, uniform(10, 14));
        }
        disk.submit("R", 4096, BURST_START_NS + 3_000_000_000L, 6);
        assertEquals(List.of("queue_ramp info"), verdicts(disk.window(), new DiskHistory()));
    }

    @Test
    void aBurstWhoseDiskstatsFellInTheNextWindowIsNoFailure() throws Exception {
        // 11 writes at once, served in turn in 19 ms each: device times ramp to 209 ms. The
        // agent's diskstats reading fell inside the burst, so this window's diskstats hold
        // none of it: nothing says the queue was shallow, nor what the service time was.
        SerialDisk disk = new SerialDisk("sdi", true);
        for (int i = 0; i < 11; i++) {
            disk.submit("W", 8192, BURST_START_NS + i * 100_000L, 19);
        }
        DiskWindow w = disk.window();
        w.iostat.writesCompleted = 0;
        w.iostat.writeTimeMs = 0;
        w.iostat.weightedIoTimeMs = 0;
        w.iostat.ioTimeMs = 0;
        w.iostat.sectorsWritten = 0;
        assertTrue(w.deviceAllOps().quantileUs(0.5) > FailingDisk.ROTATIONAL_CEILING_MS * 1000);
        List<String> found = verdicts(w, new DiskHistory());
        assertTrue(found.stream().noneMatch(v -> v.startsWith("failing_disk")), found.toString());
        assertTrue(!FailingDisk.teachesBaseline(w), "a window without a service time teaches the baseline nothing");
    }

    @Test
    void flashDispatchedTogetherAndServedInParallelIsNoRamp() throws Exception {
        DiskWindow w = new SerialDisk("nvme1n1", false).window();
        for (int i = 0; i < 32; i++) {
            io.iopipe.jobs.records.IoEvent e = new io.iopipe.jobs.records.IoEvent();
            e.host = "web-17";
            e.disk = "nvme1n1";
            e.op = "R";
            e.issueNs = BURST_START_NS + i * 1_000L;
            e.completeNs = e.issueNs + (long) (uniform(0.08, 0.12) * SerialDisk.MS_NS);
            e.inflight = i + 1;
            e.sampleWeight = 1;
            w.events.add(e);
        }
        w.sortEvents();
        assertTrue(QueueRamp.examine(w).isEmpty());
    }

    @Test
    void findsAFlashDeviceSlowerThanFlashCanBe() throws Exception {
        DiskWindow w = new SerialDisk("sdh", false).closedLoop(1, "R", 4096, () -> uniform(60, 120)).window();
        assertEquals(List.of("failing_disk critical", "health healthy -> failing"), verdicts(w, new DiskHistory()));
    }

    @Test
    void ioErrorsMakeADiskSuspect() throws Exception {
        SerialDisk disk = new SerialDisk("sdi", true);
        disk.closedLoop(1, "R", 4096, () -> uniform(2, 12));
        DiskWindow w = disk.window();
        w.events.get(10).error = -5;
        w.op("R").errors = 1;
        assertEquals(List.of("failing_disk warning", "health healthy -> suspect"), verdicts(w, new DiskHistory()));
    }

    @Test
    void learnsEachDisksDepthOneLatencyAndFlagsSaturationPastItsKnee() throws Exception {
        DiskHistory h = new DiskHistory();
        for (int i = 0; i < 3; i++) {
            assertEquals(List.of(), verdicts(flashAtDepth(1, 0.09, i), h));
        }
        assertEquals(0.09, h.qd1LatencyUs / 1000, 0.01);
        assertEquals(List.of(), verdicts(flashAtDepth(8, 0.16, 3), h), "parallel capacity absorbs depth 8");
        assertEquals(List.of("saturation info"), verdicts(flashAtDepth(32, 0.4, 4), h));
        assertEquals(List.of("saturation warning"), verdicts(flashAtDepth(128, 1.5, 5), h));
        assertEquals(List.of(), verdicts(flashAtDepth(128, 1.6, 6), h), "one anomaly per level, not per window");
    }

    /** A window of an SSD with `depth` I/Os in flight throughout, each taking about latencyMs. */
    private DiskWindow flashAtDepth(int depth, double latencyMs, int windowIndex) {
        DiskWindow w = new SerialDisk("sdj", false).window(SerialDisk.WINDOW_START_NS + windowIndex * SerialDisk.WINDOW_NS);
        long ios = (long) (depth * 10_000 / latencyMs);
        OpLatency op = w.op("R");
        for (int i = 0; i < 2000; i++) {
            op.device.add((long) (latencyMs * 1000 * uniform(0.9, 1.1)), ios / 2000);
        }
        w.iostat.readsCompleted = op.device.count;
        w.iostat.sectorsRead = op.device.count * 8;
        w.iostat.readTimeMs = op.device.sumUs / 1000;
        w.iostat.ioTimeMs = 10_000;
        w.iostat.weightedIoTimeMs = (long) depth * 10_000;
        return w;
    }

    @Test
    void aFailingDiskRecoversStepByStepAndItsTicketIsResolved() throws Exception {
        DiskHistory h = new DiskHistory();
        SerialDisk dusty = new SerialDisk("sdk", true);
        List<OutputRecord> first = DiskDetector.onWindow(dusty.closedLoop(2, "R", 65536, () -> uniform(150, 300)).window(), h);
        String ticket = Json.parseObject(first.get(1).json).get("ticket").get("ticket_id").asText();
        StringBuilder transitions = new StringBuilder();
        for (int i = 1; i <= 61; i++) {
            DiskWindow healthy = new SerialDisk("sdk", true).closedLoop(1, "R", 4096, () -> uniform(2, 12))
                    .window(SerialDisk.WINDOW_START_NS + i * SerialDisk.WINDOW_NS);
            for (OutputRecord r : DiskDetector.onWindow(healthy, h)) {
                JsonNode n = Json.parseObject(r.json);
                transitions.append(i).append(": ").append(verdict(r))
                        .append(n.has("ticket") ? " " + n.get("ticket").get("action").asText() + " " + n.get("ticket").get("ticket_id").asText() : "")
                        .append('\n');
            }
        }
        assertEquals("30: health failing -> suspect\n60: health suspect -> healthy resolve " + ticket + "\n", transitions.toString());
    }

    @Test
    void theSameWindowsGiveTheSameIds() throws Exception {
        List<String> runs = new java.util.ArrayList<>();
        for (int run = 0; run < 2; run++) {
            Random seeded = new Random(3);
            DiskWindow w = new SerialDisk("sdl", true)
                    .closedLoop(2, "R", 65536, () -> 150 + seeded.nextDouble() * 200).window();
            runs.add(DiskDetector.onWindow(w, new DiskHistory()).stream().map(r -> r.json).toList().toString());
        }
        assertEquals(runs.get(0), runs.get(1));
    }
}
