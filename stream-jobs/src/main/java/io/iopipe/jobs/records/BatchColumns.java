package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.AbstractMap;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * How a batched record (io.interval.v1, io.eventbatch.v1) holds the records it batches: one
 * array per field of theirs, entry i of each being the i-th record's field, named as that
 * field behind the batch's prefix (hist_count: each histogram's count). The arrays and how
 * long each may be are read from the batch's schema.
 */
final class BatchColumns {
    /** Where a column's entries are cut in a message: an op or a latency kind, not whatever a producer sent. */
    private static final int MAX_ENTRY_CHARS = 16;
    private final String prefix;
    /** What one part is called in a message: histogram, event. */
    private final String partName;
    private final String[] columns;
    /** Each column's field in the records the batch holds. */
    private final String[] fields;
    /** Each field's column, by the field's name. */
    private final Map<String, Integer> columnOf = new HashMap<>();
    private final int[] maxItems;

    private BatchColumns(String prefix, String partName, List<String> columns, RecordSchema schema) {
        this.prefix = prefix;
        this.partName = partName;
        this.columns = columns.toArray(String[]::new);
        this.fields = columns.stream().map(c -> c.substring(prefix.length())).toArray(String[]::new);
        this.maxItems = columns.stream().mapToInt(schema::maxItems).toArray();
        for (int k = 0; k < fields.length; k++) {
            columnOf.put(fields[k], k);
        }
    }

    /**
     * The columns of a batch: its schema's array fields, each `prefix` and the field of the
     * records it batches. A column the schema did not require would need a default for each
     * part: the batches' generator requires every one, and a schema that does not is a broken build.
     */
    static BatchColumns of(String batchSchema, String prefix, String partName) {
        RecordSchema schema = RecordSchema.of(batchSchema);
        List<String> columns = schema.arrayFields();
        for (String column : columns) {
            if (!column.startsWith(prefix) || !schema.requires(column)) {
                throw new IllegalStateException("schema/records/" + batchSchema + " has an array " + column
                        + " that is not a required " + prefix + "<field>: what the job reads as its parts' fields");
            }
        }
        return new BatchColumns(prefix, partName, columns, schema);
    }

    /** How many columns the batch has. */
    int count() {
        return columns.length;
    }

    /** The k-th column's name in the batch. */
    String column(int k) {
        return columns[k];
    }

    /** The most entries the k-th column may hold. */
    int maxItems(int k) {
        return maxItems[k];
    }

    /** The column of a field of the parts, or -1 where there is none. */
    int columnIndex(String field) {
        Integer k = columnOf.get(field);
        return k == null ? -1 : k;
    }

    /**
     * The batch's parts. Every column is an array within its schema's maxItems, and all of
     * them hold one entry per part: an array shorter than the others would leave a part
     * without a field, or give one part's field to another.
     */
    Parts partsOf(JsonNode batch) throws DecodeException {
        JsonNode[] arrays = new JsonNode[columns.length];
        for (int k = 0; k < columns.length; k++) {
            arrays[k] = batch.get(columns[k]);
            if (arrays[k] == null || !arrays[k].isArray() || arrays[k].size() > maxItems[k]) {
                throw new DecodeException(columns[k], columns[k] + " must be an array of at most " + maxItems[k]
                        + " entries, one per " + partName);
            }
            if (arrays[k].size() != arrays[0].size()) {
                throw new DecodeException(columns[k], columns[k] + " holds " + arrays[k].size() + " where " + columns[0]
                        + " holds " + arrays[0].size() + ": every array holds one entry per " + partName);
            }
        }
        return new Parts(arrays);
    }

    /** A batch's parts, each shown to the decoders as a record of its own. */
    final class Parts {
        private final JsonNode[] arrays;
        private final PartFields fieldsOfPart = new PartFields();
        /**
         * What the decoders read of the current part: one object whose fields are the
         * current part's entries of the batch's own arrays, looked up as they are read.
         * Neither a copy of every part nor one refilled for each: setting its fields was a
         * tenth of the decoding task's samples (bench-jobs --profile-only, 2026-12-01).
         */
        private final ObjectNode part = new ObjectNode(JsonNodeFactory.instance, fieldsOfPart);

        private Parts(JsonNode[] arrays) {
            this.arrays = arrays;
        }

        int size() {
            return arrays[0].size();
        }

        /** The i-th part, as a record of its fields; the same object again at the next call, showing that part. */
        JsonNode get(int i) {
            fieldsOfPart.index = i;
            return part;
        }

        /** The current part's fields, read-only: each its column's entry at the part's index. */
        private final class PartFields extends AbstractMap<String, JsonNode> {
            int index;

            @Override
            public JsonNode get(Object field) {
                Integer k = columnOf.get(field);
                return k == null ? null : arrays[k].get(index);
            }

            @Override
            public boolean containsKey(Object field) {
                return columnOf.containsKey(field);
            }

            @Override
            public int size() {
                return fields.length;
            }

            @Override
            public Set<Entry<String, JsonNode>> entrySet() {
                Set<Entry<String, JsonNode>> entries = new LinkedHashSet<>();
                for (int k = 0; k < fields.length; k++) {
                    entries.add(new SimpleImmutableEntry<>(fields[k], arrays[k].get(index)));
                }
                return entries;
            }
        }

        /** The i-th part's field as sent, cut short, for a message telling which part is meant. */
        String entry(String field, int i) {
            Integer k = columnOf.get(field);
            if (k == null) {
                throw new IllegalArgumentException("a " + partName + " has no field " + field);
            }
            JsonNode value = arrays[k].get(i);
            return Texts.cut(value.isTextual() ? value.textValue() : value.toString(), MAX_ENTRY_CHARS);
        }

        /**
         * The batch's name for a field of the i-th part, by its path there (count:
         * hist_count[1]; buckets_log2_us[3]: hist_buckets_log2_us[1][3]); a field the batch
         * states once for every part is named as it is.
         */
        String inBatch(String field, int i) {
            if (field == null) {
                return null;
            }
            int end = 0;
            while (end < field.length() && field.charAt(end) != '[' && field.charAt(end) != '.') {
                end++;
            }
            String name = field.substring(0, end);
            return columnOf.containsKey(name) ? prefix + name + "[" + i + "]" + field.substring(end) : field;
        }

        /** A refusal of the i-th part, which `description` names, as the batch's. */
        DecodeException refusal(DecodeException refused, int i, String description) {
            return refused.ofPart(inBatch(refused.field(), i), description);
        }
    }
}
