package io.iopipe.jobs.records;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.iostat.DiskstatsDelta;
import io.iopipe.jobs.iostat.IostatSums;
import io.iopipe.jobs.testing.SchemaFiles;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class DiskstatsFieldsTest {
    static final long NOW_NS = 1_763_700_100_000_000_000L;
    /** What the carriers hold as longs besides counters: when, and the disk's rotation rate. */
    private static final Set<String> NOT_COUNTERS = Set.of("tsNs", "startNs", "endNs", "intervalNs", "rpm");

    @Test
    void theCountersAreTheSchemasInItsOrderAndOnlyInFlightIsNoCount() {
        List<String> stated = new ArrayList<>();
        SchemaFiles.schema(DiskstatsSample.SCHEMA).get("properties").properties().forEach(p -> {
            if ("#/$defs/counter".equals(p.getValue().path("$ref").asText())) {
                stated.add(p.getKey());
            }
        });
        assertEquals(stated, DiskstatsFields.COUNTERS);
        assertEquals(stated.stream().filter(c -> !c.equals("in_flight")).toList(), DiskstatsFields.CUMULATIVE);
    }

    @Test
    void oneClassNamesTheSchemasCountersAndTheRecordsOfThemHoldIt() {
        assertEquals(camelCase(DiskstatsFields.COUNTERS), counterFields(DiskstatsCounters.class));
        for (Class<?> carrier : List.of(DiskstatsSample.class, DiskstatsDelta.class, IostatSums.class)) {
            assertEquals(Set.of(), counterFields(carrier), carrier.getSimpleName() + " lists no counters of its own");
            assertTrue(Arrays.stream(carrier.getFields()).anyMatch(f -> f.getType() == DiskstatsCounters.class), carrier.getSimpleName());
        }
    }

    @Test
    void aDeltaIsWhatEachCounterGrewAndSumsAddUp() {
        DiskstatsCounters earlier = new DiskstatsCounters();
        DiskstatsCounters later = new DiskstatsCounters();
        for (int i = 0; i < DiskstatsCounters.ALL.size(); i++) {
            DiskstatsCounters.ALL.set(earlier, i, 10 + i);
            DiskstatsCounters.ALL.set(later, i, 10 + 3 * i);
        }
        DiskstatsCounters grown = later.since(earlier);
        DiskstatsCounters twice = new DiskstatsCounters();
        twice.add(grown);
        twice.add(grown);
        for (int i = 0; i < DiskstatsCounters.ALL.size(); i++) {
            boolean gauge = !DiskstatsFields.CUMULATIVE.contains(DiskstatsCounters.ALL.name(i));
            assertEquals(gauge ? 0 : 2 * i, DiskstatsCounters.ALL.get(grown, i), DiskstatsCounters.ALL.name(i));
            assertEquals(gauge ? 0 : 4 * i, DiskstatsCounters.ALL.get(twice, i), DiskstatsCounters.ALL.name(i));
        }
        assertFalse(later.anyBelow(earlier));
        later.readsCompleted = 9;
        assertTrue(later.anyBelow(earlier), "reads_completed went back: a counter reset");
        later.readsCompleted = 10;
        later.inFlight = 0;
        assertFalse(later.anyBelow(earlier), "in_flight is a gauge: it may fall");
    }

    @Test
    void aDecodedSampleWrittenAgainCarriesEveryCounterAsSent() throws Exception {
        JsonNode sent = SchemaFiles.validExamples(DiskstatsSample.SCHEMA).get(0);
        JsonNode written = Json.parseObject(RecordDecoder.diskstats(sent, "test", NOW_NS).toJson());
        for (String counter : DiskstatsFields.COUNTERS) {
            assertEquals(sent.get(counter), written.get(counter), counter);
        }
    }

    private static Set<String> camelCase(List<String> counters) {
        return counters.stream().map(DiskstatsFields::camelCase).collect(Collectors.toSet());
    }

    private static Set<String> counterFields(Class<?> carrier) {
        return Arrays.stream(carrier.getFields())
                .filter(f -> f.getType() == long.class && !Modifier.isStatic(f.getModifiers()))
                .map(Field::getName)
                .filter(name -> !NOT_COUNTERS.contains(name))
                .collect(Collectors.toSet());
    }
}
