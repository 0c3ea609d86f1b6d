package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A record's JSON Schema from schema/records/, packed into the jar: the decoders read the
 * bounds they enforce from here, so the contract states each once. A bound the schema
 * does not state is a broken build, not a record let through.
 */
public final class RecordSchema {
    private final String name;
    private final JsonNode root;
    private final JsonNode schema;

    private RecordSchema(String name, JsonNode root, JsonNode schema) {
        this.name = name;
        this.root = root;
        this.schema = schema;
    }

    /** The schema of a record, e.g. io.hist.v1. */
    public static RecordSchema of(String record) {
        String path = "/schema/records/" + record + ".schema.json";
        try (InputStream in = RecordSchema.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException(path + " is missing from the classpath: rebuild the jar");
            }
            JsonNode root = Json.MAPPER.readTree(in);
            return new RecordSchema(record, root, root);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** One of the schema's definitions ($defs), whose fields are read as a record's. */
    public RecordSchema definition(String definition) {
        return new RecordSchema(name + "#/$defs/" + definition, root, stated(root.path("$defs"), definition));
    }

    public int maxLength(String field) {
        return stated(field(field), "maxLength").intValue();
    }

    public long minimum(String field) {
        return stated(field(field), "minimum").longValue();
    }

    public long maximum(String field) {
        return stated(field(field), "maximum").longValue();
    }

    public int maxItems(String field) {
        return stated(field(field), "maxItems").intValue();
    }

    public int maxProperties(String field) {
        return stated(field(field), "maxProperties").intValue();
    }

    /** The longest string an object field holds under any of its names. */
    public int maxValueLength(String field) {
        return stated(stated(field(field), "additionalProperties"), "maxLength").intValue();
    }

    /** The bounds a number field keeps, as its schema states them (through a $ref, and beside it). */
    public Range range(String field) {
        return Range.of(field(field));
    }

    /**
     * The first number in the record, at any depth, that is not finite or is out of the
     * range its schema states (a number the schema does not name need only be finite),
     * said with its dotted path; empty when every number holds.
     */
    public Optional<String> figureOutOfRange(JsonNode record) {
        return figureOutOfRange(record, schema, "");
    }

    private Optional<String> figureOutOfRange(JsonNode value, JsonNode spec, String path) {
        JsonNode bounds = spec == null ? Json.object() : resolved(spec);
        if (value.isNumber()) {
            Range range = Range.of(bounds);
            return range.holds(value.doubleValue()) ? Optional.empty()
                    : Optional.of(path + " must be " + range + ", got " + value);
        }
        for (Map.Entry<String, JsonNode> child : value.properties()) {
            JsonNode childSpec = bounds.path("properties").get(child.getKey());
            if (childSpec == null && bounds.path("additionalProperties").isObject()) {
                childSpec = bounds.get("additionalProperties");
            }
            Optional<String> out = figureOutOfRange(child.getValue(), childSpec, dotted(path, child.getKey()));
            if (out.isPresent()) {
                return out;
            }
        }
        for (int i = 0; value.isArray() && i < value.size(); i++) {
            Optional<String> out = figureOutOfRange(value.get(i), bounds.get("items"), path + "[" + i + "]");
            if (out.isPresent()) {
                return out;
            }
        }
        return Optional.empty();
    }

    private static String dotted(String path, String name) {
        return path.isEmpty() ? name : path + "." + name;
    }

    /** A field's schema with what its $ref leads to, the field's own keywords winning. */
    private JsonNode resolved(JsonNode spec) {
        if (!spec.has("$ref")) {
            return spec;
        }
        JsonNode target = root.at(spec.get("$ref").asText().substring(1));
        if (target.isMissingNode()) {
            throw new IllegalStateException(name + " refers to " + spec.get("$ref") + ", which it does not define");
        }
        ObjectNode merged = resolved(target).deepCopy();
        spec.properties().forEach(keyword -> merged.set(keyword.getKey(), keyword.getValue()));
        merged.remove("$ref");
        return merged;
    }

    /** Where a number may lie: finite always, and within what its schema states. */
    public record Range(double minimum, boolean minimumExcluded, double maximum) {
        static Range of(JsonNode spec) {
            boolean excluded = spec.has("exclusiveMinimum");
            double minimum = excluded ? spec.get("exclusiveMinimum").doubleValue()
                    : spec.path("minimum").asDouble(-Double.MAX_VALUE);
            return new Range(minimum, excluded, spec.path("maximum").asDouble(Double.MAX_VALUE));
        }

        public boolean holds(double value) {
            return Double.isFinite(value) && (minimumExcluded ? value > minimum : value >= minimum) && value <= maximum;
        }

        @Override
        public String toString() {
            String low = minimum == -Double.MAX_VALUE ? "" : (minimumExcluded ? "above " : "at least ") + plain(minimum);
            String high = maximum == Double.MAX_VALUE ? "" : "at most " + plain(maximum);
            return "a finite number" + (low.isEmpty() && high.isEmpty() ? "" : " ")
                    + String.join(" and ", List.of(low, high).stream().filter(b -> !b.isEmpty()).toList());
        }

        private static String plain(double bound) {
            return BigDecimal.valueOf(bound).stripTrailingZeros().toPlainString();
        }
    }

    /** What each entry of an array field is, as its items state: integer, number or string (an enum of strings is string). */
    public String itemType(String field) {
        JsonNode items = resolved(stated(field(field), "items"));
        if (items.has("enum")) {
            boolean texts = true;
            for (JsonNode value : items.get("enum")) {
                texts &= value.isTextual();
            }
            return texts ? "string" : "enum of " + items.get("enum");
        }
        return stated(items, "type").asText();
    }

    /** The values each entry of an array field may take (its items' enum), in the schema's order; none where any may be. */
    public Set<String> itemsAllowed(String field) {
        JsonNode items = resolved(stated(field(field), "items"));
        return items.has("enum") ? texts(items.get("enum")) : Set.of();
    }

    /** The values a field may take (its enum), in the schema's order. */
    public Set<String> allowed(String field) {
        return texts(stated(field(field), "enum"));
    }

    /** The names an object field may hold (its propertyNames' enum), in the schema's order. */
    public Set<String> allowedNames(String field) {
        return texts(stated(stated(field(field), "propertyNames"), "enum"));
    }

    /** The fields whose schema is the definition, in the order the schema lists them. */
    public List<String> fieldsOf(String definition) {
        String ref = "#/$defs/" + definition;
        List<String> fields = new ArrayList<>();
        for (var field : stated(schema, "properties").properties()) {
            if (ref.equals(field.getValue().path("$ref").asText())) {
                fields.add(field.getKey());
            }
        }
        return List.copyOf(fields);
    }

    /** The fields whose values are arrays, in the order the schema lists them. */
    public List<String> arrayFields() {
        List<String> fields = new ArrayList<>();
        for (var field : stated(schema, "properties").properties()) {
            if ("array".equals(resolved(field.getValue()).path("type").asText())) {
                fields.add(field.getKey());
            }
        }
        return List.copyOf(fields);
    }

    /** Whether every record must carry the field. */
    public boolean requires(String field) {
        for (JsonNode required : stated(schema, "required")) {
            if (required.asText().equals(field)) {
                return true;
            }
        }
        return false;
    }

    /** A field's schema, where a $ref leads (its own keywords beside the $ref winning). */
    private JsonNode field(String field) {
        return resolved(stated(stated(schema, "properties"), field));
    }

    private JsonNode stated(JsonNode node, String keyword) {
        JsonNode value = node.get(keyword);
        if (value == null) {
            throw new IllegalStateException("schema/records/" + name + " states no " + keyword + " where the job reads one");
        }
        return value;
    }

    private static Set<String> texts(JsonNode array) {
        Set<String> texts = new LinkedHashSet<>();
        array.forEach(value -> texts.add(value.asText()));
        return Collections.unmodifiableSet(texts);
    }
}
