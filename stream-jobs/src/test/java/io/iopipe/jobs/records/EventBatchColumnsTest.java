package io.iopipe.jobs.records;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.testing.SchemaFiles;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Random;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The column reader of event batches against the tree decoder: whatever it takes, the tree
 * decoder takes, decoded alike; whatever the tree decoder refuses, it gives up (the tree
 * decoder then says why).
 */
class EventBatchColumnsTest {
    static final long NOW_NS = RecordDecoderTest.NOW_NS;
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final int MAX_EVENTS = RecordDecoder.EVENTS.maxItems(0);

    /** The tree decoder's batch of the bytes, as a tree of its fields, or its refusal. */
    private static String byTree(byte[] utf8) {
        try {
            return Json.MAPPER.valueToTree(RecordDecoder.eventBatch(Json.parseObject(utf8), NOW_NS)).toString();
        } catch (DecodeException refused) {
            return "refused: " + refused.getMessage();
        }
    }

    /** One reader for every batch of a test, as a decoding task keeps one: what it read before never shows. */
    private final EventBatchColumns columns = new EventBatchColumns();

    /** The column reader's batch of the bytes, as a tree of its fields, or null where it gave the record up. */
    private String offBytes(byte[] utf8) {
        EventBatch batch = RecordDecoder.eventBatchOffBytes(utf8, NOW_NS, columns);
        return batch == null ? null : Json.MAPPER.valueToTree(batch).toString();
    }

    private static byte[] utf8(JsonNode record) {
        return Json.write(record).getBytes(StandardCharsets.UTF_8);
    }

    private static List<ObjectNode> validBatches() {
        return SchemaFiles.validExamples(EventBatch.SCHEMA).stream().map(n -> (ObjectNode) n).toList();
    }

    @Test
    void everySharedValidBatchIsReadOffItsBytesAsTheTreeDecodesIt() {
        for (ObjectNode batch : validBatches()) {
            String read = offBytes(utf8(batch));
            assertNotNull(read, batch::toString);
            assertEquals(byTree(utf8(batch)), read);
        }
    }

    @Test
    void everySharedInvalidBatchIsGivenUpToTheTreeDecoder() {
        for (JsonNode example : SchemaFiles.invalidExamples(EventBatch.SCHEMA)) {
            byte[] record = utf8(example.get("record"));
            assertTrue(byTree(record).startsWith("refused: "), example::toString);
            assertNull(offBytes(record), example::toString);
        }
    }

    @Test
    void aBatchOfAsManyEventsAsItMayHoldIsReadAlikeAndOneMoreIsGivenUp() {
        ObjectNode full = batchOf(validBatches().get(0), MAX_EVENTS);
        assertEquals(byTree(utf8(full)), offBytes(utf8(full)));
        ObjectNode over = batchOf(validBatches().get(0), MAX_EVENTS + 1);
        assertTrue(byTree(utf8(over)).startsWith("refused: "));
        assertNull(offBytes(utf8(over)));
        ObjectNode none = batchOf(validBatches().get(0), 0);
        assertEquals(byTree(utf8(none)), offBytes(utf8(none)));
    }

    @Test
    void whatTheColumnReaderTakesTheTreeDecoderTakesAlikeUnderRandomFaults() {
        Random random = new Random(29);
        int taken = 0;
        int takenByTree = 0;
        for (int round = 0; round < 20_000; round++) {
            List<ObjectNode> bases = validBatches();
            ObjectNode batch = batchOf(bases.get(random.nextInt(bases.size())), 1 + random.nextInt(90));
            int faults = random.nextInt(3);
            for (int f = 0; f < faults; f++) {
                fault(batch, random);
            }
            int spelling = random.nextInt(12);
            byte[] record = written(batch, spelling);
            String tree = byTree(record);
            String read = offBytes(record);
            if (read != null) {
                assertEquals(tree, read, () -> new String(record, StandardCharsets.UTF_8));
                taken++;
            }
            if (!tree.startsWith("refused: ")) {
                takenByTree++;
            }
            boolean plain = spelling != ESCAPED_NAME;
            if (faults == 0 && plain && read == null && !tree.startsWith("refused: ")) {
                throw new AssertionError("a valid batch given up: " + new String(record, StandardCharsets.UTF_8));
            }
        }
        assertTrue(taken > 5_000 && takenByTree > taken, taken + " taken, " + takenByTree + " by the tree decoder");
    }

    /** A batch of `events` events, each column's entries those of `base` over and over, each event a little later. */
    private static ObjectNode batchOf(ObjectNode base, int events) {
        ObjectNode batch = base.deepCopy();
        int baseSize = base.get("op").size();
        for (int k = 0; k < RecordDecoder.EVENTS.count(); k++) {
            String column = RecordDecoder.EVENTS.column(k);
            ArrayNode entries = batch.putArray(column);
            for (int i = 0; i < events; i++) {
                JsonNode entry = base.get(column).get(i % baseSize);
                boolean time = column.endsWith("_ns") && !column.equals("queue_ns");
                entries.add(time ? NODES.numberNode(entry.longValue() + i * 1_000L) : entry);
            }
        }
        return batch;
    }

    /** Values a producer may send in place of an entry or a field, good and bad. */
    private static final List<Function<Random, JsonNode>> VALUES = List.of(
            r -> NODES.numberNode(-1 - r.nextInt(5)),
            r -> NODES.numberNode(0),
            r -> NODES.numberNode(r.nextInt(100_000)),
            r -> NODES.numberNode(Long.MAX_VALUE),
            r -> NODES.numberNode(Long.MIN_VALUE),
            r -> NODES.numberNode(new BigInteger("9223372036854775808")),
            r -> NODES.numberNode(new BigDecimal("1e400")),
            r -> NODES.numberNode(new BigDecimal("1E+1")),
            r -> NODES.numberNode(new BigDecimal("2.50")),
            r -> NODES.numberNode(new BigDecimal("-0.0")),
            r -> NODES.numberNode(r.nextDouble() * 10),
            r -> NODES.numberNode(1.0),
            r -> NODES.numberNode(4294967296.0),
            r -> NODES.numberNode(NOW_NS - r.nextInt(1_000_000_000)),
            r -> NODES.numberNode(NOW_NS + 1_000_000_000_000_000L),
            r -> NODES.numberNode(1_700_000_000L),
            r -> NODES.textNode(""),
            r -> NODES.textNode("R"),
            r -> NODES.textNode("queue"),
            r -> NODES.textNode("dispatch"),
            r -> NODES.textNode("outlier"),
            r -> NODES.textNode("kworker/u16:2+fl"),
            r -> NODES.textNode("kworker/u16:2+flu"),
            r -> NODES.textNode("12"),
            r -> NODES.textNode("say \"dd\""),
            r -> NODES.textNode("caf\u00e9"),
            r -> NODES.textNode("tab\there"),
            r -> NODES.nullNode(),
            r -> NODES.booleanNode(true),
            r -> NODES.arrayNode().add(1),
            r -> NODES.objectNode().put("a", 1));

    private static JsonNode anyValue(Random random) {
        return VALUES.get(random.nextInt(VALUES.size())).apply(random);
    }

    /** One fault, or a change a batch may well carry, in place. */
    private static void fault(ObjectNode batch, Random random) {
        List<String> fields = new ArrayList<>();
        batch.fieldNames().forEachRemaining(fields::add);
        String field = fields.get(random.nextInt(fields.size()));
        JsonNode value = batch.get(field);
        switch (random.nextInt(8)) {
            case 0, 1, 2 -> {
                if (value.isArray() && !value.isEmpty()) {
                    ((ArrayNode) value).set(random.nextInt(value.size()), anyValue(random));
                } else {
                    batch.set(field, anyValue(random));
                }
            }
            case 3 -> batch.remove(field);
            case 4 -> batch.set(random.nextBoolean() ? "labels" : field, anyValue(random));
            case 5 -> {
                if (value.isArray()) {
                    ((ArrayNode) value).add(value.isEmpty() ? NODES.numberNode(1) : value.get(0));
                }
            }
            case 6 -> batch.put(random.nextBoolean() ? "host" : "disk",
                    "h".repeat(random.nextBoolean() ? 64 : 65 + random.nextInt(200)));
            default -> {
                for (Iterator<JsonNode> columns = batch.elements(); columns.hasNext(); ) {
                    JsonNode column = columns.next();
                    if (column.isArray() && column.size() > 1) {
                        ((ArrayNode) column).remove(column.size() - 1);  // one event fewer, a valid batch
                    }
                }
            }
        }
    }

    /** The spelling of written's that is valid JSON the column reader leaves to the tree decoder. */
    private static final int ESCAPED_NAME = 5;

    /**
     * The batch's bytes, written plainly or as producers might (`spelling`, 0-11): spaced
     * out, a field twice, a value after it, cut short, a name escaped, a number with a leading zero.
     */
    private static byte[] written(ObjectNode batch, int spelling) {
        String text = Json.write(batch);
        text = switch (spelling) {
            case 0 -> batch.toPrettyString();
            case 1 -> "  " + text + "\n";
            case 2 -> "{\"host\":\"db-1\"," + text.substring(1);
            case 3 -> text + " {}";
            case 4 -> text.substring(0, text.length() - 1);
            case ESCAPED_NAME -> text.replace("\"op\"", "\"\\u006fp\"");
            case 6 -> text.replace(",", " ,\t").replace(":[", " : [ ");
            case 7 -> text.replaceFirst(",([0-9])", ",0$1");  // a leading zero, which JSON does not allow
            default -> text;
        };
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
