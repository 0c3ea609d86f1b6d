package io.iopipe.jobs;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.detect.DiskDetector;
import io.iopipe.jobs.detect.DiskHealth;
import io.iopipe.jobs.records.DecodeException;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import java.io.PrintStream;

/** One line per verdict, for a person reading `make detect`: anomalies and health transitions. */
final class Verdicts {
    private Verdicts() {}

    static void print(OutputRecord r, PrintStream out) throws DecodeException {
        if (DiskDetector.ANOMALY_SCHEMA.equals(r.schema)) {
            JsonNode a = Json.parseObject(r.text());
            out.printf("anomaly %s %s %s/%s: %s%n", a.get("kind").asText(), a.get("severity").asText(),
                    a.get("host").asText(), a.get("disk").asText(), a.get("summary").asText());
        } else if (DiskHealth.SCHEMA.equals(r.schema)) {
            JsonNode h = Json.parseObject(r.text());
            JsonNode ticket = h.get("ticket");
            out.printf("health %s/%s %s -> %s%s: %s%n", h.get("host").asText(), h.get("disk").asText(),
                    h.get("from_state").asText(), h.get("to_state").asText(),
                    ticket == null ? "" : " (ticket " + ticket.get("action").asText() + " " + ticket.get("ticket_id").asText() + ")",
                    h.get("reason").asText());
        }
    }
}
