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

    @Test
    void aSecondValueAfterTheRecordIsNotARecord() throws Exception {
        String own = "{\"host\":\"speaker\",\"disk\":\"sdb\"}";
        for (String smuggled : new String[] {own + "{\"host\":\"victim\",\"disk\":\"sdb\"}", own + "\n{\"host\":\"victim\"}",
                own + " 1", own + "[]"}) {
            DecodeException refused = assertThrows(DecodeException.class, () -> Json.parseObject(smuggled), smuggled);
            assertTrue(refused.getMessage().startsWith("more than one JSON value"), refused.getMessage());
        }
        assertTrue(assertThrows(DecodeException.class, () -> Json.parseObject(own + " and more")).getMessage().startsWith("not JSON"));
        assertEquals("speaker", Json.parseObject(own + " \n").get("host").asText(), "white space after it is no value");
    }
}
