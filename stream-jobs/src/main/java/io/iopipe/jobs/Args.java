package io.iopipe.jobs;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/** `--name value` command-line options; a missing required one names itself. */
public final class Args {
    private final Map<String, String> values = new HashMap<>();

    public Args(String[] argv) {
        for (int i = 0; i < argv.length; i++) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("expected --name value pairs, got: " + String.join(" ", argv));
            }
            values.put(argv[i].substring(2), argv[++i]);
        }
    }

    /** Whether the command line asks for the usage (--help or -h anywhere in it). */
    public static boolean asksForHelp(String[] argv) {
        return Arrays.asList(argv).contains("--help") || Arrays.asList(argv).contains("-h");
    }

    public String required(String name) {
        String v = values.get(name);
        if (v == null) {
            throw new IllegalArgumentException("missing --" + name);
        }
        return v;
    }

    public String get(String name, String fallback) {
        return values.getOrDefault(name, fallback);
    }

    public boolean has(String name) {
        return values.containsKey(name);
    }
}
