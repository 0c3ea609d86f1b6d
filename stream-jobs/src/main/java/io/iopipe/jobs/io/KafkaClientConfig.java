package io.iopipe.jobs.io;

import io.iopipe.jobs.Args;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

/**
 * How every Kafka client of a program connects (security protocol, SASL, TLS trust),
 * from the Java Kafka client properties file given as {@code --kafka-config PATH}, read
 * once. Without the option, clients connect as Kafka's defaults have it: plaintext.
 *
 * <p>The file holds secrets (sasl.jaas.config): errors and {@link #toString()} name the
 * path and keys, never a value.
 */
public final class KafkaClientConfig {
    public static final String OPTION = "kafka-config";

    /** No file: the clients' defaults. */
    public static final KafkaClientConfig NONE = new KafkaClientConfig(null, new Properties());

    /**
     * What the program's clients set themselves, so the file may not: where to connect
     * (--brokers) and as whom, where to start and how offsets are committed, how records
     * are (de)serialized and how a write is acknowledged. Set by KafkaIo, by the Kafka
     * connector under it, and by the bench tools' own clients.
     */
    public static final Set<String> RESERVED = Set.of(
            "bootstrap.servers", "group.id", "client.id", "client.id.prefix",
            "key.deserializer", "value.deserializer", "key.serializer", "value.serializer",
            "auto.offset.reset", "enable.auto.commit", "commit.offsets.on.checkpoint",
            "partition.discovery.interval.ms",
            "acks", "enable.idempotence", "transactional.id", "transaction.timeout.ms",
            "compression.type", "linger.ms", "batch.size", "max.request.size");

    private final Path path;
    private final Properties settings;

    private KafkaClientConfig(Path path, Properties settings) {
        this.path = path;
        this.settings = settings;
    }

    /** The file named by --kafka-config, or {@link #NONE} without the option. */
    public static KafkaClientConfig of(Args args) {
        return args.has(OPTION) ? load(Path.of(args.get(OPTION, null))) : NONE;
    }

    /** Reads the file, as Kafka's own tools read theirs (java.util.Properties, ISO-8859-1). */
    public static KafkaClientConfig load(Path path) {
        Properties settings = read(path);
        Set<String> refused = new TreeSet<>(settings.stringPropertyNames());
        refused.retainAll(RESERVED);
        if (!refused.isEmpty()) {
            throw new IllegalArgumentException(named(path) + " sets " + String.join(", ", refused)
                    + ", which the program sets itself (bootstrap.servers from --brokers): take them out; the"
                    + " file says how to connect (security.protocol, sasl.*, ssl.*)");
        }
        return new KafkaClientConfig(path, settings);
    }

    private static Properties read(Path path) {
        Properties settings = new Properties();
        try (InputStream in = Files.newInputStream(path)) {
            settings.load(in);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(named(path) + ": no such file. Write the Kafka client settings there"
                    + " (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.location) or leave out"
                    + " --" + OPTION + " to connect in plaintext");
        } catch (AccessDeniedException e) {
            throw new IllegalArgumentException(named(path) + ": not readable by this user; make it readable by"
                    + " the user the program runs as");
        } catch (IOException e) {
            throw new IllegalArgumentException(named(path) + ": cannot be read (" + e.getClass().getSimpleName()
                    + "); it must be a readable file");
        } catch (IllegalArgumentException e) {
            // No line is quoted: any of them may hold a secret.
            throw new IllegalArgumentException(named(path) + ": not a properties file (a malformed \\uXXXX escape)");
        }
        return settings;
    }

    private static String named(Path path) {
        return "--" + OPTION + " " + path;
    }

    /** A copy of the file's settings, for a client builder's setProperties. */
    public Properties properties() {
        Properties copy = new Properties();
        copy.putAll(settings);
        return copy;
    }

    /** The file's settings with a client's own, for a client made directly. */
    public Properties with(Map<String, ?> own) {
        Properties merged = properties();
        merged.putAll(own);
        return merged;
    }

    @Override
    public String toString() {
        return path == null ? "no Kafka client settings"
                : "Kafka client settings " + new TreeSet<>(settings.stringPropertyNames()) + " from " + path;
    }
}
