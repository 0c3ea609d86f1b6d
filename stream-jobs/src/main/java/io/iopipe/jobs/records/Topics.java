package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;

/** Topic names from schema/topics.json, packed into the jar: one source of truth. */
public final class Topics {
    private static final Map<String, String> TOPIC_BY_RECORD = load();

    private Topics() {}

    public static String forRecord(String recordSchema) {
        String topic = TOPIC_BY_RECORD.get(recordSchema);
        if (topic == null) {
            throw new IllegalArgumentException("schema/topics.json has no topic for " + recordSchema);
        }
        return topic;
    }

    private static Map<String, String> load() {
        try (InputStream in = Topics.class.getResourceAsStream("/schema/topics.json")) {
            if (in == null) {
                throw new IllegalStateException("schema/topics.json is missing from the classpath: rebuild the jar");
            }
            Map<String, String> byRecord = new LinkedHashMap<>();
            for (JsonNode topic : Json.MAPPER.readTree(in).get("topics")) {
                byRecord.put(topic.get("record").asText(), topic.get("name").asText());
            }
            return byRecord;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
