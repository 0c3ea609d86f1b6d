package io.iopipe.jobs.records;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.testing.SchemaFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Every rule a decoder states itself, beyond what the record's JSON Schema says, is
 * exercised by a shared invalid example: each `new DecodeException` in a decoder's source
 * is where the decoding of at least one example of schema/examples/ fails. A rule added
 * without an example fails this test with the lines that lack one.
 */
class DecoderRulesTest {
    static final long NOW_NS = RecordDecoderTest.NOW_NS;
    static final Path SOURCES = Path.of("src/main/java/io/iopipe/jobs/records");

    interface Decode {
        void of(JsonNode record) throws DecodeException;
    }

    /** Each decoder's source file, and how it decodes the records of each schema it reads. */
    static final Map<Class<?>, Map<String, Decode>> DECODERS = Map.of(
            RecordDecoder.class, Map.of(
                    DiskstatsSample.SCHEMA, r -> RecordDecoder.diskstats(r, "test", NOW_NS),
                    HistRecord.SCHEMA, r -> RecordDecoder.hist(r, NOW_NS),
                    IoEvent.SCHEMA, r -> RecordDecoder.event(r, NOW_NS),
                    IntervalRecord.SCHEMA, r -> RecordDecoder.interval(r, "test", NOW_NS),
                    EventBatch.SCHEMA, r -> RecordDecoder.eventBatch(r, NOW_NS)),
            BatchColumns.class, Map.of(
                    IntervalRecord.SCHEMA, r -> RecordDecoder.interval(r, "test", NOW_NS),
                    EventBatch.SCHEMA, r -> RecordDecoder.eventBatch(r, NOW_NS)),
            WindowDecoder.class, Map.of(
                    WindowDecoder.SCHEMA, r -> WindowDecoder.sample(r, NOW_NS)));

    @Test
    void everyRuleOfEachDecoderRefusesASharedInvalidExample() throws IOException {
        for (var decoder : DECODERS.entrySet()) {
            Class<?> type = decoder.getKey();
            List<Rule> rules = rules(type);
            assertTrue(rules.size() > 1, type.getSimpleName() + ": no rules found in its source");
            TreeSet<Integer> unexercised = new TreeSet<>(rules.stream().map(Rule::firstLine).toList());
            for (var reader : decoder.getValue().entrySet()) {
                for (JsonNode example : SchemaFiles.invalidExamples(reader.getKey())) {
                    int line = failingLine(type, reader.getValue(), example);
                    rules.stream().filter(r -> r.holds(line)).forEach(r -> unexercised.remove(r.firstLine()));
                }
            }
            assertEquals(new TreeSet<Integer>(), unexercised, type.getSimpleName() + ".java: the rules at these lines "
                    + "refuse no example of schema/examples/*.invalid.ndjson; add one (\"schema_can_express\": false "
                    + "when the record's JSON Schema cannot say it)");
        }
    }

    /** The lines of one `new DecodeException(...)` statement: a stack trace names any of them. */
    record Rule(int firstLine, int lastLine) {
        boolean holds(int line) {
            return firstLine <= line && line <= lastLine;
        }
    }

    /** The decoder's rules: each statement of its source that makes a DecodeException. */
    private static List<Rule> rules(Class<?> type) throws IOException {
        List<String> lines = Files.readAllLines(SOURCES.resolve(type.getSimpleName() + ".java"));
        List<Rule> rules = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains("new DecodeException(")) {
                int last = i;
                while (!lines.get(last).trim().endsWith(";")) {
                    last++;
                }
                rules.add(new Rule(i + 1, last + 1));
            }
        }
        return rules;
    }

    /**
     * The decoder's own line whose rule refused the example; -1 when a shared helper (Json)
     * did. A batch refused for a part is refused where the part's own record would have been:
     * the refusal's first cause.
     */
    private static int failingLine(Class<?> type, Decode decode, JsonNode example) {
        try {
            decode.of(example.get("record"));
        } catch (DecodeException refused) {
            Throwable rule = refused;
            while (rule.getCause() != null) {
                rule = rule.getCause();
            }
            StackTraceElement made = rule.getStackTrace()[0];
            return made.getClassName().equals(type.getName()) ? made.getLineNumber() : -1;
        }
        throw new AssertionError(example.get("why").asText() + ": decoded, though invalid");
    }
}
