package io.iopipe.jobs.pipeline;

import java.io.IOException;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.core.memory.DataOutputView;

/**
 * What the job's own serializers share: mutable values of variable length, copied through
 * their bytes. A copy is made only where Flink does not reuse objects, and the job turns
 * object reuse on ({@link Pipeline}).
 */
abstract class CompactSerializer<T> extends TypeSerializerSingleton<T> {
    @Override
    public boolean isImmutableType() {
        return false;
    }

    @Override
    public T copy(T from) {
        try {
            DataOutputSerializer bytes = new DataOutputSerializer(256);
            serialize(from, bytes);
            return deserialize(new DataInputDeserializer(bytes.getSharedBuffer(), 0, bytes.length()));
        } catch (IOException e) {
            throw new IllegalStateException("a value in memory always copies", e);
        }
    }

    @Override
    public T copy(T from, T reuse) {
        return copy(from);
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public T deserialize(T reuse, DataInputView in) throws IOException {
        return deserialize(in);
    }

    @Override
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        serialize(deserialize(in), out);
    }
}
