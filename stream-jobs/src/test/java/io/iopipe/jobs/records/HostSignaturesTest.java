package io.iopipe.jobs.records;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.iopipe.jobs.testing.SchemaFiles;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** schema/signing.json's contract: its examples, and what a record must carry to be its host's. */
class HostSignaturesTest {
    private static final byte[] SECRET = HexFormat.of().parseHex("5f".repeat(32));

    @Test
    void derivesAndSignsAsTheContractsExamplesSay() throws Exception {
        JsonNode contract = Json.MAPPER.readTree(SchemaFiles.DIR.resolve("signing.json").toFile());
        assertTrue(contract.get("examples").size() > 0);
        for (JsonNode example : contract.get("examples")) {
            HostSignatures signatures = HostSignatures.ofSecret(HexFormat.of().parseHex(example.get("master_secret_hex").asText()));
            String host = example.get("host").asText();
            byte[] value = example.get("value").asText().getBytes(StandardCharsets.UTF_8);
            assertEquals(example.get("host_key_hex").asText(), HexFormat.of().formatHex(signatures.hostKey(host)));
            assertEquals(example.get("header_value").asText(), signatures.sign(host, value));
            assertNull(signatures.refusal(host, value, example.get("header_value").asText()));
        }
        assertEquals(contract.get("header").asText(), HostSignatures.HEADER);
    }

    @Test
    void aRecordIsTakenOnlyWithTheSignatureOfTheHostItNames() {
        HostSignatures signatures = HostSignatures.ofSecret(SECRET);
        byte[] value = "{\"host\":\"db-2\"}".getBytes(StandardCharsets.UTF_8);
        assertNull(signatures.refusal("db-2", value, signatures.sign("db-2", value)));
        assertTrue(signatures.refusal("db-2", value, signatures.sign("db-1", value)).contains("not host db-2's"),
                "signed with another host's key");
        assertNotNull(signatures.refusal("db-2", "{\"host\":\"db-3\"}".getBytes(StandardCharsets.UTF_8),
                signatures.sign("db-2", value)), "the value changed after it was signed");
        assertTrue(signatures.refusal("db-2", value, null).contains("no iopipe-sig header"));
        String hex = signatures.sign("db-2", value).substring(3);
        assertNotNull(signatures.refusal("db-2", value, "v1=" + hex.toUpperCase()), "uppercase hex");
        assertNotNull(signatures.refusal("db-2", value, "v1=" + hex + "\n"), "a newline after the signature");
        assertNotNull(signatures.refusal("db-2", value, "v1=" + hex.substring(2)), "a short signature");
        assertNotNull(signatures.refusal("db-2", value, "v1=" + hex + "00"), "a long signature");
        assertNotNull(signatures.refusal("db-2", value, "v1=" + hex.substring(1) + "g"), "not a hex digit");
        assertNotNull(signatures.refusal("db-2", value, "v1=" + hex.substring(1) + "/"), "just below the digits");
        assertNotNull(signatures.refusal("db-2", value, "v1=" + hex.substring(1) + "`"), "just below the letters");
        assertNotNull(signatures.refusal("db-2", value, "v2=" + signatures.sign("db-2", value).substring(3)));
        assertNotNull(signatures.refusal(null, value, signatures.sign("", value)), "a record without a host");
        assertFalse(signatures.refusal("db-2", value, signatures.sign("db-1", value))
                .contains(signatures.sign("db-2", value).substring(3)), "the reason never tells the right signature");
    }

    @Test
    void anotherMasterSecretSignsForNoHost() {
        byte[] value = "{}".getBytes(StandardCharsets.UTF_8);
        HostSignatures other = HostSignatures.ofSecret(HexFormat.of().parseHex("a0".repeat(32)));
        assertNotNull(HostSignatures.ofSecret(SECRET).refusal("db-2", value, other.sign("db-2", value)));
    }

    @Test
    void aSecretFileIsReadOrRefusedByNameNeverQuoted(@TempDir Path dir) throws Exception {
        Path good = dir.resolve("secret");
        Files.writeString(good, "5f".repeat(32) + "\n");
        byte[] value = "{}".getBytes(StandardCharsets.UTF_8);
        assertEquals(HostSignatures.ofSecret(SECRET).sign("h", value), HostSignatures.fromFile(good).sign("h", value));
        String secretLooking = "ab".repeat(31) + "zz";
        for (String content : new String[] {"", "5f".repeat(31), secretLooking, "5F".repeat(32), " " + "5f".repeat(32)}) {
            Path bad = dir.resolve("bad");
            Files.writeString(bad, content);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> HostSignatures.fromFile(bad));
            assertTrue(e.getMessage().startsWith("--signing-secret " + bad), e.getMessage());
            assertFalse(!content.isBlank() && e.getMessage().contains(content.strip()), "quoted the file: " + e.getMessage());
        }
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
                () -> HostSignatures.fromFile(dir.resolve("none")));
        assertTrue(missing.getMessage().contains("openssl rand -hex 32"), missing.getMessage());
    }
}
