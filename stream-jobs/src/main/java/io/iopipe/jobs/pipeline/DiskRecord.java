package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.iostat.DiskstatsDelta;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.OutputRecord;

/** One decoded per-disk input, exactly one of its parts set: what flows between the job's operators. */
public class DiskRecord {
    public String host;
    public String disk;
    /** Event time: when what it describes ended. */
    public long tsNs;
    public DiskstatsSample sample;
    public DiskstatsDelta delta;
    public HistRecord hist;
    public IoEvent event;

    public DiskRecord() {}

    public String key() {
        return OutputRecord.diskKey(host, disk);
    }

    public static DiskRecord of(DiskstatsSample s) {
        DiskRecord r = at(s.host, s.disk, s.tsNs);
        r.sample = s;
        return r;
    }

    public static DiskRecord of(DiskstatsDelta d) {
        DiskRecord r = at(d.host, d.disk, d.endNs);
        r.delta = d;
        return r;
    }

    public static DiskRecord of(HistRecord h) {
        DiskRecord r = at(h.host, h.disk, h.endNs);
        r.hist = h;
        return r;
    }

    public static DiskRecord of(IoEvent e) {
        DiskRecord r = at(e.host, e.disk, e.completeNs);
        r.event = e;
        return r;
    }

    private static DiskRecord at(String host, String disk, long tsNs) {
        DiskRecord r = new DiskRecord();
        r.host = host;
        r.disk = disk;
        r.tsNs = tsNs;
        return r;
    }

    /** What makes two copies of this record one record (an agent's resend), folded to 64 bits. */
    public long identity() {
        if (hist != null) {
            return Fingerprint.of(hist.op.hashCode(), hist.latency.hashCode(), hist.startNs, hist.endNs);
        }
        if (event != null) {
            return Fingerprint.of(event.op.hashCode(), event.sector, event.issueNs, event.completeNs);
        }
        return delta != null ? Fingerprint.of(0, 0, delta.startNs, delta.endNs) : Fingerprint.of(1, 0, sample.tsNs, 0);
    }

    /** What a dead letter of this record says it was. */
    public String describe() {
        String what = sample != null ? "diskstats sample" : delta != null ? "diskstats delta" : hist != null ? "histogram" : "event";
        return what + " of " + key() + " at ts_ns " + tsNs;
    }
}
