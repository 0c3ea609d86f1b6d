package io.iopipe.jobs.io;

import io.iopipe.jobs.records.RawRecord;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.records.DeadLetters;
import io.iopipe.jobs.records.Json;
import io.iopipe.jobs.records.OutputRecord;
import io.iopipe.jobs.records.Topics;
import io.iopipe.jobs.testing.SchemaFiles;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;

class KafkaIoTest {
    @Test
    void aRecordTooLargeToSendGoesAsADeadLetterSayingSo() throws Exception {
        String host = "h".repeat(3 * KafkaIo.MAX_REQUEST_BYTES);
        OutputRecord huge = OutputRecord.acceptedInput("io.hist.v1", host + "/sdb", new RawRecord("test", "{\"host\":\"" + host + "\"}"));

        ProducerRecord<byte[], byte[]> sent = new KafkaIo.RouteBySchema().serialize(huge, null, null);

        assertEquals(Topics.forRecord(DeadLetters.SCHEMA), sent.topic());
        assertTrue(sent.key().length + sent.value().length <= 8 * 1024, "a dead letter is small whatever it refused");
        String letter = new String(sent.value(), StandardCharsets.UTF_8);
        assertEquals(Set.of(), SchemaFiles.violations(DeadLetters.SCHEMA, letter));
        JsonNode read = Json.MAPPER.readTree(letter);
        int bytes = huge.key.getBytes(StandardCharsets.UTF_8).length + huge.text().getBytes(StandardCharsets.UTF_8).length;
        assertTrue(read.get("reason").asText().startsWith("too large to send: " + bytes + " bytes of io.hist.v1"),
                read.get("reason").asText());
    }

    @Test
    void anAcceptedRecordReadOffKafkaGoesOnByteForByteAsItCame() {
        // Spacing, escapes and a field order JSON does not care about: a text made of it and
        // encoded again could differ from what the signature was checked on.
        byte[] sent = "{ \"schema\":\"io.hist.v1\",  \"host\":\"web-\\u0031\", \"disk\":\"sdb\" }"
                .getBytes(StandardCharsets.UTF_8);
        RawRecord read = RawRecord.fromTopic("io.hist.v1", "io.hist.v1/0@7", sent, null);
        ProducerRecord<byte[], byte[]> passedOn = new KafkaIo.RouteBySchema()
                .serialize(OutputRecord.acceptedInput("io.hist.v1", "web-1/sdb", read), null, null);
        assertEquals(Topics.acceptedOf("io.hist.v1"), passedOn.topic());
        assertArrayEquals(sent, passedOn.value());
    }

    @Test
    void aRecordWithinTheRequestGoesToItsTopicAsItIs() {
        OutputRecord largest = OutputRecord.acceptedInput("io.hist.v1", "web-17/sdb", new RawRecord("test",
                "{\"x\":\"" + "x".repeat(KafkaIo.MAX_RECORD_BYTES - "web-17/sdb".length() - 8) + "\"}"));
        ProducerRecord<byte[], byte[]> sent = new KafkaIo.RouteBySchema().serialize(largest, null, null);
        assertEquals(Topics.of(largest), sent.topic());
        assertEquals(largest.text(), new String(sent.value(), StandardCharsets.UTF_8));
        assertEquals(KafkaIo.MAX_RECORD_BYTES, sent.key().length + sent.value().length);
    }
}
