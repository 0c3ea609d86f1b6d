package io.iopipe.jobs.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** The repository's schema/ folder: record schemas and their shared example vectors. */
public final class SchemaFiles {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    public static final Path DIR = Path.of(System.getProperty("iopipe.schema.dir", "../schema"));

    private SchemaFiles() {}

    public static List<JsonNode> validExamples(String record) {
        return ndjson(DIR.resolve("examples/" + record + ".valid.ndjson"));
    }

    /**
     * Each invalid example as {"why": ..., "field": ..., "record": ...}: the field at
     * fault, and "schema_can_express": false where JSON Schema cannot refuse it.
     */
    public static List<JsonNode> invalidExamples(String record) {
        return ndjson(DIR.resolve("examples/" + record + ".invalid.ndjson"));
    }

    /** The name of every record with a schema, e.g. io.hist.v1. */
    public static List<String> records() {
        try (var files = Files.list(DIR.resolve("records"))) {
            return files.map(f -> f.getFileName().toString())
                    .filter(name -> name.endsWith(".schema.json"))
                    .map(name -> name.substring(0, name.length() - ".schema.json".length()))
                    .sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The record's JSON Schema as a tree. */
    public static JsonNode schema(String record) {
        return tree("records/" + record + ".schema.json");
    }

    /** pipeline.json, how the job keeps time, as the repository holds it. */
    public static JsonNode pipeline() {
        return tree("pipeline.json");
    }

    private static JsonNode tree(String file) {
        try {
            return MAPPER.readTree(DIR.resolve(file).toFile());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static Set<ValidationMessage> violations(String record, String json) {
        try {
            JsonSchema schema = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012)
                    .getSchema(Files.readString(DIR.resolve("records/" + record + ".schema.json")));
            return schema.validate(MAPPER.readTree(json));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static List<JsonNode> ndjson(Path path) {
        try {
            List<JsonNode> out = new ArrayList<>();
            for (String line : Files.readAllLines(path)) {
                if (!line.isBlank()) {
                    out.add(MAPPER.readTree(line));
                }
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
