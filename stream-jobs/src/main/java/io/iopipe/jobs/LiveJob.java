package io.iopipe.jobs;

import io.iopipe.jobs.io.KafkaClientConfig;
import io.iopipe.jobs.io.KafkaIo;
import io.iopipe.jobs.pipeline.DecodeRecords;
import io.iopipe.jobs.pipeline.Pipeline;
import io.iopipe.jobs.records.HostSignatures;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.PipelineTimings;
import io.iopipe.jobs.records.RawRecord;
import io.iopipe.jobs.records.Topics;
import java.nio.file.Path;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The live job: agent topics in Kafka → the pipeline → output topics, and the agent records
 * it accepted to their accepted topics (a sink of their own, chained to the decoding).
 * Options: --brokers host:port (default 127.0.0.1:9092), --group-id (default schema/topics.json's stream-jobs group),
 * --kafka-config PATH (default none: plaintext): a Java Kafka client properties file of how
 * to connect ({@link KafkaClientConfig}: security.protocol, sasl.*, ssl.*), read where the job
 * is submitted; its settings travel in the job graph, so the files they name
 * (ssl.truststore.location) must be at those paths in the cluster's containers;
 * --disk-idleness (ISO-8601, default {@link Pipeline.Config#diskIdleness}): how long a disk
 * is silent before its open windows close; --health-recovery (ISO-8601, default
 * {@link Pipeline.Config#healthRecovery}): how long a disk is quiet before its health steps
 * down a level, so a failing disk's ticket resolves after twice that; --signing-secret PATH:
 * the file of the fleet's master secret, with which every record must carry its host's
 * signature ({@link HostSignatures}); checked where the job is submitted and read again
 * where it runs, so the file must be at that path in the cluster's containers too, and the
 * secret never travels in the job graph. Without it the job starts only with --unsigned yes,
 * which takes records as their producers name their hosts, and says so in its log and in
 * its unsigned_ingestion metric.
 *
 * <p>Where state is kept and checkpointed, and how failed tasks restart, is the cluster's
 * configuration (infra/flink/start-flink.sh), so the same jar runs anywhere. Every operator
 * carries a uid, the source and sink too: a checkpoint or savepoint of one build restores
 * into the next.
 */
public final class LiveJob {
    /** The option that takes records without their hosts' signatures: never the default. */
    static final String UNSIGNED = "unsigned";
    static final String UNSIGNED_YES = "yes";

    private LiveJob() {}

    public static void main(String[] argv) throws Exception {
        Args args = new Args(argv);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        build(env, args.get("brokers", "127.0.0.1:9092"), KafkaClientConfig.of(args),
                args.get("group-id", Topics.consumerGroup("stream-jobs")), config(args));
        env.execute("iopipe live");
    }

    static Pipeline.Config config(Args args) {
        Pipeline.Config config = new Pipeline.Config();
        if (args.has("disk-idleness")) {
            config.diskIdleness = duration(args.get("disk-idleness", null), "--disk-idleness");
        }
        if (args.has("health-recovery")) {
            config.healthRecovery = duration(args.get("health-recovery", null), "--health-recovery");
        }
        config.signingSecret = signingSecret(args);
        return config;
    }

    /**
     * The master secret's file, or null where the command line says, in so many words, to
     * take records unsigned: a job started without either would let any producer speak for
     * any host, and nobody would have chosen that.
     */
    private static String signingSecret(Args args) {
        boolean unsigned = args.has(UNSIGNED);
        if (unsigned && !UNSIGNED_YES.equals(args.get(UNSIGNED, null))) {
            throw new IllegalArgumentException("--" + UNSIGNED + " " + args.get(UNSIGNED, null) + ": the only value is "
                    + UNSIGNED_YES);
        }
        if (args.has(HostSignatures.OPTION) == unsigned) {
            throw new IllegalArgumentException((unsigned ? "both --" + HostSignatures.OPTION + " and --" + UNSIGNED
                    : "neither --" + HostSignatures.OPTION + " nor --" + UNSIGNED) + ": give --" + HostSignatures.OPTION
                    + " FILE, the fleet's master secret (schema/signing.json), with which every record must carry its "
                    + "host's signature; or, on a stack nobody else can write to, --" + UNSIGNED + " " + UNSIGNED_YES
                    + " to take records as their producers name their hosts");
        }
        if (unsigned) {
            System.err.println("iopipe live: --" + UNSIGNED + " " + UNSIGNED_YES + ": records are taken unsigned, so any "
                    + "producer may speak for any host (the job's " + DecodeRecords.UNSIGNED_INGESTION + " metric is 1)");
            return null;
        }
        String file = args.get(HostSignatures.OPTION, null);
        HostSignatures.fromFile(Path.of(file));  // a bad file is named now, not by each task
        return file;
    }

    private static Duration duration(String text, String option) {
        try {
            Duration d = Duration.parse(text);
            if (!d.isNegative() && !d.isZero()) {
                return d;
            }
        } catch (DateTimeParseException e) {
            // said below
        }
        throw new IllegalArgumentException(option + " " + text + ": a positive ISO-8601 duration, such as PT30S or PT1M");
    }

    static void build(StreamExecutionEnvironment env, String brokers, KafkaClientConfig kafka, String groupId,
                      Pipeline.Config config) {
        // Checkpoints commit Kafka offsets and flush the at-least-once sink.
        env.enableCheckpointing(PipelineTimings.CHECKPOINT_INTERVAL.toMillis());
        DataStream<RawRecord> input = env.fromSource(
                KafkaIo.source(brokers, kafka, groupId, DecodeRecords.AGENT_RECORDS),
                WatermarkStrategy.noWatermarks(), "agent topics").uid("agent-topics");
        Pipeline.Outputs output = Pipeline.outputs(input, config);
        output.derived().sinkTo(KafkaIo.sink(brokers, kafka)).name("output topics").uid("output-topics");
        output.accepted().sinkTo(KafkaIo.sink(brokers, kafka)).name("accepted topics").uid("accepted-topics");
    }
}
