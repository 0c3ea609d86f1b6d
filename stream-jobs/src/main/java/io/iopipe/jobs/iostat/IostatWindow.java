package io.iopipe.jobs.iostat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.records.DiskstatsCounters;
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
        DiskstatsCounters c = s.counters;
        w.put("reads_completed", c.readsCompleted);
        w.put("writes_completed", c.writesCompleted);
        w.put("discards_completed", c.discardsCompleted);
        w.put("flushes_completed", c.flushesCompleted);

        w.put("reads_per_s", c.readsCompleted / seconds);
        w.put("read_kib_per_s", c.sectorsRead / SECTORS_PER_KIB / seconds);
        w.put("read_merges_per_s", c.readsMerged / seconds);
        w.put("read_merges_pct", mergedPct(c.readsMerged, c.readsCompleted));
        w.put("read_await_ms", await(c.readTimeMs, c.readsCompleted));
        w.put("read_req_kib", requestKib(c.sectorsRead, c.readsCompleted));

        w.put("writes_per_s", c.writesCompleted / seconds);
        w.put("write_kib_per_s", c.sectorsWritten / SECTORS_PER_KIB / seconds);
        w.put("write_merges_per_s", c.writesMerged / seconds);
        w.put("write_merges_pct", mergedPct(c.writesMerged, c.writesCompleted));
        w.put("write_await_ms", await(c.writeTimeMs, c.writesCompleted));
        w.put("write_req_kib", requestKib(c.sectorsWritten, c.writesCompleted));

        w.put("discards_per_s", c.discardsCompleted / seconds);
        w.put("discard_kib_per_s", c.sectorsDiscarded / SECTORS_PER_KIB / seconds);
        w.put("discard_merges_per_s", c.discardsMerged / seconds);
        w.put("discard_merges_pct", mergedPct(c.discardsMerged, c.discardsCompleted));
        w.put("discard_await_ms", await(c.discardTimeMs, c.discardsCompleted));
        w.put("discard_req_kib", requestKib(c.sectorsDiscarded, c.discardsCompleted));

        w.put("flushes_per_s", c.flushesCompleted / seconds);
        w.put("flush_await_ms", await(c.flushTimeMs, c.flushesCompleted));

        // aqu-sz: weighted_io_time is the integral of queue depth over time in ms.
        w.put("queue_size", c.weightedIoTimeMs / seconds / MS_PER_S);
        // %util: share of the interval with at least one I/O in flight.
        w.put("util_pct", c.ioTimeMs / seconds / MS_PER_S * 100.0);
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
