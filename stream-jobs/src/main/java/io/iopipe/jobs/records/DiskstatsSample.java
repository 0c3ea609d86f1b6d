package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * One io.diskstats.v1 record: cumulative /proc/diskstats counters of one disk.
 * Discard and flush counters are 0 where the producing kernel lacks them.
 */
public class DiskstatsSample {
    public static final String SCHEMA = "io.diskstats.v1";

    public String source;
    public String host;
    public String disk;
    public long tsNs;
    public boolean rotational;
    /** The device's model, where it tells; null otherwise. */
    public String model;
    /** A rotational disk's rotation rate, where it tells; 0 otherwise. */
    public long rpm;
    public DiskstatsCounters counters = new DiskstatsCounters();

    public String key() {
        return OutputRecord.diskKey(host, disk);
    }

    /** The record as JSON again, for a dead letter about a sample that decoded fine. */
    public String toJson() {
        ObjectNode n = Json.object();
        n.put("schema", SCHEMA);
        n.put("host", host);
        n.put("disk", disk);
        n.put("ts_ns", tsNs);
        n.put("rotational", rotational);
        if (model != null) {
            n.put("model", model);
        }
        if (rpm > 0) {
            n.put("rpm", rpm);
        }
        for (int i = 0; i < DiskstatsCounters.ALL.size(); i++) {
            n.put(DiskstatsCounters.ALL.name(i), DiskstatsCounters.ALL.get(counters, i));
        }
        return Json.write(n);
    }
}
