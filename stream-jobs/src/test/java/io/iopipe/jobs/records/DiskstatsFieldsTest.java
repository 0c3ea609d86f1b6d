package io.iopipe.jobs.records;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
    void eachCarrierNamesTheSchemasCountersAndNoOthers() {
        assertEquals(camelCase(DiskstatsFields.COUNTERS), counterFields(DiskstatsSample.class));
        assertEquals(camelCase(DiskstatsFields.CUMULATIVE), counterFields(DiskstatsDelta.class));
        assertEquals(camelCase(DiskstatsFields.CUMULATIVE), counterFields(IostatSums.class));
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
