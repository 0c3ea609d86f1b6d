package io.iopipe.jobs.records;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class JsonTest {
    @Test
    void aFieldGivenTwiceIsNotARecord() throws Exception {
        DecodeException refused = assertThrows(DecodeException.class,
                () -> Json.parseObject("{\"host\":\"victim\",\"disk\":\"sdb\",\"host\":\"speaker\"}"));
        assertTrue(refused.getMessage().contains("host"), refused.getMessage());
        assertEquals("speaker", Json.parseObject("{\"disk\":\"sdb\",\"host\":\"speaker\"}").get("host").asText());
    }
}
