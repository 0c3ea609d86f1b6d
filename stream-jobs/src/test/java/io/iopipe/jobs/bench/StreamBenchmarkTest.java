package io.iopipe.jobs.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.Args;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.EventBatch;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.HostSignatures;
import io.iopipe.jobs.records.IntervalRecord;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.testing.SchemaFiles;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the benchmark measures with: a fleet copied from template disks, records signed as
 * the agents sign theirs, runs in a fair order, and a disk's keyed state. The template disks
 * here are the contract's valid examples of what an agent sends (schema/examples): template
 * disk j sends the j-th example of each agent record.
 */
class StreamBenchmarkTest {
    private static final List<String> AGENT_RECORDS = List.of(DiskstatsSample.SCHEMA, HistRecord.SCHEMA, IoEvent.SCHEMA);
    /** What an agent sends by default: its records batched a disk and interval at a time. */
    private static final List<String> AGENT_BATCHES = List.of(IntervalRecord.SCHEMA, EventBatch.SCHEMA);
    private static final String PLACEHOLDER = "{host}";
    private static final String HOST_PREFIX = "bench-";
    private static final int DISKS_PER_HOST = 8;
    private static final int TEMPLATE_DISKS = 2;
    /** Disks enough for more than one host, each template disk copied many times. */
    private static final int DISKS = 20;
    private static final long FIRST_SEND_MS = 1_763_700_001_000L;
    private static final long ONE_SECOND_MS = 1_000;

    /** A template file of `sends` send times a second apart, and the fleet of `disks` disks made of it. */
    private static TemplateFleet fleet(Path dir, int sends, int disks) throws Exception {
        return fleet(dir, sends, disks, AGENT_RECORDS);
    }

    /** As above, each template disk sending an example of each of `records`. */
    private static TemplateFleet fleet(Path dir, int sends, int disks, List<String> records) throws Exception {
        List<String> lines = new ArrayList<>();
        for (int send = 0; send < sends; send++) {
            for (int j = 0; j < TEMPLATE_DISKS; j++) {
                for (String record : records) {
                    lines.add((FIRST_SEND_MS + send * ONE_SECOND_MS) + "\t" + j + "\t" + Json.write(template(record, j)));
                }
            }
        }
        Path templates = Files.write(dir.resolve("templates.tsv"), lines);
        return TemplateFleet.of(new Args(new String[] {"--templates", templates.toString(),
                "--template-disks", String.valueOf(TEMPLATE_DISKS), "--disks", String.valueOf(disks),
                "--host-placeholder", PLACEHOLDER, "--host-prefix", HOST_PREFIX,
                "--disks-per-host", String.valueOf(DISKS_PER_HOST)}));
    }

    private static ObjectNode template(String record, int templateDisk) {
        return ((ObjectNode) SchemaFiles.validExamples(record).get(templateDisk).deepCopy()).put("host", PLACEHOLDER);
    }

    @Test
    void eachSlotOfTheLocalClusterHasWhatASlotOfTheStacksTaskManagersHas() {
        // 2048 MiB less the JVM's overhead (10%) and metaspace (256 MiB), 40% of it managed, over 4 slots.
        double expectedMiB = (2048 - 204.8 - 256) * 0.4 / 4;
        assertEquals(expectedMiB, StreamBenchmark.slotManagedMemory("2048m", 4).getBytes() / 1048576.0, 0.01);
    }

    @Test
    void eachFleetDiskSendsItsTemplateDisksRecordsUnderItsOwnHost(@TempDir Path dir) throws Exception {
        TemplateFleet fleet = fleet(dir, 1, DISKS);
        for (int disk = 0; disk < DISKS; disk++) {
            String host = HOST_PREFIX + disk / DISKS_PER_HOST;
            List<JsonNode> sent = new ArrayList<>();
            fleet.send(fleet.sends.get(0), disk, (t, recordHost, key, value) -> {
                JsonNode record = parse(value);
                assertEquals(host, recordHost);
                assertEquals(host + "/" + record.get("disk").asText(), new String(key, StandardCharsets.UTF_8));
                sent.add(record);
            });
            int templateDisk = disk % TEMPLATE_DISKS;
            List<JsonNode> expected = AGENT_RECORDS.stream()
                    .map(record -> (JsonNode) template(record, templateDisk).put("host", host)).toList();
            assertEquals(expected, sent, "disk " + disk);
        }
    }

    @Test
    void everyRecordCarriesTheSignatureOfTheHostItNames(@TempDir Path dir) throws Exception {
        HostSignatures signatures = HostSignatures.fromFile(StreamBenchmark.writeMasterSecret(dir));
        TemplateFleet fleet = fleet(dir, 1, DISKS);
        List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
        long sent = fleet.send(fleet.sends.get(0),
                (t, host, key, value) -> records.add(TemplateFleet.record("bench", host, key, value, signatures)));
        assertEquals(DISKS * AGENT_RECORDS.size(), sent);
        Set<String> hosts = new HashSet<>();
        for (ProducerRecord<byte[], byte[]> record : records) {
            String host = parse(record.value()).get("host").asText();
            String header = new String(record.headers().lastHeader(HostSignatures.HEADER).value(), StandardCharsets.US_ASCII);
            assertNull(signatures.refusal(host, record.value(), header));
            hosts.add(host);
        }
        assertEquals(fleet.hostCount(), hosts.size());
        assertTrue(hosts.size() > 1, "records of " + hosts);
    }

    @Test
    void theFleetSendsTheTemplatesFirstSecondsAndNoMoreThanTheyHold(@TempDir Path dir) throws Exception {
        TemplateFleet fleet = fleet(dir, 3, DISKS);
        assertEquals(List.of(FIRST_SEND_MS, FIRST_SEND_MS + ONE_SECOND_MS),
                fleet.firstSeconds(2).stream().map(TemplateFleet.Send::atMs).toList());
        assertThrows(IllegalArgumentException.class, () -> fleet.firstSeconds(4));
    }

    @Test
    void aDisksStateCountsEveryPartTheJobKeepsOfIt(@TempDir Path dir) throws Exception {
        StreamBenchmark.State state = StreamBenchmark.statePerDisk(fleet(dir, 1, DISKS));
        StreamBenchmark.StateBytes mean = state.mean();
        assertEquals(TEMPLATE_DISKS, state.disks());
        assertEquals(1, state.seconds());
        assertTrue(mean.detector() > 0 && mean.windows() > 0 && mean.clocks() > 0 && mean.lastSample() > 0
                && mean.rollups() > 0, mean.toString());
        assertTrue(state.largest() >= mean.total(), state.toString());
    }

    @Test
    void aDiskSendingBatchesKeepsTheirPartsAndItsLastSample(@TempDir Path dir) throws Exception {
        StreamBenchmark.State state = StreamBenchmark.statePerDisk(fleet(dir, 1, DISKS, AGENT_BATCHES));
        StreamBenchmark.StateBytes mean = state.mean();
        assertEquals(TEMPLATE_DISKS, state.disks());
        assertTrue(mean.openRecords() > 0 && mean.lastSample() > 0 && mean.rollups() > 0, mean.toString());
    }

    @Test
    void eachRunMakesItsOwnMasterSecretThatOnlyItsOwnerReads(@TempDir Path dir) throws Exception {
        Path first = StreamBenchmark.writeMasterSecret(dir);
        Path second = StreamBenchmark.writeMasterSecret(dir);
        assertEquals(PosixFilePermissions.fromString("rw-------"), Files.getPosixFilePermissions(first));
        assertNotEquals(Files.readString(first), Files.readString(second));
    }

    @Test
    void aFlightRecordingDiskSendsThatManyReadsOfTheSecondEndingAtTheSendEachOfItsOwn(@TempDir Path dir) throws Exception {
        TemplateFleet fleet = fleet(dir, 2, DISKS);
        TemplateFleet.Send send = fleet.sends.get(1);
        List<io.iopipe.jobs.pipeline.DiskRecord> recorded = new ArrayList<>();
        fleet.recording(send, 3, 500, (t, host, key, value) -> {
            try {
                recorded.add(io.iopipe.jobs.pipeline.DiskRecord.of(io.iopipe.jobs.records.RecordDecoder.event(
                        Json.parseObject(new String(value, StandardCharsets.UTF_8)), send.atMs() * 1_000_000L)));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertEquals(500, recorded.size());
        assertEquals(500, recorded.stream().map(io.iopipe.jobs.pipeline.DiskRecord::identity).distinct().count());
        for (io.iopipe.jobs.pipeline.DiskRecord r : recorded) {
            assertEquals(HOST_PREFIX + "0", r.host);
            assertEquals("R", r.event.op);
            assertEquals("recorder", r.event.sampleReason);
            assertTrue(r.event.completeNs > (send.atMs() - ONE_SECOND_MS) * 1_000_000L && r.event.completeNs <= send.atMs() * 1_000_000L);
        }
    }

    @Test
    void aProfileNamesAFlinkTaskByItsChainOfOperatorsAndNoOtherThread() {
        assertEquals("Source: bench topic -> stamp first record -> decode records",
                CpuProfile.taskOf("Source: bench topic -> stamp first record -> decode records (1/2)#0"));
        assertEquals("diskstats deltas", CpuProfile.taskOf("diskstats deltas (2/2)"));
        assertEquals(null, CpuProfile.taskOf("kafka-producer-network-thread | producer-1"));
    }

    @Test
    void aProfileFindsTheTaskThatSpinsAndTheMethodItSpinsIn(@TempDir Path dir) throws Exception {
        // On a loaded machine the sampler may not get to a half-second thread (it did not once
        // among the unit tests): record again until it has sampled a task, at most 20 times.
        CpuProfile profile = null;
        for (int attempt = 0; attempt < 20 && (profile == null || profile.taskSamples() == 0); attempt++) {
            profile = CpuProfile.recording(dir.resolve("run-" + attempt + ".jfr"), () -> {
                Thread task = new Thread(StreamBenchmarkTest::spin, "busy operator (1/1)#0");
                task.start();
                task.join();
                return null;
            }, () -> new long[] {0, Long.MAX_VALUE});
        }
        String report = profile.report(5);
        assertTrue(report.contains("The busiest task, busy operator:"), report);
        assertTrue(report.contains("`io.iopipe.jobs.bench.StreamBenchmarkTest.spin`"), report);
    }

    private static void spin() {
        long until = System.nanoTime() + 500_000_000L;
        double x = 0;
        while (System.nanoTime() < until) {
            x += Math.sqrt(x + 1);
        }
        if (x < 0) {
            throw new AssertionError();
        }
    }

    @Test
    void twoRunsSwapPlacesEveryOtherRound() {
        List<String> runs = List.of("unchecked", "checked");
        assertEquals(runs, StreamBenchmark.inRoundOrder(runs, 1));
        assertEquals(List.of("checked", "unchecked"), StreamBenchmark.inRoundOrder(runs, 2));
    }

    @Test
    void threeRunsTakeTurnsAtGoingFirstAndAreNotAlwaysFollowedByTheSameOne() {
        List<String> runs = List.of("as run", "checked", "unchecked");
        java.util.Map<String, Integer> first = new java.util.HashMap<>();
        java.util.Map<String, java.util.Set<String>> followedBy = new java.util.HashMap<>();
        for (int round = 1; round <= 6; round++) {
            List<String> order = StreamBenchmark.inRoundOrder(runs, round);
            assertEquals(new java.util.HashSet<>(runs), new java.util.HashSet<>(order), "round " + round);
            first.merge(order.get(0), 1, Integer::sum);
            for (int i = 0; i + 1 < order.size(); i++) {
                followedBy.computeIfAbsent(order.get(i), r -> new java.util.HashSet<>()).add(order.get(i + 1));
            }
        }
        assertEquals(java.util.Map.of("as run", 2, "checked", 2, "unchecked", 2), first);
        runs.forEach(run -> assertEquals(2, followedBy.get(run).size(), run + " followed by " + followedBy.get(run)));
    }

    private static JsonNode parse(byte[] value) {
        try {
            return Json.parseObject(new String(value, StandardCharsets.UTF_8));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
