package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.iopipe.jobs.detect.ModelPeers;
import io.iopipe.jobs.detect.PeerVerdict;
import io.iopipe.jobs.detect.ShallowReads;
import io.iopipe.jobs.records.OutputRecord;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

class CompareModelPeersTest {
    static final long START_NS = 1_763_683_200_000_000_000L;
    static final long WINDOW_NS = 10_000_000_000L;
    static final long HORIZON_MS = ModelPeers.HORIZON_NS / 1_000_000L;

    private static ShallowReads reads(String host, long startNs, double us) {
        double[] deviceUs = new double[8];
        for (int i = 0; i < 8; i++) {
            deviceUs[i] = us * (0.9 + 0.025 * i);
        }
        double[] weights = new double[8];
        Arrays.fill(weights, 1000);
        return ShallowReads.of(host, "nvme0n1", "NVMe-A 1TB", startNs, startNs + WINDOW_NS, deviceUs, weights);
    }

    private static List<String> verdicts(KeyedOneInputStreamOperatorTestHarness<String, ShallowReads, OutputRecord> h) {
        ConcurrentLinkedQueue<StreamRecord<PeerVerdict>> out = h.getSideOutput(CompareModelPeers.VERDICTS);
        return out == null ? List.of() : out.stream().map(r -> r.getValue().host + " " + r.getValue().effect).toList();
    }

    @Test
    void aSlowDriveIsFoundAndItsFindingLapsesWhenItsReadsStopComing() throws Exception {
        KeyedOneInputStreamOperatorTestHarness<String, ShallowReads, OutputRecord> h = new KeyedOneInputStreamOperatorTestHarness<>(
                new KeyedProcessOperator<>(new CompareModelPeers()), r -> r.model, Types.STRING);
        h.open();
        List<String> hosts = Arrays.asList("a", "b", "c", "d", "e", "f");
        for (int w = 0; w < 6; w++) {
            for (String host : hosts) {
                h.processElement(new StreamRecord<>(reads(host, START_NS + w * WINDOW_NS, host.equals("f") ? 600 : 90 + host.charAt(0) % 5), 0L));
            }
        }
        assertEquals(List.of("f SUSPECT"), verdicts(h));
        assertEquals(1, h.extractOutputValues().size(), "one failing_disk warning");
        // Drive f sends no more shallow reads (it turned write-heavy, or left) while its
        // model's others go on: once it is unheard for the horizon on the wall clock, its
        // finding lapses when the model's baseline is computed next.
        h.setProcessingTime(HORIZON_MS / 2);
        for (int w = 6; w < 9; w++) {
            for (String host : hosts.subList(0, 5)) {
                h.processElement(new StreamRecord<>(reads(host, START_NS + w * WINDOW_NS, 90), 0L));
            }
        }
        assertEquals(List.of("f SUSPECT"), verdicts(h));
        h.setProcessingTime(HORIZON_MS + 1);
        for (int w = 9; w < 12; w++) {
            for (String host : hosts.subList(0, 5)) {
                h.processElement(new StreamRecord<>(reads(host, START_NS + w * WINDOW_NS, 90), 0L));
            }
        }
        assertEquals(List.of("f SUSPECT", "f NONE"), verdicts(h));
        h.close();
    }
}
