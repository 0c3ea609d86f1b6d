package io.iopipe.jobs.records;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Random;
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
    void aMessagesBytesAreReadAsItsTextWouldBe() throws Exception {
        String own = "{\"host\":\"speaker\",\"disk\":\"sdb\"}";
        for (String text : new String[] {own, own + " \n", " \t", "", own + own, own + " and more", "[1]", "{\"host\":\"\u00e9\"}",
                "{\"host\":\"a\",\"host\":\"b\"}"}) {
            String asText = outcome(() -> Json.parseObject(text));
            assertEquals(asText, outcome(() -> Json.parseObject(text.getBytes(StandardCharsets.UTF_8))), text);
        }
    }

    @Test
    void aMessageThatIsNotUtf8IsNotJson() {
        byte[] latin1 = "{\"host\":\"caf\u00e9\"}".getBytes(StandardCharsets.ISO_8859_1);
        DecodeException refused = assertThrows(DecodeException.class, () -> Json.parseObject(latin1));
        assertTrue(refused.getMessage().startsWith("not JSON"), refused.getMessage());
    }

    interface Parse {
        Object run() throws DecodeException;
    }

    private static String outcome(Parse parse) {
        try {
            return "read " + parse.run();
        } catch (DecodeException e) {
            return "refused: " + e.getMessage();
        }
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

    @Test
    void aNumberBeyondWhatADoubleHoldsIsNoFigure() throws Exception {
        for (String huge : new String[] {"1e400", "-1e400", "1" + "0".repeat(400) + ".5"}) {
            DecodeException refused = assertThrows(DecodeException.class,
                    () -> Json.number(Json.parseObject("{\"rate\":" + huge + "}"), "rate"), huge);
            assertTrue(refused.getMessage().startsWith("rate must be a finite number"), refused.getMessage());
        }
        assertEquals(1.7976931348623157e308, Json.number(Json.parseObject("{\"rate\":1.7976931348623157e308}"), "rate"));
    }

    @Test
    void aDecimalReadsAsTheDoubleJavaReadsItAs() throws Exception {
        Random rnd = new Random(7);
        for (int i = 0; i < 20_000; i++) {
            String text = switch (i % 3) {
                case 0 -> Double.toString(Double.longBitsToDouble(rnd.nextLong() & 0x7FEF_FFFF_FFFF_FFFFL));
                case 1 -> rnd.nextInt(1_000_000) + "." + String.format("%0" + (1 + rnd.nextInt(25)) + "d", Math.abs(rnd.nextLong()) % 1_000_000_000_000_000L);
                default -> (rnd.nextInt(9) + 1) + "." + rnd.nextInt(1_000_000) + "e" + (rnd.nextInt(620) - 320);
            };
            double read = Json.parseObject("{\"x\":" + text + "}").get("x").doubleValue();
            assertEquals(Double.doubleToRawLongBits(Double.parseDouble(text)), Double.doubleToRawLongBits(read), text);
        }
    }

    @Test
    void aNumberOutOfItsSchemasRangeIsRefusedNamingTheRange() throws Exception {
        RecordSchema.Range weight = RecordSchema.of(IoEvent.SCHEMA).range("sample_weight");
        assertEquals(4294967295.0, Json.number(Json.parseObject("{\"sample_weight\":4294967295}"), "sample_weight", weight));
        DecodeException refused = assertThrows(DecodeException.class,
                () -> Json.number(Json.parseObject("{\"sample_weight\":4294967296}"), "sample_weight", weight));
        assertEquals("sample_weight must be a finite number at least 1 and at most 4294967295, got 4294967296",
                refused.getMessage());
    }
}
