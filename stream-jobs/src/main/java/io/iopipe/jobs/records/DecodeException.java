package io.iopipe.jobs.records;

/**
 * Input that does not satisfy its record schema; the message is the dead-letter reason.
 * Where one field is at fault it is named, by its path in the record (count,
 * buckets_log2_us[3], labels.rack), so a batch can say which of its entries to fix.
 */
public class DecodeException extends Exception {
    private final String field;

    public DecodeException(String reason) {
        this(null, reason);
    }

    public DecodeException(String field, String reason) {
        super(reason);
        this.field = field;
    }

    private DecodeException(String field, String reason, DecodeException inPart) {
        super(reason, inPart);
        this.field = field;
    }

    /** The field at fault, by its path in the record; null when the record as a whole is. */
    public String field() {
        return field;
    }

    /**
     * This refusal of one part of a batched record, said of the batch: led by the batch's
     * field at fault and the part (`histogram 1, op W, latency queue`), then the reason the
     * part's own record would have been refused for. The cause is this refusal, where the
     * rule that refused it was.
     */
    DecodeException ofPart(String fieldInBatch, String part) {
        String where = fieldInBatch == null ? "(" + part + ")" : fieldInBatch + " (" + part + ")";
        return new DecodeException(fieldInBatch, where + ": " + getMessage(), this);
    }
}
