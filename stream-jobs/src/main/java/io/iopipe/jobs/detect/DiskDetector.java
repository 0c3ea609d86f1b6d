package io.iopipe.jobs.detect;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.RecordSchema;
import io.iopipe.jobs.records.Texts;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * All detectors over one disk's window, in event-time order: anomalies (one per
 * episode and severity reached), health transitions, and what the disk teaches its
 * baselines when nothing is wrong with it.
 */
public final class DiskDetector {
    public static final String ANOMALY_SCHEMA = "io.anomaly.v1";
    private static final RecordSchema ANOMALY = RecordSchema.of(ANOMALY_SCHEMA);
    static final int MAX_SUMMARY_CHARS = ANOMALY.maxLength("summary");
    static final int MAX_EVIDENCE_CHARS = ANOMALY.maxLength("evidence_json");
    /** Findings of a kind closer than this belong to one episode: one anomaly, not one per window. */
    static final long EPISODE_QUIET_NS = 5L * 60 * 1_000_000_000L;
    static final double SERVICE_BASELINE_ALPHA = 0.05;

    private DiskDetector() {}

    public static List<OutputRecord> onWindow(DiskWindow w, DiskHistory h) {
        return onWindow(w, h, DiskHealth.DEFAULT_RECOVERY.toNanos());
    }

    /** The same, stepping health down after {@code recoveryNs} of quiet. */
    public static List<OutputRecord> onWindow(DiskWindow w, DiskHistory h, long recoveryNs) {
        h.beginAt(w.startNs);
        w.sortEvents();
        List<Finding> findings = new ArrayList<>();
        FailingDisk.examine(w, h).ifPresent(findings::add);
        BimodalRetries.examine(w).ifPresent(findings::add);
        QueueRamp.examine(w).ifPresent(findings::add);
        Saturation.examine(w, h).ifPresent(findings::add);

        List<OutputRecord> out = new ArrayList<>();
        List<String> newIds = new ArrayList<>();
        for (Finding f : findings) {
            anomalyOf(w, h, f).ifPresent(a -> {
                out.add(a);
                newIds.add(h.episodes.get(f.kind().wireName).anomalyId);
            });
        }
        // A drive slower than its peers stays so between their comparisons.
        findings.addAll(standingPeerFindings(h));
        DiskHealth.step(DiskHealth.Span.of(w), h, findings, newIds, recoveryNs).ifPresent(out::add);
        learn(w, h, findings);
        return out;
    }

    /** The health record an hour's comparison with the disk's peers causes, if any; its anomaly came with the comparison. */
    public static List<OutputRecord> onPeerVerdict(PeerVerdict v, DiskHistory h, long recoveryNs) {
        if (PeerVerdict.MODEL.equals(v.source)) {
            h.modelEffect = v.effect;
            h.modelReason = v.reason;
        } else {
            h.peerEffect = v.effect;
            h.peerReason = v.reason;
        }
        List<String> cited = v.news && v.anomalyId != null ? List.of(v.anomalyId) : List.of();
        DiskHealth.Span span = new DiskHealth.Span(v.host, v.disk, v.hourStartNs, v.hourEndNs);
        return DiskHealth.step(span, h, standingPeerFindings(h), cited, recoveryNs).map(List::of).orElse(List.of());
    }

    /** What the disk's peers last concluded about it, its host's (slow_vs_peers) and its model's (failing_disk). */
    private static List<Finding> standingPeerFindings(DiskHistory h) {
        List<Finding> standing = new ArrayList<>();
        Finding.HealthEffect host = Finding.HealthEffect.valueOf(h.peerEffect);
        if (host != Finding.HealthEffect.NONE) {
            standing.add(new Finding(Finding.Kind.SLOW_VS_PEERS, Finding.Severity.WARNING, h.peerReason, null, host));
        }
        Finding.HealthEffect model = h.modelEffect == null ? Finding.HealthEffect.NONE : Finding.HealthEffect.valueOf(h.modelEffect);
        if (model != Finding.HealthEffect.NONE) {
            Finding.Severity severity = model == Finding.HealthEffect.FAILING ? Finding.Severity.CRITICAL : Finding.Severity.WARNING;
            standing.add(new Finding(Finding.Kind.FAILING_DISK, severity, h.modelReason, null, model));
        }
        return standing;
    }

    /** The anomaly a finding raises: none while its episode already reported this severity. */
    static Optional<OutputRecord> anomalyOf(DiskWindow w, DiskHistory h, Finding f) {
        String kind = f.kind().wireName;
        DiskHistory.Episode episode = h.episodes.get(kind);
        if (episode == null || w.startNs - episode.lastSeenNs > EPISODE_QUIET_NS) {
            episode = new DiskHistory.Episode();
            episode.number = h.episodesBegun.merge(kind, 1, Integer::sum);
            episode.startNs = w.startNs;
            h.episodes.put(kind, episode);
        }
        episode.lastSeenNs = w.endNs;
        if (episode.severity != null && Finding.Severity.valueOf(episode.severity).compareTo(f.severity()) >= 0) {
            return Optional.empty();
        }
        episode.severity = f.severity().name();
        episode.anomalyId = anomalyId(w, h, kind, episode);
        return Optional.of(anomalyRecord(episode.anomalyId, w.host, w.disk, f.kind(), f.severity(), episode.startNs, w.endNs,
                f.summary(), f.evidence()));
    }

    /**
     * An episode's anomaly at its severity is named by the disk's history and the episode's
     * place in it, not by the window it began at: a restored job reading its input again may
     * see it begin a window earlier or later (DiskHistory.sinceNs), and must send the same one.
     */
    private static String anomalyId(DiskWindow w, DiskHistory h, String kind, DiskHistory.Episode episode) {
        if (episode.number == 0) {
            return Ids.of(w.host, w.disk, kind, Long.toString(episode.startNs), episode.severity);
        }
        return Ids.of(w.host, w.disk, kind, "episode", Long.toString(h.sinceNs), Integer.toString(episode.number), episode.severity);
    }

    static OutputRecord anomalyRecord(String id, String host, String disk, Finding.Kind kind, Finding.Severity severity,
                                      long startNs, long endNs, String summary, ObjectNode evidence) {
        ObjectNode a = Json.object();
        a.put("schema", ANOMALY_SCHEMA);
        a.put("id", id);
        a.put("host", host);
        a.put("disk", disk);
        a.put("kind", kind.wireName);
        a.put("severity", severity.wireName());
        a.put("start_ns", startNs);
        a.put("end_ns", endNs);
        a.put("summary", Texts.cut(summary, MAX_SUMMARY_CHARS));
        ObjectNode shown = Evidence.within(evidence, MAX_EVIDENCE_CHARS);
        a.set("evidence", shown);
        a.put("evidence_json", Json.write(shown));
        return new OutputRecord(ANOMALY_SCHEMA, OutputRecord.diskKey(host, disk), Json.write(a));
    }

    /** Baselines learn only from windows that say nothing is wrong with the disk. */
    static void learn(DiskWindow w, DiskHistory h, List<Finding> findings) {
        boolean diskSuspected = findings.stream().anyMatch(f -> f.health() != Finding.HealthEffect.NONE);
        if (diskSuspected) {
            return;
        }
        if (FailingDisk.teachesBaseline(w)) {
            h.serviceBaselineMs = DiskHistory.ewma(h.serviceBaselineMs, h.serviceBaselineWindows,
                    FailingDisk.serviceMs(w), SERVICE_BASELINE_ALPHA);
            h.serviceBaselineWindows++;
        }
        // In a saturated window an I/O dispatched alone is soon joined by others that slow it.
        if (findings.stream().noneMatch(f -> f.kind() == Finding.Kind.SATURATION)) {
            Saturation.learn(w, h);
        }
    }
}
