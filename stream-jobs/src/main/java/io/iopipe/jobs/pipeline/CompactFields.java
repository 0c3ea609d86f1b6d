package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.records.DiskstatsCounters;
import io.iopipe.jobs.records.IoEvent;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * How the job's own serializers ({@link DiskRecordSerializer}, {@link DiskWindowSerializer})
 * write fields: counts variable-length (zigzag for either sign: a histogram's buckets are
 * mostly zero or small), strings as UTF-8 with a length prefix that also says null or "the
 * disk's own" (a part or window does not repeat its disk's host and disk), timestamps in
 * their 8 bytes.
 */
final class CompactFields {
    /** A string's length prefix: null, the record's own value (host, disk), else the length + 2 bytes of UTF-8 that follow. */
    private static final int NULL_STRING = 0;
    private static final int SAME_STRING = 1;

    private CompactFields() {}

    /** `s`, or only a mark when it is the record's own value `same` (null: none to compare with). */
    static void writeString(DataOutputView out, String s, String same) throws IOException {
        if (s == null) {
            writeCount(out, NULL_STRING);
        } else if (same != null && s.equals(same)) {
            writeCount(out, SAME_STRING);
        } else if (isAscii(s)) {
            // Its UTF-8 is its chars, written without an array made for them. Not by
            // writeBytes(String): Flink 2.3's DataOutputSerializer skips twice its length.
            writeCount(out, s.length() + 2);
            for (int i = 0; i < s.length(); i++) {
                out.writeByte(s.charAt(i));
            }
        } else {
            byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
            writeCount(out, utf8.length + 2);
            out.write(utf8);
        }
    }

    private static boolean isAscii(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) >= 0x80) {
                return false;
            }
        }
        return true;
    }

    static String readString(DataInputView in, String same) throws IOException {
        int prefix = readCount(in);
        if (prefix == NULL_STRING) {
            return null;
        }
        if (prefix == SAME_STRING) {
            return same;
        }
        return RECENT_STRINGS.get().read(in, prefix - 2);
    }

    /** Each thread's strings read lately: a thread reads one record at a time. */
    private static final ThreadLocal<RecentStrings> RECENT_STRINGS = ThreadLocal.withInitial(RecentStrings::new);

    /**
     * Strings read lately, by their bytes. The strings of records are of few values (an op,
     * a sample reason, a latency kind, a process name, a model), so one read again is the
     * String read before, not a new one and its bytes: what the job allocates most, and its
     * garbage collection's work, is records crossing shuffles and state.
     */
    private static final class RecentStrings {
        private static final int SLOTS = 512;
        /** Longer strings (a host of a long name) are read as they come. */
        private static final int LONGEST = 64;
        private final byte[][] bytes = new byte[SLOTS][];
        private final String[] strings = new String[SLOTS];
        private final byte[] scratch = new byte[LONGEST];

        String read(DataInputView in, int length) throws IOException {
            if (length > LONGEST) {
                byte[] utf8 = new byte[length];
                in.readFully(utf8);
                return new String(utf8, StandardCharsets.UTF_8);
            }
            in.readFully(scratch, 0, length);
            int hash = 0x811C9DC5;  // FNV-1a
            for (int i = 0; i < length; i++) {
                hash = (hash ^ scratch[i]) * 0x01000193;
            }
            int slot = (hash ^ hash >>> 16) & (SLOTS - 1);
            byte[] seen = bytes[slot];
            if (seen != null && Arrays.equals(seen, 0, seen.length, scratch, 0, length)) {
                return strings[slot];
            }
            byte[] utf8 = Arrays.copyOf(scratch, length);
            String s = new String(utf8, StandardCharsets.UTF_8);
            bytes[slot] = utf8;
            strings[slot] = s;
            return s;
        }
    }

    /** An array as a null flag, its length, then each value. */
    static void writeLongs(DataOutputView out, long[] values) throws IOException {
        out.writeBoolean(values != null);
        if (values != null) {
            writeCount(out, values.length);
            for (long v : values) {
                writeSigned(out, v);
            }
        }
    }

    static long[] readLongs(DataInputView in) throws IOException {
        if (!in.readBoolean()) {
            return null;
        }
        long[] values = new long[readCount(in)];
        for (int i = 0; i < values.length; i++) {
            values[i] = readSigned(in);
        }
        return values;
    }

    /** Counters as a null flag, then each in the schema's order. */
    static void writeCounters(DataOutputView out, DiskstatsCounters counters) throws IOException {
        writeLongs(out, counters == null ? null : counters.values());
    }

    static DiskstatsCounters readCounters(DataInputView in) throws IOException {
        long[] values = readLongs(in);
        return values == null ? null : DiskstatsCounters.of(values);
    }

    /** An event of the disk whose host and disk are `host` and `disk`. */
    static void writeEvent(DataOutputView out, IoEvent e, String host, String disk) throws IOException {
        writeString(out, e.host, host);
        writeString(out, e.disk, disk);
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

    static IoEvent readEvent(DataInputView in, String host, String disk) throws IOException {
        IoEvent e = new IoEvent();
        e.host = readString(in, host);
        e.disk = readString(in, disk);
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

    static void writeCount(DataOutputView out, int n) throws IOException {
        writeVarLong(out, n);
    }

    static int readCount(DataInputView in) throws IOException {
        long n = readVarLong(in);
        if (n < 0 || n > Integer.MAX_VALUE) {
            throw new IOException("a count or length out of range: " + n);
        }
        return (int) n;
    }

    /** Zigzag then variable-length: small values of either sign take a byte or two. */
    static void writeSigned(DataOutputView out, long v) throws IOException {
        writeVarLong(out, (v << 1) ^ (v >> 63));
    }

    static long readSigned(DataInputView in) throws IOException {
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
        throw new IOException("a variable-length number runs past 64 bits");
    }
}
