package io.iopipe.jobs.records;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.List;

/**
 * The /proc/diskstats counters in the kernel's column order, as io.diskstats.v1's schema
 * lists them (the fields of its `counter` definition), read from the schema packed in the
 * jar. A class that carries counters holds each as a long field of the same name in
 * camelCase (reads_completed as readsCompleted): iostat's formulas read them by name, and
 * whatever goes over every counter binds them by the schema's list ({@link #of}).
 */
public final class DiskstatsFields {
    private static final RecordSchema SCHEMA = RecordSchema.of(DiskstatsSample.SCHEMA);
    /** I/Os in progress: a gauge, not a count that grows. */
    private static final String IN_FLIGHT = "in_flight";
    public static final List<String> COUNTERS = SCHEMA.fieldsOf("counter");
    /** Every counter that only grows: what a delta between two samples is of. */
    public static final List<String> CUMULATIVE = COUNTERS.stream().filter(c -> !c.equals(IN_FLIGHT)).toList();

    private DiskstatsFields() {}

    /** Whether a record must carry the counter: kernels before 4.18 and 5.5 lack the discard and flush ones. */
    public static boolean required(String counter) {
        return SCHEMA.requires(counter);
    }

    /** The counters as the long fields of a class that carries them; a class that lacks one is a broken build. */
    public static <T> Counters<T> of(Class<T> type, List<String> counters) {
        Field[] fields = new Field[counters.size()];
        for (int i = 0; i < fields.length; i++) {
            fields[i] = longField(type, camelCase(counters.get(i)));
        }
        return new Counters<>(counters, fields);
    }

    /** reads_completed as readsCompleted. */
    public static String camelCase(String counter) {
        StringBuilder name = new StringBuilder();
        boolean upper = false;
        for (char c : counter.toCharArray()) {
            if (c == '_') {
                upper = true;
            } else {
                name.append(upper ? Character.toUpperCase(c) : c);
                upper = false;
            }
        }
        return name.toString();
    }

    private static Field longField(Class<?> type, String name) {
        try {
            Field field = type.getField(name);
            if (field.getType() != long.class || Modifier.isStatic(field.getModifiers())) {
                throw new IllegalStateException(type.getSimpleName() + "." + name + " must be a long of each instance");
            }
            return field;
        } catch (NoSuchFieldException e) {
            throw new IllegalStateException(type.getSimpleName() + " has no field " + name + " for the counter schema/records/"
                    + DiskstatsSample.SCHEMA + " lists", e);
        }
    }

    /** Counters of one class, in the schema's order: the i-th is the i-th of the list they were bound by. */
    public static final class Counters<T> {
        private final List<String> names;
        private final Field[] fields;

        private Counters(List<String> names, Field[] fields) {
            this.names = names;
            this.fields = fields;
        }

        public int size() {
            return fields.length;
        }

        public String name(int i) {
            return names.get(i);
        }

        public long get(T carrier, int i) {
            try {
                return fields[i].getLong(carrier);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException("a public field is readable", e);
            }
        }

        public void set(T carrier, int i, long value) {
            try {
                fields[i].setLong(carrier, value);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException("a public field is writable", e);
            }
        }
    }
}
