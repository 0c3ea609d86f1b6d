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

import io.iopipe.jobs.iostat.DiskstatsDelta;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.IoEvent;
import java.io.IOException;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * How a {@link DiskRecord} crosses a shuffle and is kept in state: written field by field
 * ({@link CompactFields}), without the reflection of Flink's POJO serializer, which was
 * most of what a record cost the windows operator. Its parts do not repeat the record's
 * host and disk (a part naming another is written whole).
 *
 * <p>The open records of builds before it are kept by the POJO serializer, under a state of
 * their own (see {@link DiskWindows}): this serializer reads only what it wrote, and
 * changing its format needs a new snapshot version that reads the old one.
 */
public final class DiskRecordSerializer extends CompactSerializer<DiskRecord> {
    public static final DiskRecordSerializer INSTANCE = new DiskRecordSerializer();
    /** What a stream or state of disk records is declared with, so Flink uses this serializer. */
    public static final TypeInformation<DiskRecord> TYPE = new SerializerType<>(DiskRecord.class, INSTANCE);

    private static final int SAMPLE = 1;
    private static final int DELTA = 1 << 1;
    private static final int HIST = 1 << 2;
    private static final int EVENT = 1 << 3;
    private static final int HISTOGRAMS = 1 << 4;
    private static final int EVENTS = 1 << 5;

    private DiskRecordSerializer() {}

    @Override
    public DiskRecord createInstance() {
        return new DiskRecord();
    }

    @Override
    public void serialize(DiskRecord r, DataOutputView out) throws IOException {
        out.writeByte(kinds(r));
        writeString(out, r.host, null);
        writeString(out, r.disk, null);
        out.writeLong(r.tsNs);
        if (r.sample != null) {
            writeSample(out, r.sample, r);
        }
        if (r.delta != null) {
            writeDelta(out, r.delta, r);
        }
        if (r.hist != null) {
            writeHist(out, r.hist, r);
        }
        if (r.event != null) {
            CompactFields.writeEvent(out, r.event, r.host, r.disk);
        }
        if (r.histograms != null) {
            writeCount(out, r.histograms.length);
            for (HistRecord h : r.histograms) {
                writeHist(out, h, r);
            }
        }
        if (r.events != null) {
            writeCount(out, r.events.length);
            for (IoEvent e : r.events) {
                CompactFields.writeEvent(out, e, r.host, r.disk);
            }
        }
    }

    private static int kinds(DiskRecord r) {
        return (r.sample != null ? SAMPLE : 0) | (r.delta != null ? DELTA : 0) | (r.hist != null ? HIST : 0)
                | (r.event != null ? EVENT : 0) | (r.histograms != null ? HISTOGRAMS : 0) | (r.events != null ? EVENTS : 0);
    }

    @Override
    public DiskRecord deserialize(DataInputView in) throws IOException {
        int kinds = in.readUnsignedByte();
        DiskRecord r = new DiskRecord();
        r.host = readString(in, null);
        r.disk = readString(in, null);
        r.tsNs = in.readLong();
        if ((kinds & SAMPLE) != 0) {
            r.sample = readSample(in, r);
        }
        if ((kinds & DELTA) != 0) {
            r.delta = readDelta(in, r);
        }
        if ((kinds & HIST) != 0) {
            r.hist = readHist(in, r);
        }
        if ((kinds & EVENT) != 0) {
            r.event = CompactFields.readEvent(in, r.host, r.disk);
        }
        if ((kinds & HISTOGRAMS) != 0) {
            r.histograms = new HistRecord[readCount(in)];
            for (int i = 0; i < r.histograms.length; i++) {
                r.histograms[i] = readHist(in, r);
            }
        }
        if ((kinds & EVENTS) != 0) {
            r.events = new IoEvent[readCount(in)];
            for (int i = 0; i < r.events.length; i++) {
                r.events[i] = CompactFields.readEvent(in, r.host, r.disk);
            }
        }
        return r;
    }

    @Override
    public TypeSerializerSnapshot<DiskRecord> snapshotConfiguration() {
        return new Snapshot();
    }

    /** What a checkpoint keeps of this serializer: its format has no parameters, only a version. */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<DiskRecord> {
        public Snapshot() {
            super(() -> INSTANCE);
        }
    }

    private static void writeSample(DataOutputView out, DiskstatsSample s, DiskRecord r) throws IOException {
        writeString(out, s.source, null);
        writeString(out, s.host, r.host);
        writeString(out, s.disk, r.disk);
        out.writeLong(s.tsNs);
        out.writeBoolean(s.rotational);
        writeString(out, s.model, null);
        writeSigned(out, s.rpm);
        writeCounters(out, s.counters);
    }

    private static DiskstatsSample readSample(DataInputView in, DiskRecord r) throws IOException {
        DiskstatsSample s = new DiskstatsSample();
        s.source = readString(in, null);
        s.host = readString(in, r.host);
        s.disk = readString(in, r.disk);
        s.tsNs = in.readLong();
        s.rotational = in.readBoolean();
        s.model = readString(in, null);
        s.rpm = readSigned(in);
        s.counters = readCounters(in);
        return s;
    }

    private static void writeDelta(DataOutputView out, DiskstatsDelta d, DiskRecord r) throws IOException {
        writeString(out, d.host, r.host);
        writeString(out, d.disk, r.disk);
        out.writeBoolean(d.rotational);
        writeString(out, d.model, null);
        writeSigned(out, d.rpm);
        out.writeLong(d.startNs);
        out.writeLong(d.endNs);
        writeCounters(out, d.counters);
    }

    private static DiskstatsDelta readDelta(DataInputView in, DiskRecord r) throws IOException {
        DiskstatsDelta d = new DiskstatsDelta();
        d.host = readString(in, r.host);
        d.disk = readString(in, r.disk);
        d.rotational = in.readBoolean();
        d.model = readString(in, null);
        d.rpm = readSigned(in);
        d.startNs = in.readLong();
        d.endNs = in.readLong();
        d.counters = readCounters(in);
        return d;
    }

    private static void writeHist(DataOutputView out, HistRecord h, DiskRecord r) throws IOException {
        writeString(out, h.host, r.host);
        writeString(out, h.disk, r.disk);
        writeString(out, h.op, null);
        writeString(out, h.latency, null);
        out.writeLong(h.startNs);
        out.writeLong(h.endNs);
        writeLongs(out, h.bucketsLog2Us);
        writeSigned(out, h.count);
        writeSigned(out, h.sumUs);
        writeSigned(out, h.maxUs);
        writeSigned(out, h.errors);
    }

    private static HistRecord readHist(DataInputView in, DiskRecord r) throws IOException {
        HistRecord h = new HistRecord();
        h.host = readString(in, r.host);
        h.disk = readString(in, r.disk);
        h.op = readString(in, null);
        h.latency = readString(in, null);
        h.startNs = in.readLong();
        h.endNs = in.readLong();
        h.bucketsLog2Us = readLongs(in);
        h.count = readSigned(in);
        h.sumUs = readSigned(in);
        h.maxUs = readSigned(in);
        h.errors = readSigned(in);
        return h;
    }
}
