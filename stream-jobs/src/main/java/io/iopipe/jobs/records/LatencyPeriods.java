package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/** The periods io.latency.v1 rolls latencies up over, shortest first: its schema's `period_s` enum, packed into the jar. */
public final class LatencyPeriods {
    public static final String SCHEMA = "io.latency.v1";

    private LatencyPeriods() {}

    public static List<Integer> seconds() {
        String path = "/schema/records/" + SCHEMA + ".schema.json";
        try (InputStream in = LatencyPeriods.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException(path + " is missing from the classpath: rebuild the jar");
            }
            List<Integer> seconds = new ArrayList<>();
            for (JsonNode period : Json.MAPPER.readTree(in).at("/properties/period_s/enum")) {
                seconds.add(period.asInt());
            }
            seconds.sort(null);
            return List.copyOf(seconds);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
