package io.iopipe.jobs.iostat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;

/**
 * iostat -x arithmetic, exactly as sysstat's iostat computes it from two snapshots
 * (write_ext_stat / compute_ext_disk_stats): rates divide by the interval the
 * snapshots span; await and request size divide by the I/Os completed in it.
 */
public final class IostatWindow {
    public static final String SCHEMA = "io.window.v1";
    /** /proc/diskstats counts 512-byte sectors whatever the device's block size (iostats.rst). */
    static final double SECTORS_PER_KIB = 2.0;
    static final double NS_PER_S = 1e9;
    static final double MS_PER_S = 1000.0;

    private IostatWindow() {}

    public static OutputRecord record(IostatSums s, long windowStartNs, long windowEndNs, int windowSeconds) {
        return new OutputRecord(SCHEMA, OutputRecord.diskKey(s.host, s.disk), Json.write(fields(s, windowStartNs, windowEndNs, windowSeconds)));
    }

    /** The window record's iostat fields, for a caller to add more before writing it. */
    public static ObjectNode fields(IostatSums s, long windowStartNs, long windowEndNs, int windowSeconds) {
        double seconds = s.intervalNs / NS_PER_S;
        ObjectNode w = Json.object();
        w.put("schema", SCHEMA);
        w.put("host", s.host);
        w.put("disk", s.disk);
        w.put("op", "all");
        w.put("window_start_ns", windowStartNs);
        w.put("window_end_ns", windowEndNs);
        w.put("window_s", windowSeconds);
        w.put("interval_s", seconds);
        w.put("samples", s.samples);
        w.put("rotational", s.rotational);
        w.put("reads_completed", s.readsCompleted);
        w.put("writes_completed", s.writesCompleted);
        w.put("discards_completed", s.discardsCompleted);
        w.put("flushes_completed", s.flushesCompleted);

        w.put("reads_per_s", s.readsCompleted / seconds);
        w.put("read_kib_per_s", s.sectorsRead / SECTORS_PER_KIB / seconds);
        w.put("read_merges_per_s", s.readsMerged / seconds);
        w.put("read_merges_pct", mergedPct(s.readsMerged, s.readsCompleted));
        w.put("read_await_ms", await(s.readTimeMs, s.readsCompleted));
        w.put("read_req_kib", requestKib(s.sectorsRead, s.readsCompleted));

        w.put("writes_per_s", s.writesCompleted / seconds);
        w.put("write_kib_per_s", s.sectorsWritten / SECTORS_PER_KIB / seconds);
        w.put("write_merges_per_s", s.writesMerged / seconds);
        w.put("write_merges_pct", mergedPct(s.writesMerged, s.writesCompleted));
        w.put("write_await_ms", await(s.writeTimeMs, s.writesCompleted));
        w.put("write_req_kib", requestKib(s.sectorsWritten, s.writesCompleted));

        w.put("discards_per_s", s.discardsCompleted / seconds);
        w.put("discard_kib_per_s", s.sectorsDiscarded / SECTORS_PER_KIB / seconds);
        w.put("discard_merges_per_s", s.discardsMerged / seconds);
        w.put("discard_merges_pct", mergedPct(s.discardsMerged, s.discardsCompleted));
        w.put("discard_await_ms", await(s.discardTimeMs, s.discardsCompleted));
        w.put("discard_req_kib", requestKib(s.sectorsDiscarded, s.discardsCompleted));

        w.put("flushes_per_s", s.flushesCompleted / seconds);
        w.put("flush_await_ms", await(s.flushTimeMs, s.flushesCompleted));

        // aqu-sz: weighted_io_time is the integral of queue depth over time in ms.
        w.put("queue_size", s.weightedIoTimeMs / seconds / MS_PER_S);
        // %util: share of the interval with at least one I/O in flight.
        w.put("util_pct", s.ioTimeMs / seconds / MS_PER_S * 100.0);
        return w;
    }

    /** %rrqm: merged requests as a share of all requests before merging. */
    static double mergedPct(long merged, long completed) {
        long all = merged + completed;
        return all == 0 ? 0.0 : merged * 100.0 / all;
    }

    public static double await(long timeMs, long completed) {
        return completed == 0 ? 0.0 : (double) timeMs / completed;
    }

    static double requestKib(long sectors, long completed) {
        return completed == 0 ? 0.0 : sectors / (double) completed / SECTORS_PER_KIB;
    }
}
