package io.iopipe.jobs.records;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/** The one JSON mapper of the jobs and typed field readers that name what is wrong. */
public final class Json {
    /**
     * Refuses a field given twice: a reader that keeps the first would see another record
     * (another host) than the one checked here, which keeps the last. Reads decimals with
     * FastDoubleParser: the same doubles as Double.parseDouble, whose parse was 5.5% of the
     * decoding task's samples (stream-jobs/bench/PROFILE.md of f9c072c).
     */
    public static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .enable(StreamReadFeature.USE_FAST_DOUBLE_PARSER).build();

    private Json() {}

    public static ObjectNode object() {
        return MAPPER.createObjectNode();
    }

    public static String write(JsonNode node) {
        try {
            return MAPPER.writeValueAsString(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a tree built in memory always serialises", e);
        }
    }

    public static JsonNode parseObject(String text) throws DecodeException {
        if (text == null || text.isBlank()) {
            throw new DecodeException("empty record");
        }
        try {
            return parseObject(MAPPER.createParser(text));
        } catch (IOException e) {
            throw new IllegalStateException("a string in memory always reads", e);
        }
    }

    /** As {@link #parseObject(String)}, from a message's UTF-8 bytes, read as they are (no text made of them first). */
    public static JsonNode parseObject(byte[] utf8) throws DecodeException {
        if (isBlank(utf8)) {
            throw new DecodeException("empty record");
        }
        try {
            return parseObject(MAPPER.createParser(utf8));
        } catch (IOException e) {
            throw new IllegalStateException("bytes in memory always read", e);
        }
    }

    private static boolean isBlank(byte[] utf8) {
        for (byte b : utf8) {
            if (b != ' ' && b != '\t' && b != '\n' && b != '\r') {
                return false;
            }
        }
        return true;
    }

    private static JsonNode parseObject(JsonParser opened) throws DecodeException {
        JsonNode node;
        try (JsonParser parser = opened) {
            node = MAPPER.readTree(parser);
            if (node != null && parser.nextToken() != null) {
                // What a message holds is passed on whole (to ClickHouse, as JSONEachRow): a
                // second value after the checked one would be stored unchecked, naming any host.
                throw new DecodeException("more than one JSON value: a record is exactly one JSON object");
            }
        } catch (JsonProcessingException e) {
            throw new DecodeException("not JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new IllegalStateException("input in memory always reads", e);
        }
        if (node == null || !node.isObject()) {
            throw new DecodeException("not a JSON object");
        }
        return node;
    }

    public static String text(JsonNode record, String field, int maxLength) throws DecodeException {
        JsonNode value = present(record, field);
        if (!value.isTextual()) {
            throw new DecodeException(field, field + " must be a string");
        }
        String s = value.textValue();
        if (s.isEmpty() || s.length() > maxLength) {
            throw new DecodeException(field, field + " must have 1 to " + maxLength + " characters");
        }
        return s;
    }

    /** A non-negative integer that fits in a signed 64-bit long (the schema's counter). */
    public static long counter(JsonNode record, String field) throws DecodeException {
        JsonNode value = present(record, field);
        if (!value.isIntegralNumber()) {
            throw new DecodeException(field, field + " must be an integer, got " + abbreviate(value.toString()));
        }
        if (!value.canConvertToLong()) {
            throw new DecodeException(field, field + " is beyond 2^63-1: " + abbreviate(value.toString()));
        }
        long n = value.longValue();
        if (n < 0) {
            throw new DecodeException(field, field + " must not be negative, got " + n);
        }
        return n;
    }

    /** An optional counter: 0 when the producing kernel does not have it. */
    public static long optionalCounter(JsonNode record, String field) throws DecodeException {
        return record.has(field) ? counter(record, field) : 0L;
    }

    /** A string that may be empty, at most maxLength characters. */
    public static String textUpTo(JsonNode record, String field, int maxLength) throws DecodeException {
        return textUpTo(record, field, maxLength, field);
    }

    /** As {@link #textUpTo(JsonNode, String, int)}, naming the field by its path in the record. */
    private static String textUpTo(JsonNode record, String field, int maxLength, String path) throws DecodeException {
        JsonNode value = present(record, field);
        if (!value.isTextual() || value.textValue().length() > maxLength) {
            throw new DecodeException(path, path + " must be a string of at most " + maxLength + " characters");
        }
        return value.textValue();
    }

    /** An optional string of at most maxLength characters; null when absent. */
    public static String optionalTextUpTo(JsonNode record, String field, int maxLength) throws DecodeException {
        return record.has(field) ? textUpTo(record, field, maxLength) : null;
    }

    /** An optional object of at most maxLabels names, each with a string of at most maxLength characters. */
    public static void optionalLabels(JsonNode record, String field, int maxLabels, int maxLength) throws DecodeException {
        if (!record.has(field)) {
            return;
        }
        JsonNode labels = present(record, field);
        if (!labels.isObject() || labels.size() > maxLabels) {
            throw new DecodeException(field, field + " must be an object of at most " + maxLabels + " labels");
        }
        for (Map.Entry<String, JsonNode> label : labels.properties()) {
            textUpTo(labels, label.getKey(), maxLength, field + "." + label.getKey());
        }
    }

    public static String oneOf(JsonNode record, String field, Set<String> allowed) throws DecodeException {
        return oneOf(record, field, allowed, field);
    }

    /** As {@link #oneOf(JsonNode, String, Set)}, naming the field by its path in the record. */
    public static String oneOf(JsonNode record, String field, Set<String> allowed, String path) throws DecodeException {
        JsonNode value = present(record, field);
        if (!value.isTextual() || !allowed.contains(value.textValue())) {
            throw new DecodeException(path, path + " must be one of " + new TreeSet<>(allowed) + ", got "
                    + abbreviate(value.toString()));
        }
        return value.textValue();
    }

    /** Any integer that fits in a long, negative ones too. */
    public static long integer(JsonNode record, String field) throws DecodeException {
        JsonNode value = present(record, field);
        if (!value.isIntegralNumber() || !value.canConvertToLong()) {
            throw new DecodeException(field, field + " must be a 64-bit integer, got " + abbreviate(value.toString()));
        }
        return value.longValue();
    }

    /** A finite number: JSON's 1e400 reads as infinity, which no figure of a disk is. */
    public static double number(JsonNode record, String field) throws DecodeException {
        JsonNode value = present(record, field);
        if (!value.isNumber() || !Double.isFinite(value.doubleValue())) {
            throw new DecodeException(field, field + " must be a finite number, got " + abbreviate(value.toString()));
        }
        return value.doubleValue();
    }

    /** A number within the range its schema states. */
    public static double number(JsonNode record, String field, RecordSchema.Range range) throws DecodeException {
        double value = number(record, field);
        if (!range.holds(value)) {
            throw new DecodeException(field, field + " must be " + range + ", got " + abbreviate(record.get(field).toString()));
        }
        return value;
    }

    /** An array of at most maxItems counters. */
    public static long[] counters(JsonNode record, String field, int maxItems) throws DecodeException {
        JsonNode value = present(record, field);
        if (!value.isArray() || value.size() > maxItems) {
            throw new DecodeException(field, field + " must be an array of at most " + maxItems + " counters");
        }
        long[] out = new long[value.size()];
        for (int i = 0; i < out.length; i++) {
            JsonNode item = value.get(i);
            if (!item.isIntegralNumber() || !item.canConvertToLong() || item.longValue() < 0) {
                String path = field + "[" + i + "]";
                throw new DecodeException(path, path + " must be a counter, got " + abbreviate(item.toString()));
            }
            out[i] = item.longValue();
        }
        return out;
    }

    public static boolean bool(JsonNode record, String field) throws DecodeException {
        JsonNode value = present(record, field);
        if (!value.isBoolean()) {
            throw new DecodeException(field, field + " must be true or false");
        }
        return value.booleanValue();
    }

    private static JsonNode present(JsonNode record, String field) throws DecodeException {
        JsonNode value = record.get(field);
        if (value == null || value.isNull()) {
            throw new DecodeException(field, "missing field: " + field);
        }
        return value;
    }

    private static String abbreviate(String s) {
        return s.length() <= 40 ? s : s.substring(0, 40) + "…";
    }
}
