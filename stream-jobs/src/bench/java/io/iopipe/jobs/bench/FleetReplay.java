package io.iopipe.jobs.bench;

import io.iopipe.jobs.Args;
import io.iopipe.jobs.io.KafkaClientConfig;
import io.iopipe.jobs.records.HostSignatures;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A large fleet's agent records, sent on the wall clock as the agents send them: a
 * {@link TemplateFleet} of template disks' records that iopipe/bench/scale.py wrote already
 * on the wall clock, each record to its schema's topic. Each send time's records go when the
 * wall clock reaches it (at once if the sending is behind), and then a line
 * {@code sent <send_at_ms> <wall_ms_done> <records>} goes to stdout; progress goes to stderr.
 *
 * <p>Options: --brokers, --kafka-config (optional: how to connect, {@link KafkaClientConfig}),
 * --signing-secret (optional: the fleet's master secret, to sign each record with its host's
 * key as the agents do, {@link HostSignatures}), and the fleet's ({@link TemplateFleet}).
 */
public final class FleetReplay {
    private static final long PROGRESS_EVERY_MS = 10_000;

    private FleetReplay() {}

    public static void main(String[] argv) throws Exception {
        Args args = new Args(argv);
        Properties config = producerConfig(args.required("brokers"), KafkaClientConfig.of(args));
        TemplateFleet fleet = TemplateFleet.of(args);
        HostSignatures signatures = args.has(HostSignatures.OPTION)
                ? HostSignatures.fromFile(Path.of(args.get(HostSignatures.OPTION, null))) : null;
        try (KafkaProducer<byte[], byte[]> producer =
                     new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer())) {
            // Each topic's partitions known before the first second is due, not looked up late.
            fleet.sends.get(0).byTemplateDisk().stream().flatMap(List::stream).map(TemplateFleet.Template::topic)
                    .distinct().forEach(producer::partitionsFor);
            replay(producer, fleet, signatures);
        }
    }

    /** As an agent's direct Kafka output writes: every in-sync copy acknowledges, never twice. */
    static Properties producerConfig(String brokers, KafkaClientConfig kafka) {
        return kafka.with(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers,
                ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                ProducerConfig.LINGER_MS_CONFIG, 20,
                ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024,
                ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4"));
    }

    private static void replay(KafkaProducer<byte[], byte[]> producer, TemplateFleet fleet, HostSignatures signatures)
            throws InterruptedException {
        long sent = 0;
        long lastProgressMs = System.currentTimeMillis();
        long sentAtLastProgress = 0;
        for (TemplateFleet.Send send : fleet.sends) {
            long waitMs = send.atMs() - System.currentTimeMillis();
            if (waitMs > 0) {
                Thread.sleep(waitMs);
            }
            long records = fleet.send(send, (t, host, key, value) ->
                    producer.send(TemplateFleet.record(t.topic(), host, key, value, signatures)));
            sent += records;
            long doneMs = System.currentTimeMillis();
            System.out.printf("sent %d %d %d%n", send.atMs(), doneMs, records);
            System.out.flush();
            if (doneMs - lastProgressMs >= PROGRESS_EVERY_MS) {
                double rate = (sent - sentAtLastProgress) * 1000.0 / (doneMs - lastProgressMs);
                double behindS = (doneMs - send.atMs()) / 1000.0;
                System.err.printf("[fleet-replay] %,d disks: %,d records sent, %,.0f records/s, "
                        + "%.1f s behind the agents' clock%n", fleet.disks(), sent, rate, behindS);
                lastProgressMs = doneMs;
                sentAtLastProgress = sent;
            }
        }
        producer.flush();
    }
}
