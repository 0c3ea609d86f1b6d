package io.iopipe.jobs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/**
 * What the build packs (Maven runs this once the jars are built): the job jar, which a
 * Flink cluster runs, holds no benchmark; the bench jar holds the benchmarks alone,
 * referring to Jackson where the job jar relocated it, so they run beside it.
 */
class ShippedJarsTest {
    static final String BENCH = "io/iopipe/jobs/bench/";
    static final String JACKSON = "com/fasterxml/jackson/";
    static final String RELOCATED_JACKSON = "io/iopipe/shaded/jackson/";

    /** Each class file of the jar the build names in `property`, by its path in the jar. */
    private static Map<String, String> classes(String property) throws IOException {
        String path = System.getProperty(property);
        assertNotNull(path, property + " names a jar: the build sets it when it runs this test, after packing the jars");
        Map<String, String> classes = new LinkedHashMap<>();
        try (JarFile jar = new JarFile(path)) {
            for (JarEntry entry : jar.stream().filter(e -> e.getName().endsWith(".class")).toList()) {
                try (InputStream in = jar.getInputStream(entry)) {
                    classes.put(entry.getName(), new String(in.readAllBytes(), StandardCharsets.ISO_8859_1));
                }
            }
        }
        return classes;
    }

    @Test
    void theJobJarHoldsTheJobAndNoBenchmark() throws IOException {
        Map<String, String> job = classes("iopipe.job.jar");
        assertTrue(job.containsKey("io/iopipe/jobs/LiveJob.class"));
        assertEquals(List.of(), job.keySet().stream().filter(name -> name.startsWith(BENCH)).toList());
    }

    @Test
    void theBenchJarHoldsTheBenchmarksAloneAndReachesJacksonWhereTheJobJarRelocatedIt() throws IOException {
        Map<String, String> bench = classes("iopipe.bench.jar");
        for (String main : List.of("StreamBenchmark", "FleetReplay", "TemplateFleet")) {
            assertTrue(bench.containsKey(BENCH + main + ".class"), main);
        }
        assertEquals(List.of(), bench.keySet().stream().filter(name -> !name.startsWith(BENCH)).toList());
        assertEquals(List.of(), bench.entrySet().stream().filter(c -> c.getValue().contains(JACKSON)).map(Map.Entry::getKey).toList());
        assertTrue(bench.values().stream().anyMatch(bytes -> bytes.contains(RELOCATED_JACKSON)));
    }
}
