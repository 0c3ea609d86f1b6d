package io.iopipe.jobs.bench;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.Args;
import io.iopipe.jobs.io.KafkaClientConfig;
import io.iopipe.jobs.records.HostSignatures;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.Topics;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A large fleet's agent records, sent on the wall clock as the agents send them, made of a
 * few template disks' records (iopipe/bench/scale.py writes them from
 * integration-tests/fleet.py, already on the wall clock): fleet disk i sends what template
 * disk i mod T sends, under host {@code <host-prefix><i / disks-per-host>}. So a fleet of
 * any size has the template fleet's record rates and contents, at a cost per record of a
 * copy, which a generator running per disk in Python could not keep up with.
 *
 * <p>Template lines: {@code send_at_ms <TAB> template_disk <TAB> record JSON}, grouped by
 * send time; each record's host is the text given as --host-placeholder. Each group is sent
 * when the wall clock reaches its time (at once if the sending is behind), and then a line
 * {@code sent <send_at_ms> <wall_ms_done> <records>} goes to stdout; progress goes to stderr.
 *
 * <p>Options: --brokers, --kafka-config (optional: how to connect, {@link KafkaClientConfig}),
 * --signing-secret (optional: the fleet's master secret, to sign each record with its host's
 * key as the agents do, {@link HostSignatures}), --templates (file), --template-disks T,
 * --disks N, --host-placeholder, --host-prefix, --disks-per-host.
 */
public final class FleetReplay {
    private static final long PROGRESS_EVERY_MS = 10_000;

    /** One template record: its topic and disk, and its JSON split around the host's value. */
    private record Template(String topic, String disk, byte[] beforeHost, byte[] afterHost) {
        static Template of(String json, String hostPlaceholder) {
            JsonNode record = parse(json);
            int at = json.indexOf(hostPlaceholder);
            if (at < 0) {
                throw new IllegalArgumentException("a template record without host " + hostPlaceholder + ": " + json);
            }
            return new Template(Topics.forRecord(record.get("schema").asText()), record.get("disk").asText(),
                    json.substring(0, at).getBytes(StandardCharsets.UTF_8),
                    json.substring(at + hostPlaceholder.length()).getBytes(StandardCharsets.UTF_8));
        }

        byte[] withHost(byte[] host) {
            byte[] out = new byte[beforeHost.length + host.length + afterHost.length];
            System.arraycopy(beforeHost, 0, out, 0, beforeHost.length);
            System.arraycopy(host, 0, out, beforeHost.length, host.length);
            System.arraycopy(afterHost, 0, out, beforeHost.length + host.length, afterHost.length);
            return out;
        }
    }

    /** The records every template disk sends at one moment. */
    private record Send(long atMs, List<List<Template>> byTemplateDisk) {}

    private FleetReplay() {}

    public static void main(String[] argv) throws Exception {
        Args args = new Args(argv);
        Properties config = producerConfig(args.required("brokers"), KafkaClientConfig.of(args));
        int templateDisks = Integer.parseInt(args.required("template-disks"));
        int disks = Integer.parseInt(args.required("disks"));
        List<Send> sends = load(Path.of(args.required("templates")), templateDisks, args.required("host-placeholder"));
        int disksPerHost = Integer.parseInt(args.required("disks-per-host"));
        String[] hosts = hostNames(disks, args.required("host-prefix"), disksPerHost);
        HostSignatures signatures = args.has(HostSignatures.OPTION)
                ? HostSignatures.fromFile(Path.of(args.get(HostSignatures.OPTION, null))) : null;
        try (KafkaProducer<byte[], byte[]> producer =
                     new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer())) {
            // Each topic's partitions known before the first second is due, not looked up late.
            sends.get(0).byTemplateDisk().stream().flatMap(List::stream).map(Template::topic).distinct()
                    .forEach(producer::partitionsFor);
            replay(producer, sends, hosts, templateDisks, signatures);
        }
    }

    private static List<Send> load(Path templates, int templateDisks, String hostPlaceholder) throws IOException {
        Map<Long, Send> byTime = new LinkedHashMap<>();
        try (BufferedReader in = Files.newBufferedReader(templates)) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                String[] fields = line.split("\t", 3);
                Send send = byTime.computeIfAbsent(Long.parseLong(fields[0]), at -> emptySend(at, templateDisks));
                send.byTemplateDisk().get(Integer.parseInt(fields[1])).add(Template.of(fields[2], hostPlaceholder));
            }
        }
        return new ArrayList<>(byTime.values());
    }

    private static Send emptySend(long atMs, int templateDisks) {
        List<List<Template>> byDisk = new ArrayList<>();
        for (int j = 0; j < templateDisks; j++) {
            byDisk.add(new ArrayList<>());
        }
        return new Send(atMs, byDisk);
    }

    private static String[] hostNames(int disks, String prefix, int disksPerHost) {
        String[] hosts = new String[disks];
        for (int i = 0; i < disks; i++) {
            hosts[i] = prefix + (i / disksPerHost);
        }
        return hosts;
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

    private static void replay(KafkaProducer<byte[], byte[]> producer, List<Send> sends, String[] hosts,
                               int templateDisks, HostSignatures signatures) throws InterruptedException {
        long sent = 0;
        long lastProgressMs = System.currentTimeMillis();
        long sentAtLastProgress = 0;
        for (Send send : sends) {
            long waitMs = send.atMs() - System.currentTimeMillis();
            if (waitMs > 0) {
                Thread.sleep(waitMs);
            }
            long records = sendAll(producer, send, hosts, templateDisks, signatures);
            sent += records;
            long doneMs = System.currentTimeMillis();
            System.out.printf("sent %d %d %d%n", send.atMs(), doneMs, records);
            System.out.flush();
            if (doneMs - lastProgressMs >= PROGRESS_EVERY_MS) {
                double rate = (sent - sentAtLastProgress) * 1000.0 / (doneMs - lastProgressMs);
                double behindS = (doneMs - send.atMs()) / 1000.0;
                System.err.printf("[fleet-replay] %,d disks: %,d records sent, %,.0f records/s, "
                        + "%.1f s behind the agents' clock%n", hosts.length, sent, rate, behindS);
                lastProgressMs = doneMs;
                sentAtLastProgress = sent;
            }
        }
        producer.flush();
    }

    private static long sendAll(KafkaProducer<byte[], byte[]> producer, Send send, String[] hosts, int templateDisks,
                                HostSignatures signatures) {
        long records = 0;
        for (int i = 0; i < hosts.length; i++) {
            byte[] host = hosts[i].getBytes(StandardCharsets.UTF_8);
            for (Template t : send.byTemplateDisk().get(i % templateDisks)) {
                byte[] key = (hosts[i] + "/" + t.disk()).getBytes(StandardCharsets.UTF_8);
                byte[] value = t.withHost(host);
                ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(t.topic(), key, value);
                if (signatures != null) {
                    record.headers().add(HostSignatures.HEADER,
                            signatures.sign(hosts[i], value).getBytes(StandardCharsets.US_ASCII));
                }
                producer.send(record);
                records++;
            }
        }
        return records;
    }

    private static JsonNode parse(String json) {
        try {
            return Json.parseObject(json);
        } catch (Exception e) {
            throw new IllegalArgumentException("a template line that is not a record: " + json, e);
        }
    }
}
