package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.DecodeException;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.EventBatch;
import io.iopipe.jobs.records.EventBatchColumns;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.HostSignatures;
import io.iopipe.jobs.records.IntervalRecord;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.RawRecord;
import io.iopipe.jobs.records.RecordDecoder;
import io.iopipe.jobs.records.Topics;
import io.iopipe.jobs.records.WindowDecoder;
import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Decodes raw lines by their `schema`; anything invalid becomes a dead letter with the
 * reason. A valid agent record also goes, as it was sent, to the accepted side output
 * (what ClickHouse's raw tables store). A batched record (io.interval.v1,
 * io.eventbatch.v1) goes on as the records it batches, each as if sent alone, and is
 * accepted or dead-lettered whole: one record in the counters either way. Its parts go on
 * together as one record ({@link DiskRecord#parts()}): an interval's sample and histograms
 * to its disk's deltas and on to its windows, a batch's events to its windows.
 * Windows given as input (io.window.v1) go to their own side output, to be compared with
 * their peers.
 * Valid records of a kind this graph does not consume (the agent's own reports, the jobs'
 * outputs fed back) are counted and passed over.
 *
 * <p>Given the file of the fleet's master secret, every record, whatever its schema, must
 * carry the signature of the host it names ({@link HostSignatures}); one that does not is
 * dead-lettered with the reason and counted in records_unverified_host_total, before
 * anything reads it.
 */
public class DecodeRecords extends ProcessFunction<RawRecord, DiskRecord> {
    static final String STAGE = "stream-jobs/decode";
    /** The agent records decoded here into the disk records they hold: the live job reads their topics. */
    public static final List<String> AGENT_RECORDS = List.of(DiskstatsSample.SCHEMA, HistRecord.SCHEMA, IoEvent.SCHEMA,
            IntervalRecord.SCHEMA, EventBatch.SCHEMA);
    /** The gauge that is 1 while records are taken without their hosts' signatures. */
    public static final String UNSIGNED_INGESTION = "unsigned_ingestion";
    private static final String EVENT_BATCH_TOPIC = Topics.forRecord(EventBatch.SCHEMA);
    private final String signingSecret;
    private transient HostSignatures signatures;
    private transient EventBatchColumns eventColumns;
    private transient Counter decoded;
    private transient Counter deadLettered;
    private transient Counter unverified;
    private transient Counter passedOver;

    /** `signingSecret`: the master secret's file, or null to take records unsigned. */
    public DecodeRecords(String signingSecret) {
        this.signingSecret = signingSecret;
    }

    @Override
    public void open(OpenContext openContext) {
        signatures = signingSecret == null ? null : HostSignatures.fromFile(Path.of(signingSecret));
        eventColumns = new EventBatchColumns();
        decoded = getRuntimeContext().getMetricGroup().counter("records_decoded_total");
        deadLettered = getRuntimeContext().getMetricGroup().counter("records_dead_lettered_total");
        unverified = getRuntimeContext().getMetricGroup().counter("records_unverified_host_total");
        passedOver = getRuntimeContext().getMetricGroup().counter("records_not_consumed_total");
        // 1 where any producer may speak for any host (the live job's --unsigned yes).
        int unsigned = signatures == null ? 1 : 0;
        getRuntimeContext().getMetricGroup().gauge(UNSIGNED_INGESTION, (Gauge<Integer>) () -> unsigned);
    }

    @Override
    public void processElement(RawRecord raw, Context ctx, Collector<DiskRecord> out) {
        long nowNs = DeadLetters.wallClockNs();
        if (tookEventBatchOffItsBytes(raw, ctx, nowNs, out)) {
            return;
        }
        try {
            JsonNode node = raw.bytes != null ? Json.parseObject(raw.bytes) : Json.parseObject(raw.text);
            JsonNode host = node.get("host");
            if (!signedByItsHost(host != null && host.isTextual() ? host.asText() : null, raw, ctx, nowNs)) {
                return;
            }
            String schema = RecordDecoder.schemaOf(node);
            onItsOwnTopic(schema, raw);
            if (WindowDecoder.SCHEMA.equals(schema)) {
                WindowDecoder.sample(node, nowNs).ifPresent(w -> ctx.output(Pipeline.INPUT_WINDOWS, w));
                decoded.inc();
                return;
            }
            String key = emitDecoded(schema, node, raw.source, nowNs, out);
            if (key == null) {
                if (!Pipeline.isKnownRecord(schema)) {
                    throw new DecodeException("unknown schema: " + schema);
                }
                passedOver.inc();
                return;
            }
            decoded.inc();
            ctx.output(Pipeline.ACCEPTED, OutputRecord.acceptedInput(schema, key, raw));
        } catch (DecodeException e) {
            deadLettered.inc();
            ctx.output(Pipeline.DEAD_LETTERS, DeadLetters.of(STAGE, raw.source, e.getMessage(), raw.text(), nowNs));
        }
    }

    /**
     * An event batch off its topic (or read from a file), decoded without a parse tree
     * where its columns reader vouches for it, and taken as the tree's decoding would: its
     * host's signature checked, its events emitted, the record accepted. False, nothing
     * done, for any other record, or one the tree decoder is to decode or refuse.
     */
    private boolean tookEventBatchOffItsBytes(RawRecord raw, Context ctx, long nowNs, Collector<DiskRecord> out) {
        if (raw.topic != null && !raw.topic.equals(EVENT_BATCH_TOPIC)) {
            return false;
        }
        EventBatch batch = RecordDecoder.eventBatchOffBytes(raw.utf8(), nowNs, eventColumns);
        if (batch == null) {
            return false;
        }
        if (signedByItsHost(batch.host, raw, ctx, nowNs)) {
            emitParts(batch, out);
            decoded.inc();
            ctx.output(Pipeline.ACCEPTED, OutputRecord.acceptedInput(EventBatch.SCHEMA, batch.key(), raw));
        }
        return true;
    }

    /**
     * Decodes an agent record whole and only then emits the disk records it holds, so that
     * none of a refused batch goes on; its disk's key, or null for a record not decoded here.
     */
    private static String emitDecoded(String schema, JsonNode node, String source, long nowNs, Collector<DiskRecord> out)
            throws DecodeException {
        return switch (schema) {
            case DiskstatsSample.SCHEMA -> emit(DiskRecord.of(RecordDecoder.diskstats(node, source, nowNs)), out);
            case HistRecord.SCHEMA -> emit(DiskRecord.of(RecordDecoder.hist(node, nowNs)), out);
            case IoEvent.SCHEMA -> emit(DiskRecord.of(RecordDecoder.event(node, nowNs)), out);
            case IntervalRecord.SCHEMA -> emitParts(RecordDecoder.interval(node, source, nowNs), out);
            case EventBatch.SCHEMA -> emitParts(RecordDecoder.eventBatch(node, nowNs), out);
            default -> null;
        };
    }

    private static String emit(DiskRecord record, Collector<DiskRecord> out) {
        out.collect(record);
        return record.key();
    }

    /** The sample and the histograms together, as one record (to its disk's diskstats deltas, then its windows). */
    private static String emitParts(IntervalRecord interval, Collector<DiskRecord> out) {
        return emit(DiskRecord.ofInterval(interval.sample, interval.histograms), out);
    }

    private static String emitParts(EventBatch batch, Collector<DiskRecord> out) {
        if (!batch.events.isEmpty()) {
            out.collect(DiskRecord.ofEvents(batch.events));
        }
        return batch.key();
    }

    /**
     * A signature covers the record's schema, and topics.json gives each schema one topic:
     * a record read off its topic and written to another (replayed there) is refused.
     */
    private static void onItsOwnTopic(String schema, RawRecord raw) throws DecodeException {
        if (raw.topic != null && Topics.records().contains(schema) && !raw.topic.equals(Topics.forRecord(schema))) {
            throw new DecodeException("a " + schema + " record on topic " + raw.topic + ": each record is taken from "
                    + Topics.forRecord(schema) + " only (schema/topics.json)");
        }
    }

    /** Whether the record carries the signature of `host` (null: it names none), dead-lettered when not. */
    private boolean signedByItsHost(String host, RawRecord raw, Context ctx, long nowNs) {
        if (signatures == null) {
            return true;
        }
        String refusal;
        try {
            refusal = signatures.refusal(host, raw.utf8(), raw.signature);
        } catch (RuntimeException e) {
            // Whatever a producer sends, it may cost it its record, never the job its task.
            refusal = "the signature could not be checked (" + e.getClass().getSimpleName() + ")";
        }
        if (refusal == null) {
            return true;
        }
        unverified.inc();
        deadLettered.inc();
        ctx.output(Pipeline.DEAD_LETTERS, DeadLetters.of(STAGE, raw.source, "unverified host: " + refusal, raw.text(), nowNs));
        return false;
    }
}
