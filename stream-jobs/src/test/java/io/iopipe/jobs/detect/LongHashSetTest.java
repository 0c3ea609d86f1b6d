package io.iopipe.jobs.detect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

/**
 * The unboxed set of a window's record identities holds what a {@code Set<Long>} holds,
 * iterates in the order its values came, and goes through the state a window is kept in
 * (Flink's POJO serializer, which writes a set field as its elements) as the
 * {@code HashSet}s earlier builds kept did.
 */
class LongHashSetTest {
    private final Random random = new Random(29);

    @Test
    void itHoldsWhatALinkedHashSetHoldsInTheSameOrder() {
        for (int life = 0; life < 200; life++) {
            LongHashSet set = new LongHashSet();
            Set<Long> expected = new LinkedHashSet<>();
            long range = 1 + random.nextInt(1 << random.nextInt(16));  // small ranges repeat values often
            long stride = random.nextBoolean() ? 1 : 1L << random.nextInt(64);  // values alike in their low bits
            for (int i = random.nextInt(3000); i > 0; i--) {
                long v = random.nextInt((int) Math.min(range, Integer.MAX_VALUE)) * stride;
                if (random.nextInt(50) == 0) {
                    v = random.nextLong();
                }
                assertEquals(expected.add(v), set.addLong(v), "adding " + v);
                long probe = random.nextLong() % (range * 2);
                assertEquals(expected.contains(probe), set.containsLong(probe));
            }
            assertEquals(expected.size(), set.size());
            assertEquals(new ArrayList<>(expected), new ArrayList<>(set));
            assertEquals(new HashSet<>(expected), set);
            assertEquals(set, new HashSet<>(expected));
            assertEquals(new HashSet<>(expected).hashCode(), set.hashCode());
        }
    }

    @Test
    void zeroAndTheExtremesAreValuesLikeAnyOther() {
        LongHashSet set = new LongHashSet();
        for (long v : new long[] {0, Long.MIN_VALUE, Long.MAX_VALUE, -1}) {
            assertFalse(set.containsLong(v));
            assertTrue(set.addLong(v));
            assertFalse(set.add(v));
            assertTrue(set.contains(v));
        }
        assertFalse(set.contains("0"));
        assertFalse(set.contains(null));
        set.clear();
        assertEquals(0, set.size());
        assertFalse(set.containsLong(0));
        assertTrue(set.addLong(0));
    }

    @Test
    void anotherSetIsCopiedInItsOrderAndAnUnboxedOneIsTakenAsItIs() {
        Set<Long> boxed = new LinkedHashSet<>(List.of(5L, -3L, 9L));
        LongHashSet copy = LongHashSet.of(boxed);
        assertEquals(List.of(5L, -3L, 9L), new ArrayList<>(copy));
        assertTrue(LongHashSet.of(copy) == copy);
    }

    @Test
    void aWindowsIdentitiesGoThroughItsStateAsEarlierBuildsKeptThem() throws Exception {
        TypeSerializer<DiskWindow> state = TypeInformation.of(DiskWindow.class).createSerializer(new SerializerConfigImpl());
        DiskWindow w = new DiskWindow();
        DiskWindow earlier = new DiskWindow();
        earlier.seen = new HashSet<>();
        earlier.seenHistograms = new HashSet<>();
        for (long id = -40; id < 40; id += 3) {
            w.firstSeen(id * 0x9E3779B97F4A7C15L, id % 2 == 0);
            earlier.seen.add(id * 0x9E3779B97F4A7C15L);
            if (id % 2 == 0) {
                earlier.seenHistograms.add(id * 0x9E3779B97F4A7C15L);
            }
        }
        // Flink writes a set field as its elements: the bytes say nothing of the set's class.
        assertEquals(new HashSet<>(earlier.seen).size(), w.seen.size());
        DiskWindow back = state.deserialize(new DataInputDeserializer(bytes(state, w)));
        DiskWindow earlierBack = state.deserialize(new DataInputDeserializer(bytes(state, earlier)));
        assertEquals(earlier.seen, back.seen);
        assertEquals(earlier.seenHistograms, back.seenHistograms);
        assertEquals(earlierBack.seen, back.seen);
        assertEquals(w.seen, state.copy(w).seen);
    }

    @Test
    void aWindowAnEarlierBuildKeptWithBoxedSetsStillMergesAResentRecordOnce() throws Exception {
        TypeSerializer<DiskWindow> state = TypeInformation.of(DiskWindow.class).createSerializer(new SerializerConfigImpl());
        DiskWindow earlier = new DiskWindow();
        earlier.seen = new HashSet<>(List.of(1L, 2L, 3L));
        earlier.seenHistograms = new HashSet<>(List.of(2L));
        DiskWindow restored = state.deserialize(new DataInputDeserializer(bytes(state, earlier)));
        assertFalse(restored.seen instanceof LongHashSet, "Flink reads a set field back as a set of its own");
        assertFalse(restored.firstSeen(3, false), "a record it had seen is seen again");
        assertTrue(restored.firstSeen(4, true));
        assertInstanceOf(LongHashSet.class, restored.seen);
        assertEquals(Set.of(1L, 2L, 3L, 4L), restored.seen);
        assertEquals(Set.of(2L, 4L), restored.seenHistograms);
    }

    private static <V> byte[] bytes(TypeSerializer<V> serializer, V value) throws Exception {
        DataOutputSerializer out = new DataOutputSerializer(256);
        serializer.serialize(value, out);
        return out.getCopyOfBuffer();
    }
}
