package io.iopipe.jobs.io;

import io.iopipe.jobs.records.HostSignatures;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.RawRecord;
import io.iopipe.jobs.records.Topics;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;

/**
 * Kafka source and sink of the live job. Topics are named by schema/topics.json; how the
 * clients connect (TLS, SASL) comes from a {@link KafkaClientConfig}.
 */
public final class KafkaIo {
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
                .setDeserializer(new WithSource())
                .setProperty("commit.offsets.on.checkpoint", "true")
                .build();
    }

    /** One topic from its start to the end it had when the job started; for benchmarks. */
    public static KafkaSource<RawRecord> boundedSource(String brokers, KafkaClientConfig kafka, String topic) {
        return KafkaSource.<RawRecord>builder()
                .setProperties(kafka.properties())
                .setBootstrapServers(brokers)
                .setGroupId("bench-" + System.nanoTime())
                .setTopics(topic)
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setBounded(OffsetsInitializer.latest())
                .setDeserializer(new WithSource())
                .build();
    }

    /**
     * One sink for everything the graph emits: each record goes to its schema's topic (an
     * accepted agent record to its accepted topic), keyed host/disk. A write counts once every in-sync copy has it (acks=all; the topics need
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
                .build();
    }

    static final class WithSource implements KafkaRecordDeserializationSchema<RawRecord> {
        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<RawRecord> out) {
            String text = record.value() == null ? "" : new String(record.value(), StandardCharsets.UTF_8);
            Header signature = record.headers().lastHeader(HostSignatures.HEADER);
            out.collect(new RawRecord(record.topic() + "/" + record.partition() + "@" + record.offset(), text,
                    signature == null || signature.value() == null ? null
                            : new String(signature.value(), StandardCharsets.US_ASCII)));
        }

        @Override
        public TypeInformation<RawRecord> getProducedType() {
            return TypeInformation.of(RawRecord.class);
        }
    }

    static final class RouteBySchema implements KafkaRecordSerializationSchema<OutputRecord> {
        @Override
        public ProducerRecord<byte[], byte[]> serialize(OutputRecord r, KafkaSinkContext ctx, Long timestamp) {
            return new ProducerRecord<>(Topics.of(r),
                    r.key.getBytes(StandardCharsets.UTF_8), r.json.getBytes(StandardCharsets.UTF_8));
        }
    }
}
