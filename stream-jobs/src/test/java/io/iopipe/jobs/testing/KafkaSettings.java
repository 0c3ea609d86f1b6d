package io.iopipe.jobs.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.iopipe.jobs.io.KafkaClientConfig;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;

/**
 * A --kafka-config file as the stack's SASL_SSL listeners take it, and the client settings a
 * built KafkaSource or KafkaSink hands its Kafka clients (the connector keeps them private).
 */
public final class KafkaSettings {
    public static final String PASSWORD = "pa55-n0t-for-logs";
    public static final String SASL_SSL = String.join("\n",
            "security.protocol=SASL_SSL",
            "sasl.mechanism=SCRAM-SHA-512",
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required"
                    + " username=\"iopipe-job\" password=\"" + PASSWORD + "\";",
            "ssl.truststore.type=PEM",
            "ssl.truststore.location=/etc/iopipe/kafka/ca.pem",
            "");

    private KafkaSettings() {}

    public static Path write(Path dir, String text) {
        try {
            return Files.writeString(dir.resolve("kafka-client.properties"), text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Every setting of the file, as the file has it, in a client's `config`. */
    public static void assertCarries(KafkaClientConfig kafka, Properties config) {
        Properties settings = kafka.properties();
        for (String key : settings.stringPropertyNames()) {
            assertEquals(settings.getProperty(key), config.getProperty(key), key);
        }
    }

    public static Properties of(KafkaSource<?> source) {
        return field(source, "props");
    }

    public static Properties of(KafkaSink<?> sink) {
        return field(sink, "kafkaProducerConfig");
    }

    private static Properties field(Object owner, String name) {
        try {
            Field f = owner.getClass().getDeclaredField(name);
            f.setAccessible(true);
            return (Properties) f.get(owner);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("the Kafka connector no longer keeps its client settings in " + name, e);
        }
    }
}
