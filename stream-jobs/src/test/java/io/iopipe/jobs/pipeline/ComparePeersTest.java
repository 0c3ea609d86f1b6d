package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.iopipe.jobs.detect.PeerVerdict;
import io.iopipe.jobs.detect.SlowVsPeers;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.WindowSample;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

class ComparePeersTest {
    static final long HOUR0_NS = 1_763_683_200_000_000_000L;
    static final long WINDOW_NS = 10_000_000_000L;
    static final long GRACE_NS = 120_000_000_000L;
    static final List<String> DRIVES = List.of("sda", "sdb", "sdc", "sdd");

    private static void windowsOfEveryDrive(KeyedOneInputStreamOperatorTestHarness<String, WindowSample, OutputRecord> h,
                                            long fromNs, long toNs) throws Exception {
        for (long t = fromNs; t < toNs; t += WINDOW_NS) {
            for (String disk : DRIVES) {
                h.processElement(new StreamRecord<>(new WindowSample("db-1", disk, t, t + WINDOW_NS, 4000, 0.5), 0L));
            }
        }
    }

    private static List<String> verdicts(KeyedOneInputStreamOperatorTestHarness<String, WindowSample, OutputRecord> h) {
        ConcurrentLinkedQueue<StreamRecord<PeerVerdict>> out = h.getSideOutput(ComparePeers.VERDICTS);
        return out == null ? List.of() : out.stream().map(r -> r.getValue().disk + "@" + (r.getValue().hourStartNs - HOUR0_NS) / SlowVsPeers.HOUR_NS).toList();
    }

    @Test
    void comparesAnHourOnceTheHostIsAGracePastItAndAtTheEndOfInput() throws Exception {
        KeyedOneInputStreamOperatorTestHarness<String, WindowSample, OutputRecord> h = new KeyedOneInputStreamOperatorTestHarness<>(
                new KeyedProcessOperator<>(new ComparePeers(GRACE_NS)), w -> w.host, Types.STRING);
        h.open();
        windowsOfEveryDrive(h, HOUR0_NS, HOUR0_NS + SlowVsPeers.HOUR_NS + GRACE_NS - WINDOW_NS);
        assertEquals(List.of(), verdicts(h), "a drive's windows of the hour may still be on their way");
        windowsOfEveryDrive(h, HOUR0_NS + SlowVsPeers.HOUR_NS + GRACE_NS - WINDOW_NS, HOUR0_NS + SlowVsPeers.HOUR_NS + GRACE_NS);
        assertEquals(List.of("sda@0", "sdb@0", "sdc@0", "sdd@0"), verdicts(h));

        h.processElement(new StreamRecord<>(new WindowSample("db-1", "sde", HOUR0_NS, HOUR0_NS + WINDOW_NS, 4000, 9.0), 0L));
        windowsOfEveryDrive(h, HOUR0_NS + SlowVsPeers.HOUR_NS + GRACE_NS, HOUR0_NS + 2 * SlowVsPeers.HOUR_NS);
        assertEquals(4, verdicts(h).size(), "a window of an hour compared already is left out");
        h.processWatermark(Long.MAX_VALUE);
        assertEquals(List.of("sda@1", "sdb@1", "sdc@1", "sdd@1"), verdicts(h).subList(4, 8), "the end of the input compares the open hour");
        h.close();
    }
}
