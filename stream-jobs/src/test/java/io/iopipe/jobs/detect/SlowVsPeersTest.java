package io.iopipe.jobs.detect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.WindowSample;
import io.iopipe.jobs.testing.SchemaFiles;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class SlowVsPeersTest {
    static final long START_NS = 1_763_683_200_000_000_000L;  // a midnight, UTC
    static final long WINDOW_NS = 15_000_000_000L;
    static final long HOUR_NS = SlowVsPeers.HOUR_NS;

    /**
     * A host of drives of one model under one shared, varying workload: each drive's latency
     * rises with its throughput along the same curve, with a few percent of noise. A drive's
     * load factor scales its share of the work; its slowdown scales its latency.
     */
    static final class Host {
        final String name;
        final Map<String, Double> load = new TreeMap<>();
        final Map<String, Double> slowdown = new HashMap<>();
        final Map<String, PeerHistory> state = new HashMap<>();
        final Random random = new Random(7);
        final List<OutputRecord> anomalies = new ArrayList<>();

        Host(String name, int drives) {
            this.name = name;
            for (int d = 1; d <= drives; d++) {
                load.put("disk" + d, 1.0);
            }
        }

        List<WindowSample> hour(long hourStartNs) {
            List<WindowSample> windows = new ArrayList<>();
            for (long t = hourStartNs; t < hourStartNs + HOUR_NS; t += WINDOW_NS) {
                double shared = 15_000 * (1 + 0.5 * Math.sin(t / 1e9 / 600));
                for (Map.Entry<String, Double> d : load.entrySet()) {
                    double kib = shared * d.getValue() * (1 + 0.1 * random.nextGaussian());
                    double awaitMs = (0.04 + kib / 500_000) * slowdown.getOrDefault(d.getKey(), 1.0)
                            * (1 + 0.05 * random.nextGaussian());
                    windows.add(new WindowSample(name, d.getKey(), t, t + WINDOW_NS, kib, awaitMs));
                }
            }
            return windows;
        }

        SlowVsPeers.Assessment assess(long hourStartNs) {
            SlowVsPeers.Assessment a = SlowVsPeers.assessHour(name, hourStartNs, hour(hourStartNs), state);
            anomalies.addAll(a.anomalies());
            return a;
        }

        /** Each drive's effect after each of {@code hours} hours from START_NS on, as "disk:EFFECT" where not NONE. */
        List<String> run(int hours) {
            List<String> raised = new ArrayList<>();
            for (int h = 0; h < hours; h++) {
                for (PeerVerdict v : assess(START_NS + h * HOUR_NS).verdicts()) {
                    if (!v.effect.equals("NONE")) {
                        raised.add("h" + h + " " + v.disk + ":" + v.effect);
                    }
                }
            }
            return raised;
        }
    }

    @Test
    void aHealthyHostRaisesNothingOverAWeek() {
        Host host = new Host("h", 12);
        assertEquals(List.of(), host.run(7 * 24));
        assertEquals(List.of(), host.anomalies);
    }

    @Test
    void aDriveHalfAgainSlowerIsSuspectAfterThreeHoursAndNotBefore() {
        Host host = new Host("h", 12);
        host.slowdown.put("disk5", 1.5);
        List<String> raised = host.run(3);
        assertEquals(List.of("h2 disk5:SUSPECT"), raised);
        assertEquals(1, host.anomalies.size());
        JsonNode a = Json.MAPPER.valueToTree(parse(host.anomalies.get(0)));
        assertEquals(Set.of(), SchemaFiles.violations("io.anomaly.v1", host.anomalies.get(0).json));
        assertEquals("slow_vs_peers", a.get("kind").asText());
        assertEquals("warning", a.get("severity").asText());
        JsonNode e = a.get("evidence");
        assertEquals(1.5, e.get("slowdown_ratio").asDouble(), 0.1);
        assertEquals(11, e.get("peers").asInt());
        assertEquals(3, e.get("persistence").get("slow_hours_in_a_row").asInt());
        assertEquals(START_NS, a.get("start_ns").asLong(), "the episode began with its first slow hour");
    }

    @Test
    void anHourLongBlipNeverCounts() {
        Host host = new Host("h", 12);
        List<String> raised = new ArrayList<>();
        for (int h = 0; h < 48; h++) {
            host.slowdown.put("disk3", h % 3 == 1 ? 3.0 : 1.0);
            host.assess(START_NS + h * HOUR_NS).verdicts().stream().filter(v -> !v.effect.equals("NONE"))
                    .forEach(v -> raised.add(v.disk));
        }
        assertEquals(List.of(), raised, "one slow hour in three, never three in a row");
    }

    @Test
    void aDriveSlowOnThreeDaysIsFailingWithOneAnomalyForTheEpisode() {
        Host host = new Host("h", 12);
        host.slowdown.put("disk9", 2.0);
        List<String> effects = new ArrayList<>();
        for (int day = 0; day < 3; day++) {
            for (int h = 0; h < 3; h++) {  // three hours of telemetry a day, as the Perseus collections have
                host.assess(START_NS + day * 24 * HOUR_NS + h * HOUR_NS).verdicts().stream()
                        .filter(v -> v.disk.equals("disk9")).forEach(v -> effects.add(v.effect));
            }
        }
        assertEquals(List.of("NONE", "NONE", "SUSPECT", "SUSPECT", "SUSPECT", "SUSPECT", "FAILING", "FAILING", "FAILING"), effects);
        assertEquals(1, host.anomalies.size(), "days apart, the slow hours are one episode");
    }

    @Test
    void aBusierDriveIsJudgedAtItsOwnThroughput() {
        Host host = new Host("h", 12);
        host.load.put("disk1", 1.6);
        host.load.put("disk2", 1.4);
        host.load.put("disk11", 0.6);
        assertEquals(List.of(), host.run(24), "latency that follows load along the peers' curve is not slowness");
    }

    @Test
    void severalSlowDrivesOnAHostAreEachFound() {
        Host host = new Host("h", 12);
        host.slowdown.put("disk2", 1.6);
        host.slowdown.put("disk7", 2.5);
        host.slowdown.put("disk12", 1.4);
        assertEquals(List.of("h2 disk12:SUSPECT", "h2 disk2:SUSPECT", "h2 disk7:SUSPECT"), host.run(3));
    }

    @Test
    void whenMostDrivesOfAHostAreSlowNoneIsSingledOut() {
        Host host = new Host("h", 12);
        for (int d = 1; d <= 7; d++) {
            host.slowdown.put("disk" + d, 2.0);
        }
        assertEquals(List.of(), host.run(6), "a host or workload problem, not seven drive tickets");
    }

    @Test
    void aHostOfThreeDrivesOrAnIdleDriveIsNotJudged() {
        Host small = new Host("small", 3);
        small.slowdown.put("disk1", 3.0);
        assertEquals(List.of(), small.run(4));
        Host host = new Host("h", 12);
        List<WindowSample> windows = host.hour(START_NS);
        windows.removeIf(w -> w.disk.equals("disk4") && w.startNs >= START_NS + HOUR_NS / 8);
        List<String> judged = SlowVsPeers.assessHour("h", START_NS, windows, host.state).verdicts().stream()
                .map(v -> v.disk).toList();
        assertEquals(11, judged.size());
        assertTrue(!judged.contains("disk4"), "busy for an eighth of the hour: too little to judge");
    }

    @Test
    void aWindowIsComparedOnItsIostatThroughputAndAwaitWithDrivesOfItsClass() {
        DiskWindow w = new DiskWindow();
        w.host = "db-1";
        w.disk = "sdb";
        w.startNs = START_NS;
        w.endNs = START_NS + 10_000_000_000L;
        w.iostat.rotational = true;
        w.iostat.model = "ST4000NM0035";
        w.iostat.samples = 10;
        w.iostat.intervalNs = 10_000_000_000L;
        w.iostat.counters.readsCompleted = 300;
        w.iostat.counters.sectorsRead = 300 * 256;
        w.iostat.counters.readTimeMs = 300 * 8;
        w.iostat.counters.writesCompleted = 100;
        w.iostat.counters.sectorsWritten = 100 * 8;
        w.iostat.counters.writeTimeMs = 100 * 2;
        w.iostat.counters.flushesCompleted = 50;
        w.iostat.counters.flushTimeMs = 50 * 20;
        WindowSample s = w.throughputAndLatency();
        assertEquals((300 * 128 + 100 * 4) / 10.0, s.kibPerS, 1e-9);
        assertEquals((300 * 8 + 100 * 2) / 400.0, s.awaitMs, 1e-9, "await as sysstat printed it: flushes move no data");
        assertEquals("rotational ST4000NM0035", s.peerClass);
        w.iostat.rotational = false;
        w.iostat.model = null;
        assertEquals("db-1\nnon-rotational", w.throughputAndLatency().peersKey(), "an SSD is never the peer of a disk");
    }

    private static Object parse(OutputRecord r) {
        try {
            return Json.MAPPER.readTree(r.json);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
