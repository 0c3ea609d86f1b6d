package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.iostat.DiskstatsDelta;
import io.iopipe.jobs.records.DiskstatsCounters;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.IoEvent;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.core.memory.DataOutputView;

/**
 * How a {@link DiskRecord} crosses a shuffle and is kept in state: written field by field,
 * without the reflection of Flink's POJO serializer, which was most of what a record cost
 * the windows operator. Its parts do not repeat the record's host and disk (a part naming
 * another is written whole), and counts are variable-length: a histogram's buckets are
 * mostly zero or small. Timestamps keep their 8 bytes.
 *
 * <p>The open records of builds before it are kept by the POJO serializer, under a state of
 * their own (see {@link DiskWindows}): this serializer reads only what it wrote, and
 * changing its format needs a new snapshot version that reads the old one.
 */
public final class DiskRecordSerializer extends TypeSerializerSingleton<DiskRecord> {
    public static final DiskRecordSerializer INSTANCE = new DiskRecordSerializer();
    /** What a stream or state of disk records is declared with, so Flink uses this serializer. */
    public static final TypeInformation<DiskRecord> TYPE = new DiskRecordType();

    private static final int SAMPLE = 1;
    private static final int DELTA = 1 << 1;
    private static final int HIST = 1 << 2;
    private static final int EVENT = 1 << 3;
    private static final int HISTOGRAMS = 1 << 4;
    private static final int EVENTS = 1 << 5;
    /** A string's length prefix: null, the record's own value (host, disk), else the length + 2 bytes of UTF-8 that follow. */
    private static final int NULL_STRING = 0;
    private static final int SAME_STRING = 1;

    private DiskRecordSerializer() {}

    @Override
    public boolean isImmutableType() {
        return false;
    }

    @Override
    public DiskRecord createInstance() {
        return new DiskRecord();
    }

    /** A deep copy, through the record's bytes: called only where records are not reused (Flink's object reuse is on). */
    @Override
    public DiskRecord copy(DiskRecord from) {
        try {
            DataOutputSerializer bytes = new DataOutputSerializer(256);
            serialize(from, bytes);
            return deserialize(new DataInputDeserializer(bytes.getSharedBuffer(), 0, bytes.length()));
        } catch (IOException e) {
            throw new IllegalStateException("a record in memory always copies", e);
        }
    }

    @Override
    public DiskRecord copy(DiskRecord from, DiskRecord reuse) {
        return copy(from);
    }

    @Override
    public int getLength() {
        return -1;
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
            writeEvent(out, r.event, r);
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
                writeEvent(out, e, r);
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
            r.event = readEvent(in, r);
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
                r.events[i] = readEvent(in, r);
            }
        }
        return r;
    }

    @Override
    public DiskRecord deserialize(DiskRecord reuse, DataInputView in) throws IOException {
        return deserialize(in);
    }

    @Override
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        serialize(deserialize(in), out);
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

    /** Counters as a null flag, then each in the schema's order. */
    private static void writeCounters(DataOutputView out, DiskstatsCounters counters) throws IOException {
        out.writeBoolean(counters != null);
        if (counters != null) {
            writeLongs(out, counters.values());
        }
    }

    private static DiskstatsCounters readCounters(DataInputView in) throws IOException {
        return in.readBoolean() ? DiskstatsCounters.of(readLongs(in)) : null;
    }

    private static void writeHist(DataOutputView out, HistRecord h, DiskRecord r) throws IOException {
        writeString(out, h.host, r.host);
        writeString(out, h.disk, r.disk);
        writeString(out, h.op, null);
        writeString(out, h.latency, null);
        out.writeLong(h.startNs);
        out.writeLong(h.endNs);
        out.writeBoolean(h.bucketsLog2Us != null);
        if (h.bucketsLog2Us != null) {
            writeLongs(out, h.bucketsLog2Us);
        }
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
        h.bucketsLog2Us = in.readBoolean() ? readLongs(in) : null;
        h.count = readSigned(in);
        h.sumUs = readSigned(in);
        h.maxUs = readSigned(in);
        h.errors = readSigned(in);
        return h;
    }

    private static void writeEvent(DataOutputView out, IoEvent e, DiskRecord r) throws IOException {
        writeString(out, e.host, r.host);
        writeString(out, e.disk, r.disk);
        writeString(out, e.op, null);
        writeSigned(out, e.bytes);
        writeSigned(out, e.sector);
        out.writeLong(e.issueNs);
        out.writeLong(e.completeNs);
        writeSigned(out, e.queueNs);
        writeSigned(out, e.inflight);
        writeSigned(out, e.error);
        writeString(out, e.comm, null);
        writeSigned(out, e.pid);
        writeString(out, e.sampleReason, null);
        out.writeDouble(e.sampleWeight);
        out.writeBoolean(e.timedFromQueue);
    }

    private static IoEvent readEvent(DataInputView in, DiskRecord r) throws IOException {
        IoEvent e = new IoEvent();
        e.host = readString(in, r.host);
        e.disk = readString(in, r.disk);
        e.op = readString(in, null);
        e.bytes = readSigned(in);
        e.sector = readSigned(in);
        e.issueNs = in.readLong();
        e.completeNs = in.readLong();
        e.queueNs = readSigned(in);
        e.inflight = readSigned(in);
        e.error = readSigned(in);
        e.comm = readString(in, null);
        e.pid = readSigned(in);
        e.sampleReason = readString(in, null);
        e.sampleWeight = in.readDouble();
        e.timedFromQueue = in.readBoolean();
        return e;
    }

    /** `s`, or only a mark when it is the record's own value `same` (null: none to compare with). */
    private static void writeString(DataOutputView out, String s, String same) throws IOException {
        if (s == null) {
            writeCount(out, NULL_STRING);
        } else if (same != null && s.equals(same)) {
            writeCount(out, SAME_STRING);
        } else {
            byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
            writeCount(out, utf8.length + 2);
            out.write(utf8);
        }
    }

    private static String readString(DataInputView in, String same) throws IOException {
        int prefix = readCount(in);
        if (prefix == NULL_STRING) {
            return null;
        }
        if (prefix == SAME_STRING) {
            return same;
        }
        byte[] utf8 = new byte[prefix - 2];
        in.readFully(utf8);
        return new String(utf8, StandardCharsets.UTF_8);
    }

    private static void writeLongs(DataOutputView out, long[] values) throws IOException {
        writeCount(out, values.length);
        for (long v : values) {
            writeSigned(out, v);
        }
    }

    private static long[] readLongs(DataInputView in) throws IOException {
        long[] values = new long[readCount(in)];
        for (int i = 0; i < values.length; i++) {
            values[i] = readSigned(in);
        }
        return values;
    }

    private static void writeCount(DataOutputView out, int n) throws IOException {
        writeVarLong(out, n);
    }

    private static int readCount(DataInputView in) throws IOException {
        long n = readVarLong(in);
        if (n < 0 || n > Integer.MAX_VALUE) {
            throw new IOException("a disk record's count or length out of range: " + n);
        }
        return (int) n;
    }

    /** Zigzag then variable-length: small values of either sign take a byte or two. */
    private static void writeSigned(DataOutputView out, long v) throws IOException {
        writeVarLong(out, (v << 1) ^ (v >> 63));
    }

    private static long readSigned(DataInputView in) throws IOException {
        long z = readVarLong(in);
        return (z >>> 1) ^ -(z & 1);
    }

    /** 7 bits a byte, low first, the high bit set on every byte but the last; `v` read as unsigned. */
    private static void writeVarLong(DataOutputView out, long v) throws IOException {
        while ((v & ~0x7FL) != 0) {
            out.writeByte((int) ((v & 0x7F) | 0x80));
            v >>>= 7;
        }
        out.writeByte((int) v);
    }

    private static long readVarLong(DataInputView in) throws IOException {
        long v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            int b = in.readUnsignedByte();
            v |= (long) (b & 0x7F) << shift;
            if ((b & 0x80) == 0) {
                return v;
            }
        }
        throw new IOException("a variable-length number of a disk record runs past 64 bits");
    }

    /** The type of disk records, whose serializer is this one. */
    private static final class DiskRecordType extends TypeInformation<DiskRecord> {
        @Override
        public boolean isBasicType() {
            return false;
        }

        @Override
        public boolean isTupleType() {
            return false;
        }

        @Override
        public int getArity() {
            return 1;
        }

        @Override
        public int getTotalFields() {
            return 1;
        }

        @Override
        public Class<DiskRecord> getTypeClass() {
            return DiskRecord.class;
        }

        @Override
        public boolean isKeyType() {
            return false;
        }

        @Override
        public TypeSerializer<DiskRecord> createSerializer(SerializerConfig config) {
            return INSTANCE;
        }

        @Override
        public String toString() {
            return "DiskRecord (DiskRecordSerializer)";
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof DiskRecordType;
        }

        @Override
        public int hashCode() {
            return DiskRecordType.class.hashCode();
        }

        @Override
        public boolean canEqual(Object o) {
            return o instanceof DiskRecordType;
        }
    }
}
