package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.RawRecord;
import io.iopipe.jobs.records.Topics;
import io.iopipe.jobs.testing.SchemaFiles;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;

/**
 * The agent records the job passes on to the accepted topics, which ClickHouse's raw
 * tables read: every record the contract accepts, as it was sent, and none it refuses.
 * The shared examples are the contract's: each invalid one breaks one rule.
 */
class AcceptedRecordsTest {
    private static final List<String> AGENT_RECORDS = List.of(DiskstatsSample.SCHEMA, HistRecord.SCHEMA, IoEvent.SCHEMA);

    @Test
    void passesOnEveryAgentRecordTheContractAcceptsAsSentAndNoneItRefuses() throws Exception {
        List<RawRecord> input = new ArrayList<>();
        Map<String, String> sentValid = new TreeMap<>();
        for (String schema : AGENT_RECORDS) {
            for (JsonNode valid : SchemaFiles.validExamples(schema)) {
                String text = valid.toString();
                sentValid.put(text, valid.get("host").asText() + "/" + valid.get("disk").asText());
                input.add(new RawRecord("valid " + schema, text));
            }
            for (JsonNode invalid : SchemaFiles.invalidExamples(schema)) {
                input.add(new RawRecord("invalid " + schema + ": " + invalid.get("why").asText(), invalid.get("record").toString()));
            }
        }

        Map<String, String> accepted = new TreeMap<>();
        List<String> refusedAtDecode = new ArrayList<>();
        for (OutputRecord r : run(input)) {
            if (r.acceptedInput) {
                assertEquals(Topics.acceptedOf(r.schema), Topics.of(r));
                assertEquals(null, accepted.put(r.json, r.key), "passed on once: " + r.json);
            } else if (DeadLetters.SCHEMA.equals(r.schema) && r.json.contains(DecodeRecords.STAGE)) {
                refusedAtDecode.add(r.json);
            }
        }

        assertEquals(sentValid, accepted, "every valid record, as sent and keyed host/disk");
        long invalid = AGENT_RECORDS.stream().mapToLong(s -> SchemaFiles.invalidExamples(s).size()).sum();
        assertEquals(invalid, refusedAtDecode.size(), "every invalid record a dead letter instead");
    }

    @Test
    void anAcceptedRecordGoesToItsAcceptedTopicNotBackToTheAgentTopic() {
        for (String schema : AGENT_RECORDS) {
            OutputRecord passedOn = OutputRecord.acceptedInput(schema, "web-17/sdb", "{}");
            assertEquals(Topics.acceptedOf(schema), Topics.of(passedOn));
            assertEquals(false, Topics.of(passedOn).equals(Topics.forRecord(schema)), schema);
        }
    }

    private static List<OutputRecord> run(List<RawRecord> input) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        List<OutputRecord> out = new ArrayList<>();
        try (CloseableIterator<OutputRecord> results = Pipeline.build(env.fromData(input), new Pipeline.Config())
                .executeAndCollect("accepted records")) {
            results.forEachRemaining(out::add);
        }
        return out;
    }
}
