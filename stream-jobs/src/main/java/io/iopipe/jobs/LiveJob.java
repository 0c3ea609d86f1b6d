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
 */
public final class LiveJob {
    static final long CHECKPOINT_INTERVAL_MS = 10_000;

    private LiveJob() {}

    public static void main(String[] argv) throws Exception {
        Args args = new Args(argv);
        String brokers = args.get("brokers", "127.0.0.1:9092");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        // Checkpoints commit Kafka offsets and flush the at-least-once sink.
        env.enableCheckpointing(CHECKPOINT_INTERVAL_MS);
        DataStream<RawRecord> input = env.fromSource(
                KafkaIo.source(brokers, args.get("group-id", "iopipe-stream-jobs"), List.of(DiskstatsSample.SCHEMA, HistRecord.SCHEMA, IoEvent.SCHEMA)),
                WatermarkStrategy.noWatermarks(), "agent topics");
        DataStream<OutputRecord> output = Pipeline.build(input, new Pipeline.Config());
        output.sinkTo(KafkaIo.sink(brokers)).name("output topics").uid("output-topics");
        env.execute("iopipe live");
    }
}
