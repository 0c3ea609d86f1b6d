package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.records.IoEvent;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

/**
 * Every field of a window, and of everything it holds, comes back as it went: checked
 * against Flink's POJO serializer, which writes every public field, so a field added to any
 * of them and not to {@link DiskWindowSerializer} fails here.
 */
class DiskWindowSerializerTest {
    private static final TypeSerializer<DiskWindow> POJO =
            TypeInformation.of(DiskWindow.class).createSerializer(new SerializerConfigImpl());
    private final RandomlyFilled random = new RandomlyFilled(11);

    @Test
    void everyFieldOfAWindowComesBackAsItWent() throws Exception {
        for (int i = 0; i < 200; i++) {
            DiskWindow w = random.of(DiskWindow.class);
            assertSame(w, roundTrip(w));
        }
    }

    @Test
    void eventsAndSumsOfTheWindowsOwnDiskComeBackNamingIt() throws Exception {
        for (int i = 0; i < 50; i++) {
            DiskWindow w = random.of(DiskWindow.class);
            w.iostat.host = w.host;
            w.iostat.disk = new String(w.disk);
            for (IoEvent e : w.events) {
                e.host = w.host;
                e.disk = w.disk;
            }
            assertSame(w, roundTrip(w));
        }
    }

    @Test
    void aWindowAsTheJobMakesItComesBack() throws Exception {
        DiskWindow w = new DiskWindow();
        w.op("R").device.add(900, 3);
        w.iostat = null;
        w.op("W").deviceIntervals = null;
        w.op("W").eventTotal = null;
        assertSame(w, roundTrip(w));
        assertSame(new DiskWindow(), roundTrip(new DiskWindow()));
    }

    @Test
    void itWritesFewerBytesThanThePojoSerializer() throws Exception {
        DiskWindow w = random.of(DiskWindow.class);
        for (IoEvent e : w.events) {
            e.host = w.host;
            e.disk = w.disk;
        }
        assertTrue(bytes(DiskWindowSerializer.INSTANCE, w).length < bytes(POJO, w).length);
    }

    private static DiskWindow roundTrip(DiskWindow w) throws Exception {
        byte[] written = bytes(DiskWindowSerializer.INSTANCE, w);
        DiskWindow back = DiskWindowSerializer.INSTANCE.deserialize(new DataInputDeserializer(written));
        assertArrayEquals(written, bytes(DiskWindowSerializer.INSTANCE, DiskWindowSerializer.INSTANCE.copy(back)));
        return back;
    }

    private static void assertSame(DiskWindow expected, DiskWindow actual) throws Exception {
        assertArrayEquals(bytes(POJO, expected), bytes(POJO, actual), "a field did not come back as it went");
    }

    private static <T> byte[] bytes(TypeSerializer<T> serializer, T value) throws Exception {
        DataOutputSerializer out = new DataOutputSerializer(4096);
        serializer.serialize(value, out);
        return out.getCopyOfBuffer();
    }
}
