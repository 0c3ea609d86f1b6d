package io.iopipe.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.iopipe.jobs.io.KafkaClientConfig;
import io.iopipe.jobs.pipeline.DecodeRecords;
import io.iopipe.jobs.pipeline.Pipeline;
import io.iopipe.jobs.records.EventBatch;
import io.iopipe.jobs.records.IntervalRecord;
import io.iopipe.jobs.records.PipelineTimings;
import io.iopipe.jobs.records.Topics;
import io.iopipe.jobs.testing.KafkaSettings;
import io.iopipe.jobs.testing.SchemaFiles;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.connector.kafka.lineage.KafkaDatasetFacet;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.lineage.LineageDataset;
import org.apache.flink.streaming.api.transformations.PhysicalTransformation;
import org.apache.flink.streaming.api.transformations.SinkTransformation;
import org.apache.flink.streaming.api.transformations.SourceTransformation;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LiveJobTest {
    /**
     * State is restored by operator uid: an operator without one gets an id from its place
     * in the graph, and a checkpoint of this build would not restore into one that adds an
     * operator before it.
     */
    @Test
    void everyOperatorOfTheLiveJobHasItsOwnUid() {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        LiveJob.build(env, "127.0.0.1:1", KafkaClientConfig.NONE, "uid-test", new Pipeline.Config());
        List<String> missing = new ArrayList<>();
        List<String> uids = new ArrayList<>();
        for (Transformation<?> t : reachable(env.getTransformations())) {
            if (t instanceof PhysicalTransformation<?>) {
                if (t.getUid() == null) {
                    missing.add(t.getName());
                } else {
                    uids.add(t.getUid());
                }
            }
        }
        assertEquals(List.of(), missing, "operators without a uid");
        assertEquals(uids.size(), new HashSet<>(uids).size(), "uids are unique: " + uids);
        assertTrue(uids.containsAll(List.of("agent-topics", "output-topics", "accepted-topics")), uids.toString());
    }

    /** The topics of every agent record the graph decodes, the batched ones too, and no other. */
    @Test
    void theJobReadsTheTopicOfEachAgentRecordItDecodes() {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        LiveJob.build(env, "127.0.0.1:1", KafkaClientConfig.NONE, "topics-test", new Pipeline.Config());
        List<String> topics = new ArrayList<>();
        for (Transformation<?> t : reachable(env.getTransformations())) {
            if (t instanceof SourceTransformation<?, ?, ?> source) {
                for (LineageDataset read : ((KafkaSource<?>) source.getSource()).getLineageVertex().datasets()) {
                    read.facets().values().stream().filter(KafkaDatasetFacet.class::isInstance)
                            .forEach(facet -> topics.addAll(((KafkaDatasetFacet) facet).getTopicIdentifier().getTopics()));
                }
            }
        }
        assertEquals(Set.copyOf(DecodeRecords.AGENT_RECORDS.stream().map(Topics::forRecord).toList()), Set.copyOf(topics));
        assertTrue(topics.containsAll(List.of(Topics.forRecord(IntervalRecord.SCHEMA), Topics.forRecord(EventBatch.SCHEMA))),
                topics.toString());
    }

    @Test
    void theJobCheckpointsAsOftenAsPipelineJsonSays() {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        LiveJob.build(env, "127.0.0.1:1", KafkaClientConfig.NONE, "checkpoint-test", new Pipeline.Config());
        long stated = SchemaFiles.pipeline().get("checkpoint_interval_s").asLong();
        assertEquals(Duration.ofSeconds(stated).toMillis(), env.getCheckpointConfig().getCheckpointInterval());
    }

    @Test
    void theJobsKafkaSourceAndSinkConnectAsTheKafkaConfigSays(@TempDir Path dir) {
        KafkaClientConfig kafka = KafkaClientConfig.load(KafkaSettings.write(dir, KafkaSettings.SASL_SSL));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        LiveJob.build(env, "127.0.0.1:1", kafka, "settings-test", new Pipeline.Config());
        int clients = 0;
        for (Transformation<?> t : reachable(env.getTransformations())) {
            if (t instanceof SourceTransformation<?, ?, ?> source) {
                KafkaSettings.assertCarries(kafka, KafkaSettings.of((KafkaSource<?>) source.getSource()));
                clients++;
            } else if (t instanceof SinkTransformation<?, ?> sink) {
                KafkaSettings.assertCarries(kafka, KafkaSettings.of((KafkaSink<?>) sink.getSink()));
                clients++;
            }
        }
        assertEquals(3, clients, "the agent topics' source, the output topics' sink and the accepted topics'");
    }

    @Test
    void recordsAreTakenUnsignedOnlyWhenTheCommandLineSaysSo() {
        for (String[] argv : List.of(new String[0], new String[] {"--signing-secret", "/s", "--unsigned", "yes"},
                new String[] {"--unsigned", "true"})) {
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> LiveJob.config(new Args(argv)), String.join(" ", argv));
            assertTrue(refused.getMessage().contains("--unsigned"), refused.getMessage());
        }
        assertTrue(assertThrows(IllegalArgumentException.class, () -> LiveJob.config(new Args(new String[0])))
                .getMessage().contains("give --signing-secret FILE"));
        assertEquals(null, unsigned().signingSecret);
    }

    /** The job's options that take records unsigned, as a test of another option gives them. */
    private static Pipeline.Config unsigned(String... more) {
        List<String> argv = new ArrayList<>(List.of("--unsigned", "yes"));
        argv.addAll(List.of(more));
        return LiveJob.config(new Args(argv.toArray(String[]::new)));
    }

    @Test
    void theDiskIdlenessIsAnOptionAndABadOneSaysWhatItTakes() {
        assertEquals(Duration.ofSeconds(20), unsigned("--disk-idleness", "PT20S").diskIdleness);
        assertEquals(new Pipeline.Config().diskIdleness, unsigned().diskIdleness);
        for (String bad : List.of("20", "PT0S", "-PT1M")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> unsigned("--disk-idleness", bad));
            assertTrue(e.getMessage().contains("such as PT30S"), e.getMessage());
        }
    }

    @Test
    void theHealthRecoveryTimeIsAnOption() {
        assertEquals(Duration.ofMinutes(1), unsigned("--health-recovery", "PT1M").healthRecovery);
        assertEquals(PipelineTimings.HEALTH_RECOVERY, unsigned().healthRecovery);
        assertThrows(IllegalArgumentException.class, () -> unsigned("--health-recovery", "PT0S"));
    }

    private static Set<Transformation<?>> reachable(List<Transformation<?>> sinks) {
        Set<Transformation<?>> seen = new HashSet<>();
        Deque<Transformation<?>> todo = new ArrayDeque<>(sinks);
        while (!todo.isEmpty()) {
            Transformation<?> t = todo.pop();
            if (seen.add(t)) {
                todo.addAll(t.getInputs());
            }
        }
        return seen;
    }
}
