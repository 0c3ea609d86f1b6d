package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.detect.LongHashSet;
import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

/**
 * Objects with every public field set, at random, nested objects and collections too: what
 * a serializer of the job's own must carry back whole, whatever field a class gains.
 */
final class RandomlyFilled {
    private final Random random;

    RandomlyFilled(long seed) {
        this.random = new Random(seed);
    }

    <T> T of(Class<T> type) throws Exception {
        return of(type, 0);
    }

    private <T> T of(Class<T> type, int depth) throws Exception {
        if (depth > 4) {
            throw new IllegalStateException("nested too deep at " + type);
        }
        T value = type.getDeclaredConstructor().newInstance();
        for (Field f : type.getFields()) {
            if (!Modifier.isStatic(f.getModifiers())) {
                f.set(value, valueOf(f.getType(), f.getGenericType(), depth));
            }
        }
        return value;
    }

    private Object valueOf(Class<?> type, Type generic, int depth) throws Exception {
        if (type == String.class) {
            String[] strings = {"", "sdb", "web-7.example", "nvme0n1", "é→ü", "R", "device", "x".repeat(300)};
            return strings[random.nextInt(strings.length)] + random.nextInt(1000);
        }
        if (type == long.class) {
            long[] edges = {0, 1, -1, 127, 128, Long.MAX_VALUE, Long.MIN_VALUE, 1_763_700_000_000_000_000L};
            return random.nextBoolean() ? edges[random.nextInt(edges.length)] : random.nextLong() >> random.nextInt(64);
        }
        if (type == int.class) {
            return random.nextBoolean() ? random.nextInt() : random.nextInt(100) - 50;
        }
        if (type == boolean.class) {
            return random.nextBoolean();
        }
        if (type == double.class) {
            return random.nextDouble() * 1000;
        }
        if (type == long[].class) {
            long[] values = new long[random.nextInt(65)];
            for (int i = 0; i < values.length; i++) {
                values[i] = (long) valueOf(long.class, long.class, depth);
            }
            return values;
        }
        if (type.isArray()) {
            Object array = Array.newInstance(type.getComponentType(), 1 + random.nextInt(3));
            for (int i = 0; i < Array.getLength(array); i++) {
                Array.set(array, i, of(type.getComponentType(), depth + 1));
            }
            return array;
        }
        if (type == List.class) {
            List<Object> list = new ArrayList<>();
            for (int i = 1 + random.nextInt(3); i > 0; i--) {
                list.add(element(generic, 0, depth));
            }
            return list;
        }
        if (type == Set.class) {
            // Sets of longs as the job keeps them (record identities): unboxed, in the order added.
            @SuppressWarnings("unchecked")
            Set<Object> set = isSetOfLongs(generic) ? (Set<Object>) (Set<?>) new LongHashSet() : new HashSet<>();
            for (int i = 1 + random.nextInt(40); i > 0; i--) {
                set.add(element(generic, 0, depth));
            }
            return set;
        }
        if (type == Map.class) {
            Map<Object, Object> map = new TreeMap<>();
            for (int i = 1 + random.nextInt(3); i > 0; i--) {
                map.put(element(generic, 0, depth), element(generic, 1, depth));
            }
            return map;
        }
        return of(type, depth + 1);
    }

    private static boolean isSetOfLongs(Type generic) {
        return ((ParameterizedType) generic).getActualTypeArguments()[0] == Long.class;
    }

    /** An element of a collection field: its `i`-th type argument. */
    private Object element(Type generic, int i, int depth) throws Exception {
        Class<?> type = (Class<?>) ((ParameterizedType) generic).getActualTypeArguments()[i];
        return type == Long.class ? valueOf(long.class, long.class, depth) : valueOf(type, type, depth);
    }
}
