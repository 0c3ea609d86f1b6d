package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.HostSignatures;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.RawRecord;
import io.iopipe.jobs.records.Topics;
import io.iopipe.jobs.testing.SchemaFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent records the job passes on to the accepted topics, which ClickHouse's raw
 * tables read: every record the contract accepts, as it was sent, and none it refuses.
 * The shared examples are the contract's: each invalid one breaks one rule.
 */
class AcceptedRecordsTest {
    private static final List<String> AGENT_RECORDS = DecodeRecords.AGENT_RECORDS;
    private static final String SECRET_HEX = "3c".repeat(32);
    private static final HostSignatures SIGNATURES = HostSignatures.ofSecret(HexFormat.of().parseHex(SECRET_HEX));

    /** The job's settings with the master secret, written to a file in {@code dir}. */
    private static Pipeline.Config withMasterSecret(Path dir) throws IOException {
        Path secretFile = dir.resolve("signing.secret");
        Files.writeString(secretFile, SECRET_HEX + "\n");
        Pipeline.Config config = new Pipeline.Config();
        config.signingSecret = secretFile.toString();
        return config;
    }

    /**
     * Each example is read off its record's topic, as the live job reads it: an invalid
     * interval whose schema says io.diskstats.v1 is a valid diskstats sample (whose schema
     * lets a record carry more fields), and what refuses it is being on the intervals' topic.
     */
    @Test
    void passesOnEveryAgentRecordTheContractAcceptsAsSentAndNoneItRefuses() throws Exception {
        List<RawRecord> input = new ArrayList<>();
        Map<String, String> sentValid = new TreeMap<>();
        for (String schema : AGENT_RECORDS) {
            String topic = Topics.forRecord(schema);
            for (JsonNode valid : SchemaFiles.validExamples(schema)) {
                String text = valid.toString();
                sentValid.put(text, valid.get("host").asText() + "/" + valid.get("disk").asText());
                input.add(RawRecord.fromTopic(topic, "valid " + schema, bytes(text), null));
            }
            for (JsonNode invalid : SchemaFiles.invalidExamples(schema)) {
                input.add(RawRecord.fromTopic(topic, "invalid " + schema + ": " + invalid.get("why").asText(),
                        bytes(invalid.get("record").toString()), null));
            }
        }

        Map<String, String> accepted = new TreeMap<>();
        List<String> refusedAtDecode = new ArrayList<>();
        for (OutputRecord r : run(input)) {
            if (r.acceptedInput) {
                assertEquals(Topics.acceptedOf(r.schema), Topics.of(r));
                assertEquals(null, accepted.put(r.text(), r.key), "passed on once: " + r.text());
            } else if (DeadLetters.SCHEMA.equals(r.schema) && r.text().contains(DecodeRecords.STAGE)) {
                refusedAtDecode.add(r.text());
            }
        }

        assertEquals(sentValid, accepted, "every valid record, as sent and keyed host/disk");
        long invalid = AGENT_RECORDS.stream().mapToLong(s -> SchemaFiles.invalidExamples(s).size()).sum();
        assertEquals(invalid, refusedAtDecode.size(), "every invalid record a dead letter instead");
    }

    @Test
    void anAcceptedRecordGoesToItsAcceptedTopicNotBackToTheAgentTopic() {
        for (String schema : AGENT_RECORDS) {
            OutputRecord passedOn = OutputRecord.acceptedInput(schema, "web-17/sdb", new RawRecord("test", "{}"));
            assertEquals(Topics.acceptedOf(schema), Topics.of(passedOn));
            assertEquals(false, Topics.of(passedOn).equals(Topics.forRecord(schema)), schema);
        }
    }

    /**
     * With the master secret, a record is taken only with the signature of the host it
     * names: one a producer signed with its own key but wrote for another host, or sent
     * unsigned, or signed whole with a second record after its own, is a dead letter saying
     * so, and nothing of it goes further.
     */
    @Test
    void withTheMasterSecretOnlyARecordSignedByItsOwnHostIsTaken(@TempDir Path dir) throws Exception {
        List<RawRecord> input = new ArrayList<>();
        Map<String, String> signedByOwnHost = new TreeMap<>();
        for (String schema : AGENT_RECORDS) {
            for (JsonNode valid : SchemaFiles.validExamples(schema)) {
                String own = valid.toString();
                String host = valid.get("host").asText();
                input.add(new RawRecord("own " + schema, own, SIGNATURES.sign(host, bytes(own))));
                signedByOwnHost.put(own, host + "/" + valid.get("disk").asText());
                String forged = ((ObjectNode) valid.deepCopy()).put("host", "victim-" + host).toString();
                input.add(new RawRecord("forged " + schema, forged, SIGNATURES.sign(host, bytes(forged))));
                input.add(new RawRecord("unsigned " + schema, ((ObjectNode) valid.deepCopy()).put("host", "quiet-" + host).toString()));
                // Signed whole by its own host, a second record after the first names another.
                String smuggling = own + ((ObjectNode) valid.deepCopy()).put("host", "smuggled-" + host);
                input.add(new RawRecord("smuggling " + schema, smuggling, SIGNATURES.sign(host, bytes(smuggling))));
            }
        }
        Pipeline.Config config = withMasterSecret(dir);

        Map<String, String> accepted = new TreeMap<>();
        Map<String, Integer> refusedAs = new TreeMap<>();
        for (OutputRecord r : run(input, config)) {
            JsonNode out = Json.MAPPER.readTree(r.text());
            if (r.acceptedInput) {
                accepted.put(r.text(), r.key);
            } else if (DeadLetters.SCHEMA.equals(r.schema) && out.get("reason").asText().startsWith("unverified host: ")) {
                refusedAs.merge(out.get("source").asText().split(" ")[0], 1, Integer::sum);
            } else if (DeadLetters.SCHEMA.equals(r.schema) && out.get("reason").asText().startsWith("more than one JSON value")) {
                refusedAs.merge(out.get("source").asText().split(" ")[0], 1, Integer::sum);
            } else {
                assertFalse(r.text().contains("victim-") || r.text().contains("quiet-") || r.text().contains("smuggled-"),
                        "went further: " + r.text());
            }
        }

        assertEquals(signedByOwnHost, accepted, "every record signed by its own host, and only those");
        int perKind = signedByOwnHost.size();
        assertEquals(Map.of("forged", perKind, "unsigned", perKind, "smuggling", perKind), refusedAs);
    }

    /**
     * A signature covers a record's schema, which topics.json gives one topic: a record
     * signed by its own host, read off its topic and written to another, is refused there.
     */
    @Test
    void aSignedRecordReplayedOntoAnotherTopicIsRefused(@TempDir Path dir) throws Exception {
        List<RawRecord> input = new ArrayList<>();
        Set<String> onItsTopic = new TreeSet<>();
        int replays = 0;
        for (String schema : AGENT_RECORDS) {
            for (JsonNode valid : SchemaFiles.validExamples(schema)) {
                String text = valid.toString();
                String signature = SIGNATURES.sign(valid.get("host").asText(), bytes(text));
                for (String topic : AGENT_RECORDS.stream().map(Topics::forRecord).toList()) {
                    input.add(RawRecord.fromTopic(topic, topic + "/0@" + input.size(), bytes(text), signature));
                    if (topic.equals(Topics.forRecord(schema))) {
                        onItsTopic.add(text);
                    } else {
                        replays++;
                    }
                }
            }
        }
        Pipeline.Config config = withMasterSecret(dir);

        Set<String> accepted = new TreeSet<>();
        int refused = 0;
        for (OutputRecord r : run(input, config)) {
            if (r.acceptedInput) {
                assertTrue(accepted.add(r.text()), "taken twice: " + r.text());
            } else if (DeadLetters.SCHEMA.equals(r.schema)) {
                JsonNode out = Json.MAPPER.readTree(r.text());
                assertTrue(out.get("reason").asText().contains(" record on topic "), out.toString());
                refused++;
            }
        }
        assertEquals(onItsTopic, accepted);
        assertEquals(replays, refused);
    }

    /**
     * Every shared example, the invalid ones inflated to a megabyte in the field at fault
     * (or the host, where that field holds no text), the valid ones in a label key where
     * they have labels, else in the host; read as they are and with the master secret (none
     * is signed): whatever the reasons quote, each dead letter keeps within its schema's
     * bounds, and no output but the input passed on is larger than a few kilobytes.
     */
    @Test
    void noInputMakesADeadLetterBeyondItsBounds(@TempDir Path dir) throws Exception {
        String megabyte = "x".repeat(1 << 20);
        List<RawRecord> input = new ArrayList<>();
        for (String schema : AGENT_RECORDS) {
            for (JsonNode invalid : SchemaFiles.invalidExamples(schema)) {
                ObjectNode record = (ObjectNode) invalid.get("record").deepCopy();
                String field = invalid.get("field").asText().split("[./]")[0];
                record.put(record.path(field).isTextual() ? field : "host", megabyte);
                input.add(new RawRecord("inflated " + schema + ": " + invalid.get("why").asText(), record.toString()));
            }
            for (JsonNode valid : SchemaFiles.validExamples(schema)) {
                ObjectNode record = (ObjectNode) valid.deepCopy();
                if (record.path("labels").isObject()) {
                    ((ObjectNode) record.get("labels")).put(megabyte, "r1");
                } else {
                    record.put("host", megabyte);
                }
                input.add(new RawRecord("inflated " + schema, record.toString()));
            }
        }
        Pipeline.Config signed = withMasterSecret(dir);

        for (Pipeline.Config config : List.of(new Pipeline.Config(), signed)) {
            long letters = 0;
            for (OutputRecord r : run(input, config)) {
                assertTrue(r.acceptedInput || r.key.length() + r.text().length() <= 8 * 1024, r.schema + " of " + r.text().length());
                if (DeadLetters.SCHEMA.equals(r.schema)) {
                    assertEquals(Set.of(), SchemaFiles.violations(DeadLetters.SCHEMA, r.text()), r.text().substring(0, 300));
                    letters++;
                }
            }
            assertEquals(input.size(), letters, "each inflated example a dead letter");
        }
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static List<OutputRecord> run(List<RawRecord> input) throws Exception {
        return run(input, new Pipeline.Config());
    }

    private static List<OutputRecord> run(List<RawRecord> input, Pipeline.Config config) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        List<OutputRecord> out = new ArrayList<>();
        try (CloseableIterator<OutputRecord> results = Pipeline.outputs(env.fromData(input), config).all()
                .executeAndCollect("accepted records")) {
            results.forEachRemaining(out::add);
        }
        return out;
    }
}
