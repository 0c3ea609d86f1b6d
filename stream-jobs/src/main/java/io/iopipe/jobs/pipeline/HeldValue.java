package io.iopipe.jobs.pipeline;

import java.io.IOException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/**
 * A keyed value state whose reads and writes stay on the heap: a key's value is read from
 * its state at the key's first access since this instance started, and written back, if it
 * changed, as the next snapshot's barrier reaches the operator ({@link WritingBack}); the
 * heap keeps it after, a cleared value too (known empty, so not read again) while the key
 * holds any other value written back with it. Used as the ValueState it stands for, once
 * pointed at the key being taken ({@link #of}).
 */
final class HeldValue<T> implements ValueState<T> {
    private final ValueState<T> state;
    /** Copies what is written back: the heap backend's snapshot keeps the object written, which the heap goes on changing. */
    private final TypeSerializer<T> copier;
    private final Map<String, Held<T>> held = new HashMap<>();
    private String key;

    private static final class Held<T> {
        T value;
        boolean changed;

        Held(T value) {
            this.value = value;
        }
    }

    private HeldValue(ValueState<T> state, TypeSerializer<T> copier) {
        this.state = state;
        this.copier = copier;
    }

    /** The held value of the keyed state `descriptor` names. */
    static <T> HeldValue<T> in(RuntimeContext runtime, ValueStateDescriptor<T> descriptor) {
        return over(runtime.getState(descriptor), descriptor.getSerializer().duplicate());
    }

    /** The held value of `state`, whose written values `copier` copies. */
    static <T> HeldValue<T> over(ValueState<T> state, TypeSerializer<T> copier) {
        return new HeldValue<>(state, copier);
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
     * Writes back each key's changed values of `values`. The heap keeps them, cleared ones as
     * known empty, but for a key whose every value of these is cleared: a key forgotten is
     * not held. (RollUpWindows clears a value of each disk at every window: read again from
     * RocksDB after each snapshot, it cost a get a window.)
     */
    static void writeBack(WritingBack.KeySetter toKey, HeldValue<?>... values) throws IOException {
        Set<String> keys = new HashSet<>();
        for (HeldValue<?> v : values) {
            v.held.forEach((k, h) -> {
                if (h.changed) {
                    keys.add(k);
                }
            });
        }
        for (String k : keys) {
            toKey.setCurrentKey(k);
            boolean holdsAny = false;
            for (HeldValue<?> v : values) {
                holdsAny |= v.writeBack(k);
            }
            if (!holdsAny) {
                for (HeldValue<?> v : values) {
                    v.held.remove(k);
                }
            }
        }
    }

    /** Writes back `k`'s value if it changed; whether the key holds a value of this. */
    private boolean writeBack(String k) throws IOException {
        Held<T> h = held.get(k);
        if (h == null) {
            return false;
        }
        if (h.changed) {
            if (h.value == null) {
                state.clear();
            } else {
                state.update(copier.copy(h.value));
            }
            h.changed = false;
        }
        return h.value != null;
    }
}
