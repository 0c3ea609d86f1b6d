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
 * ({@link #read} returns null), and so does any event it holds that the decoder's rules
 * refuse ({@link FieldReader} throws): the tree decoder then decodes the record, or
 * refuses it naming the field and the event at fault, as it would have anyway.
 */
final class EventBatchColumns implements FieldReader {
    /** What a column holds, as its schema's items say. */
    private enum Kind { INTEGER, NUMBER, STRING }

    private static final String SCHEMA = "schema";
    private static final String HOST = "host";
    private static final String DISK = "disk";
    private static final Kind[] KINDS = kinds(RecordDecoder.EVENTS);
    private static final int FIRST_CAPACITY = 64;
    private static final int FIRST_ASKED = 16;

    final String host;
    final String disk;
    private final int size;
    private final long[][] integers;
    private final double[][] numbers;
    private final String[][] strings;
    /** The event {@link FieldReader}'s methods read. */
    private int index;
    /**
     * The fields asked for of the events, in the order asked, with their columns: the
     * decoder asks for an event's fields in one order, the same names each time, so each
     * event's n-th field is found by comparing a reference rather than looked up by name.
     */
    private final String[] asked = new String[2 * FIRST_ASKED];
    private final int[] askedColumn = new int[2 * FIRST_ASKED];
    private int askedNow;

    private EventBatchColumns(String host, String disk, int size, long[][] integers, double[][] numbers, String[][] strings) {
        this.host = host;
        this.disk = disk;
        this.size = size;
        this.integers = integers;
        this.numbers = numbers;
        this.strings = strings;
    }

    private static Kind[] kinds(BatchColumns columns) {
        RecordSchema schema = RecordSchema.of(EventBatch.SCHEMA);
        Kind[] kinds = new Kind[columns.count()];
        for (int k = 0; k < kinds.length; k++) {
            String type = schema.itemType(columns.column(k));
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

    /** The batch's columns, or null where the record is anything but a batch read whole, every column there and alike in length. */
    static EventBatchColumns read(byte[] utf8) {
        try {
            return read(new Cursor(utf8));
        } catch (GiveUp notPlain) {
            return null;  // the tree decoder decodes it, or says what is wrong
        }
    }

    private static EventBatchColumns read(Cursor in) throws GiveUp {
        BatchColumns layout = RecordDecoder.EVENTS;
        long[][] integers = new long[layout.count()][];
        double[][] numbers = new double[layout.count()][];
        String[][] strings = new String[layout.count()][];
        int[] sizes = new int[layout.count()];
        Arrays.fill(sizes, -1);
        String schema = null;
        String host = null;
        String disk = null;
        in.expect('{');
        do {
            String name = in.string();
            in.expect(':');
            switch (name) {
                case SCHEMA -> schema = once(schema, in.string());
                case HOST -> host = once(host, in.string());
                case DISK -> disk = once(disk, in.string());
                default -> {
                    int k = layout.columnIndex(name);
                    if (k < 0 || sizes[k] >= 0) {
                        throw GiveUp.INSTANCE;  // a field the reader does not read, or one given twice
                    }
                    sizes[k] = switch (KINDS[k]) {
                        case INTEGER -> readIntegers(in, integers, k, layout.maxItems(k));
                        case NUMBER -> readNumbers(in, numbers, k, layout.maxItems(k));
                        case STRING -> readStrings(in, strings, k, layout.maxItems(k));
                    };
                }
            }
        } while (in.take(','));
        in.expect('}');
        in.expectEnd();
        for (int size : sizes) {
            if (size != sizes[0]) {
                return null;  // a column missing (-1) or of another length
            }
        }
        boolean batch = EventBatch.SCHEMA.equals(schema) && host != null && disk != null && sizes[0] >= 0;
        return batch ? new EventBatchColumns(host, disk, sizes[0], integers, numbers, strings) : null;
    }

    private static String once(String before, String value) throws GiveUp {
        if (before != null) {
            throw GiveUp.INSTANCE;
        }
        return value;
    }

    /** The column's integers, up to maxItems: how many. */
    private static int readIntegers(Cursor in, long[][] columns, int k, int maxItems) throws GiveUp {
        long[] column = new long[FIRST_CAPACITY];
        int n = 0;
        in.expect('[');
        if (!in.take(']')) {
            do {
                if (n == maxItems) {
                    throw GiveUp.INSTANCE;
                }
                if (n == column.length) {
                    column = Arrays.copyOf(column, Math.min(2 * n, maxItems));
                }
                column[n++] = in.integer();
            } while (in.take(','));
            in.expect(']');
        }
        columns[k] = column;
        return n;
    }

    /** The column's numbers, up to maxItems: how many. */
    private static int readNumbers(Cursor in, double[][] columns, int k, int maxItems) throws GiveUp {
        double[] column = new double[FIRST_CAPACITY];
        int n = 0;
        in.expect('[');
        if (!in.take(']')) {
            do {
                if (n == maxItems) {
                    throw GiveUp.INSTANCE;
                }
                if (n == column.length) {
                    column = Arrays.copyOf(column, Math.min(2 * n, maxItems));
                }
                column[n++] = in.number();
            } while (in.take(','));
            in.expect(']');
        }
        columns[k] = column;
        return n;
    }

    /** The column's strings, up to maxItems: how many. */
    private static int readStrings(Cursor in, String[][] columns, int k, int maxItems) throws GiveUp {
        String[] column = new String[FIRST_CAPACITY];
        int n = 0;
        in.expect('[');
        if (!in.take(']')) {
            do {
                if (n == maxItems) {
                    throw GiveUp.INSTANCE;
                }
                if (n == column.length) {
                    column = Arrays.copyOf(column, Math.min(2 * n, maxItems));
                }
                column[n++] = in.string();
            } while (in.take(','));
            in.expect(']');
        }
        columns[k] = column;
        return n;
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
            expect('"');
            int start = at;
            while (at < in.length && in[at] != '"') {
                byte b = in[at];
                if (b == '\\' || b < 0x20) {  // an escape, a control character, or (negative) a byte beyond ASCII
                    throw GiveUp.INSTANCE;
                }
                at++;
            }
            if (at == in.length) {
                throw GiveUp.INSTANCE;
            }
            return new String(in, start, at++ - start, StandardCharsets.US_ASCII);
        }

        /** An integer as JSON writes one, -?(0|[1-9][0-9]*), within a long. */
        long integer() throws GiveUp {
            skipSpace();
            boolean negative = at < in.length && in[at] == '-';
            if (negative) {
                at++;
            }
            int start = at;
            long value = 0;
            while (at < in.length && in[at] >= '0' && in[at] <= '9') {
                int digit = in[at] - '0';
                if (at - start >= SAFE_DIGITS && value > (Long.MAX_VALUE - digit) / 10) {
                    throw GiveUp.INSTANCE;  // beyond a long: the tree decoder names it
                }
                value = value * 10 + digit;
                at++;
            }
            int digits = at - start;
            if (digits == 0 || (digits > 1 && in[start] == '0') || continuesNumber()) {
                throw GiveUp.INSTANCE;  // no digit, a leading zero, or a fraction or exponent
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
            if (at < in.length && in[at] == '-') {
                at++;
            }
            int intStart = at;
            skipDigits();
            int intDigits = at - intStart;
            if (intDigits == 0 || (intDigits > 1 && in[intStart] == '0')) {
                throw GiveUp.INSTANCE;
            }
            if (!continuesNumber()) {
                if (intDigits > SAFE_DIGITS) {
                    throw GiveUp.INSTANCE;
                }
                return Long.parseLong(new String(in, start, at - start, StandardCharsets.US_ASCII));
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
        if (n < asked.length && asked[n] == field) {
            return askedColumn[n];
        }
        int k = RecordDecoder.EVENTS.columnIndex(field);
        if (n < asked.length) {
            asked[n] = field;
            askedColumn[n] = k;
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
        long[] column = integers[columnOf(field)];
        if (column == null) {
            throw givenUp(field);
        }
        return column[index];
    }

    @Override
    public double number(String field, RecordSchema.Range range) throws DecodeException {
        double[] column = numbers[columnOf(field)];
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
        String[] column = strings[columnOf(field)];
        if (column == null) {
            throw givenUp(field);
        }
        return column[index];
    }
}
