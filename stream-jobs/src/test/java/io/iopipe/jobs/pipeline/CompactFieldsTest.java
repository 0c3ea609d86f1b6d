package io.iopipe.jobs.pipeline;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

/**
 * Strings as the job's serializers write them: a length prefix and the string's UTF-8, the
 * same bytes whichever way they are written (state written by earlier builds reads alike),
 * and read back as they went, however many values come and in whatever order.
 */
class CompactFieldsTest {
    private static byte[] written(String s) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(16);
        CompactFields.writeString(out, s, null);
        return out.getCopyOfBuffer();
    }

    /** The format: the length + 2 as a variable-length count, then the UTF-8. */
    private static byte[] asSpecified(String s) {
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        long prefix = utf8.length + 2L;
        while (prefix >= 0x80) {
            bytes.write((int) (prefix & 0x7F | 0x80));
            prefix >>>= 7;
        }
        bytes.write((int) prefix);
        bytes.writeBytes(utf8);
        return bytes.toByteArray();
    }

    @Test
    void aStringIsWrittenAsItsLengthAndItsUtf8() throws IOException {
        for (String s : List.of("", "R", "kworker/u16:2", "caf\u00e9", "\u00e9\u2192\u00fc", "\ud83d\udcbe disk", "\u007f",
                "\u0080", "x".repeat(63), "y".repeat(64), "z".repeat(65), "w".repeat(300))) {
            assertArrayEquals(asSpecified(s), written(s), s);
        }
    }

    @Test
    void stringsReadBackAsTheyWentWhateverTheirMixAndOrder() throws IOException {
        Random random = new Random(11);
        List<String> values = new ArrayList<>();
        for (int i = 0; i < 5_000; i++) {  // far more values than strings remembered: collisions, evictions
            values.add(random.nextInt(4) == 0 ? "caf\u00e9-" + i : "p" + i);
        }
        values.add("");
        values.add("v".repeat(64));
        values.add("v".repeat(65));
        DataOutputSerializer out = new DataOutputSerializer(1 << 16);
        List<String> sent = new ArrayList<>();
        for (int i = 0; i < 50_000; i++) {
            String s = random.nextInt(3) == 0 ? values.get(random.nextInt(values.size())) : values.get(random.nextInt(8));
            sent.add(s);
            CompactFields.writeString(out, s, null);
        }
        DataInputDeserializer in = new DataInputDeserializer(out.getSharedBuffer(), 0, out.length());
        for (String s : sent) {
            assertEquals(s, CompactFields.readString(in, null));
        }
        assertEquals(0, in.available());
    }
}
