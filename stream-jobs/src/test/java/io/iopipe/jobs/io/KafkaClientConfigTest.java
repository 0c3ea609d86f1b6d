package io.iopipe.jobs.io;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.iopipe.jobs.Args;
import io.iopipe.jobs.testing.KafkaSettings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KafkaClientConfigTest {
    static final String BROKERS = "kafka-1:9093";

    @Test
    void loadsTheSettingsOfTheFileNamedByTheOption(@TempDir Path dir) {
        Path file = KafkaSettings.write(dir, KafkaSettings.SASL_SSL);
        Properties settings = KafkaClientConfig.of(new Args(new String[] {"--kafka-config", file.toString()})).properties();
        assertEquals("SASL_SSL", settings.getProperty("security.protocol"));
        assertEquals("/etc/iopipe/kafka/ca.pem", settings.getProperty("ssl.truststore.location"));
        assertTrue(settings.getProperty("sasl.jaas.config").contains("password=\"" + KafkaSettings.PASSWORD + "\";"));
        assertEquals(5, settings.size());
    }

    @Test
    void withoutTheOptionTheClientsKeepTheirDefaults() {
        assertSame(KafkaClientConfig.NONE, KafkaClientConfig.of(new Args(new String[0])));
        for (Properties config : List.of(KafkaSettings.of(KafkaIo.source(BROKERS, KafkaClientConfig.NONE, "g", List.of("io.hist.v1"))),
                KafkaSettings.of(KafkaIo.sink(BROKERS, KafkaClientConfig.NONE)))) {
            assertFalse(config.keySet().stream().map(String.class::cast)
                    .anyMatch(k -> k.startsWith("security.") || k.startsWith("sasl.") || k.startsWith("ssl.")), config.toString());
        }
    }

    @Test
    void everySourceAndSinkOfKafkaIoCarriesTheSettings(@TempDir Path dir) {
        KafkaClientConfig kafka = KafkaClientConfig.load(KafkaSettings.write(dir, KafkaSettings.SASL_SSL));
        Properties source = KafkaSettings.of(KafkaIo.source(BROKERS, kafka, "iopipe-stream-jobs", List.of("io.hist.v1")));
        Properties bounded = KafkaSettings.of(KafkaIo.boundedSource(BROKERS, kafka, "iopipe-bench"));
        Properties sink = KafkaSettings.of(KafkaIo.sink(BROKERS, kafka));
        for (Properties config : List.of(source, bounded, sink)) {
            KafkaSettings.assertCarries(kafka, config);
            assertEquals(BROKERS, config.getProperty("bootstrap.servers"));
        }
        assertEquals("iopipe-stream-jobs", source.getProperty("group.id"));
        assertEquals("all", sink.getProperty("acks"));
        assertEquals("true", sink.getProperty("enable.idempotence"));
        assertEquals(String.valueOf(256 * 1024), sink.getProperty("batch.size"), "requests of many records, not a dozen");
        assertEquals("50", sink.getProperty("linger.ms"));
    }

    /** The file cannot change what KafkaIo relies on; a key KafkaIo (or its connector) takes up is reserved here. */
    @Test
    void everyKeyKafkaIoSetsItselfIsReserved() {
        Set<String> own = new HashSet<>();
        for (Properties config : List.of(
                KafkaSettings.of(KafkaIo.source(BROKERS, KafkaClientConfig.NONE, "g", List.of("io.hist.v1"))),
                KafkaSettings.of(KafkaIo.boundedSource(BROKERS, KafkaClientConfig.NONE, "t")),
                KafkaSettings.of(KafkaIo.sink(BROKERS, KafkaClientConfig.NONE)))) {
            config.keySet().forEach(key -> own.add((String) key));
        }
        own.removeAll(KafkaClientConfig.RESERVED);
        assertEquals(Set.of(), own, "set by KafkaIo but not in KafkaClientConfig.RESERVED");
    }

    @Test
    void refusesEachReservedKeyByNameWithoutItsValue(@TempDir Path dir) {
        for (String key : KafkaClientConfig.RESERVED) {
            Path file = KafkaSettings.write(dir, KafkaSettings.SASL_SSL + key + "=" + KafkaSettings.PASSWORD + "\n");
            String message = refusal(file);
            assertTrue(message.contains(" sets " + key + ","), message);
            assertTrue(message.contains(file.toString()), message);
        }
    }

    @Test
    void aMissingFileNamesItsPathAndHowToDoWithout(@TempDir Path dir) {
        Path missing = dir.resolve("absent.properties");
        String message = refusal(missing);
        assertTrue(message.contains(missing + ": no such file"), message);
        assertTrue(message.contains("leave out --kafka-config"), message);
    }

    @Test
    void aFileThatCannotBeReadNamesItsPath(@TempDir Path dir) throws Exception {
        assertTrue(refusal(dir).contains(dir + ": cannot be read"), refusal(dir));
        Path file = KafkaSettings.write(dir, KafkaSettings.SASL_SSL);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("---------"));
        assumeFalse(Files.isReadable(file), "root reads any file");
        assertTrue(refusal(file).contains(file + ": not readable by this user"), refusal(file));
    }

    @Test
    void aMalformedLineIsNotEchoed(@TempDir Path dir) {
        Path file = KafkaSettings.write(dir, "sasl.jaas.config=password=\"" + KafkaSettings.PASSWORD + "\\uZZZZ\";\n");
        assertTrue(refusal(file).contains(file + ": not a properties file"), refusal(file));
    }

    @Test
    void saysWhichKeysItHoldsNotTheirValues(@TempDir Path dir) {
        Path file = KafkaSettings.write(dir, KafkaSettings.SASL_SSL);
        String said = KafkaClientConfig.load(file).toString();
        assertTrue(said.contains("sasl.jaas.config") && said.contains(file.toString()), said);
        assertFalse(said.contains(KafkaSettings.PASSWORD) || said.contains("SCRAM"), said);
    }

    /** The message of loading `file` refused, checked to hold no secret anywhere in its causes. */
    private static String refusal(Path file) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> KafkaClientConfig.load(file));
        for (Throwable t = e; t != null; t = t.getCause()) {
            assertFalse(String.valueOf(t.getMessage()).contains(KafkaSettings.PASSWORD), t.getMessage());
        }
        return e.getMessage();
    }
}
