package io.iopipe.jobs.detect;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import java.util.List;
import java.util.Optional;

/**
 * healthy → suspect → failing, with hysteresis: a finding about the disk itself moves
 * it up at once; it steps down one level only after RECOVERY of windows that say
 * nothing about it. A disk becoming failing opens one ticket, later evidence updates
 * it, and it is resolved when the disk is healthy again.
 */
public final class DiskHealth {
    public static final String SCHEMA = "io.health.v1";
    public static final String HEALTHY = "healthy";
    public static final String SUSPECT = "suspect";
    public static final String FAILING = "failing";
    static final long RECOVERY_NS = 5L * 60 * 1_000_000_000L;

    private DiskHealth() {}

    /** The health record this window causes, if any. */
    static Optional<OutputRecord> step(DiskWindow w, DiskHistory h, List<Finding> findings, List<String> newAnomalyIds) {
        Finding.HealthEffect effect = Finding.HealthEffect.NONE;
        String reason = "";
        for (Finding f : findings) {
            if (f.health().compareTo(effect) > 0) {
                effect = f.health();
                reason = f.summary();
            }
        }
        if (effect == Finding.HealthEffect.NONE) {
            return stepDownWhenQuiet(w, h);
        }
        h.quietSinceNs = -1;
        if (effect == Finding.HealthEffect.FAILING && !FAILING.equals(h.health)) {
            h.ticketId = h.ticketId != null ? h.ticketId : Ids.of(w.host, w.disk, "ticket", Long.toString(w.startNs));
            return Optional.of(transition(w, h, FAILING, reason, newAnomalyIds, "open"));
        }
        if (effect == Finding.HealthEffect.SUSPECT && HEALTHY.equals(h.health)) {
            return Optional.of(transition(w, h, SUSPECT, reason, newAnomalyIds, null));
        }
        if (FAILING.equals(h.health) && !newAnomalyIds.isEmpty()) {
            return Optional.of(transition(w, h, FAILING, "new evidence: " + reason, newAnomalyIds, "update"));
        }
        return Optional.empty();
    }

    private static Optional<OutputRecord> stepDownWhenQuiet(DiskWindow w, DiskHistory h) {
        if (h.quietSinceNs < 0) {
            h.quietSinceNs = w.startNs;
        }
        if (HEALTHY.equals(h.health) || w.endNs - h.quietSinceNs < RECOVERY_NS) {
            return Optional.empty();
        }
        String quiet = "no finding about the disk for " + (w.endNs - h.quietSinceNs) / 1_000_000_000L + " s";
        h.quietSinceNs = w.endNs;
        if (FAILING.equals(h.health)) {
            return Optional.of(transition(w, h, SUSPECT, quiet, List.of(), null));
        }
        boolean resolves = h.ticketId != null;
        OutputRecord healthy = transition(w, h, HEALTHY, quiet, List.of(), resolves ? "resolve" : null);
        h.ticketId = null;
        return Optional.of(healthy);
    }

    private static OutputRecord transition(DiskWindow w, DiskHistory h, String to, String reason, List<String> anomalyIds,
                                           String ticketAction) {
        ObjectNode r = Json.object();
        r.put("schema", SCHEMA);
        r.put("id", Ids.of(w.host, w.disk, "health", Long.toString(w.endNs), h.health, to));
        r.put("host", w.host);
        r.put("disk", w.disk);
        r.put("ts_ns", w.endNs);
        r.put("from_state", h.health);
        r.put("to_state", to);
        r.put("reason", reason);
        anomalyIds.forEach(r.putArray("anomaly_ids")::add);
        if (ticketAction != null) {
            r.putObject("ticket").put("action", ticketAction).put("ticket_id", h.ticketId);
        }
        h.health = to;
        return new OutputRecord(SCHEMA, w.key(), Json.write(r));
    }
}
