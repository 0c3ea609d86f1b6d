package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.iopipe.jobs.detect.DiskWindow;
import io.iopipe.jobs.records.IoEvent;
import org.junit.jupiter.api.Test;

/**
 * Every field of a window, and of everything it holds, comes back as it went: checked
 * against Flink's POJO serializer, which writes every public field, so a field added to any
 * of them and not to {@link DiskWindowSerializer} fails here.
 */
class DiskWindowSerializerTest {
    private final RoundTrips<DiskWindow> trips = new RoundTrips<>(DiskWindow.class, DiskWindowSerializer.INSTANCE);
    private final RandomlyFilled random = new RandomlyFilled(11);

    @Test
    void everyFieldOfAWindowComesBackAsItWent() throws Exception {
        for (int i = 0; i < 200; i++) {
            DiskWindow w = random.of(DiskWindow.class);
            trips.assertComesBack(w);
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
            trips.assertComesBack(w);
        }
    }

    @Test
    void aWindowAsTheJobMakesItComesBack() throws Exception {
        DiskWindow w = new DiskWindow();
        w.op("R").device.add(900, 3);
        w.iostat = null;
        w.op("W").deviceIntervals = null;
        w.op("W").eventTotal = null;
        trips.assertComesBack(w);
        trips.assertComesBack(new DiskWindow());
    }

    @Test
    void itWritesFewerBytesThanThePojoSerializer() throws Exception {
        DiskWindow w = random.of(DiskWindow.class);
        for (IoEvent e : w.events) {
            e.host = w.host;
            e.disk = w.disk;
        }
        assertTrue(RoundTrips.bytes(DiskWindowSerializer.INSTANCE, w).length < RoundTrips.bytes(trips.pojo, w).length);
    }
}
