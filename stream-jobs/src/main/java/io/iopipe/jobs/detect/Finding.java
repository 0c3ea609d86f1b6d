package io.iopipe.jobs.detect;

import com.fasterxml.jackson.databind.node.ObjectNode;

/** What one detector concluded about one window, with the evidence for it. */
public record Finding(Kind kind, Severity severity, String summary, ObjectNode evidence, HealthEffect health) {
    public enum Kind {
        FAILING_DISK("failing_disk"), BIMODAL_RETRIES("bimodal_retries"), QUEUE_RAMP("queue_ramp"), SATURATION("saturation"),
        SLOW_VS_PEERS("slow_vs_peers");

        public final String wireName;

        Kind(String wireName) {
            this.wireName = wireName;
        }
    }

    public enum Severity {
        INFO, WARNING, CRITICAL;

        public String wireName() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** What the finding says about the disk itself, as opposed to its workload. */
    public enum HealthEffect { NONE, SUSPECT, FAILING }
}
