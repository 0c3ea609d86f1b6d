package io.iopipe.jobs.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.iopipe.jobs.io.KafkaClientConfig;
import io.iopipe.jobs.testing.KafkaSettings;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchKafkaClientsTest {
    static final String BROKERS = "kafka-1:9093";

    private static List<Properties> clients(KafkaClientConfig kafka) {
        return List.of(FleetReplay.producerConfig(BROKERS, kafka), StreamBenchmark.adminConfig(BROKERS, kafka),
                StreamBenchmark.producerConfig(BROKERS, kafka), StreamBenchmark.consumerConfig(BROKERS, kafka));
    }

    @Test
    void everyClientOfTheBenchToolsCarriesTheSettings(@TempDir Path dir) {
        KafkaClientConfig kafka = KafkaClientConfig.load(KafkaSettings.write(dir, KafkaSettings.SASL_SSL));
        for (Properties config : clients(kafka)) {
            KafkaSettings.assertCarries(kafka, config);
            assertEquals(BROKERS, config.get("bootstrap.servers"));
        }
    }

    /** What a bench tool sets for itself is what it measures with: the file cannot change it. */
    @Test
    void everyKeyTheBenchToolsSetThemselvesIsReserved() {
        Set<String> own = new HashSet<>();
        clients(KafkaClientConfig.NONE).forEach(config -> config.keySet().forEach(key -> own.add((String) key)));
        own.removeAll(KafkaClientConfig.RESERVED);
        assertEquals(Set.of(), own, "set by a bench tool but not in KafkaClientConfig.RESERVED");
    }
}
