package io.iopipe.jobs.pipeline;

import java.io.IOException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.flink.api.common.state.ValueState;

/**
 * A keyed value state whose reads and writes stay on the heap between snapshots: a key's
 * value is read from its state at the key's first access since the last snapshot, and
 * written back, if it changed, as the next snapshot's barrier reaches the operator
 * ({@link WritingBack}). Used as the ValueState it stands for, once pointed at the key
 * being taken ({@link #of}).
 */
final class HeldValue<T> implements ValueState<T> {
    private final ValueState<T> state;
    private final Map<String, Held<T>> held = new HashMap<>();
    private String key;

    private static final class Held<T> {
        T value;
        boolean changed;

        Held(T value) {
            this.value = value;
        }
    }

    HeldValue(ValueState<T> state) {
        this.state = state;
    }

    /** This, pointed at `key`'s value: call with the key of each record or timer before using it. */
    HeldValue<T> of(String key) {
        this.key = key;
        return this;
    }

    private Held<T> held() throws IOException {
        Held<T> h = held.get(key);
        if (h == null) {
            h = new Held<>(state.value());
            held.put(key, h);
        }
        return h;
    }

    @Override
    public T value() throws IOException {
        return held().value;
    }

    @Override
    public void update(T value) {
        Held<T> h = held.computeIfAbsent(key, k -> new Held<>(null));
        h.value = value;
        h.changed = true;
    }

    @Override
    public void clear() {
        update(null);
    }

    /**
     * Writes back each key's changed values of `values`, then lets them all go: the next
     * access reads state again, after the snapshot (the heap state backend's copy on write
     * keeps a snapshot's copy apart only from objects read after it).
     */
    static void writeBack(WritingBack.KeySetter toKey, HeldValue<?>... values) throws IOException {
        Set<String> keys = new HashSet<>();
        for (HeldValue<?> v : values) {
            keys.addAll(v.held.keySet());
        }
        for (String k : keys) {
            toKey.setCurrentKey(k);
            for (HeldValue<?> v : values) {
                v.writeBack(k);
            }
        }
        for (HeldValue<?> v : values) {
            v.held.clear();
        }
    }

    private void writeBack(String k) throws IOException {
        Held<T> h = held.get(k);
        if (h == null || !h.changed) {
            return;
        }
        if (h.value == null) {
            state.clear();
        } else {
            state.update(h.value);
        }
    }
}
