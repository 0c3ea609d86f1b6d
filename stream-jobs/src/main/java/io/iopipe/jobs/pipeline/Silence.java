package io.iopipe.jobs.pipeline;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.streaming.api.TimerService;

/**
 * When a disk was last heard from, on the job's wall clock, and one processing-time
 * timer to notice that it went quiet. A disk's event time stops when the disk does, so
 * only the wall clock can tell it is gone. The timer is re-armed when it fires rather
 * than moved on every record: one timer per disk, not one per record.
 */
final class Silence {
    private final ValueState<Long> lastHeardMs;
    private final ValueState<Long> checkAtMs;

    Silence(RuntimeContext runtime) {
        this(runtime.getState(lastHeardState()), runtime.getState(checkAtState()));
    }

    /** Silence kept in `lastHeardMs` and `checkAtMs`: the states {@link #lastHeardState} and {@link #checkAtState} name, or values held of them. */
    Silence(ValueState<Long> lastHeardMs, ValueState<Long> checkAtMs) {
        this.lastHeardMs = lastHeardMs;
        this.checkAtMs = checkAtMs;
    }

    static ValueStateDescriptor<Long> lastHeardState() {
        return new ValueStateDescriptor<>("last-heard-ms", Long.class);
    }

    static ValueStateDescriptor<Long> checkAtState() {
        return new ValueStateDescriptor<>("silence-check-at-ms", Long.class);
    }

    /**
     * The disk spoke now; check on it `afterMs` from now unless a check is due by then (a
     * check re-armed for a longer silence, say, is brought forward).
     */
    void heard(TimerService timers, long afterMs) throws Exception {
        long now = timers.currentProcessingTime();
        lastHeardMs.update(now);
        Long due = checkAtMs.value();
        if (due == null || due > now + afterMs) {
            if (due != null) {
                timers.deleteProcessingTimeTimer(due);
            }
            checkAt(timers, now + afterMs);
        }
    }

    /** At the check: how long the disk has been silent. The check is spent; re-arm with {@link #checkAfterLastHeard}. */
    long silentForMs(TimerService timers) throws Exception {
        checkAtMs.clear();
        Long last = lastHeardMs.value();
        return last == null ? Long.MAX_VALUE : timers.currentProcessingTime() - last;
    }

    void checkAfterLastHeard(TimerService timers, long afterMs) throws Exception {
        checkAt(timers, lastHeardMs.value() + afterMs);
    }

    private void checkAt(TimerService timers, long atMs) throws Exception {
        timers.registerProcessingTimeTimer(atMs);
        checkAtMs.update(atMs);
    }

    void clear() {
        lastHeardMs.clear();
        checkAtMs.clear();
    }
}
