package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.iostat.DiskstatsDelta;
import io.iopipe.jobs.iostat.IostatSums;
import io.iopipe.jobs.iostat.IostatWindow;
import io.iopipe.jobs.records.OutputRecord;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/** The window operator's two halves: sum deltas incrementally, then compute iostat once. */
final class IostatWindowFunctions {
    private IostatWindowFunctions() {}

    static final class SumDeltas implements AggregateFunction<DiskstatsDelta, IostatSums, IostatSums> {
        @Override
        public IostatSums createAccumulator() {
            return new IostatSums();
        }

        @Override
        public IostatSums add(DiskstatsDelta delta, IostatSums sums) {
            return sums.add(delta);
        }

        @Override
        public IostatSums getResult(IostatSums sums) {
            return sums;
        }

        @Override
        public IostatSums merge(IostatSums a, IostatSums b) {
            return a.merge(b);
        }
    }

    static final class EmitWindow extends ProcessWindowFunction<IostatSums, OutputRecord, String, TimeWindow> {
        private final int windowSeconds;

        EmitWindow(int windowSeconds) {
            this.windowSeconds = windowSeconds;
        }

        @Override
        public void process(String key, Context ctx, Iterable<IostatSums> sums, Collector<OutputRecord> out) {
            TimeWindow w = ctx.window();
            out.collect(IostatWindow.record(sums.iterator().next(), w.getStart() * 1_000_000L, w.getEnd() * 1_000_000L, windowSeconds));
        }
    }
}
