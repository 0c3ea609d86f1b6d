package io.iopipe.jobs.bench;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.records.DiskstatsSample;
import io.iopipe.jobs.records.HistRecord;
import io.iopipe.jobs.records.Json;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.BiConsumer;

/**
 * What a fleet's agents send every second, per disk: an io.diskstats.v1 sample and, for
 * reads and writes, io.hist.v1 device, queue and total histograms. Disks are 7200 rpm
 * HDDs, SATA SSDs and NVMe drives at rates and latencies of their kind.
 */
final class FleetRecords {
    static final long START_NS = 1_763_700_000_000_000_000L;
    private static final long SECOND_NS = 1_000_000_000L;
    private static final long DRAWS = 256;

    private record Kind(String prefix, boolean rotational, double iops, double readMeanUs, double writeMeanUs) {}

    private static final Kind[] KINDS = {
        new Kind("sd", true, 120, 8_000, 4_000),
        new Kind("ssd", false, 3_000, 150, 40),
        new Kind("nvme", false, 20_000, 90, 25),
    };

    private FleetRecords() {}

    /** Every record of `disks` disks over `seconds`, in time order, to `sink` as (host/disk, JSON text). */
    static void generate(int disks, int seconds, long seed, BiConsumer<String, String> sink) {
        SplittableRandom random = new SplittableRandom(seed);
        List<DiskstatsSample> totals = new ArrayList<>();
        for (int d = 0; d < disks; d++) {
            Kind kind = KINDS[d % KINDS.length];
            DiskstatsSample s = new DiskstatsSample();
            s.host = "host-" + (d / 8);
            s.disk = kind.prefix + (d % 8);
            s.rotational = kind.rotational;
            totals.add(s);
        }
        for (int second = 0; second < seconds; second++) {
            long endNs = START_NS + (second + 1) * SECOND_NS;
            for (int d = 0; d < disks; d++) {
                Kind kind = KINDS[d % KINDS.length];
                DiskstatsSample s = totals.get(d);
                long reads = Math.round(kind.iops * 0.7 * (0.5 + random.nextDouble()));
                long writes = Math.round(kind.iops * 0.3 * (0.5 + random.nextDouble()));
                long readUs = emitHists(s, "R", reads, kind.readMeanUs, endNs, random, sink);
                long writeUs = emitHists(s, "W", writes, kind.writeMeanUs, endNs, random, sink);
                s.tsNs = endNs;
                s.counters.readsCompleted += reads;
                s.counters.sectorsRead += reads * 8;
                s.counters.readTimeMs += readUs / 1000;
                s.counters.writesCompleted += writes;
                s.counters.sectorsWritten += writes * 8;
                s.counters.writeTimeMs += writeUs / 1000;
                s.counters.ioTimeMs += Math.min(1000, (readUs + writeUs) / 1000);
                s.counters.weightedIoTimeMs += (readUs + writeUs) / 1000;
                sink.accept(s.key(), s.toJson());
            }
        }
    }

    /** Device, queue and total histograms of one op's second; returns the device time in us. */
    private static long emitHists(DiskstatsSample disk, String op, long count, double meanUs, long endNs,
                                  SplittableRandom random, BiConsumer<String, String> sink) {
        if (count == 0) {
            return 0;
        }
        // The shape from at most DRAWS latencies, scaled to `count` (the remainder to the mode).
        long draws = Math.min(count, DRAWS);
        long[] drawn = new long[HistRecord.MAX_BUCKETS];
        long drawnUs = 0;
        long maxUs = 0;
        for (long i = 0; i < draws; i++) {
            long us = Math.max(1, Math.round(meanUs * Math.exp(0.4 * random.nextGaussian() - 0.08)));
            drawn[63 - Long.numberOfLeadingZeros(us)]++;
            drawnUs += us;
            maxUs = Math.max(maxUs, us);
        }
        long[] device = new long[HistRecord.MAX_BUCKETS];
        long placed = 0;
        int mode = 0;
        for (int b = 0; b < drawn.length; b++) {
            device[b] = drawn[b] * count / draws;
            placed += device[b];
            mode = drawn[b] > drawn[mode] ? b : mode;
        }
        device[mode] += count - placed;
        long sumUs = drawnUs * count / draws;
        sink.accept(disk.key(), hist(disk, op, "device", endNs, device, count, sumUs, maxUs));
        long[] queue = new long[HistRecord.MAX_BUCKETS];
        queue[2] = count; // a few us between allocation and dispatch
        sink.accept(disk.key(), hist(disk, op, "queue", endNs, queue, count, 5 * count, 7));
        sink.accept(disk.key(), hist(disk, op, "total", endNs, device, count, sumUs + 5 * count, maxUs + 7));
        return sumUs;
    }

    private static String hist(DiskstatsSample disk, String op, String latency, long endNs, long[] buckets,
                               long count, long sumUs, long maxUs) {
        int used = buckets.length;
        while (used > 1 && buckets[used - 1] == 0) {
            used--;
        }
        ObjectNode n = Json.object();
        n.put("schema", HistRecord.SCHEMA).put("host", disk.host).put("disk", disk.disk).put("op", op)
                .put("start_ns", endNs - SECOND_NS).put("end_ns", endNs).put("latency", latency);
        var array = n.putArray("buckets_log2_us");
        for (int i = 0; i < used; i++) {
            array.add(buckets[i]);
        }
        n.put("count", count).put("sum_us", sumUs).put("max_us", maxUs).put("errors", 0);
        return Json.write(n);
    }
}
