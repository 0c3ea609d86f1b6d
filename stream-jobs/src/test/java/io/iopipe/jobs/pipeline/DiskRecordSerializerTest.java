package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.IoEvent;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

/**
 * Every field of a disk record, and of every part it holds, comes back as it went: checked
 * against Flink's POJO serializer, which writes every public field, so a field added to
 * any of them and not to {@link DiskRecordSerializer} fails here.
 */
class DiskRecordSerializerTest {
    private final RoundTrips<DiskRecord> trips = new RoundTrips<>(DiskRecord.class, DiskRecordSerializer.INSTANCE);
    private final RandomlyFilled random = new RandomlyFilled(7);

    @Test
    void everyFieldOfEveryPartComesBackAsItWent() throws Exception {
        for (int i = 0; i < 200; i++) {
            DiskRecord r = random.of(DiskRecord.class);
            trips.assertComesBack(r);
        }
    }

    @Test
    void partsOfTheRecordsOwnDiskComeBackNamingIt() throws Exception {
        for (int i = 0; i < 50; i++) {
            DiskRecord r = random.of(DiskRecord.class);
            for (HistRecord h : r.histograms) {
                h.host = r.host;
                h.disk = r.disk;
            }
            for (IoEvent e : r.events) {
                e.host = new String(r.host);  // equal, not the same instance
                e.disk = r.disk;
            }
            DiskRecord back = trips.roundTrip(r);
            trips.assertSame(r, back);
            assertEquals(r.host, back.events[0].host);
        }
    }

    @Test
    void aRecordWithNoPartsOrNullFieldsComesBack() throws Exception {
        DiskRecord empty = new DiskRecord();
        trips.assertComesBack(empty);
        DiskRecord batch = random.of(DiskRecord.class);
        batch.sample = null;
        batch.event = null;
        batch.histograms[0].bucketsLog2Us = null;
        batch.histograms[0].op = null;
        batch.delta.counters = null;
        trips.assertComesBack(batch);
    }

    @Test
    void aCheckpointsSerializerIsThisOneAsItIs() throws Exception {
        TypeSerializerSnapshot<DiskRecord> snapshot = DiskRecordSerializer.INSTANCE.snapshotConfiguration();
        DataOutputSerializer out = new DataOutputSerializer(64);
        TypeSerializerSnapshot.writeVersionedSnapshot(out, snapshot);
        TypeSerializerSnapshot<DiskRecord> restored = TypeSerializerSnapshot.readVersionedSnapshot(
                new DataInputDeserializer(out.getCopyOfBuffer()), getClass().getClassLoader());
        TypeSerializerSchemaCompatibility<DiskRecord> compatibility =
                DiskRecordSerializer.INSTANCE.snapshotConfiguration().resolveSchemaCompatibility(restored);
        assertTrue(compatibility.isCompatibleAsIs());
        assertEquals(DiskRecordSerializer.INSTANCE, restored.restoreSerializer());
    }

    @Test
    void itWritesFewerBytesThanThePojoSerializer() throws Exception {
        DiskRecord r = random.of(DiskRecord.class);
        r.histograms[0].host = r.host;
        r.histograms[0].disk = r.disk;
        r.histograms[0].bucketsLog2Us = new long[64];
        assertTrue(RoundTrips.bytes(DiskRecordSerializer.INSTANCE, r).length < RoundTrips.bytes(trips.pojo, r).length);
    }
}
