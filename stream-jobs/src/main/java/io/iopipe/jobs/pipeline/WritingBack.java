package io.iopipe.jobs.pipeline;

import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;

/**
 * Runs a keyed function that keeps some of its keyed state on the heap
 * (a {@link HeldValue}, the open records of {@link DiskWindows}): as a snapshot's barrier
 * reaches the operator, before the snapshot, the function writes what it holds to its keyed
 * state, so the checkpoint or savepoint holds everything taken before the barrier. In
 * RocksDB each read or write of state is a call into native code and a (de)serialization,
 * and every version written is an entry the next checkpoint flushes: a value changed at each
 * record is written once a checkpoint instead.
 */
final class WritingBack<IN, OUT> extends KeyedProcessOperator<String, IN, OUT> {
    /** A keyed function holding state on the heap. */
    interface Function {
        /** Writes what every key changed since the last snapshot to its keyed state; `toKey` points the state at a key. */
        void writeBack(KeySetter toKey) throws Exception;
    }

    /** How the operator points the keyed state at a key. */
    @FunctionalInterface
    interface KeySetter {
        void setCurrentKey(Object key);
    }

    <F extends KeyedProcessFunction<String, IN, OUT> & Function> WritingBack(F function) {
        super(function);
    }

    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        super.prepareSnapshotPreBarrier(checkpointId);
        ((Function) userFunction).writeBack(this::setCurrentKey);
    }
}
