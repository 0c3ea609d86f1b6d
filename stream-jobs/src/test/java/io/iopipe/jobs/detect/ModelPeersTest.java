package io.iopipe.jobs.detect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ModelPeersTest {
    static final long START_NS = 1_763_683_200_000_000_000L;
    static final long WINDOW_NS = 10_000_000_000L;

    /**
     * Flash drives of one model spread over many hosts, each window sending a few sampled
     * small reads dispatched at a shallow queue: its own service time (70-110 µs, lognormal
     * per read) times the drive's slowdown. The model's state is kept as the job keeps it.
     */
    static final class Fleet {
        final Random random = new Random(11);
        final Map<String, Double> serviceUs = new HashMap<>();
        final Map<String, Double> slowdown = new HashMap<>();
        final Map<String, ModelPeers.Drive> drives = new HashMap<>();
        ModelPeers.Baseline baseline;
        final List<JsonNode> anomalies = new ArrayList<>();
        final Map<String, String> effect = new HashMap<>();
        int baselinesComputed;

        Fleet(int drives) {
            for (int d = 0; d < drives; d++) {
                serviceUs.put("host" + d + "/nvme0n1", 70 + 40 * random.nextDouble());
            }
        }

        void window(long startNs) throws Exception {
            for (Map.Entry<String, Double> d : serviceUs.entrySet()) {
                double[] deviceUs = new double[8];
                for (int i = 0; i < 8; i++) {
                    deviceUs[i] = d.getValue() * slowdown.getOrDefault(d.getKey(), 1.0) * Math.exp(0.3 * random.nextGaussian());
                }
                double[] weights = new double[8];
                java.util.Arrays.fill(weights, 1000);
                String[] hostDisk = d.getKey().split("/");
                ShallowReads r = ShallowReads.of(hostDisk[0], hostDisk[1], "NVMe-A 1TB", startNs, startNs + WINDOW_NS,
                        deviceUs, weights);
                ModelPeers.Drive drive = drives.computeIfAbsent(d.getKey(), k -> new ModelPeers.Drive());
                drive.add(r);
                if (baseline == null || baseline.dueFor(drive, r)) {
                    baseline = ModelPeers.Baseline.of(drives.values(), r.endNs);
                    baselinesComputed++;
                }
                ModelPeers.Judgement j = ModelPeers.judge(r, drive, baseline);
                for (OutputRecord a : j.anomaly().stream().toList()) {
                    anomalies.add(Json.parseObject(a.json));
                }
                j.verdict().ifPresent(v -> effect.put(d.getKey(), v.effect));
            }
        }

        /** A host that names `drives` drives of the model, each reading in `serviceUs`. */
        void host(String host, int drives, double serviceUs) {
            for (int d = 0; d < drives; d++) {
                this.serviceUs.put(host + "/nvme" + d + "n1", serviceUs);
            }
        }

        List<String> anomalousHosts() {
            return anomalies.stream().map(a -> a.get("host").asText()).distinct().sorted().toList();
        }

        void minutes(long fromNs, int minutes) throws Exception {
            for (long t = fromNs; t < fromNs + minutes * 60 * 1_000_000_000L; t += WINDOW_NS) {
                window(t);
            }
        }
    }

    static final long MINUTE_NS = 60 * 1_000_000_000L;

    @Test
    void aFlashDriveFiveTimesSlowerThanItsModelIsSuspectThenFailing() throws Exception {
        Fleet fleet = new Fleet(12);
        fleet.minutes(START_NS, 10);
        assertEquals(List.of(), fleet.anomalies, "drives of one model within their spread are healthy");
        fleet.slowdown.put("host3/nvme0n1", 5.0);
        fleet.minutes(START_NS + 10 * MINUTE_NS, 3);
        assertEquals(1, fleet.anomalies.size(), fleet.anomalies.toString());
        JsonNode suspect = fleet.anomalies.get(0);
        assertEquals("host3", suspect.get("host").asText());
        assertEquals("failing_disk", suspect.get("kind").asText());
        assertEquals("warning", suspect.get("severity").asText());
        JsonNode evidence = suspect.get("evidence");
        assertTrue(evidence.get("slowdown_ratio").asDouble() > 3, evidence.toString());
        assertEquals(12, evidence.get("model_drives").asInt());
        assertEquals("SUSPECT", fleet.effect.get("host3/nvme0n1"));
        fleet.minutes(START_NS + 13 * MINUTE_NS, 10);
        assertEquals(List.of("warning", "critical"), fleet.anomalies.stream().map(a -> a.get("severity").asText()).toList());
        assertEquals("FAILING", fleet.effect.get("host3/nvme0n1"));
        assertEquals(1, fleet.effect.size(), "no other drive was judged slow: " + fleet.effect);
    }

    @Test
    void aDriveThatKeepsUpAgainIsHealthyAndAModelSlowAsAWholeIsNoDriveFailing() throws Exception {
        Fleet fleet = new Fleet(8);
        fleet.minutes(START_NS, 5);
        fleet.slowdown.put("host1/nvme0n1", 6.0);
        fleet.minutes(START_NS + 5 * MINUTE_NS, 2);
        assertEquals("SUSPECT", fleet.effect.get("host1/nvme0n1"));
        fleet.slowdown.clear();
        fleet.minutes(START_NS + 7 * MINUTE_NS, 2);
        assertEquals("NONE", fleet.effect.get("host1/nvme0n1"));
        // Firmware or a shared workload making every drive of the model slower: no drive is
        // slower than its peers.
        fleet.serviceUs.replaceAll((k, v) -> v * 5);
        fleet.minutes(START_NS + 9 * MINUTE_NS, 30);
        assertEquals(1, fleet.anomalies.size(), fleet.anomalies.toString());
    }

    @Test
    void aModelWithManySlowDrivesReadsItsDrivesAboutTwiceAWindowNotOnceForEachSlowDrive() throws Exception {
        int drives = 200;
        Fleet fleet = new Fleet(drives);
        fleet.minutes(START_NS, 5);
        for (int d = 0; d < drives; d += 5) {
            fleet.slowdown.put("host" + d + "/nvme0n1", 5.0);  // a bad batch: one drive in five
        }
        int before = fleet.baselinesComputed;
        int windows = 18;
        fleet.minutes(START_NS + 5 * MINUTE_NS, 3);
        int computed = fleet.baselinesComputed - before;
        assertTrue(computed <= 2 * windows, computed + " baselines (each reads all " + drives + " drives) in " + windows
                + " windows of every drive: once a window of every drive, once more for the first that looks slow");
        assertEquals(drives / 5, fleet.anomalousHosts().size(), "every drive of the bad batch is still found slow");
    }

    @Test
    void aDriveFoundSlowStaysSoUntilItIsBackWithinTwiceItsModelsTime() throws Exception {
        Fleet fleet = new Fleet(8);
        fleet.minutes(START_NS, 5);
        fleet.slowdown.put("host2/nvme0n1", 4.0);
        fleet.minutes(START_NS + 5 * MINUTE_NS, 2);
        assertEquals("SUSPECT", fleet.effect.get("host2/nvme0n1"));
        fleet.slowdown.put("host2/nvme0n1", 2.6);
        fleet.minutes(START_NS + 7 * MINUTE_NS, 3);
        assertEquals("SUSPECT", fleet.effect.get("host2/nvme0n1"), "below 3x but not back within 2x: no flapping");
        fleet.slowdown.put("host2/nvme0n1", 1.0);
        fleet.minutes(START_NS + 10 * MINUTE_NS, 2);
        assertEquals("NONE", fleet.effect.get("host2/nvme0n1"));
        assertEquals(1, fleet.anomalies.size(), "one warning for the episode: " + fleet.anomalies);
    }

    @Test
    void aHostNamingScoresOfFastDrivesOfAModelMakesNoOtherHostsDriveSlow() throws Exception {
        Fleet fleet = new Fleet(12);
        fleet.host("rogue", 60, 15);  // a fifth of the model's time: its median, were every drive one vote
        fleet.minutes(START_NS, 15);
        assertEquals(List.of(), fleet.anomalousHosts(), "the honest drives read as their model does");
    }

    @Test
    void aHostNamingScoresOfSlowDrivesOfAModelHidesNoSlowDrive() throws Exception {
        Fleet fleet = new Fleet(12);
        fleet.host("rogue", 60, 450);  // five times the model's time: its median, were every drive one vote
        fleet.slowdown.put("host3/nvme0n1", 5.0);
        fleet.minutes(START_NS, 15);
        assertTrue(fleet.anomalousHosts().contains("host3"), "the slow drive is still found: " + fleet.anomalies);
        assertEquals("FAILING", fleet.effect.get("host3/nvme0n1"));
    }

    @Test
    void aHostWithMoreDrivesOfAModelThanItsPeersWeighsAsOneOfThem() {
        List<ModelPeers.Drive> drives = new ArrayList<>();
        for (String host : List.of("a", "a", "b", "b", "c", "c", "big", "big", "big", "big", "big", "big", "big", "big")) {
            ModelPeers.Drive d = new ModelPeers.Drive();
            d.host = host;
            drives.add(d);
        }
        double[] weights = ModelPeers.Baseline.hostCappedWeights(drives);
        assertEquals(2.0, java.util.Arrays.stream(weights, 6, 14).sum(), 1e-9, "the eight of `big` weigh as two");
        assertEquals(6.0, java.util.Arrays.stream(weights, 0, 6).sum(), 1e-9, "the typical hosts' drives weigh 1 each");
    }

    /** A window of a busy drive as its agent samples it: a uniform sample, each read for thousands, then outliers, each for itself. */
    private static ShallowReads sampleThenOutliers(long startNs, int sampled, double sampledUs, int outliers, double outlierUs) {
        double[] deviceUs = new double[sampled + outliers];
        double[] weights = new double[sampled + outliers];
        for (int i = 0; i < deviceUs.length; i++) {
            boolean outlier = i >= sampled;
            deviceUs[i] = (outlier ? outlierUs : sampledUs) * (0.9 + 0.2 * i / deviceUs.length);
            weights[i] = outlier ? 1 : 10_000;
        }
        return ShallowReads.of("h", "nvme0n1", "NVMe-A 1TB", startNs, startNs + WINDOW_NS, deviceUs, weights);
    }

    @Test
    void aWindowWithMoreOutliersThanADriveKeepsIsJudgedByTheI_OsItsReadsStandFor() {
        // 40 sampled reads standing for 400,000 I/Os, then 100 stalls of 5 ms (1 in 4,000):
        // the drive's reads take about 90 µs, whatever came last.
        ModelPeers.Drive d = new ModelPeers.Drive();
        for (int w = 0; w < 3; w++) {
            d.add(sampleThenOutliers(START_NS + w * WINDOW_NS, 40, 90, 100, 5000));
            assertTrue(d.levelUs() > 80 && d.levelUs() < 100, "level " + d.levelUs() + " µs after window " + w);
            assertTrue(d.deviceUs.size() <= ModelPeers.KEPT_READS, d.deviceUs.size() + " reads kept");
        }
        // A window of outliers only, fewer than it keeps, after one of a sample: still the sample's I/Os decide.
        d.add(sampleThenOutliers(START_NS + 3 * WINDOW_NS, 0, 90, 30, 5000));
        assertTrue(d.levelUs() > 80 && d.levelUs() < 100, "level " + d.levelUs() + " µs after a window of outliers");
        assertEquals(ModelPeers.KEPT_READS, d.deviceUs.size());
    }

    @Test
    void aSummaryOfAWindowsReadsStandsForTheSameI_OsWithItsMedianAndIsWorthNoMoreThanThey() {
        ShallowReads r = sampleThenOutliers(START_NS, 8, 90, 100, 5000);
        ModelPeers.Reads summary = new ModelPeers.Reads(r.deviceUs, r.weights).summarized(ModelPeers.KEPT_READS);
        assertEquals(8, summary.deviceUs().length, "8 heavy reads among 100 light ones are worth 8");
        assertEquals(java.util.Arrays.stream(r.weights).sum(), java.util.Arrays.stream(summary.weights()).sum(), 1e-6);
        assertEquals(SlowVsPeers.weightedMedian(r.deviceUs, r.weights),
                SlowVsPeers.weightedMedian(summary.deviceUs(), summary.weights()), 5.0);
        Random random = new Random(3);
        double[] values = new double[500];
        double[] ones = new double[500];
        for (int i = 0; i < values.length; i++) {
            values[i] = 90 * Math.exp(0.3 * random.nextGaussian());
            ones[i] = 1;
        }
        ModelPeers.Reads even = new ModelPeers.Reads(values, ones).summarized(ModelPeers.KEPT_READS);
        assertEquals(ModelPeers.KEPT_READS, even.deviceUs().length);
        assertEquals(SlowVsPeers.median(values), SlowVsPeers.weightedMedian(even.deviceUs(), even.weights()), 3.0);
        ModelPeers.Reads few = new ModelPeers.Reads(new double[] {1, 2, 3}, new double[] {1, 1, 1});
        assertTrue(few == few.summarized(ModelPeers.KEPT_READS), "reads that fit are kept as they are");
    }

    @Test
    void aWeightedMedianOfEqualWeightsIsTheMedian() {
        double[][] samples = {{3}, {1, 2}, {5, 1, 4}, {7, 1, 3, 9}, {2, 2, 2, 8, 8}};
        for (double[] values : samples) {
            double[] ones = new double[values.length];
            java.util.Arrays.fill(ones, 1);
            assertEquals(SlowVsPeers.median(values), SlowVsPeers.weightedMedian(values, ones), 1e-12,
                    java.util.Arrays.toString(values));
        }
        assertEquals(10.0, SlowVsPeers.weightedMedian(new double[] {1, 10, 100}, new double[] {1, 3, 1}), 1e-12);
        assertEquals(1.0, SlowVsPeers.weightedMedian(new double[] {1, 10, 100}, new double[] {5, 1, 1}), 1e-12);
    }

    @Test
    void virtualDisksAreNoPeersWhateverTheirModelString() {
        assertTrue(ModelPeers.comparable("SAMSUNG MZQL23T8HCLS-00A07"));
        for (String virtual : List.of("Amazon Elastic Block Store", "QEMU HARDDISK", "VMware Virtual S", "Virtual disk",
                "PersistentDisk", "")) {
            assertTrue(!ModelPeers.comparable(virtual), virtual);
        }
    }

    @Test
    void fewerDrivesThanAModelNeedsAreNotJudged() throws Exception {
        Fleet fleet = new Fleet(ModelPeers.MIN_DRIVES - 1);
        fleet.slowdown.put("host0/nvme0n1", 25.0);
        fleet.minutes(START_NS, 30);
        assertEquals(List.of(), fleet.anomalies);
    }

    @Test
    void oneHostBesideTheOnlyOtherHostOfARareModelDecidesNothing() throws Exception {
        Fleet fleet = new Fleet(0);  // only the hosts named below
        fleet.host("honest", 2, 90);
        fleet.host("rogue", 8, 15);  // a sixth of the honest drives' time: its median, were its weight a typical host's
        fleet.minutes(START_NS, 15);
        assertEquals(List.of(), fleet.anomalousHosts(), "two hosts are no quorum: neither decides the model");
        assertEquals(2, fleet.baseline.hosts);
    }

    @Test
    void withAQuorumOfHostsTheModelIsJudgedAndTheRogueHostStillDecidesNothing() throws Exception {
        Fleet fleet = new Fleet(0);  // only the hosts named below
        for (String honest : List.of("honest-a", "honest-b", "honest-c")) {
            fleet.host(honest, 2, 90);
        }
        fleet.host("rogue", 8, 15);
        fleet.minutes(START_NS, 15);
        assertEquals(List.of(), fleet.anomalousHosts(), "the honest drives read as their model does");
        fleet.slowdown.put("honest-b/nvme0n1", 5.0);
        fleet.minutes(START_NS + 15 * MINUTE_NS, 15);
        assertEquals(List.of("honest-b"), fleet.anomalousHosts(), "a slow drive is found against the honest hosts' drives");
        assertEquals("FAILING", fleet.effect.get("honest-b/nvme0n1"));
    }

    @Test
    void aModelOnTwoHostsIsNotJudgedHoweverManyDrivesTheyHold() throws Exception {
        Fleet fleet = new Fleet(0);  // only the hosts named below
        fleet.host("a", 6, 90);
        fleet.host("b", 6, 90);
        fleet.slowdown.put("a/nvme0n1", 25.0);
        fleet.minutes(START_NS, 30);
        assertEquals(List.of(), fleet.anomalies, "its class rules judge it alone");
    }
}
