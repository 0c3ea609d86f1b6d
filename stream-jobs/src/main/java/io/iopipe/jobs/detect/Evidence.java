package io.iopipe.jobs.detect;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iopipe.jobs.iostat.IostatWindow;
import io.iopipe.jobs.records.IoEvent;
import io.iopipe.jobs.records.Json;
import java.util.Comparator;
import java.util.List;

/** The evidence every finding carries: the op's histogram, the iostat line, the op's worst events. */
final class Evidence {
    static final int WORST_EVENTS = 5;

    private Evidence() {}

    /**
     * The evidence as a record may carry it: written within {@code maxChars}, its longest
     * fields left out first, their names listed in evidence_cut. The detectors bound what
     * they show (a burst's foot and top, five worst events); this holds if one day one
     * does not, so the verdict still goes out.
     */
    static ObjectNode within(ObjectNode evidence, int maxChars) {
        if (Json.write(evidence).length() <= maxChars) {
            return evidence;
        }
        ObjectNode shown = evidence.deepCopy();
        ArrayNode cut = Json.MAPPER.createArrayNode();
        for (String longest = longestField(shown); longest != null && Json.write(shown).length() > maxChars;
             longest = longestField(shown)) {
            shown.remove(longest);
            cut.add(longest);
            shown.set(CUT, cut);
        }
        return shown;
    }

    private static String longestField(ObjectNode evidence) {
        String longest = null;
        int longestChars = -1;
        for (var field : evidence.properties()) {
            int chars = Json.write(field.getValue()).length();
            if (!field.getKey().equals(CUT) && chars > longestChars) {
                longest = field.getKey();
                longestChars = chars;
            }
        }
        return longest;
    }

    /** The field naming what {@link #within} left out. */
    static final String CUT = "evidence_cut";

    static ObjectNode of(DiskWindow w, String op) {
        ObjectNode e = Json.object();
        e.put("window_start_ns", w.startNs);
        e.put("window_end_ns", w.endNs);
        e.put("op", op);
        OpLatency latency = w.ops.get(op);
        if (latency != null) {
            e.set("device_histogram_us", biolatency(latency.device()));
            e.put("device_p50_ms", round(latency.device().quantileUs(0.5) / 1000));
            e.put("device_p99_ms", round(latency.device().quantileUs(0.99) / 1000));
            e.put("device_max_ms", round(latency.device().maxUs / 1000.0));
        }
        if (w.hasIostat()) {
            e.set("iostat", iostatLine(w));
        }
        e.set("worst_events", worstEvents(w.events.stream().filter(ev -> ev.op.equals(op)).toList()));
        return e;
    }

    /** biolatency's layout: "lower-upper" in us → count, non-empty buckets only. */
    static ObjectNode biolatency(Log2Histogram h) {
        ObjectNode out = Json.object();
        for (int i = 0; i < Log2Histogram.BUCKETS; i++) {
            if (h.bucket(i) > 0) {
                out.put(Log2Histogram.lowerEdgeUs(i) + "-" + (Log2Histogram.upperEdgeUs(i) - 1), h.bucket(i));
            }
        }
        return out;
    }

    static ObjectNode iostatLine(DiskWindow w) {
        double seconds = w.iostat.intervalNs / 1e9;
        ObjectNode line = Json.object();
        line.put("r_per_s", round(w.iostat.counters.readsCompleted / seconds));
        line.put("w_per_s", round(w.iostat.counters.writesCompleted / seconds));
        line.put("r_await_ms", round(IostatWindow.await(w.iostat.counters.readTimeMs, w.iostat.counters.readsCompleted)));
        line.put("w_await_ms", round(IostatWindow.await(w.iostat.counters.writeTimeMs, w.iostat.counters.writesCompleted)));
        line.put("req_kib", round(w.bytesPerIo() / 1024));
        line.put("aqu_sz", round(w.queueSize()));
        line.put("svctm_ms", round(w.serviceMs()));
        line.put("util_pct", round(w.utilFraction() * 100));
        return line;
    }

    static ArrayNode worstEvents(List<IoEvent> events) {
        ArrayNode out = Json.MAPPER.createArrayNode();
        events.stream().sorted(Comparator.comparingLong(IoEvent::deviceNs).reversed()).limit(WORST_EVENTS)
                .forEach(ev -> out.add(event(ev)));
        return out;
    }

    static ObjectNode event(IoEvent ev) {
        ObjectNode o = Json.object();
        o.put("issue_ns", ev.issueNs);
        o.put("device_ms", round(ev.deviceNs() / 1e6));
        o.put("queue_ms", round(ev.queueNs / 1e6));
        o.put("op", ev.op);
        o.put("bytes", ev.bytes);
        o.put("sector", ev.sector);
        o.put("inflight", ev.inflight);
        o.put("error", ev.error);
        o.put("comm", ev.comm);
        return o;
    }

    static double round(double v) {
        return Math.round(v * 1000) / 1000.0;
    }
}
