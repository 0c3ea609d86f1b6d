package io.iopipe.jobs.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.iopipe.jobs.records.HostSignatures;
import io.iopipe.jobs.records.Json;
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

/** What the benchmark measures with: records signed as the agents sign theirs, and runs in a fair order. */
class StreamBenchmarkTest {
    /** Disks enough for more than one host. */
    private static final int DISKS = 64;

    @Test
    void everyRecordCarriesTheSignatureOfTheHostItNames(@TempDir Path dir) throws Exception {
        HostSignatures signatures = HostSignatures.fromFile(StreamBenchmark.writeMasterSecret(dir));
        List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
        FleetRecords.generate(DISKS, 2, 1, (key, json) -> records.add(StreamBenchmark.signedRecord("bench", key, json, signatures)));
        Set<String> hosts = new HashSet<>();
        for (ProducerRecord<byte[], byte[]> record : records) {
            String host = Json.parseObject(new String(record.value(), StandardCharsets.UTF_8)).get("host").asText();
            String header = new String(record.headers().lastHeader(HostSignatures.HEADER).value(), StandardCharsets.US_ASCII);
            assertNull(signatures.refusal(host, record.value(), header));
            hosts.add(host);
        }
        assertTrue(hosts.size() > 1, "records of " + hosts);
    }

    @Test
    void eachRunMakesItsOwnMasterSecretThatOnlyItsOwnerReads(@TempDir Path dir) throws Exception {
        Path first = StreamBenchmark.writeMasterSecret(dir);
        Path second = StreamBenchmark.writeMasterSecret(dir);
        assertEquals(PosixFilePermissions.fromString("rw-------"), Files.getPosixFilePermissions(first));
        assertNotEquals(Files.readString(first), Files.readString(second));
    }

    @Test
    void theJobGraphRunsSwapPlacesEveryOtherRound() {
        List<String> runs = List.of("unchecked", "checked");
        assertEquals(runs, StreamBenchmark.inRoundOrder(runs, 1));
        assertEquals(List.of("checked", "unchecked"), StreamBenchmark.inRoundOrder(runs, 2));
        assertEquals(runs, StreamBenchmark.inRoundOrder(runs, 3));
    }
}
