package io.iopipe.jobs.records;

import java.util.List;

/** The periods io.latency.v1 rolls latencies up over, shortest first: its schema's `period_s` enum, packed into the jar. */
public final class LatencyPeriods {
    public static final String SCHEMA = "io.latency.v1";

    private LatencyPeriods() {}

    public static List<Integer> seconds() {
        return RecordSchema.of(SCHEMA).allowed("period_s").stream().map(Integer::valueOf).sorted().toList();
    }
}
