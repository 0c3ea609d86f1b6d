import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import org.apache.kafka.common.utils.Exit;

/**
 * Runs Kafka's command-line tools one after the other in this one JVM. Node 1 runs about
 * twenty of them at its first start (its users, ACLs and topics), and each tool in a JVM
 * of its own spends seconds starting on a busy machine, while the broker is starting too.
 *
 * <p>Usage: {@code java -cp "/opt/kafka/libs/*:/opt/kafka/tools" ToolBatch FILE}. Each line
 * of FILE is a tool's main class and its arguments, separated by spaces (none holds one).
 * A tool that fails is run again every 2 s until it succeeds: the brokers may still be
 * starting, or joining each other. A tool's own output is left out, as the script left it
 * out of the tools it ran one by one: what they made is checked afterwards (start-kafka.sh
 * lists the topics).
 */
public final class ToolBatch {
    private static final long RETRY_MS = 2_000;
    /** The status the running tool first exited with: some catch their own exit (TopicCommand). */
    private static Integer exitStatus;

    /** A tool ending the way it would end its JVM. */
    private static final class ToolExit extends RuntimeException {
        final int status;

        ToolExit(int status) {
            super(null, null, false, false);
            this.status = status;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: ToolBatch FILE (a tool's class and arguments per line)");
            System.exit(2);
        }
        Exit.setExitProcedure(ToolBatch::exit);
        Exit.setHaltProcedure(ToolBatch::exit);
        for (String line : commands(Path.of(args[0]))) {
            String[] words = line.trim().split("\\s+");
            boolean said = false;
            while (!succeeds(words)) {
                if (!said) {
                    System.err.println("iopipe: " + words[0] + " failed; trying again every 2 s");
                    said = true;
                }
                Thread.sleep(RETRY_MS);
            }
        }
        System.exit(0); // a tool that failed may have left a client's threads running
    }

    private static List<String> commands(Path file) throws IOException {
        return Files.readAllLines(file).stream().filter(line -> !line.isBlank()).toList();
    }

    private static void exit(int status, String message) {
        if (exitStatus == null) {
            exitStatus = status;
        }
        throw new ToolExit(status);
    }

    /** A tool succeeds when it returns or exits with status 0, whatever it does after. */
    private static boolean succeeds(String[] words) throws ReflectiveOperationException {
        var main = Class.forName(words[0]).getMethod("main", String[].class);
        var out = System.out;
        var err = System.err;
        var discard = new PrintStream(OutputStream.nullOutputStream());
        System.setOut(discard);
        System.setErr(discard);
        exitStatus = null;
        boolean returned = false;
        try {
            main.invoke(null, (Object) Arrays.copyOfRange(words, 1, words.length));
            returned = true;
        } catch (InvocationTargetException e) {
            // its exit, or what it failed with
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
        return exitStatus == null ? returned : exitStatus == 0;
    }
}
