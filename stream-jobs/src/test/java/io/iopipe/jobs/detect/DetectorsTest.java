package io.iopipe.jobs.detect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The detectors on disks other than the seeds': other speeds, classes and sizes. They
 * reason from physics and the disk's own history, so the verdicts carry over.
 */
class DetectorsTest {
    static final double REVOLUTION_15K_MS = 4.0;
    static final double REVOLUTION_5400_MS = 11.11;
    static final double REVOLUTION_7200_MS = 8.33;
    static final long BURST_START_NS = SerialDisk.WINDOW_START_NS + 4_000_000_000L;

    private final Random random = new Random(7);

    private double uniform(double lo, double hi) {
        return lo + random.nextDouble() * (hi - lo);
    }

    /** A 15k rpm disk's service time, 0.8-1.4 ms, one read in ten retried a revolution later. */
    private double retriedOneInTenOn15k() {
        double ms = uniform(0.8, 1.4);
        return random.nextDouble() < 0.1 ? ms + REVOLUTION_15K_MS : ms;
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
        DiskWindow w = new SerialDisk("sde", true).closedLoop(1, "R", 8192, this::retriedOneInTenOn15k).window();
        List<OutputRecord> out = DiskDetector.onWindow(w, new DiskHistory());
        assertEquals(List.of("bimodal_retries warning", "health healthy -> suspect"), out.stream().map(DetectorsTest::verdict).toList());
        JsonNode anomaly = Json.parseObject(out.get(0).json);
        JsonNode evidence = anomaly.get("evidence");
        assertEquals(evidence, Json.parseObject(anomaly.get("evidence_json").asText()), "the text is the same evidence");
        assertEquals(REVOLUTION_15K_MS, evidence.get("gap_ms").asDouble(), 0.3);
        assertTrue(evidence.get("whole_revolutions").toString().contains("{\"rpm\":15000,\"revolutions\":1"), evidence.toString());
        evidence.get("modes").forEach(mode -> assertEquals(1.0, mode.get("dispatch_depth").asDouble(), "retries strike at any depth, here 1"));
    }

    @Test
    void aDiskThatReportsItsRpmHasItsRetriesCountedInItsOwnRevolutions() throws Exception {
        DiskWindow w = new SerialDisk("sdr", true).closedLoop(1, "R", 8192, this::retriedOneInTenOn15k).window();
        w.iostat.rpm = 15_000;
        List<OutputRecord> out = DiskDetector.onWindow(w, new DiskHistory());
        assertEquals(List.of("bimodal_retries warning", "health healthy -> suspect"), out.stream().map(DetectorsTest::verdict).toList());
        JsonNode evidence = Json.parseObject(out.get(0).json).get("evidence");
        assertEquals(15_000, evidence.get("rpm").asLong());
        assertEquals(1, evidence.get("whole_revolutions").size(), "its own rate, not every common one: " + evidence);
        assertEquals(1, evidence.get("whole_revolutions").get(0).get("revolutions").asLong());
    }

    @Test
    void aSlowerModeNoWholeNumberOfItsOwnRevolutionsLaterIsNotRetries() throws Exception {
        // The 15k disk's modes, 4 ms apart, on a disk that says it spins at 7200 rpm: half
        // of its 8.33 ms revolution, which no retry waits. Unsaid, the rate could be 15k.
        DiskWindow w = new SerialDisk("sds", true).closedLoop(1, "R", 8192, this::retriedOneInTenOn15k).window();
        w.iostat.rpm = 7_200;
        assertEquals(List.of(), verdicts(w, new DiskHistory()));
    }

    @Test
    void aFlashBurstQueuedDeepInAnOtherwiseIdleWindowIsNotAFailingDisk() throws Exception {
        // 125 reads at once on flash serving 8 at a time, 8 ms each: the last waits 125 ms
        // in the device's queue, the median 62 ms; then the window idles. Its aqu-sz is
        // under 1, the queue the reads met 63.
        SerialDisk disk = new SerialDisk("nvme3n1", false, 8);
        for (int i = 0; i < 125; i++) {
            disk.submit("R", 16384, SerialDisk.WINDOW_START_NS + SerialDisk.MS_NS, 8);
        }
        DiskWindow w = disk.window();
        assertTrue(w.depth() < 1 && w.busyDepth() > 50, w.depth() + " " + w.busyDepth());
        assertTrue(w.deviceAllOps().quantileUs(0.5) > 50_000, "slower than any healthy flash's service at a shallow queue");
        assertTrue(verdicts(w, new DiskHistory()).stream().noneMatch(v -> v.startsWith("failing_disk")), verdicts(w, new DiskHistory()).toString());
    }

    @Test
    void aReportedRateMayBeItsClasssSoLaterRevolutionsMayDriftFromIt() {
        // A 5400-class drive spinning at 5900 rpm, retrying twice: 1.83 of the revolutions it reports.
        double twoTrueRevolutionsMs = 2 * 60_000.0 / 5900;
        assertEquals(0, BimodalRetries.wholeRevolutions(twoTrueRevolutionsMs, 5400), "not within a common rate's tolerance");
        assertEquals(2, BimodalRetries.wholeRevolutionsOfReportedRate(twoTrueRevolutionsMs, 5400));
        assertEquals(0, BimodalRetries.wholeRevolutionsOfReportedRate(1.5 * 60_000.0 / 5400, 5400), "halfway is no revolution");
        assertEquals(0, BimodalRetries.wholeRevolutionsOfReportedRate(0.5 * 60_000.0 / 7200, 7200), "a retry waits a whole one");
    }

    @Test
    void theEvidenceOfAnOpListsOnlyItsOwnWorstEvents() throws Exception {
        DiskWindow w = new SerialDisk("sdo", true).closedLoop(1, "R", 8192, this::retriedOneInTenOn15k).window();
        io.iopipe.jobs.records.IoEvent slowWrite = new io.iopipe.jobs.records.IoEvent();
        slowWrite.op = "W";
        slowWrite.issueNs = BURST_START_NS;
        slowWrite.completeNs = BURST_START_NS + 80 * SerialDisk.MS_NS;
        slowWrite.sampleWeight = 1;
        w.events.add(slowWrite);
        JsonNode evidence = Json.parseObject(DiskDetector.onWindow(w, new DiskHistory()).get(0).json).get("evidence");
        assertEquals("R", evidence.get("op").asText());
        evidence.get("worst_events").forEach(e -> assertEquals("R", e.get("op").asText(), evidence.toString()));
    }

    @Test
    void aWindowSpanningAChangeOfRegimeIsNotRetries() throws Exception {
        // Five seconds of 4 ms reads, then five of 150 ms ones (a disk turning slow), in
        // the kernel's one-second histograms; the same mix interleaved second by second is retries.
        long[] fast = buckets(Log2Histogram.bucketOf(4_000), 95);
        long[] slow = buckets(Log2Histogram.bucketOf(150_000), 6);
        assertEquals(List.of(), verdicts(windowOfIntervals(List.of(fast, fast, fast, fast, fast, slow, slow, slow, slow, slow)),
                new DiskHistory()));
        long[] mixed = buckets(Log2Histogram.bucketOf(150_000), 3);
        mixed[Log2Histogram.bucketOf(4_000)] = 95;
        List<String> interleaved = verdicts(windowOfIntervals(java.util.Collections.nCopies(10, mixed)), new DiskHistory());
        assertTrue(interleaved.contains("bimodal_retries warning"), interleaved.toString());
    }

    @Test
    void aSlowerModeTheQueueReachesIsWaitingNotRetries() throws Exception {
        // 97% at 8-16 ms and 3% at 32-64 ms, interleaved second by second: retries at no
        // depth; at 16 in flight on average, waiting behind the others reaches that far.
        long[] mixed = buckets(Log2Histogram.bucketOf(40_000), 3);
        mixed[Log2Histogram.bucketOf(10_000)] = 85;
        DiskWindow w = windowOfIntervals(java.util.Collections.nCopies(10, mixed));
        assertTrue(verdicts(w, new DiskHistory()).contains("bimodal_retries warning"));
        w.iostat.counters.weightedIoTimeMs = 16 * w.iostat.intervalNs / 1_000_000;
        assertEquals(16, w.depth(), 1e-9);
        assertEquals(List.of(), verdicts(w, new DiskHistory()));
    }

    @Test
    void aSlowerModeABurstsQueueHeldIsWaitingNotRetries() throws Exception {
        // 50 reads a second at 2-4 ms and 3 at 128-256 ms, and no event to say at what depth
        // they were dispatched: retries, if the disk was busy as long as their device times
        // add up to; waiting, if it was busy only for the fast reads and 10 ms of service
        // for each slow one, idle most of the time: their device times overlapped, as a
        // burst's do behind one another.
        long[] mixed = buckets(Log2Histogram.bucketOf(150_000), 3);
        mixed[Log2Histogram.bucketOf(3_000)] = 50;
        DiskWindow w = windowOfIntervals(java.util.Collections.nCopies(10, mixed));
        assertTrue(verdicts(w, new DiskHistory()).contains("bimodal_retries warning"));
        w.iostat.counters.ioTimeMs = 10 * (50 * 3 + 3 * 10);
        assertEquals(List.of(), verdicts(w, new DiskHistory()));
        // A disk's first window: its class known from its first sample, no interval of
        // diskstats yet to weigh the device times against, so waiting is not ruled out.
        DiskWindow first = windowOfIntervals(java.util.Collections.nCopies(10, mixed));
        first.iostat.samples = 0;
        first.iostat.classKnown = true;
        assertTrue(first.rotational() && !first.hasIostat());
        assertEquals(List.of(), verdicts(first, new DiskHistory()));
    }

    @Test
    void retriesUnderASteadyQueueAreRetriesEvenWhereTheDeviceQueueHeldTimeForThem() throws Exception {
        // S2's iostat with NCQ: 330 reads a second, one in eleven a revolution slower, %util
        // 97 and aqu-sz 1.64, no event to tell depths: the device queue held more waiting
        // than the retries took, but a queue fed steadily at 97% holds that much.
        long[] mixed = buckets(Log2Histogram.bucketOf(10_000), 30);
        mixed[Log2Histogram.bucketOf(3_000)] = 300;
        DiskWindow w = windowOfIntervals(java.util.Collections.nCopies(10, mixed));
        w.iostat.counters.ioTimeMs = 9_700;
        w.iostat.counters.weightedIoTimeMs = 16_400;
        long waitingUs = w.deviceAllOps().sumUs - w.iostat.counters.ioTimeMs * 1000L;
        assertTrue(waitingUs > 10 * 30 * (8_192 - 2_896), "the device queue held time enough for the slower mode: " + waitingUs);
        List<String> found = verdicts(w, new DiskHistory());
        assertTrue(found.contains("bimodal_retries warning"), found.toString());
    }

    @Test
    void aSlowerModeBunchedInAFewSecondsIsABurstsQueueNotRetries() throws Exception {
        // 50 reads a second at 4-8 ms and 12 in ten seconds at 128-256 ms, no event to tell
        // depths and a mean queue no deeper than steady arrivals make. Spread over the
        // seconds as a binomial draw spreads them: retries. Six in each of two seconds:
        // the reads behind two bursts (a fsync storm's writes, in no read histogram).
        int fast = Log2Histogram.bucketOf(6_000);
        int slow = Log2Histogram.bucketOf(150_000);
        List<String> spread = verdicts(windowOfIntervals(seconds(fast, slow, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1)), new DiskHistory());
        assertTrue(spread.contains("bimodal_retries warning"), spread.toString());
        DiskWindow bunched = windowOfIntervals(seconds(fast, slow, 0, 0, 6, 0, 0, 0, 0, 6, 0, 0));
        assertEquals(bunched.queueSize(), bunched.utilFraction(), 1e-9);
        assertEquals(List.of(), verdicts(bunched, new DiskHistory()));
    }

    /** One-second histograms of reads: 50 in bucket `fast`, and `slowCounts` of each second in bucket `slow`. */
    private static List<long[]> seconds(int fast, int slow, long... slowCounts) {
        return java.util.Arrays.stream(slowCounts).mapToObj(n -> {
            long[] b = buckets(slow, n);
            b[fast] = 50;
            return b;
        }).toList();
    }

    private static long[] buckets(int bucket, long count) {
        long[] b = new long[bucket + 1];
        b[bucket] = count;
        return b;
    }

    /**
     * A window of one-second histograms of reads served one at a time, each at the middle
     * of its bucket; the disk busy as long as their device times add up to.
     */
    private static DiskWindow windowOfIntervals(List<long[]> intervals) {
        DiskWindow w = new SerialDisk("sdh", true).window();
        OpLatency reads = w.op("R");
        long busyUs = 0;
        for (long[] b : intervals) {
            long count = java.util.Arrays.stream(b).sum();
            long sumUs = 0;
            for (int i = 0; i < b.length; i++) {
                sumUs += b[i] * (Log2Histogram.lowerEdgeUs(i) * 3 / 2);
            }
            long maxUs = 1L << (b.length - 1);
            reads.addDeviceInterval(b, count, sumUs, maxUs);
            busyUs += sumUs;
        }
        w.iostat.counters.ioTimeMs = busyUs / 1000;
        w.iostat.counters.weightedIoTimeMs = busyUs / 1000;
        return w;
    }

    @Test
    void readsQueuedBehindBurstsOnAnHddAreWaitingNotRetries() throws Exception {
        // One reader at a time served in 0.6-1.2 ms, and every 0.4 s a burst of 12 reads of
        // the same size dispatched together, each a 5-9 ms media access: those behind the
        // first wait in the drive's queue, 10-100 ms, in clusters. Among the I/Os dispatched
        // as shallow as the reader's, that mode all but vanishes: it is one of depth.
        SerialDisk disk = new SerialDisk("sdm", true);
        long nextBurstNs = SerialDisk.WINDOW_START_NS + 200 * SerialDisk.MS_NS;
        long readerAtNs = SerialDisk.WINDOW_START_NS;
        while (readerAtNs < SerialDisk.WINDOW_START_NS + SerialDisk.WINDOW_NS) {
            if (nextBurstNs <= readerAtNs) {
                for (int i = 0; i < 12; i++) {
                    disk.submit("R", 4096, readerAtNs, uniform(5, 9));
                }
                nextBurstNs += 400 * SerialDisk.MS_NS;
                continue;
            }
            readerAtNs = disk.submit("R", 4096, readerAtNs, random.nextDouble() < 0.5 ? uniform(0.6, 0.8) : uniform(1.0, 1.2)).completeNs;
        }
        DiskWindow w = disk.window();
        assertTrue(w.events.stream().filter(e -> e.deviceNs() > 10 * SerialDisk.MS_NS).count() > 0.03 * w.events.size());
        assertEquals(List.of(), verdicts(w, new DiskHistory()).stream().filter(v -> !v.equals("queue_ramp info")).toList());
    }

    @Test
    void retriesUnderAQueueAreStillRetries() throws Exception {
        // Reads arriving at random, one every 6 ms on average, on a 15k rpm disk that
        // retries one in ten a revolution later: reads that arrive meanwhile wait behind the
        // retry, slow and deeper, but the retried reads themselves were dispatched at the
        // disk's usual depth, so the slower mode stays among those.
        SerialDisk disk = new SerialDisk("sdp", true);
        long atNs = SerialDisk.WINDOW_START_NS;
        while (atNs < SerialDisk.WINDOW_START_NS + SerialDisk.WINDOW_NS) {
            disk.submit("R", 8192, atNs, retriedOneInTenOn15k());
            atNs += (long) (-Math.log(1 - random.nextDouble()) * 6 * SerialDisk.MS_NS);
        }
        DiskWindow w = disk.window();
        assertTrue(w.events.stream().filter(e -> e.inflight > 1).count() > 0.05 * w.events.size(), "a queue forms");
        List<String> found = verdicts(w, new DiskHistory());
        assertTrue(found.contains("bimodal_retries warning"), found.toString());
    }

    @Test
    void aSlowerModeOfLargerIosIsAMixOfSizesNotRetries() throws Exception {
        // One reader: 4 KiB reads in about a millisecond, and one in ten of 1 MiB, 4 ms more
        // to transfer: the gap of one 15k rpm revolution, but every slow read is a large one.
        SerialDisk disk = new SerialDisk("sdn", true);
        long atNs = SerialDisk.WINDOW_START_NS;
        while (atNs < SerialDisk.WINDOW_START_NS + SerialDisk.WINDOW_NS) {
            boolean large = random.nextDouble() < 0.1;
            atNs = disk.submit("R", large ? 1 << 20 : 4096, atNs, uniform(0.8, 1.4) + (large ? REVOLUTION_15K_MS : 0)).completeNs;
        }
        assertEquals(List.of(), verdicts(disk.window(), new DiskHistory()));
    }

    @Test
    void flashIsNotJudgedForRetries() throws Exception {
        // Writes taken by the drive's cache in 70 us, a quarter of them waiting 1 ms for a
        // program: two modes, no revolution, nothing a flash retry would show.
        DiskWindow w = new SerialDisk("nvme2n1", false).closedLoop(1, "W", 4096,
                () -> random.nextDouble() < 0.25 ? uniform(1.0, 1.1) : uniform(0.06, 0.08)).window();
        assertEquals(List.of(), verdicts(w, new DiskHistory()));
    }

    @Test
    void nvmeWritesSubmittedInBurstsAreHealthy() throws Exception {
        // Each second 900 writes submitted within 16 ms, none waiting for another (the
        // drive's parallelism is deeper than the burst): 70 us into its cache, a quarter
        // 1 ms for a program. Two modes of service at a queue of dozens, nothing failing.
        SerialDisk disk = new SerialDisk("nvme4n1", false, 256);
        for (int second = 0; second < 10; second++) {
            long burstNs = SerialDisk.WINDOW_START_NS + second * 1_000_000_000L;
            for (int i = 0; i < 900; i++) {
                disk.submit("W", 4096, burstNs + i * 16 * SerialDisk.MS_NS / 900,
                        random.nextDouble() < 0.25 ? uniform(1.0, 1.1) : uniform(0.06, 0.08));
            }
        }
        DiskWindow w = disk.window();
        assertTrue(w.events.stream().mapToLong(e -> e.inflight).max().orElse(0) > 8);
        assertEquals(List.of(), verdicts(w, new DiskHistory()).stream().filter(v -> !v.equals("queue_ramp info")).toList());
    }

    @Test
    void doesNotTakeTrackCacheHitsForRetries() throws Exception {
        DiskWindow w = new SerialDisk("sdf", true).closedLoop(1, "R", 4096,
                () -> random.nextDouble() < 0.3 ? uniform(0.2, 0.4) : uniform(0.5, 9) + uniform(0, REVOLUTION_5400_MS)).window();
        assertEquals(List.of(), verdicts(w, new DiskHistory()));
    }

    @Test
    void trackBufferHitsBesideMissesAreNotRetries() throws Exception {
        // Most reads hit the drive's buffer in 0.5-0.9 ms (above the floor for cache hits,
        // so they make the main mode); the misses seek and then wait for their own sector,
        // spread over a revolution: a slower mode, but no copy of the main one moved by
        // whole revolutions.
        DiskWindow w = new SerialDisk("sdh", true).closedLoop(1, "R", 16384, () -> random.nextDouble() < 0.7
                ? uniform(0.5, 0.9) : uniform(0.5, 8) + uniform(0, REVOLUTION_7200_MS)).window();
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
    void aFlightRecordedBurstOfThousandsShowsItsFootAndItsTopNotEveryIo() throws Exception {
        SerialDisk disk = new SerialDisk("sdg", true);
        int ios = 4_000;
        for (int i = 0; i < ios; i++) {
            disk.submit("W", 4096, BURST_START_NS + i * 50L, 1);
        }
        Finding ramp = QueueRamp.examine(disk.window()).orElseThrow();
        assertEquals(ios, ramp.evidence().get("burst_size").asInt());
        com.fasterxml.jackson.databind.JsonNode shown = ramp.evidence().get("burst");
        assertEquals(QueueRamp.BURST_HEAD_SHOWN + QueueRamp.BURST_TAIL_SHOWN, shown.size());
        assertTrue(shown.get(shown.size() - 1).get("device_ms").asDouble() > 100 * shown.get(0).get("device_ms").asDouble(),
                "the last I/O shown is the top of the ramp");
        assertTrue(io.iopipe.jobs.records.Json.write(ramp.evidence()).length() < 16 * 1024,
                "the evidence of any burst is a few KB, far within a record's room in the sink");
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
        w.iostat.counters.writesCompleted = 0;
        w.iostat.counters.writeTimeMs = 0;
        w.iostat.counters.weightedIoTimeMs = 0;
        w.iostat.counters.ioTimeMs = 0;
        w.iostat.counters.sectorsWritten = 0;
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

    @Test
    void findsSaturationOnARampWhoseStepsStraddleWindows() throws Exception {
        // Depth 1, 4, 32, 128, 15 s each: only the first window is at depth one throughout.
        // An NVMe drive past its knee of about 8: 94 us at depth 1, about 16x at 128.
        DiskHistory h = new DiskHistory();
        List<String> found = new java.util.ArrayList<>();
        int[] steps = {1, 4, 32, 128};
        for (int window = 0; window < 6; window++) {
            int[] depthEachSecond = new int[10];
            for (int s = 0; s < 10; s++) {
                depthEachSecond[s] = steps[Math.min(steps.length - 1, (window * 10 + s) / 15)];
            }
            found.addAll(verdicts(flashRamp(depthEachSecond, window), h));
        }
        assertEquals(0.094, h.qd1LatencyUs / 1000, 0.01);
        assertEquals(List.of("saturation info", "saturation warning"), found);
    }

    /**
     * A window of an NVMe drive held at the given depth each second (closed loop): its
     * histograms count every I/O, its events are a 1-in-64 sample that knows each one's depth.
     */
    private DiskWindow flashRamp(int[] depthEachSecond, int windowIndex) {
        long startNs = SerialDisk.WINDOW_START_NS + windowIndex * SerialDisk.WINDOW_NS;
        DiskWindow w = new SerialDisk("nvme3n1", false).window(startNs);
        OpLatency op = w.op("R");
        for (int s = 0; s < depthEachSecond.length; s++) {
            int depth = depthEachSecond[s];
            double latencyMs = 0.094 * Math.max(1, depth / 8.0);
            long ios = Math.round(depth * 1000 / latencyMs);
            for (long i = 0; i < ios; i++) {
                long us = Math.round(latencyMs * 1000 * uniform(0.9, 1.1));
                op.device.add(us, 1);
                if (i % 64 == 0) {
                    io.iopipe.jobs.records.IoEvent e = new io.iopipe.jobs.records.IoEvent();
                    e.op = "R";
                    e.bytes = 4096;
                    e.issueNs = startNs + s * 1_000_000_000L + i * 1_000_000_000L / ios;
                    e.completeNs = e.issueNs + us * 1000;
                    e.inflight = depth;
                    e.sampleReason = "uniform";
                    e.sampleWeight = 64;
                    w.events.add(e);
                }
            }
            w.iostat.counters.readsCompleted += ios;
            w.iostat.counters.sectorsRead += ios * 8;
            w.iostat.counters.readTimeMs += Math.round(ios * latencyMs);
            w.iostat.counters.weightedIoTimeMs += depth * 1000L;
            w.iostat.counters.ioTimeMs += 1000;
        }
        return w;
    }

    /** A window of an SSD with `depth` I/Os in flight throughout, each taking about latencyMs. */
    private DiskWindow flashAtDepth(int depth, double latencyMs, int windowIndex) {
        DiskWindow w = new SerialDisk("sdj", false).window(SerialDisk.WINDOW_START_NS + windowIndex * SerialDisk.WINDOW_NS);
        long ios = (long) (depth * 10_000 / latencyMs);
        OpLatency op = w.op("R");
        for (int i = 0; i < 2000; i++) {
            op.device.add((long) (latencyMs * 1000 * uniform(0.9, 1.1)), ios / 2000);
        }
        w.iostat.counters.readsCompleted = op.device.count;
        w.iostat.counters.sectorsRead = op.device.count * 8;
        w.iostat.counters.readTimeMs = op.device.sumUs / 1000;
        w.iostat.counters.ioTimeMs = 10_000;
        w.iostat.counters.weightedIoTimeMs = (long) depth * 10_000;
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
    void aRestoredJobReachesTheSameAnomaliesWhicheverWindowItsEpisodeBeginsAtOnTheSecondReading() throws Exception {
        // Two readings from the checkpoint after two healthy windows: in the first, window 2 was
        // closed on the disk's silence and held little; in the second it came whole, already dusty.
        Map<String, String> first = anomalyIdsOfADustyDisk(3);
        Map<String, String> second = anomalyIdsOfADustyDisk(2);
        assertTrue(first.containsKey("failing_disk critical"), first::toString);
        assertEquals(first, second);
    }

    /** The anomalies' ids by kind and severity of a disk healthy for windows 0 to dustyFrom - 1, then dusty up to 9. */
    private Map<String, String> anomalyIdsOfADustyDisk(int dustyFrom) throws Exception {
        DiskHistory h = new DiskHistory();
        Map<String, String> ids = new TreeMap<>();
        for (int i = 0; i < 10; i++) {
            SerialDisk disk = new SerialDisk("sdk", true);
            SerialDisk read = i < dustyFrom ? disk.closedLoop(1, "R", 4096, () -> uniform(2, 12))
                    : disk.closedLoop(2, "R", 65536, () -> uniform(150, 300));
            DiskWindow w = read.window();  // the disk's first window, moved to the i-th
            w.startNs += i * SerialDisk.WINDOW_NS;
            w.endNs += i * SerialDisk.WINDOW_NS;
            for (OutputRecord r : DiskDetector.onWindow(w, h)) {
                if (r.schema.equals(DiskDetector.ANOMALY_SCHEMA)) {
                    ids.merge(verdict(r), Json.parseObject(r.json).get("id").asText(), (a, b) -> a + " and " + b);
                }
            }
        }
        return ids;
    }

    @Test
    void aShorterRecoveryTimeStepsHealthDownSooner() throws Exception {
        long minute = java.time.Duration.ofMinutes(1).toNanos();
        DiskHistory h = new DiskHistory();
        SerialDisk dusty = new SerialDisk("sdk", true);
        DiskDetector.onWindow(dusty.closedLoop(2, "R", 65536, () -> uniform(150, 300)).window(), h, minute);
        StringBuilder transitions = new StringBuilder();
        for (int i = 1; i <= 13; i++) {
            DiskWindow healthy = new SerialDisk("sdk", true).closedLoop(1, "R", 4096, () -> uniform(2, 12))
                    .window(SerialDisk.WINDOW_START_NS + i * SerialDisk.WINDOW_NS);
            for (OutputRecord r : DiskDetector.onWindow(healthy, h, minute)) {
                transitions.append(i).append(": ").append(verdict(r)).append('\n');
            }
        }
        assertEquals("6: health failing -> suspect\n12: health suspect -> healthy\n", transitions.toString());
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
