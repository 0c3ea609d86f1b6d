package io.iopipe.jobs.records;

/** Input that does not satisfy its record schema; the message is the dead-letter reason. */
public class DecodeException extends Exception {
    public DecodeException(String reason) {
        super(reason);
    }
}
