package io.iopipe.jobs.detect;

import io.iopipe.jobs.records.OutputRecord;

/**
 * What comparing a drive with its peers over one hour says about its health, for the
 * drive's own health state (keyed by disk) to weigh with its other findings.
 */
public class PeerVerdict {
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

    public PeerVerdict() {}

    public String key() {
        return OutputRecord.diskKey(host, disk);
    }

    Finding.HealthEffect healthEffect() {
        return Finding.HealthEffect.valueOf(effect);
    }
}
