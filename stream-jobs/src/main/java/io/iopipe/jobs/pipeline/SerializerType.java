package io.iopipe.jobs.pipeline;

import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/** The type of a stream or state whose values one of the job's own serializers writes. */
final class SerializerType<T> extends TypeInformation<T> {
    private final Class<T> type;
    private final TypeSerializer<T> serializer;

    SerializerType(Class<T> type, TypeSerializer<T> serializer) {
        this.type = type;
        this.serializer = serializer;
    }

    @Override
    public boolean isBasicType() {
        return false;
    }

    @Override
    public boolean isTupleType() {
        return false;
    }

    @Override
    public int getArity() {
        return 1;
    }

    @Override
    public int getTotalFields() {
        return 1;
    }

    @Override
    public Class<T> getTypeClass() {
        return type;
    }

    @Override
    public boolean isKeyType() {
        return false;
    }

    @Override
    public TypeSerializer<T> createSerializer(SerializerConfig config) {
        return serializer;
    }

    @Override
    public String toString() {
        return type.getSimpleName() + " (" + serializer.getClass().getSimpleName() + ")";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SerializerType<?> other && other.type == type && other.serializer.equals(serializer);
    }

    @Override
    public int hashCode() {
        return type.hashCode() * 31 + serializer.hashCode();
    }

    @Override
    public boolean canEqual(Object o) {
        return o instanceof SerializerType<?>;
    }
}
