package io.iopipe.jobs.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.Args;
import io.iopipe.jobs.records.HostSignatures;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.Topics;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * A fleet of any size made of a few template disks' records (iopipe/bench writes them from
 * iopipe/synthetic/fleet.py): fleet disk i sends what template disk i mod T sends, under
 * host {@code <host-prefix><i / disks-per-host>}. So a fleet of any size has the template
 * fleet's record rates and contents, at a cost per record of a copy, which a generator
 * running per disk in Python could not keep up with.
 *
 * <p>Template lines: {@code send_at_ms <TAB> template_disk <TAB> record JSON}, grouped by
 * send time; each record's host is the text given as --host-placeholder.
 *
 * <p>Options: --templates (file), --template-disks T, --disks N, --host-placeholder,
 * --host-prefix, --disks-per-host.
 */
final class TemplateFleet {
    /** One template record: its schema, topic and disk, and its JSON split around the host's value. */
    record Template(String schema, String topic, String disk, byte[] beforeHost, byte[] afterHost) {
        static Template of(String json, String hostPlaceholder) {
            JsonNode record = parse(json);
            int at = json.indexOf(hostPlaceholder);
            if (at < 0) {
                throw new IllegalArgumentException("a template record without host " + hostPlaceholder + ": " + json);
            }
            String schema = record.get("schema").asText();
            return new Template(schema, Topics.forRecord(schema), record.get("disk").asText(),
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
    record Send(long atMs, List<List<Template>> byTemplateDisk) {}

    /** Where a fleet disk's copy of a template record goes: the host it is under, its key (host/disk) and JSON. */
    interface RecordSink {
        void accept(Template template, String host, byte[] key, byte[] value);
    }

    final List<Send> sends;
    final int templateDisks;
    private final String hostPrefix;
    private final int disksPerHost;
    private final String[] hosts;
    private final byte[][] hostBytes;

    private TemplateFleet(List<Send> sends, int templateDisks, String hostPrefix, int disksPerHost, int disks) {
        this.sends = sends;
        this.templateDisks = templateDisks;
        this.hostPrefix = hostPrefix;
        this.disksPerHost = disksPerHost;
        this.hosts = hostNames(disks, hostPrefix, disksPerHost);
        this.hostBytes = new byte[hosts.length][];
        for (int i = 0; i < hosts.length; i++) {
            hostBytes[i] = hosts[i].getBytes(StandardCharsets.UTF_8);
        }
    }

    static TemplateFleet of(Args args) throws IOException {
        return of(args, "templates");
    }

    /** As {@link #of(Args)}, the templates from the file the option `templatesOption` names. */
    static TemplateFleet of(Args args, String templatesOption) throws IOException {
        int templateDisks = Integer.parseInt(args.required("template-disks"));
        String templates = args.required(templatesOption);
        List<Send> sends = load(Path.of(templates), templateDisks, args.required("host-placeholder"));
        if (sends.isEmpty()) {
            throw new IllegalArgumentException("no template records in " + templates);
        }
        return new TemplateFleet(sends, templateDisks, args.required("host-prefix"),
                Integer.parseInt(args.required("disks-per-host")), Integer.parseInt(args.required("disks")));
    }

    /** The same templates sent by a fleet of `disks` disks. */
    TemplateFleet withDisks(int disks) {
        return new TemplateFleet(sends, templateDisks, hostPrefix, disksPerHost, disks);
    }

    int disks() {
        return hosts.length;
    }

    long hostCount() {
        return Arrays.stream(hosts).distinct().count();
    }

    /** The sends of the templates' first `seconds`. */
    List<Send> firstSeconds(int seconds) {
        long firstMs = sends.get(0).atMs();
        if (sends.get(sends.size() - 1).atMs() < firstMs + (seconds - 1) * 1000L) {
            throw new IllegalArgumentException("the templates hold less than " + seconds + " s of records");
        }
        return sends.stream().filter(send -> send.atMs() < firstMs + seconds * 1000L).toList();
    }

    /** Every fleet disk's records of one send, disk by disk; returns how many. */
    long send(Send send, RecordSink sink) {
        long records = 0;
        for (int i = 0; i < hosts.length; i++) {
            records += send(send, i, sink);
        }
        return records;
    }

    /** Fleet disk i's records of one send: template disk i mod T's, under its host; returns how many. */
    long send(Send send, int disk, RecordSink sink) {
        List<Template> templates = send.byTemplateDisk().get(disk % templateDisks);
        for (Template t : templates) {
            byte[] key = (hosts[disk] + "/" + t.disk()).getBytes(StandardCharsets.UTF_8);
            sink.accept(t, hosts[disk], key, t.withHost(hostBytes[disk]));
        }
        return templates.size();
    }

    /**
     * What fleet disk `disk` sends in one send if it is flight-recording, besides its own
     * records: `perSecond` events of the second that ends then (the templates send once a
     * second), every I/O recorded (weight 1), each a read of its own, made from the first
     * event the disk's template sends; returns how many.
     */
    long recording(Send send, int disk, int perSecond, RecordSink sink) {
        if (sends.size() > 1 && sends.get(1).atMs() - sends.get(0).atMs() != 1000) {
            throw new IllegalStateException("templates sent every " + (sends.get(1).atMs() - sends.get(0).atMs())
                    + " ms: a flight recording is made a second at a time");
        }
        Template prototype = sends.stream().flatMap(s -> s.byTemplateDisk().get(disk % templateDisks).stream())
                .filter(t -> IoEvent.SCHEMA.equals(t.schema())).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("template disk " + disk % templateDisks + " sends no events"));
        byte[] key = (hosts[disk] + "/" + prototype.disk()).getBytes(StandardCharsets.UTF_8);
        ObjectNode event = (ObjectNode) parse(new String(prototype.withHost(hostBytes[disk]), StandardCharsets.UTF_8));
        long endNs = send.atMs() * 1_000_000L;
        for (int i = 0; i < perSecond; i++) {
            long completeNs = endNs - i * (1_000_000_000L / perSecond);
            event.put("op", "R").put("bytes", 4096).put("complete_ns", completeNs)
                    .put("issue_ns", completeNs - 4_000_000L - i % 7 * 1_000_000L).put("sector", 1_000_000L + 8L * i)
                    .put("sample_reason", "recorder").put("sample_weight", 1.0);
            sink.accept(prototype, hosts[disk], key, event.toString().getBytes(StandardCharsets.UTF_8));
        }
        return perSecond;
    }

    /** A record as its host's producer sends it: keyed host/disk, signed with the host's key when there are signatures. */
    static ProducerRecord<byte[], byte[]> record(String topic, String host, byte[] key, byte[] value,
                                                 HostSignatures signatures) {
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, key, value);
        if (signatures != null) {
            record.headers().add(HostSignatures.HEADER, signatures.sign(host, value).getBytes(StandardCharsets.US_ASCII));
        }
        return record;
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

    private static JsonNode parse(String json) {
        try {
            return Json.parseObject(json);
        } catch (Exception e) {
            throw new IllegalArgumentException("a template line that is not a record: " + json, e);
        }
    }
}
