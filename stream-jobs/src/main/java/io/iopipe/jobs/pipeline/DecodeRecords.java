package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.DecodeException;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.RawRecord;
import io.iopipe.jobs.records.RecordDecoder;
import com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/** Decodes raw lines by their `schema`; anything invalid becomes a dead letter with the reason. */
public class DecodeRecords extends ProcessFunction<RawRecord, DiskstatsSample> {
    static final String STAGE = "stream-jobs/decode";
    private transient Counter decoded;
    private transient Counter deadLettered;

    @Override
    public void open(OpenContext openContext) {
        decoded = getRuntimeContext().getMetricGroup().counter("records_decoded_total");
        deadLettered = getRuntimeContext().getMetricGroup().counter("records_dead_lettered_total");
    }

    @Override
    public void processElement(RawRecord raw, Context ctx, Collector<DiskstatsSample> out) {
        long nowNs = DeadLetters.wallClockNs();
        try {
            JsonNode node = Json.parseObject(raw.text);
            String schema = RecordDecoder.schemaOf(node);
            if (!DiskstatsSample.SCHEMA.equals(schema)) {
                throw new DecodeException(Pipeline.isKnownRecord(schema)
                        ? "no job of this graph consumes " + schema + " records yet"
                        : "unknown schema: " + schema);
            }
            out.collect(RecordDecoder.diskstats(node, raw.source, nowNs));
            decoded.inc();
        } catch (DecodeException e) {
            deadLettered.inc();
            ctx.output(Pipeline.DEAD_LETTERS, DeadLetters.of(STAGE, raw.source, e.getMessage(), raw.text, nowNs));
        }
    }
}
