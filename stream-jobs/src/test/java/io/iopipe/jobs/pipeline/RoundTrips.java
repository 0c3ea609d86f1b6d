package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;

/**
 * Values through one of the job's own serializers and back, judged by Flink's POJO
 * serializer of their class, which writes every public field: equal POJO bytes, equal values.
 */
final class RoundTrips<T> {
    final TypeSerializer<T> serializer;
    final TypeSerializer<T> pojo;

    RoundTrips(Class<T> type, TypeSerializer<T> serializer) {
        this.serializer = serializer;
        this.pojo = TypeInformation.of(type).createSerializer(new SerializerConfigImpl());
    }

    /** `value` written and read back; its copy writes the same bytes. */
    T roundTrip(T value) throws Exception {
        byte[] written = bytes(serializer, value);
        T back = serializer.deserialize(new DataInputDeserializer(written));
        assertArrayEquals(written, bytes(serializer, serializer.copy(back)));
        return back;
    }

    void assertSame(T expected, T actual) throws Exception {
        assertArrayEquals(bytes(pojo, expected), bytes(pojo, actual), "a field did not come back as it went");
    }

    void assertComesBack(T value) throws Exception {
        assertSame(value, roundTrip(value));
    }

    static <V> byte[] bytes(TypeSerializer<V> serializer, V value) throws Exception {
        DataOutputSerializer out = new DataOutputSerializer(4096);
        serializer.serialize(value, out);
        return out.getCopyOfBuffer();
    }
}
