package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.HashMap;
import java.util.Map;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.junit.jupiter.api.Test;

class HeldValueTest {
    /** A keyed value state in a map, counting its reads as RocksDB's gets. */
    private static final class KeyedValues implements ValueState<Long> {
        final Map<String, Long> values = new HashMap<>();
        String key;
        int reads;

        @Override
        public Long value() {
            reads++;
            return values.get(key);
        }

        @Override
        public void update(Long value) {
            values.put(key, value);
        }

        @Override
        public void clear() {
            values.remove(key);
        }
    }

    private final KeyedValues spanState = new KeyedValues();
    private final KeyedValues sentState = new KeyedValues();
    private final HeldValue<Long> span = HeldValue.over(spanState, LongSerializer.INSTANCE);
    private final HeldValue<Long> sent = HeldValue.over(sentState, LongSerializer.INSTANCE);

    private void writeBack() throws Exception {
        HeldValue.writeBack(key -> {
            spanState.key = (String) key;
            sentState.key = (String) key;
        }, span, sent);
    }

    /** Disk d's span and sent flag, both written back. */
    private void bothWrittenBack() throws Exception {
        span.of("d").update(1L);
        sent.of("d").update(1L);
        writeBack();
    }

    @Test
    void aValueClearedBesideOneStillHeldIsKnownEmptyAndNotReadAgain() throws Exception {
        bothWrittenBack();
        sent.of("d").clear();
        writeBack();
        assertEquals(Map.of("d", 1L), spanState.values);
        assertEquals(Map.of(), sentState.values, "the cleared value is cleared in state");
        for (int window = 0; window < 3; window++) {
            assertNull(sent.of("d").value());
            assertEquals(1L, span.of("d").value());
            writeBack();
        }
        assertEquals(0, sentState.reads + spanState.reads, "nothing is read: the heap knows both");
    }

    @Test
    void aKeyWhoseEveryValueIsClearedIsLetGoOfAndReadFromStateAgain() throws Exception {
        bothWrittenBack();
        span.of("d").clear();
        sent.of("d").clear();
        writeBack();
        assertEquals(Map.of(), spanState.values);
        assertEquals(Map.of(), sentState.values);
        assertNull(span.of("d").value());
        assertEquals(1, spanState.reads, "a forgotten key is read again, once");
        assertNull(span.of("d").value());
        assertEquals(1, spanState.reads);
    }

    @Test
    void aValueNeverTakenOnThisInstanceIsReadFromStateWhateverItsKeyHolds() throws Exception {
        spanState.key = "d";
        spanState.update(7L);
        spanState.key = null;
        sent.of("d").update(1L);
        sent.of("d").clear();
        writeBack();
        assertEquals(7L, span.of("d").value(), "what an earlier instance wrote");
        assertEquals(Map.of("d", 7L), spanState.values);
    }
}
