package io.iopipe.jobs.records;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** The one JSON mapper of the jobs and typed field readers that name what is wrong. */
public final class Json {
    public static final ObjectMapper MAPPER = new ObjectMapper();

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
        JsonNode node;
        try {
            node = MAPPER.readTree(text);
        } catch (JsonProcessingException e) {
            throw new DecodeException("not JSON: " + e.getOriginalMessage());
        }
        if (node == null || !node.isObject()) {
            throw new DecodeException("not a JSON object");
        }
        return node;
    }

    public static String text(JsonNode record, String field, int maxLength) throws DecodeException {
        JsonNode value = present(record, field);
        if (!value.isTextual()) {
            throw new DecodeException(field + " must be a string");
        }
        String s = value.textValue();
        if (s.isEmpty() || s.length() > maxLength) {
            throw new DecodeException(field + " must have 1 to " + maxLength + " characters");
        }
        return s;
    }

    /** A non-negative integer that fits in a signed 64-bit long (the schema's counter). */
    public static long counter(JsonNode record, String field) throws DecodeException {
        JsonNode value = present(record, field);
        if (!value.isIntegralNumber()) {
            throw new DecodeException(field + " must be an integer, got " + abbreviate(value.toString()));
        }
        if (!value.canConvertToLong()) {
            throw new DecodeException(field + " is beyond 2^63-1: " + abbreviate(value.toString()));
        }
        long n = value.longValue();
        if (n < 0) {
            throw new DecodeException(field + " must not be negative, got " + n);
        }
        return n;
    }

    /** An optional counter: 0 when the producing kernel does not have it. */
    public static long optionalCounter(JsonNode record, String field) throws DecodeException {
        return record.has(field) ? counter(record, field) : 0L;
    }

    public static boolean bool(JsonNode record, String field) throws DecodeException {
        JsonNode value = present(record, field);
        if (!value.isBoolean()) {
            throw new DecodeException(field + " must be true or false");
        }
        return value.booleanValue();
    }

    private static JsonNode present(JsonNode record, String field) throws DecodeException {
        JsonNode value = record.get(field);
        if (value == null || value.isNull()) {
            throw new DecodeException("missing field: " + field);
        }
        return value;
    }

    private static String abbreviate(String s) {
        return s.length() <= 40 ? s : s.substring(0, 40) + "…";
    }
}
