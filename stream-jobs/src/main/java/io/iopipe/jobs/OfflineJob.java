package io.iopipe.jobs;

import io.iopipe.jobs.io.NumberedLineFormat;
import io.iopipe.jobs.pipeline.Pipeline;
import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.RawRecord;
import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.connector.file.src.FileSource;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;

/**
 * Offline mode: the live job's graph, bounded over a file of schema records (types
 * mixed, told apart by `schema`). Every output record goes to --output as NDJSON;
 * every rejected input goes to --rejects (default: OUTPUT.rejects.ndjson) with its
 * reason. Bad lines never stop the run. Verdicts (anomalies and health transitions)
 * are also printed, one line each.
 */
public final class OfflineJob {
    /** As on the session cluster: keyed state and watermarks cross subtasks as they do live. */
    static final int PARALLELISM = 2;

    private OfflineJob() {}

    static final String USAGE = """
            usage: iopipe-detect --input records.ndjson --output out.ndjson [--rejects rejects.ndjson]
            Runs the live job's graph over a file of schema records (make detect INPUT=... OUTPUT=...):
            every record it makes to --output, every rejected line with its reason to --rejects
            (default OUTPUT.rejects.ndjson), each verdict printed on a line of its own.""";

    public static void main(String[] argv) throws Exception {
        if (Args.asksForHelp(argv)) {
            System.out.println(USAGE);
            return;
        }
        Args args;
        try {
            args = new Args(argv);
            args.required("input");
            args.required("output");
        } catch (IllegalArgumentException e) {
            System.err.println("iopipe detect: " + e.getMessage());
            System.err.println(USAGE.lines().findFirst().orElseThrow());
            System.exit(2);
            return;
        }
        Path input = Path.of(args.required("input"));
        if (!Files.isReadable(input)) {
            System.err.println("iopipe detect: cannot read " + input + ": check the INPUT path");
            System.exit(2);
        }
        Path output = Path.of(args.required("output"));
        Path rejects = Path.of(args.get("rejects", output + ".rejects.ndjson"));
        Counts counts = run(input, output, rejects, new Pipeline.Config());
        System.err.printf("iopipe detect: %d records to %s, %d rejected to %s%n",
                counts.records, output, counts.rejects, rejects);
    }

    public record Counts(long records, long rejects) {}

    public static Counts run(Path input, Path output, Path rejects, Pipeline.Config config) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(PARALLELISM);
        // Streaming semantics on a bounded input: the same watermarks, windows and late
        // handling as the live job, so a replay reproduces what the live job emitted.
        env.setRuntimeMode(RuntimeExecutionMode.STREAMING);
        FileSource<RawRecord> source = FileSource
                .forRecordStreamFormat(new NumberedLineFormat(input.getFileName().toString()),
                        new org.apache.flink.core.fs.Path(input.toAbsolutePath().toUri()))
                .build();
        DataStream<RawRecord> lines = env.fromSource(source, WatermarkStrategy.noWatermarks(), "records file");
        // What the graph accepted is the input file itself: left uncollected, it never crosses
        // from the job to this client (the whole input, serialized a second time).
        DataStream<OutputRecord> out = Pipeline.outputs(lines, config).derived();
        long records = 0;
        long rejected = 0;
        try (CloseableIterator<OutputRecord> results = out.executeAndCollect("iopipe offline");
             BufferedWriter good = Files.newBufferedWriter(output, StandardCharsets.UTF_8);
             BufferedWriter bad = Files.newBufferedWriter(rejects, StandardCharsets.UTF_8)) {
            while (results.hasNext()) {
                OutputRecord r = results.next();
                boolean isReject = DeadLetters.SCHEMA.equals(r.schema);
                Verdicts.print(r, System.out);
                BufferedWriter to = isReject ? bad : good;
                to.write(r.text());
                to.newLine();
                if (isReject) {
                    rejected++;
                } else {
                    records++;
                }
            }
        }
        return new Counts(records, rejected);
    }
}
