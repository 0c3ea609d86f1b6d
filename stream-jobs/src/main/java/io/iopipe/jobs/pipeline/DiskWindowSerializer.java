package io.iopipe.jobs.pipeline;

import static io.iopipe.jobs.pipeline.CompactFields.readCount;
import static io.iopipe.jobs.pipeline.CompactFields.readCounters;
import static io.iopipe.jobs.pipeline.CompactFields.readLongs;
import static io.iopipe.jobs.pipeline.CompactFields.readSigned;
import static io.iopipe.jobs.pipeline.CompactFields.readString;
import static io.iopipe.jobs.pipeline.CompactFields.writeCount;
import static io.iopipe.jobs.pipeline.CompactFields.writeCounters;
import static io.iopipe.jobs.pipeline.CompactFields.writeLongs;
import static io.iopipe.jobs.pipeline.CompactFields.writeSigned;
import static io.iopipe.jobs.pipeline.CompactFields.writeString;

import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.detect.IntervalCounts;
import io.iopipe.jobs.detect.Log2Histogram;
import io.iopipe.jobs.detect.LongHashSet;
import io.iopipe.jobs.detect.OpLatency;
import io.iopipe.jobs.iostat.IostatSums;
import io.iopipe.jobs.records.IoEvent;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * How a {@link DiskWindow} crosses the shuffles from the windows to the longer windows, the
 * detectors and the latency rollups: field by field ({@link CompactFields}), without the
 * reflection of Flink's POJO serializer. Its iostat sums and events do not repeat the
 * window's host and disk. The job's state keeps windows as the POJO serializer writes them,
 * so this serializer is on the wire only and can change with a build.
 */
public final class DiskWindowSerializer extends CompactSerializer<DiskWindow> {
    public static final DiskWindowSerializer INSTANCE = new DiskWindowSerializer();
    /** What a stream of windows is declared with, so Flink uses this serializer. */
    public static final TypeInformation<DiskWindow> TYPE = new SerializerType<>(DiskWindow.class, INSTANCE);

    private DiskWindowSerializer() {}

    @Override
    public DiskWindow createInstance() {
        return new DiskWindow();
    }

    @Override
    public void serialize(DiskWindow w, DataOutputView out) throws IOException {
        writeString(out, w.host, null);
        writeString(out, w.disk, null);
        out.writeLong(w.startNs);
        out.writeLong(w.endNs);
        writeSigned(out, w.windowSeconds);
        out.writeBoolean(w.iostat != null);
        if (w.iostat != null) {
            writeIostat(out, w.iostat, w);
        }
        writeCount(out, w.ops.size());
        for (Map.Entry<String, OpLatency> op : w.ops.entrySet()) {
            writeString(out, op.getKey(), null);
            writeOp(out, op.getValue());
        }
        writeCount(out, w.events.size());
        for (IoEvent e : w.events) {
            CompactFields.writeEvent(out, e, w.host, w.disk);
        }
        writeSigned(out, w.eventsOverCap);
        writeIds(out, w.seen);
        writeIds(out, w.seenHistograms);
        out.writeBoolean(w.lastBeforeSilence);
        out.writeBoolean(w.amendsClosedWindow);
        writeSigned(out, w.revision);
        out.writeBoolean(w.revisionDue);
    }

    @Override
    public DiskWindow deserialize(DataInputView in) throws IOException {
        DiskWindow w = new DiskWindow();
        w.host = readString(in, null);
        w.disk = readString(in, null);
        w.startNs = in.readLong();
        w.endNs = in.readLong();
        w.windowSeconds = (int) readSigned(in);
        w.iostat = in.readBoolean() ? readIostat(in, w) : null;
        int ops = readCount(in);
        w.ops = new TreeMap<>();
        for (int i = 0; i < ops; i++) {
            String op = readString(in, null);
            w.ops.put(op, readOp(in));
        }
        int events = readCount(in);
        w.events = new ArrayList<>(events);
        for (int i = 0; i < events; i++) {
            w.events.add(CompactFields.readEvent(in, w.host, w.disk));
        }
        w.eventsOverCap = readSigned(in);
        w.seen = readIds(in);
        w.seenHistograms = readIds(in);
        w.lastBeforeSilence = in.readBoolean();
        w.amendsClosedWindow = in.readBoolean();
        w.revision = (int) readSigned(in);
        w.revisionDue = in.readBoolean();
        return w;
    }

    @Override
    public TypeSerializerSnapshot<DiskWindow> snapshotConfiguration() {
        return new Snapshot();
    }

    /** What a checkpoint would keep of this serializer: its format has no parameters, only a version. */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<DiskWindow> {
        public Snapshot() {
            super(() -> INSTANCE);
        }
    }

    private static void writeIostat(DataOutputView out, IostatSums s, DiskWindow w) throws IOException {
        writeString(out, s.host, w.host);
        writeString(out, s.disk, w.disk);
        out.writeBoolean(s.rotational);
        writeString(out, s.model, null);
        writeSigned(out, s.rpm);
        out.writeBoolean(s.classKnown);
        writeSigned(out, s.samples);
        writeSigned(out, s.intervalNs);
        writeCounters(out, s.counters);
    }

    private static IostatSums readIostat(DataInputView in, DiskWindow w) throws IOException {
        IostatSums s = new IostatSums();
        s.host = readString(in, w.host);
        s.disk = readString(in, w.disk);
        s.rotational = in.readBoolean();
        s.model = readString(in, null);
        s.rpm = readSigned(in);
        s.classKnown = in.readBoolean();
        s.samples = (int) readSigned(in);
        s.intervalNs = readSigned(in);
        s.counters = readCounters(in);
        return s;
    }

    private static void writeOp(DataOutputView out, OpLatency op) throws IOException {
        for (Log2Histogram h : new Log2Histogram[] {op.device, op.queue, op.total, op.eventDevice, op.eventQueue, op.eventTotal}) {
            writeHistogram(out, h);
        }
        writeSigned(out, op.errors);
        writeSigned(out, op.eventErrors);
        writeSigned(out, op.events);
        out.writeDouble(op.slowestIntervalMedianUs);
        out.writeBoolean(op.deviceIntervals != null);
        if (op.deviceIntervals != null) {
            writeLongs(out, op.deviceIntervals.packed);
            writeSigned(out, op.deviceIntervals.intervals);
        }
        out.writeDouble(op.eventDepthSum);
        out.writeDouble(op.eventDepthWeight);
    }

    private static OpLatency readOp(DataInputView in) throws IOException {
        OpLatency op = new OpLatency();
        op.device = readHistogram(in);
        op.queue = readHistogram(in);
        op.total = readHistogram(in);
        op.eventDevice = readHistogram(in);
        op.eventQueue = readHistogram(in);
        op.eventTotal = readHistogram(in);
        op.errors = readSigned(in);
        op.eventErrors = readSigned(in);
        op.events = readSigned(in);
        op.slowestIntervalMedianUs = in.readDouble();
        if (in.readBoolean()) {
            op.deviceIntervals = new IntervalCounts();
            op.deviceIntervals.packed = readLongs(in);
            op.deviceIntervals.intervals = (int) readSigned(in);
        } else {
            op.deviceIntervals = null;
        }
        op.eventDepthSum = in.readDouble();
        op.eventDepthWeight = in.readDouble();
        return op;
    }

    private static void writeHistogram(DataOutputView out, Log2Histogram h) throws IOException {
        out.writeBoolean(h != null);
        if (h != null) {
            writeLongs(out, h.buckets);
            writeSigned(out, h.count);
            writeSigned(out, h.sumUs);
            writeSigned(out, h.maxUs);
        }
    }

    private static Log2Histogram readHistogram(DataInputView in) throws IOException {
        if (!in.readBoolean()) {
            return null;
        }
        Log2Histogram h = new Log2Histogram();
        h.buckets = readLongs(in);
        h.count = readSigned(in);
        h.sumUs = readSigned(in);
        h.maxUs = readSigned(in);
        return h;
    }

    /** A set of record identities, in its own order: a set read back in that order iterates alike. */
    private static void writeIds(DataOutputView out, Set<Long> ids) throws IOException {
        writeCount(out, ids.size());
        for (long id : ids) {
            out.writeLong(id);
        }
    }

    private static Set<Long> readIds(DataInputView in) throws IOException {
        int n = readCount(in);
        LongHashSet ids = new LongHashSet();
        for (int i = 0; i < n; i++) {
            ids.addLong(in.readLong());
        }
        return ids;
    }
}
