package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.iostat.DiskstatsDelta;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.OutputRecord;
import java.util.ArrayList;
import java.util.List;

/**
 * One decoded per-disk input, exactly one of its parts (or batches of parts) set: what flows
 * between the job's operators. A batch (an io.interval.v1's diskstats and histograms, the
 * events of an io.eventbatch.v1) travels as one record holding its parts, so that it
 * crosses each shuffle and reaches its disk's state once; {@link #parts()} gives them back
 * as the records they would have been sent alone. An interval goes to its disk's deltas
 * with its sample, and from there to its windows with the sample's delta in its place.
 * The batches are arrays of POJOs, which Flink serializes as it does the single parts (a
 * List would fall back to Kryo).
 */
public class DiskRecord {
    public String host;
    public String disk;
    /** Event time: when what it describes ended; a batch's, when its latest part did. */
    public long tsNs;
    public DiskstatsSample sample;
    public DiskstatsDelta delta;
    public HistRecord hist;
    public IoEvent event;
    /** The histograms of one interval, each as {@link #hist} holds one sent alone. */
    public HistRecord[] histograms;
    /** Sampled I/Os of one disk sent together, each as {@link #event} holds one sent alone. */
    public IoEvent[] events;

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

    /**
     * An io.interval.v1: its diskstats sample and its histograms (none when the disk did no
     * I/O), as one record to its disk's deltas, which send it on as
     * {@link #ofInterval(DiskstatsDelta, HistRecord[])}.
     */
    public static DiskRecord ofInterval(DiskstatsSample sample, List<HistRecord> histograms) {
        DiskRecord r = of(sample);
        if (!histograms.isEmpty()) {
            r.histograms = histograms.toArray(new HistRecord[0]);
            r.tsNs = Math.max(r.tsNs, histograms.stream().mapToLong(h -> h.endNs).max().orElseThrow());
        }
        return r;
    }

    /**
     * An interval once its sample was made a delta: the delta (null when the sample made none:
     * a resend, out of order) and its histograms (null if none), as one record to its disk's
     * windows; null when it holds neither.
     */
    public static DiskRecord ofInterval(DiskstatsDelta delta, HistRecord[] histograms) {
        if (histograms == null) {
            return delta == null ? null : of(delta);
        }
        DiskRecord r = ofHistograms(List.of(histograms));
        if (delta != null) {
            r.delta = delta;
            r.tsNs = Math.max(r.tsNs, delta.endNs);
        }
        return r;
    }

    /** The histograms of one interval (at least one), as one record. */
    public static DiskRecord ofHistograms(List<HistRecord> histograms) {
        HistRecord first = histograms.get(0);
        DiskRecord r = at(first.host, first.disk, histograms.stream().mapToLong(h -> h.endNs).max().orElseThrow());
        r.histograms = histograms.toArray(new HistRecord[0]);
        return r;
    }

    /** Sampled I/Os of one disk (at least one), as one record. */
    public static DiskRecord ofEvents(List<IoEvent> events) {
        IoEvent first = events.get(0);
        DiskRecord r = at(first.host, first.disk, events.stream().mapToLong(e -> e.completeNs).max().orElseThrow());
        r.events = events.toArray(new IoEvent[0]);
        return r;
    }

    /** The records this one holds, in the order they were sent, each as if sent alone: this one, unless it is a batch. */
    public List<DiskRecord> parts() {
        if (histograms != null) {
            List<DiskRecord> parts = new ArrayList<>(histograms.length + 1);
            if (delta != null) {
                parts.add(of(delta));
            }
            for (HistRecord h : histograms) {
                parts.add(of(h));
            }
            return parts;
        }
        if (events != null) {
            List<DiskRecord> parts = new ArrayList<>(events.length);
            for (IoEvent e : events) {
                parts.add(of(e));
            }
            return parts;
        }
        return List.of(this);
    }

    private static DiskRecord at(String host, String disk, long tsNs) {
        DiskRecord r = new DiskRecord();
        r.host = host;
        r.disk = disk;
        r.tsNs = tsNs;
        return r;
    }

    /** What makes two copies of this record one record (an agent's resend), folded to 64 bits; a part's, not a batch's. */
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
        String what = sample != null ? "diskstats sample" : delta != null ? "diskstats delta" : hist != null ? "histogram"
                : event != null ? "event" : histograms != null ? "batch of " + histograms.length + " histograms"
                : "batch of " + events.length + " events";
        return what + " of " + key() + " at ts_ns " + tsNs;
    }
}
