package io.iopipe.jobs.detect;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.PipelineTimings;
import io.iopipe.jobs.records.RecordSchema;
import io.iopipe.jobs.records.Texts;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * healthy → suspect → failing, with hysteresis: a finding about the disk itself moves
 * it up at once; it steps down one level only after a recovery time (event time) of
 * windows that say nothing about it. A disk becoming failing opens one ticket, later evidence updates
 * it, and it is resolved when the disk is healthy again.
 */
public final class DiskHealth {
    public static final String SCHEMA = "io.health.v1";
    private static final RecordSchema HEALTH = RecordSchema.of(SCHEMA);
    static final int MAX_REASON_CHARS = HEALTH.maxLength("reason");
    static final int MAX_ANOMALY_IDS = HEALTH.maxItems("anomaly_ids");
    public static final String HEALTHY = "healthy";
    public static final String SUSPECT = "suspect";
    public static final String FAILING = "failing";
    /** How long a disk must be quiet to step down a level: two steps from failing to a resolved ticket. */
    public static final Duration DEFAULT_RECOVERY = PipelineTimings.HEALTH_RECOVERY;

    private DiskHealth() {}

    /** What a health step is about: one disk over a span of event time (a window, or an hour its peers were compared). */
    public record Span(String host, String disk, long startNs, long endNs) {
        static Span of(DiskWindow w) {
            return new Span(w.host, w.disk, w.startNs, w.endNs);
        }

        String key() {
            return OutputRecord.diskKey(host, disk);
        }
    }

    /** The health record this span's findings cause, if any. */
    static Optional<OutputRecord> step(Span span, DiskHistory h, List<Finding> findings, List<String> newAnomalyIds,
                                       long recoveryNs) {
        heard(span, h);
        Finding.HealthEffect effect = Finding.HealthEffect.NONE;
        String reason = "";
        for (Finding f : findings) {
            if (f.health().compareTo(effect) > 0) {
                effect = f.health();
                reason = f.summary();
            }
        }
        if (effect == Finding.HealthEffect.NONE) {
            return stepDownWhenQuiet(span, h, recoveryNs);
        }
        h.quietSinceNs = -1;
        if (effect == Finding.HealthEffect.FAILING && !FAILING.equals(h.health)) {
            if (h.ticketId != null) {
                return Optional.of(transition(span, h, FAILING, reason, newAnomalyIds, "open"));
            }
            h.ticketsOpened++;
            h.ticketId = Ids.of(span.host(), span.disk(), "ticket", Long.toString(h.sinceNs), Integer.toString(h.ticketsOpened));
            h.ticketHost = span.host();
            h.ticketDisk = span.disk();
            // Its copies from a restored job's second reading share the id, whichever span they come in.
            String opening = Ids.of(span.host(), span.disk(), "health", "open", h.ticketId);
            return Optional.of(transition(opening, span, h, FAILING, reason, newAnomalyIds, "open"));
        }
        if (effect == Finding.HealthEffect.SUSPECT && HEALTHY.equals(h.health)) {
            return Optional.of(transition(span, h, SUSPECT, reason, newAnomalyIds, null));
        }
        if (FAILING.equals(h.health) && !newAnomalyIds.isEmpty()) {
            return Optional.of(transition(span, h, FAILING, "new evidence: " + reason, newAnomalyIds, "update"));
        }
        return Optional.empty();
    }

    private static Optional<OutputRecord> stepDownWhenQuiet(Span span, DiskHistory h, long recoveryNs) {
        if (h.quietSinceNs < 0) {
            h.quietSinceNs = span.startNs();
        }
        if (HEALTHY.equals(h.health) || span.endNs() - h.quietSinceNs < recoveryNs) {
            return Optional.empty();
        }
        String quiet = "no finding about the disk for " + (span.endNs() - h.quietSinceNs) / 1_000_000_000L + " s";
        h.quietSinceNs = span.endNs();
        if (FAILING.equals(h.health)) {
            return Optional.of(transition(span, h, SUSPECT, quiet, List.of(), null));
        }
        boolean resolves = h.ticketId != null;
        OutputRecord healthy = transition(span, h, HEALTHY, quiet, List.of(), resolves ? "resolve" : null);
        h.ticketId = null;
        h.ticketHost = null;
        h.ticketDisk = null;
        return Optional.of(healthy);
    }

    /** The disk is heard of over `span`: after a silence said on its ticket, its quiet counts from now on. */
    private static void heard(Span span, DiskHistory h) {
        h.beginAt(span.startNs());
        if (h.saidSilent) {
            // Nothing was learnt of the disk while it was silent: that is not a quiet spell.
            h.saidSilent = false;
            h.quietSinceNs = -1;
        }
        h.lastSpanEndNs = Math.max(h.lastSpanEndNs, span.endNs());
        if (h.ticketId != null && h.ticketHost == null) {  // a ticket an earlier build opened
            h.ticketHost = span.host();
            h.ticketDisk = span.disk();
        }
    }

    /**
     * What a disk holding a ticket says once it has been silent for {@code silentForS} (at
     * {@code nowNs}): its ticket stays open, updated with why, until the disk is heard again
     * and found healthy. A drive that died or was pulled has not recovered, and a disk back
     * after any silence goes on with its ticket: never a second one. Nothing for a disk
     * without a ticket, or whose silence was said already.
     */
    public static Optional<OutputRecord> silent(DiskHistory h, long nowNs, long silentForS) {
        if (h.ticketId == null || h.ticketHost == null || h.saidSilent) {
            return Optional.empty();
        }
        h.saidSilent = true;
        Span span = new Span(h.ticketHost, h.ticketDisk, h.lastSpanEndNs, Math.max(nowNs, h.lastSpanEndNs));
        String reason = "no window for " + silentForS + " s (the drive dead or pulled, or its host away): the ticket stays open "
                + "until the disk is heard again and found healthy";
        String id = Ids.of(span.host(), span.disk(), "health", "silent", h.ticketId, Long.toString(h.lastSpanEndNs));
        return Optional.of(transition(id, span, h, h.health, reason, List.of(), "update"));
    }

    private static OutputRecord transition(Span span, DiskHistory h, String to, String reason, List<String> anomalyIds,
                                           String ticketAction) {
        String id = Ids.of(span.host(), span.disk(), "health", Long.toString(span.endNs()), h.health, to);
        return transition(id, span, h, to, reason, anomalyIds, ticketAction);
    }

    private static OutputRecord transition(String id, Span span, DiskHistory h, String to, String reason,
                                           List<String> anomalyIds, String ticketAction) {
        ObjectNode r = Json.object();
        r.put("schema", SCHEMA);
        r.put("id", id);
        r.put("host", span.host());
        r.put("disk", span.disk());
        r.put("ts_ns", span.endNs());
        r.put("from_state", h.health);
        r.put("to_state", to);
        r.put("reason", Texts.cut(reason, MAX_REASON_CHARS));
        anomalyIds.stream().limit(MAX_ANOMALY_IDS).forEach(r.putArray("anomaly_ids")::add);
        if (ticketAction != null) {
            r.putObject("ticket").put("action", ticketAction).put("ticket_id", h.ticketId);
        }
        h.health = to;
        return new OutputRecord(SCHEMA, span.key(), Json.write(r));
    }
}
