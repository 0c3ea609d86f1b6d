package io.iopipe.jobs.records;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Set;

/**
 * An io.eventbatch.v1 record's columns read straight off its bytes, each entry typed as
 * the batch's schema types its column, with no parser's tokens or tree of nodes between:
 * making that tree, a node per entry, was most of the decoding task's time. It reads what
 * a well-formed batch holds, written as plain JSON, and nothing else. Any other field,
 * entry type, shape or spelling (an escape, a byte beyond ASCII) gives the record up
 * ({@link #read} returns false), and so does any event it holds that the decoder's rules
 * refuse ({@link FieldReader} throws): the tree decoder then decodes the record, or
 * refuses it naming the field and the event at fault, as it would have anyway. One is
 * kept by each decoding task and read into again for every batch: its columns allocate
 * nothing once grown to the longest batch.
 */
public final class EventBatchColumns implements FieldReader {
    /** What a column holds, as its schema's items say. */
    private enum Kind { INTEGER, NUMBER, STRING }

    private static final String SCHEMA = "schema";
    private static final String HOST = "host";
    private static final String DISK = "disk";
    private static final RecordSchema BATCH = RecordSchema.of(EventBatch.SCHEMA);
    private static final Kind[] KINDS = kinds(RecordDecoder.EVENTS);
    /**
     * The values of each column of an enum (op, sample_reason, timed_from), as ASCII bytes
     * and as the one string each is read as: an entry is matched against them, not made a
     * string of its own, and one that is none of them is the tree decoder's to refuse.
     */
    private static final byte[][][] ENUM_BYTES = new byte[KINDS.length][][];
    private static final String[][] ENUM_VALUES = new String[KINDS.length][];

    static {
        for (int k = 0; k < KINDS.length; k++) {
            Set<String> allowed = BATCH.itemsAllowed(RecordDecoder.EVENTS.column(k));
            if (!allowed.isEmpty()) {
                ENUM_VALUES[k] = allowed.toArray(String[]::new);
                ENUM_BYTES[k] = allowed.stream().map(v -> v.getBytes(StandardCharsets.US_ASCII)).toArray(byte[][]::new);
            }
        }
    }
    private static final int FIRST_CAPACITY = 16;
    /** More fields than an event has. */
    private static final int ASKED_REMEMBERED = 32;

    /** The batch last read. */
    String host;
    String disk;
    private int size;
    /** Each column's entries, in the array of its kind; grown as batches need, never shrunk. */
    private final long[][] integers = new long[KINDS.length][];
    private final double[][] numbers = new double[KINDS.length][];
    private final String[][] strings = new String[KINDS.length][];
    /** How many entries each column of the batch being read holds; -1 until read. */
    private final int[] sizes = new int[KINDS.length];
    /** The event {@link FieldReader}'s methods read. */
    private int index;
    /**
     * The fields asked for of the events, in the order first asked, with their columns: the
     * decoder asks for an event's fields by the same names each time, mostly in one order,
     * so a field is found by comparing references, first at the place it was first asked
     * for, else among all those known (an event without an optional field asks the others
     * a place early), rather than looked up by name.
     */
    private final String[] asked = new String[ASKED_REMEMBERED];
    private final int[] askedColumn = new int[ASKED_REMEMBERED];
    private int known;
    private int askedNow;

    public EventBatchColumns() {
        for (int k = 0; k < KINDS.length; k++) {
            switch (KINDS[k]) {
                case INTEGER -> integers[k] = new long[FIRST_CAPACITY];
                case NUMBER -> numbers[k] = new double[FIRST_CAPACITY];
                case STRING -> strings[k] = new String[FIRST_CAPACITY];
            }
        }
    }

    private static Kind[] kinds(BatchColumns columns) {
        Kind[] kinds = new Kind[columns.count()];
        for (int k = 0; k < kinds.length; k++) {
            String type = BATCH.itemType(columns.column(k));
            kinds[k] = switch (type) {
                case "integer" -> Kind.INTEGER;
                case "number" -> Kind.NUMBER;
                case "string" -> Kind.STRING;
                default -> throw new IllegalStateException("schema/records/" + EventBatch.SCHEMA + ": " + columns.column(k)
                        + " holds " + type + ", which the column reader does not read");
            };
        }
        return kinds;
    }

    /** Whether the record is a batch read whole, every column there and alike in length: its columns are then these. */
    boolean read(byte[] utf8) {
        try {
            return read(new Cursor(utf8));
        } catch (GiveUp notPlain) {
            return false;  // the tree decoder decodes it, or says what is wrong
        }
    }

    private boolean read(Cursor in) throws GiveUp {
        BatchColumns layout = RecordDecoder.EVENTS;
        Arrays.fill(sizes, -1);
        String schema = null;
        host = null;
        disk = null;
        in.expect('{');
        do {
            String name = in.string();
            in.expect(':');
            switch (name) {
                case SCHEMA -> {
                    schema = once(schema, in.string());
                    if (!EventBatch.SCHEMA.equals(schema)) {
                        throw GiveUp.INSTANCE;  // another record: off a file, or read where topics are not their own
                    }
                }
                case HOST -> host = once(host, in.string());
                case DISK -> disk = once(disk, in.string());
                default -> {
                    int k = layout.columnIndex(name);
                    if (k < 0 || sizes[k] >= 0) {
                        throw GiveUp.INSTANCE;  // a field the reader does not read, or one given twice
                    }
                    sizes[k] = readColumn(in, k, layout.maxItems(k));
                }
            }
        } while (in.take(','));
        in.expect('}');
        in.expectEnd();
        for (int columnSize : sizes) {
            if (columnSize != sizes[0]) {
                return false;  // a column missing (-1) or of another length
            }
        }
        size = sizes[0];
        return schema != null && host != null && disk != null && size >= 0;
    }

    private static String once(String before, String value) throws GiveUp {
        if (before != null) {
            throw GiveUp.INSTANCE;
        }
        return value;
    }

    /** The k-th column's entries, up to maxItems: how many. */
    private int readColumn(Cursor in, int k, int maxItems) throws GiveUp {
        int n = 0;
        in.expect('[');
        if (!in.take(']')) {
            do {
                if (n == maxItems) {
                    throw GiveUp.INSTANCE;
                }
                readEntry(in, k, n++, maxItems);
            } while (in.take(','));
            in.expect(']');
        }
        return n;
    }

    /** The k-th column's n-th entry, into the array of its kind, grown where it is full. */
    private void readEntry(Cursor in, int k, int n, int maxItems) throws GiveUp {
        switch (KINDS[k]) {
            case INTEGER -> {
                if (n == integers[k].length) {
                    integers[k] = Arrays.copyOf(integers[k], Math.min(2 * n, maxItems));
                }
                integers[k][n] = in.integer();
            }
            case NUMBER -> {
                if (n == numbers[k].length) {
                    numbers[k] = Arrays.copyOf(numbers[k], Math.min(2 * n, maxItems));
                }
                numbers[k][n] = in.number();
            }
            case STRING -> {
                if (n == strings[k].length) {
                    strings[k] = Arrays.copyOf(strings[k], Math.min(2 * n, maxItems));
                }
                strings[k][n] = ENUM_VALUES[k] == null ? in.string() : in.oneOf(ENUM_BYTES[k], ENUM_VALUES[k]);
            }
        }
    }

    /** What the cursor throws on anything beyond the plain JSON it reads: the record is the tree decoder's. */
    private static final class GiveUp extends Exception {
        static final GiveUp INSTANCE = new GiveUp();

        private GiveUp() {
            super("not plain JSON", null, false, false);
        }
    }

    /**
     * Reads plain JSON off the bytes: ASCII strings without escapes, integers within a long
     * written as JSON writes them, and numbers; whitespace between. Anything else (an
     * escape, a byte beyond ASCII, a literal, a nested value, malformed JSON) gives up.
     * Where it reads, it reads what a JSON parser does: the tree decoder's Jackson.
     */
    private static final class Cursor {
        /** The most digits of a long that never overflow it: 10^18 - 1 at most. */
        private static final int SAFE_DIGITS = 18;
        private final byte[] in;
        private int at;

        Cursor(byte[] in) {
            this.in = in;
        }

        private void skipSpace() {
            while (at < in.length && (in[at] == ' ' || in[at] == '\n' || in[at] == '\r' || in[at] == '\t')) {
                at++;
            }
        }

        /** Whether the next byte past whitespace is c, taken if so. */
        boolean take(char c) {
            skipSpace();
            if (at < in.length && in[at] == c) {
                at++;
                return true;
            }
            return false;
        }

        void expect(char c) throws GiveUp {
            if (!take(c)) {
                throw GiveUp.INSTANCE;
            }
        }

        void expectEnd() throws GiveUp {
            skipSpace();
            if (at != in.length) {
                throw GiveUp.INSTANCE;
            }
        }

        String string() throws GiveUp {
            int start = stringStart();
            return new String(in, start, at++ - start, StandardCharsets.US_ASCII);
        }

        /** A string that is one of `values` (their ASCII `bytes`), as that value. */
        String oneOf(byte[][] bytes, String[] values) throws GiveUp {
            int start = stringStart();
            int length = at++ - start;
            for (int v = 0; v < values.length; v++) {
                if (Arrays.equals(in, start, start + length, bytes[v], 0, bytes[v].length)) {
                    return values[v];
                }
            }
            throw GiveUp.INSTANCE;
        }

        /** Where the string that starts here begins, past its quote; the cursor left at its closing quote. */
        private int stringStart() throws GiveUp {
            expect('"');
            byte[] bytes = in;
            int start = at;
            int i = start;
            while (i < bytes.length && bytes[i] != '"') {
                byte b = bytes[i++];
                if (b == '\\' || b < 0x20) {  // an escape, a control character, or (negative) a byte beyond ASCII
                    throw GiveUp.INSTANCE;
                }
            }
            if (i == bytes.length) {
                throw GiveUp.INSTANCE;
            }
            at = i;
            return start;
        }

        /** An integer as JSON writes one, within a long. */
        long integer() throws GiveUp {
            skipSpace();
            long value = integerPart();
            if (continuesNumber()) {
                throw GiveUp.INSTANCE;  // a fraction or exponent
            }
            return value;
        }

        /** -?(0|[1-9][0-9]*) within a long, as JSON begins a number; what follows is the caller's. */
        private long integerPart() throws GiveUp {
            byte[] bytes = in;  // locals, not fields, in the loop: the JIT keeps them in registers
            int i = at;
            boolean negative = i < bytes.length && bytes[i] == '-';
            if (negative) {
                i++;
            }
            int start = i;
            int safeEnd = Math.min(bytes.length, start + SAFE_DIGITS);
            long value = 0;
            while (i < safeEnd && bytes[i] >= '0' && bytes[i] <= '9') {
                value = value * 10 + (bytes[i++] - '0');
            }
            while (i < bytes.length && bytes[i] >= '0' && bytes[i] <= '9') {
                int digit = bytes[i++] - '0';
                if (value > (Long.MAX_VALUE - digit) / 10) {
                    throw GiveUp.INSTANCE;  // beyond a long: the tree decoder names it
                }
                value = value * 10 + digit;
            }
            at = i;
            int digits = i - start;
            if (digits == 0 || (digits > 1 && bytes[start] == '0')) {
                throw GiveUp.INSTANCE;  // no digit, or a leading zero
            }
            return negative ? -value : value;
        }

        /** Whether a number goes on past its integer part: the tree decoder's to read. */
        private boolean continuesNumber() {
            return at < in.length && (in[at] == '.' || in[at] == 'e' || in[at] == 'E');
        }

        /** A number: an integer, or a decimal read as a JSON parser reads it (to the nearest double). */
        double number() throws GiveUp {
            skipSpace();
            int start = at;
            long whole = integerPart();
            if (!continuesNumber()) {
                return whole;  // as a JSON parser's integer token reads as a double
            }
            if (in[at] == '.') {
                at++;
                if (skipDigits() == 0) {
                    throw GiveUp.INSTANCE;
                }
            }
            if (at < in.length && (in[at] == 'e' || in[at] == 'E')) {
                at++;
                if (at < in.length && (in[at] == '+' || in[at] == '-')) {
                    at++;
                }
                if (skipDigits() == 0) {
                    throw GiveUp.INSTANCE;
                }
            }
            return Double.parseDouble(new String(in, start, at - start, StandardCharsets.US_ASCII));
        }

        private int skipDigits() {
            int start = at;
            while (at < in.length && in[at] >= '0' && in[at] <= '9') {
                at++;
            }
            return at - start;
        }
    }

    int size() {
        return size;
    }

    /** The i-th event's fields, as {@link FieldReader}; this object again, showing that event. */
    FieldReader event(int i) {
        index = i;
        askedNow = 0;
        return this;
    }

    /** The field's column, or -1 where the batch has none. */
    private int columnOrNone(String field) {
        int n = askedNow++;
        if (n < known && asked[n] == field) {
            return askedColumn[n];
        }
        for (int j = 0; j < known; j++) {  // asked in another order: an event without an optional field
            if (asked[j] == field) {
                return askedColumn[j];
            }
        }
        int k = RecordDecoder.EVENTS.columnIndex(field);
        if (known < asked.length) {
            asked[known] = field;
            askedColumn[known++] = k;
        }
        return k;
    }

    private int columnOf(String field) throws DecodeException {
        int k = columnOrNone(field);
        if (k < 0) {
            throw new DecodeException(field, "missing field: " + field);
        }
        return k;
    }

    /** The refusal that gives the record up to the tree decoder, which names what is wrong. */
    private static DecodeException givenUp(String field) {
        return new DecodeException(field, field + " is not as the schema says");
    }

    @Override
    public boolean has(String field) {
        return columnOrNone(field) >= 0;
    }

    @Override
    public long counter(String field) throws DecodeException {
        long n = integer(field);
        if (n < 0) {
            throw givenUp(field);
        }
        return n;
    }

    @Override
    public long integer(String field) throws DecodeException {
        int k = columnOf(field);
        long[] column = KINDS[k] == Kind.INTEGER ? integers[k] : null;
        if (column == null) {
            throw givenUp(field);
        }
        return column[index];
    }

    @Override
    public double number(String field, RecordSchema.Range range) throws DecodeException {
        int k = columnOf(field);
        double[] column = KINDS[k] == Kind.NUMBER ? numbers[k] : null;
        if (column == null || !Double.isFinite(column[index]) || !range.holds(column[index])) {
            throw givenUp(field);
        }
        return column[index];
    }

    @Override
    public String oneOf(String field, Set<String> allowed) throws DecodeException {
        String value = string(field);
        if (!allowed.contains(value)) {
            throw givenUp(field);
        }
        return value;
    }

    @Override
    public String textUpTo(String field, int maxLength) throws DecodeException {
        String value = string(field);
        if (value.length() > maxLength) {
            throw givenUp(field);
        }
        return value;
    }

    private String string(String field) throws DecodeException {
        int k = columnOf(field);
        String[] column = KINDS[k] == Kind.STRING ? strings[k] : null;
        if (column == null) {
            throw givenUp(field);
        }
        return column[index];
    }
}
