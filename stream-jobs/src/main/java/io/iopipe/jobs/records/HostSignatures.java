package io.iopipe.jobs.records;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Who may speak for a host (schema/signing.json, packed into the jar): each host's key is
 * derived from the fleet's master secret, and its producer signs every message value with
 * it. Holding the master secret, the job derives the key of the host a record names and
 * checks the record's signature against it, so a producer holding one host's key cannot
 * pass records off as another host's.
 *
 * <p>Not thread-safe: one per operator instance. The secret never appears in a message.
 */
public final class HostSignatures {
    private static final JsonNode CONTRACT = load();
    /** The option that names the master secret's file, in every program that reads it. */
    public static final String OPTION = "signing-secret";
    /** The Kafka header that carries a message's signature. */
    public static final String HEADER = CONTRACT.get("header").asText();
    static final String VERSION = CONTRACT.get("version").asText();
    private static final String HOST_KEY_LABEL = CONTRACT.get("host_key_label").asText();
    private static final String ALGORITHM = "HmacSHA256";
    private static final Pattern KEY_FILE_TEXT = Pattern.compile("[0-9a-f]{64}\\n?");
    private static final int SIGNATURE_HEX_DIGITS = 64;
    /** Host keys kept derived; a forger naming endless hosts only turns the oldest out. */
    private static final int CACHED_HOST_KEYS = 65_536;

    private final Mac master;
    private final Mac hostMac;
    private final Map<String, SecretKeySpec> hostKeys = new LinkedHashMap<>(1024, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, SecretKeySpec> eldest) {
            return size() > CACHED_HOST_KEYS;
        }
    };

    private HostSignatures(byte[] masterSecret) {
        master = mac(masterSecret);
        hostMac = mac(new byte[32]);
    }

    /** Reads the master secret from `file` (64 lowercase hex digits); errors name the file, never its content. */
    public static HostSignatures fromFile(Path file) {
        return new HostSignatures(readKey(file));
    }

    /** The master secret given directly (tests, benchmarks that make their own). */
    public static HostSignatures ofSecret(byte[] masterSecret) {
        return new HostSignatures(masterSecret.clone());
    }

    /** HMAC-SHA256(master secret, label + host): the key only `host`'s producer holds. */
    public byte[] hostKey(String host) {
        return keyOf(host).getEncoded();
    }

    /** The header value `host`'s producer sends with `value`. */
    public String sign(String host, byte[] value) {
        return VERSION + "=" + HexFormat.of().formatHex(signature(host, value));
    }

    /**
     * Why `header` is not `host`'s signature of `value`, or null when it is. The reason
     * says what is missing, never the expected signature.
     */
    public String refusal(String host, byte[] value, String header) {
        if (host == null || host.isEmpty()) {
            return "the record names no host, so no key can vouch for it";
        }
        if (header == null) {
            return "no " + HEADER + " header: host " + host + "'s producer must sign its records with the host's key"
                    + " (iopipe-agent --signing-key)";
        }
        String prefix = VERSION + "=";
        if (!header.startsWith(prefix) || !lowercaseHex(header, prefix.length(), SIGNATURE_HEX_DIGITS)) {
            return HEADER + " is not '" + prefix + "' and 64 lowercase hex digits";
        }
        byte[] given = HexFormat.of().parseHex(header.substring(prefix.length()));
        if (!MessageDigest.isEqual(given, signature(host, value))) {
            return "the signature is not host " + host + "'s: a producer may speak only for its own host";
        }
        return null;
    }

    /**
     * Whether `text` from `from` on is exactly `digits` lowercase hex digits. Every record's
     * header is checked: a regular expression here was a tenth of the job's decoding.
     */
    static boolean lowercaseHex(String text, int from, int digits) {
        if (text.length() - from != digits) {
            return false;
        }
        for (int i = from; i < text.length(); i++) {
            char c = text.charAt(i);
            if ((c < '0' || c > '9') && (c < 'a' || c > 'f')) {
                return false;
            }
        }
        return true;
    }

    private byte[] signature(String host, byte[] value) {
        try {
            hostMac.init(keyOf(host));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HMAC-SHA256 refused a 32-byte key", e);
        }
        return hostMac.doFinal(value);
    }

    private SecretKeySpec keyOf(String host) {
        return hostKeys.computeIfAbsent(host, h -> new SecretKeySpec(
                master.doFinal((HOST_KEY_LABEL + h).getBytes(StandardCharsets.UTF_8)), ALGORITHM));
    }

    private static Mac mac(byte[] key) {
        try {
            Mac mac = Mac.getInstance(ALGORITHM);
            mac.init(new SecretKeySpec(key, ALGORITHM));
            return mac;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this JVM has no HMAC-SHA256", e);
        }
    }

    private static byte[] readKey(Path file) {
        String named = "--" + OPTION + " " + file;
        String text;
        try {
            text = Files.readString(file, StandardCharsets.US_ASCII);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(named + ": no such file. Write the fleet's master secret there"
                    + " (64 lowercase hex digits: openssl rand -hex 32)");
        } catch (AccessDeniedException e) {
            throw new IllegalArgumentException(named + ": not readable by this user; make it readable by"
                    + " the user the job runs as, and by no one else");
        } catch (IOException | UncheckedIOException e) {
            throw new IllegalArgumentException(named + ": cannot be read (" + e.getClass().getSimpleName()
                    + "); it must hold 64 lowercase hex digits");
        }
        if (!KEY_FILE_TEXT.matcher(text).matches()) {
            throw new IllegalArgumentException(named + ": not 64 lowercase hex digits (32 bytes) with at most a"
                    + " newline after them: openssl rand -hex 32 writes one");
        }
        return HexFormat.of().parseHex(text.strip());
    }

    private static JsonNode load() {
        try (InputStream in = HostSignatures.class.getResourceAsStream("/schema/signing.json")) {
            if (in == null) {
                throw new IllegalStateException("schema/signing.json is missing from the classpath: rebuild the jar");
            }
            return Json.MAPPER.readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
