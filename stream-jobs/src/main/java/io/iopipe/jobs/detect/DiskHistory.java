package io.iopipe.jobs.detect;

import java.util.HashMap;
import java.util.Map;

/** What one disk's detectors have learnt and decided so far: its keyed state. */
public class DiskHistory {
    /** Mean service time of its windows that raised nothing (EWMA), and how many there were. */
    public double serviceBaselineMs;
    public int serviceBaselineWindows;
    /** Mean device latency at a queue depth of one (EWMA), and how many windows taught it (their depth-one I/Os, or all their I/Os at a mean depth of about one). */
    public double qd1LatencyUs;
    public int qd1Windows;
    public String health = DiskHealth.HEALTHY;
    public String ticketId;
    /**
     * The start of the first span the disk's health stepped through in this history, -1
     * before it; with the count of tickets opened since, what names each ticket. Not the
     * span that opened it: a job restored from a checkpoint reads its input again, and a
     * window closed on silence before may come whole, so the disk may turn failing a
     * window earlier or later than it did, and must still open the same ticket.
     */
    public long sinceNs = -1;
    public int ticketsOpened;
    /** The end of the last span the disk's health stepped through. */
    public long lastSpanEndNs = -1;
    /** The disk's names while it holds a ticket, to say of it when it falls silent. */
    public String ticketHost;
    public String ticketDisk;
    /** Whether its silence was said on its ticket (DiskHealth.silent) since it was last heard. */
    public boolean saidSilent;
    /** How many episodes of each kind of finding began since sinceNs, by kind: what names their anomalies, as for tickets. */
    public Map<String, Integer> episodesBegun = new HashMap<>();
    /** Since when no finding has touched the disk's health; -1 while one does. */
    public long quietSinceNs = -1;
    /** What comparing the disk with its peers last said about it (a {@link Finding.HealthEffect} name), and why. */
    public String peerEffect = Finding.HealthEffect.NONE.name();
    public String peerReason;
    /** What comparing the disk with the other drives of its model last said about it (a {@link Finding.HealthEffect} name), and why. */
    public String modelEffect = Finding.HealthEffect.NONE.name();
    public String modelReason;
    /** The open episode of each kind of finding, by kind. */
    public Map<String, Episode> episodes = new HashMap<>();

    /** One run of findings of a kind: one anomaly per severity it reached, however long it lasts. */
    public static class Episode {
        /** Its place among the disk's episodes of its kind, from 1; 0 for one an earlier build began, named by its start. */
        public int number;
        public long startNs;
        public long lastSeenNs;
        public String severity;
        public String anomalyId;

        public Episode() {}
    }

    /** The history begins at the first span it hears of; once only. */
    void beginAt(long startNs) {
        if (sinceNs < 0) {
            sinceNs = startNs;
        }
    }

    static double ewma(double current, int seen, double value, double alpha) {
        return seen == 0 ? value : current + alpha * (value - current);
    }
}
