package io.iopipe.jobs.detect;

import io.iopipe.jobs.records.OutputRecord;

/**
 * What comparing a drive with its peers says about its health, for the drive's own health
 * state (keyed by disk) to weigh with its other findings: its host's drives over an hour
 * ({@link SlowVsPeers}), or its model's drives over a window ({@link ModelPeers}).
 */
public class PeerVerdict {
    public static final String HOST = "host";
    public static final String MODEL = "model";

    public String host;
    public String disk;
    public long hourStartNs;
    public long hourEndNs;
    /** A {@link Finding.HealthEffect} name: NONE once the drive keeps up with its peers. */
    public String effect;
    public String reason;
    /** The episode's slow_vs_peers anomaly, when one is open. */
    public String anomalyId;
    /** Whether this hour raised the anomaly or moved the effect up: the health record cites it. */
    public boolean news;
    /** Which peers: {@link #HOST} (slow_vs_peers) or {@link #MODEL} (failing_disk against its model). */
    public String source = HOST;

    public PeerVerdict() {}

    public String key() {
        return OutputRecord.diskKey(host, disk);
    }

    Finding.HealthEffect healthEffect() {
        return Finding.HealthEffect.valueOf(effect);
    }
}
