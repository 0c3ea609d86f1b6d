package io.iopipe.jobs.io;

import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.HostSignatures;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.RawRecord;
import io.iopipe.jobs.records.Topics;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.metrics.Counter;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;

/**
 * Kafka source and sink of the live job. Topics are named by schema/topics.json; how the
 * clients connect (TLS, SASL) comes from a {@link KafkaClientConfig}.
 */
public final class KafkaIo {
    /** The sink producer's largest request (Kafka's default, stated): the brokers take a message of this size. */
    static final int MAX_REQUEST_BYTES = Topics.maxRequestBytes();
    /**
     * How much of a partition's records the sink producer sends at once, and how long it waits
     * for them. Kafka's defaults (16 KiB, 5 ms) make a request of every dozen agent records
     * the job passes on: at 10,000 disks that is hundreds of requests a second, each
     * compressed apart, waking the producer's sender and each broker's network threads. The
     * windows are 10 s long and a checkpoint flushes whatever waits: 50 ms costs nothing.
     */
    static final int SINK_BATCH_BYTES = 256 * 1024;
    static final int SINK_LINGER_MS = 50;
    /** What one record may take of a request: the rest is for the batch's and the record's framing and headers. */
    static final int MAX_RECORD_BYTES = Topics.maxRecordBytes();

    private KafkaIo() {}

    /**
     * Reads the topics of the given record schemas. A new consumer group starts at the
     * earliest offset so no record produced before the job started is skipped; a restart
     * resumes from the group's committed offsets.
     */
    public static KafkaSource<RawRecord> source(String brokers, KafkaClientConfig kafka, String groupId,
                                                List<String> recordSchemas) {
        return KafkaSource.<RawRecord>builder()
                .setProperties(kafka.properties())
                .setBootstrapServers(brokers)
                .setGroupId(groupId)
                .setTopics(recordSchemas.stream().map(Topics::forRecord).toList())
                .setStartingOffsets(OffsetsInitializer.committedOffsets(
                        org.apache.kafka.clients.consumer.OffsetResetStrategy.EARLIEST))
                .setDeserializer(new WithSource(true))
                .setProperty("commit.offsets.on.checkpoint", "true")
                .build();
    }

    /**
     * One topic from its start to the end it had when the job started; for benchmarks, whose
     * one topic holds every agent record and stands in for each one's own topic.
     */
    public static KafkaSource<RawRecord> boundedSource(String brokers, KafkaClientConfig kafka, String topic) {
        return KafkaSource.<RawRecord>builder()
                .setProperties(kafka.properties())
                .setBootstrapServers(brokers)
                .setGroupId("bench-" + System.nanoTime())
                .setTopics(topic)
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setBounded(OffsetsInitializer.latest())
                .setDeserializer(new WithSource(false))
                .build();
    }

    /**
     * A sink for what the graph emits (the live job has one for the accepted agent records, one
     * for the rest): each record goes to its schema's topic (an accepted agent record to its
     * accepted topic, as it came), keyed host/disk. A write counts once every in-sync copy has it (acks=all; the topics need
     * min.insync.replicas of them), and the producer's retries never write it twice
     * (idempotence); a checkpoint completes only when everything before it is acknowledged.
     */
    public static KafkaSink<OutputRecord> sink(String brokers, KafkaClientConfig kafka) {
        return KafkaSink.<OutputRecord>builder()
                .setKafkaProducerConfig(kafka.properties())
                .setBootstrapServers(brokers)
                .setRecordSerializer(new RouteBySchema())
                .setDeliveryGuarantee(DeliveryGuarantee.AT_LEAST_ONCE)
                .setProperty("acks", "all")
                .setProperty("enable.idempotence", "true")
                .setProperty("compression.type", "lz4")
                .setProperty("max.request.size", String.valueOf(MAX_REQUEST_BYTES))
                .setProperty("batch.size", String.valueOf(SINK_BATCH_BYTES))
                .setProperty("linger.ms", String.valueOf(SINK_LINGER_MS))
                .build();
    }

    static final class WithSource implements KafkaRecordDeserializationSchema<RawRecord> {
        /** Whether a record is held to the topic it was read from (DecodeRecords takes each schema from its own). */
        private final boolean ownTopics;

        WithSource(boolean ownTopics) {
            this.ownTopics = ownTopics;
        }

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<RawRecord> out) {
            byte[] bytes = record.value() == null ? new byte[0] : record.value();
            Header signature = record.headers().lastHeader(HostSignatures.HEADER);
            out.collect(RawRecord.fromTopic(ownTopics ? record.topic() : null,
                    record.topic() + "/" + record.partition() + "@" + record.offset(), bytes,
                    signature == null || signature.value() == null ? null
                            : new String(signature.value(), StandardCharsets.US_ASCII)));
        }

        @Override
        public TypeInformation<RawRecord> getProducedType() {
            return TypeInformation.of(RawRecord.class);
        }
    }

    /**
     * Each record to its schema's topic. One too large to send becomes a dead letter saying
     * so, counted in records_too_large_total: a producer that cannot send a record fails
     * the job, which restarts on the same input and fails again, stalling every host.
     */
    static final class RouteBySchema implements KafkaRecordSerializationSchema<OutputRecord> {
        private transient Counter tooLarge;

        @Override
        public void open(SerializationSchema.InitializationContext context, KafkaSinkContext sinkContext) {
            tooLarge = context.getMetricGroup().counter("records_too_large_total");
        }

        @Override
        public ProducerRecord<byte[], byte[]> serialize(OutputRecord r, KafkaSinkContext ctx, Long timestamp) {
            ProducerRecord<byte[], byte[]> record = record(r);
            int bytes = record.key().length + record.value().length;
            if (bytes <= MAX_RECORD_BYTES) {
                return record;
            }
            if (tooLarge != null) {
                tooLarge.inc();
            }
            return record(DeadLetters.of("stream-jobs/sink", r.key, "too large to send: " + bytes + " bytes of " + r.schema
                    + ", over the " + MAX_RECORD_BYTES + " a record may take", r.text(), DeadLetters.wallClockNs()));
        }

        private static ProducerRecord<byte[], byte[]> record(OutputRecord r) {
            return new ProducerRecord<>(Topics.of(r), r.key.getBytes(StandardCharsets.UTF_8), r.utf8());
        }
    }
}
