package io.iopipe.jobs.detect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.records.DecodeException;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A disk's tickets are named by its history, not by the window that happened to open them. */
class DiskHealthTicketTest {
    private static final long WINDOW_NS = 10_000_000_000L;
    private static final long START_NS = 1_800_000_000_000_000_000L;
    private static final long RECOVERY_NS = 60 * WINDOW_NS;
    private static final Finding FAILING = new Finding(Finding.Kind.FAILING_DISK, Finding.Severity.CRITICAL,
            "reads at 300 ms", null, Finding.HealthEffect.FAILING);

    /** The health records of windows [from, to) of the disk, failing in [failingFrom, failingTo). */
    private static List<JsonNode> live(DiskHistory h, int from, int to, int failingFrom, int failingTo) {
        List<JsonNode> records = new ArrayList<>();
        for (int i = from; i < to; i++) {
            DiskHealth.Span span = new DiskHealth.Span("db-17", "sdb", START_NS + i * WINDOW_NS, START_NS + (i + 1) * WINDOW_NS);
            boolean failing = i >= failingFrom && i < failingTo;
            List<Finding> findings = failing ? List.of(FAILING) : List.of();
            List<String> cited = i == failingFrom ? List.of("anomaly-" + i) : List.of();
            DiskHealth.step(span, h, findings, cited, RECOVERY_NS).map(DiskHealthTicketTest::parsed).ifPresent(records::add);
        }
        return records;
    }

    private static JsonNode parsed(OutputRecord r) {
        try {
            return Json.parseObject(r.json);
        } catch (DecodeException e) {
            throw new AssertionError("the job wrote a health record it cannot read: " + r.json, e);
        }
    }

    private static List<JsonNode> withTicket(List<JsonNode> records, String action) {
        return records.stream().filter(r -> r.has("ticket") && r.get("ticket").get("action").asText().equals(action)).toList();
    }

    private static JsonNode opening(List<JsonNode> records) {
        List<JsonNode> openings = withTicket(records, "open");
        assertEquals(1, openings.size(), records::toString);
        return openings.get(0);
    }

    @Test
    void aRestoredJobOpensTheSameTicketWhicheverWindowTurnsTheDiskFailingOnItsSecondReading() {
        // The checkpoint after three quiet windows, restored twice: once the disk turns failing
        // at window 5 (window 4 closed on silence, short), the other time at window 4 (whole).
        DiskHistory first = new DiskHistory();
        DiskHistory second = new DiskHistory();
        live(first, 0, 3, -1, -1);
        live(second, 0, 3, -1, -1);
        JsonNode openedFirst = opening(live(first, 3, 12, 5, 12));
        JsonNode openedSecond = opening(live(second, 3, 12, 4, 12));

        assertNotEquals(openedFirst.get("ts_ns"), openedSecond.get("ts_ns"));
        assertEquals(openedFirst.get("ticket").get("ticket_id"), openedSecond.get("ticket").get("ticket_id"));
        assertEquals(openedFirst.get("id"), openedSecond.get("id"), "the copies of one opening");
    }

    @Test
    void aCheckpointBeforeTheDisksFirstWindowOpensTheSameTicketToo() {
        JsonNode openedFirst = opening(live(new DiskHistory(), 0, 8, 5, 8));
        JsonNode openedSecond = opening(live(new DiskHistory(), 0, 8, 4, 8));
        assertEquals(openedFirst.get("ticket").get("ticket_id"), openedSecond.get("ticket").get("ticket_id"));
    }

    @Test
    void aDisksNextTicketAfterOneResolvedIsAnotherAndSoIsAForgottenDisksOnItsReturn() {
        DiskHistory h = new DiskHistory();
        List<JsonNode> life = live(h, 0, 300, 2, 10);
        live(h, 300, 310, 300, 310);
        List<JsonNode> again = live(h, 310, 311, 310, 311);
        String firstTicket = opening(life).get("ticket").get("ticket_id").asText();
        assertEquals(firstTicket, withTicket(life, "resolve").get(0).get("ticket").get("ticket_id").asText());

        DiskHistory reopened = new DiskHistory();
        live(reopened, 0, 300, 2, 10);
        String secondTicket = opening(live(reopened, 300, 310, 300, 310)).get("ticket").get("ticket_id").asText();
        assertNotEquals(firstTicket, secondTicket);
        assertEquals(List.of(), withTicket(again, "open"), "still the second ticket");

        DiskHistory forgottenAndBack = new DiskHistory();
        String afterSilence = opening(live(forgottenAndBack, 400, 410, 401, 410)).get("ticket").get("ticket_id").asText();
        assertNotEquals(firstTicket, afterSilence);
    }
}
