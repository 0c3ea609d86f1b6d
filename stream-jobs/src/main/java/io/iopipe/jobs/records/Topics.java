package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/** Topic names from schema/topics.json, packed into the jar: one source of truth. */
public final class Topics {
    private static final JsonNode TOPICS_JSON = load();
    private static final Map<String, String> TOPIC_BY_RECORD = byRecord("topics");
    private static final Map<String, String> ACCEPTED_TOPIC_BY_RECORD = byRecord("accepted");

    private Topics() {}

    /** Every record a topic carries: what the jobs may be given. */
    public static Set<String> records() {
        return Collections.unmodifiableSet(TOPIC_BY_RECORD.keySet());
    }

    public static String forRecord(String recordSchema) {
        return named(TOPIC_BY_RECORD, recordSchema, "topic");
    }

    /** Where the agent records of this schema that the job accepted go, as they were sent. */
    public static String acceptedOf(String recordSchema) {
        return named(ACCEPTED_TOPIC_BY_RECORD, recordSchema, "accepted topic");
    }

    /** The topic an output record goes to. */
    public static String of(OutputRecord r) {
        return r.acceptedInput ? acceptedOf(r.schema) : forRecord(r.schema);
    }

    private static String named(Map<String, String> topics, String recordSchema, String what) {
        String topic = topics.get(recordSchema);
        if (topic == null) {
            throw new IllegalArgumentException("schema/topics.json has no " + what + " for " + recordSchema);
        }
        return topic;
    }

    /** The group id `consumer` reads as, the prefix its ACLs allow (schema/topics.json). */
    public static String consumerGroup(String consumer) {
        JsonNode group = TOPICS_JSON.get("consumer_groups").get(consumer);
        if (group == null) {
            throw new IllegalArgumentException("schema/topics.json has no consumer group for " + consumer);
        }
        return group.asText();
    }

    /** The sink producer's largest request, in bytes (schema/topics.json's record_size). */
    public static int maxRequestBytes() {
        return recordSize("max_request_bytes");
    }

    /** What one record may take of a request, in bytes: the rest is for framing and headers. */
    public static int maxRecordBytes() {
        return recordSize("max_record_bytes");
    }

    private static int recordSize(String field) {
        JsonNode bytes = TOPICS_JSON.path("record_size").path(field);
        if (!bytes.canConvertToInt()) {
            throw new IllegalStateException("schema/topics.json states no record_size." + field);
        }
        return bytes.intValue();
    }

    private static Map<String, String> byRecord(String list) {
        Map<String, String> byRecord = new LinkedHashMap<>();
        for (JsonNode topic : TOPICS_JSON.get(list)) {
            byRecord.put(topic.get("record").asText(), topic.get("name").asText());
        }
        return byRecord;
    }

    private static JsonNode load() {
        try (InputStream in = Topics.class.getResourceAsStream("/schema/topics.json")) {
            if (in == null) {
                throw new IllegalStateException("schema/topics.json is missing from the classpath: rebuild the jar");
            }
            return Json.MAPPER.readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
