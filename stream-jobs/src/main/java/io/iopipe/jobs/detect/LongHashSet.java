package io.iopipe.jobs.detect;

import java.util.AbstractSet;
import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * A set of longs held unboxed: open addressing (linear probing) over an index into the
 * values, which are kept in the order they were added, and iterate in that order. A window
 * remembers the identity of every record folded into it; as a {@code HashSet<Long>} each
 * took a node and a boxed Long, and adding them was a tenth of the windows' task. It is a
 * {@code Set<Long>} still, so a window's fields keep their declared types and its state its
 * format: Flink's POJO serializer writes a set field as its elements, and reads them back
 * into a {@code HashSet} (see {@link DiskWindow#firstSeen}). No removal.
 */
public final class LongHashSet extends AbstractSet<Long> {
    /** A 10 s window folds about 130 records at the fleet's rates, 45 of them histograms: a set grows twice at most. */
    private static final int FIRST_CAPACITY = 64;
    private static final int[] NO_SLOTS = new int[0];
    private static final long[] NO_VALUES = new long[0];
    /**
     * Per slot: 1 + the index of its value, or 0 where empty. At most half the slots are
     * taken. None until the first value: most windows made never take one (copies, rolled-up
     * windows, windows read off the wire).
     */
    private int[] slots = NO_SLOTS;
    private long[] values = NO_VALUES;
    private int size;

    /** `ids` unboxed, in their order; `ids` itself where it already is. */
    public static LongHashSet of(Set<Long> ids) {
        if (ids instanceof LongHashSet unboxed) {
            return unboxed;
        }
        LongHashSet copy = new LongHashSet();
        for (long id : ids) {
            copy.addLong(id);
        }
        return copy;
    }

    /** Whether `v` was new to the set; remembers it. */
    public boolean addLong(long v) {
        if (size == values.length) {
            grow();
        }
        int mask = slots.length - 1;
        for (int i = spread(v) & mask; ; i = (i + 1) & mask) {
            int slot = slots[i];
            if (slot == 0) {
                values[size] = v;
                slots[i] = ++size;
                return true;
            }
            if (values[slot - 1] == v) {
                return false;
            }
        }
    }

    public boolean containsLong(long v) {
        if (size == 0) {
            return false;
        }
        int mask = slots.length - 1;
        for (int i = spread(v) & mask; ; i = (i + 1) & mask) {
            int slot = slots[i];
            if (slot == 0) {
                return false;
            }
            if (values[slot - 1] == v) {
                return true;
            }
        }
    }

    @Override
    public boolean add(Long v) {
        return addLong(v);
    }

    @Override
    public boolean contains(Object o) {
        return o instanceof Long v && containsLong(v);
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public void clear() {
        Arrays.fill(slots, 0);
        size = 0;
    }

    @Override
    public Iterator<Long> iterator() {
        return new Iterator<>() {
            private int next;

            @Override
            public boolean hasNext() {
                return next < size;
            }

            @Override
            public Long next() {
                if (next >= size) {
                    throw new NoSuchElementException();
                }
                return values[next++];
            }
        };
    }

    private void grow() {
        values = Arrays.copyOf(values, Math.max(FIRST_CAPACITY, values.length * 2));
        slots = new int[values.length * 2];
        int mask = slots.length - 1;
        for (int index = 0; index < size; index++) {
            int i = spread(values[index]) & mask;
            while (slots[i] != 0) {
                i = (i + 1) & mask;
            }
            slots[i] = index + 1;
        }
    }

    /** The high bits mixed into the low ones (Stafford's variant 13 of MurmurHash3's finalizer): identities are fingerprints, but any long may come. */
    private static int spread(long v) {
        v = (v ^ (v >>> 30)) * 0xbf58476d1ce4e5b9L;
        v = (v ^ (v >>> 27)) * 0x94d049bb133111ebL;
        return (int) (v ^ (v >>> 31));
    }
}
