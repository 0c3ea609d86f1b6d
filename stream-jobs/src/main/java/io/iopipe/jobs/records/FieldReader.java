package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Set;

/**
 * How a decoder reads the fields of one record, each as its schema types it and refused,
 * naming the field, when it is not: from a parsed tree ({@link #of(JsonNode)}), or from a
 * batch's columns as they were read off its bytes ({@link EventBatchColumns}). The rules
 * over the values are the decoder's, one copy for both.
 */
interface FieldReader {
    boolean has(String field);

    /** A non-negative integer that fits in a signed 64-bit long (the schema's counter). */
    long counter(String field) throws DecodeException;

    /** Any integer that fits in a long, negative ones too. */
    long integer(String field) throws DecodeException;

    /** A finite number within the range its schema states. */
    double number(String field, RecordSchema.Range range) throws DecodeException;

    String oneOf(String field, Set<String> allowed) throws DecodeException;

    /** A string that may be empty, at most maxLength characters. */
    String textUpTo(String field, int maxLength) throws DecodeException;

    /** The fields of a parsed record, read by {@link Json}'s readers. */
    static FieldReader of(JsonNode record) {
        return new FieldReader() {
            @Override
            public boolean has(String field) {
                return record.has(field);
            }

            @Override
            public long counter(String field) throws DecodeException {
                return Json.counter(record, field);
            }

            @Override
            public long integer(String field) throws DecodeException {
                return Json.integer(record, field);
            }

            @Override
            public double number(String field, RecordSchema.Range range) throws DecodeException {
                return Json.number(record, field, range);
            }

            @Override
            public String oneOf(String field, Set<String> allowed) throws DecodeException {
                return Json.oneOf(record, field, allowed);
            }

            @Override
            public String textUpTo(String field, int maxLength) throws DecodeException {
                return Json.textUpTo(record, field, maxLength);
            }
        };
    }
}
