package io.iopipe.jobs;

import io.iopipe.jobs.io.KafkaIo;
import io.iopipe.jobs.pipeline.Pipeline;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.RawRecord;
import java.util.List;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The live job: agent topics in Kafka → the pipeline → output topics.
 * Options: --brokers host:port (default 127.0.0.1:9092), --group-id (default iopipe-stream-jobs).
 *
 * <p>Where state is kept and checkpointed, and how failed tasks restart, is the cluster's
 * configuration (infra/flink/start-flink.sh), so the same jar runs anywhere. Every operator
 * carries a uid, the source and sink too: a checkpoint or savepoint of one build restores
 * into the next.
 */
public final class LiveJob {
    static final long CHECKPOINT_INTERVAL_MS = 10_000;

    private LiveJob() {}

    public static void main(String[] argv) throws Exception {
        Args args = new Args(argv);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        build(env, args.get("brokers", "127.0.0.1:9092"), args.get("group-id", "iopipe-stream-jobs"));
        env.execute("iopipe live");
    }

    static void build(StreamExecutionEnvironment env, String brokers, String groupId) {
        // Checkpoints commit Kafka offsets and flush the at-least-once sink.
        env.enableCheckpointing(CHECKPOINT_INTERVAL_MS);
        DataStream<RawRecord> input = env.fromSource(
                KafkaIo.source(brokers, groupId, List.of(DiskstatsSample.SCHEMA, HistRecord.SCHEMA, IoEvent.SCHEMA)),
                WatermarkStrategy.noWatermarks(), "agent topics").uid("agent-topics");
        DataStream<OutputRecord> output = Pipeline.build(input, new Pipeline.Config());
        output.sinkTo(KafkaIo.sink(brokers)).name("output topics").uid("output-topics");
    }
}
