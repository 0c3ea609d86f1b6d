package io.iopipe.jobs.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

/**
 * Where a run's CPU goes, from the JDK's own sampling profiler, Flight Recorder: every
 * 10 ms it takes the stacks of up to five threads running Java code (execution samples),
 * and of one thread in a native call, in turn (native samples: a task's calls into
 * RocksDB, but also a thread that waits in one, such as a network thread in epoll). So the
 * tasks' shares are of execution samples, their native samples are counted apart, and only
 * Flink task threads (a chain of operators each, one thread a subtask) are reported. Within
 * the busiest task: the methods its samples were in (self) and the job's own methods they
 * passed through (total), and so for the next busiest.
 */
final class CpuProfile {
    private static final String EXECUTION = "jdk.ExecutionSample";
    private static final String NATIVE = "jdk.NativeMethodSample";
    /** A Flink task thread: its chain of operators, then which subtask of how many, and its attempt. */
    private static final Pattern TASK_THREAD = Pattern.compile("(.+) \\(\\d+/\\d+\\)(#\\d+)?");
    /** The job's own classes; the libraries relocated into its jar are not. */
    private static final String OWN = "io.iopipe.";
    private static final String RELOCATED = "io.iopipe.shaded.";

    /** A task's samples in Java code and in native calls, and per method the samples it was on top of and anywhere in. */
    private static final class Task {
        long samples;
        long nativeSamples;
        final Map<String, Long> self = new HashMap<>();
        final Map<String, Long> total = new HashMap<>();
        /** Per native call: the method on top, and the job's own method that made it. */
        final Map<String, Long> nativeCalls = new HashMap<>();
    }

    private final Map<String, Task> tasks = new HashMap<>();
    private long taskSamples;

    private CpuProfile() {}

    /**
     * Runs `run` under a recording written to `jfr`, and reads the samples taken between
     * the epoch milliseconds `measured` gives after it (from, to).
     */
    static <T> CpuProfile recording(Path jfr, Callable<T> run, Supplier<long[]> measured) throws Exception {
        try (Recording recording = samplingRecording()) {
            run.call();
            recording.stop();
            recording.dump(jfr);
        }
        long[] fromTo = measured.get();
        return read(jfr, fromTo[0], fromTo[1]);
    }

    /**
     * A recording of the two sampling events only, not the "profile" configuration's others
     * (allocation samples, locks, I/O), whose costs would be measured with the job's; started.
     * The benchmark also warms up under one it never reads: the JVM's first recording sets the
     * JIT to work again (measured: the job's first run under one went at 4,402 records/s, runs
     * around it without one at 6,773-8,491, a later recorded one at 8,102).
     */
    static Recording samplingRecording() {
        Recording recording = new Recording();
        recording.enable(EXECUTION).withPeriod(Duration.ofMillis(10));
        recording.enable(NATIVE).withPeriod(Duration.ofMillis(10));
        recording.start();
        return recording;
    }

    static CpuProfile read(Path jfr, long fromEpochMs, long toEpochMs) throws IOException {
        CpuProfile profile = new CpuProfile();
        for (RecordedEvent e : RecordingFile.readAllEvents(jfr)) {
            String type = e.getEventType().getName();
            if (!EXECUTION.equals(type) && !NATIVE.equals(type)) {
                continue;
            }
            long atMs = e.getStartTime().toEpochMilli();
            RecordedThread thread = e.getThread("sampledThread");
            String task = thread == null ? null : taskOf(thread.getJavaName());
            if (task != null && e.getStackTrace() != null && atMs >= fromEpochMs && atMs <= toEpochMs) {
                profile.add(task, NATIVE.equals(type), e.getStackTrace().getFrames());
            }
        }
        return profile;
    }

    /** The chain of operators a Flink task thread runs (its name without the subtask); null for any other thread. */
    static String taskOf(String thread) {
        Matcher m = TASK_THREAD.matcher(thread == null ? "" : thread);
        return m.matches() ? m.group(1) : null;
    }

    private void add(String taskName, boolean inNative, List<RecordedFrame> frames) {
        Task task = tasks.computeIfAbsent(taskName, t -> new Task());
        if (inNative) {
            task.nativeSamples++;
            if (!frames.isEmpty()) {
                task.nativeCalls.merge(nativeCall(frames), 1L, Long::sum);
            }
            return;
        }
        task.samples++;
        taskSamples++;
        if (frames.isEmpty()) {
            return;
        }
        task.self.merge(method(frames.get(0)), 1L, Long::sum);
        Set<String> passed = new HashSet<>();
        for (RecordedFrame f : frames) {
            String m = method(f);
            if (m.startsWith(OWN) && !m.startsWith(RELOCATED) && passed.add(m)) {
                task.total.merge(m, 1L, Long::sum);
            }
        }
    }

    /** The native method a sample was in, and the job's own method nearest below it: which state a RocksDB call read. */
    private static String nativeCall(List<RecordedFrame> frames) {
        String top = method(frames.get(0));
        for (RecordedFrame f : frames) {
            String m = method(f);
            if (m.startsWith(OWN) && !m.startsWith(RELOCATED)) {
                return top + " from " + m;
            }
        }
        return top;
    }

    /** Samples of Flink task threads in Java code. */
    long taskSamples() {
        return taskSamples;
    }

    private static String method(RecordedFrame f) {
        return f.getMethod().getType().getName() + "." + f.getMethod().getName();
    }

    /** Markdown: each task's share, then the two busiest ones' `top` methods by self and by total samples. */
    String report(int top) {
        if (taskSamples == 0) {
            return "No sample of a Flink task thread in Java code: nothing to say where the CPU went.\n";
        }
        List<Map.Entry<String, Task>> byShare = tasks.entrySet().stream()
                .sorted((a, b) -> Long.compare(b.getValue().samples, a.getValue().samples)).toList();
        StringBuilder out = new StringBuilder(String.format("%,d samples of Flink task threads in Java code.%n%n"
                + "| task (its chain of operators) | share of the samples in Java code | samples in native calls |%n"
                + "|---|---|---|%n", taskSamples));
        for (Map.Entry<String, Task> t : byShare) {
            out.append(String.format("| %s | %.1f%% | %,d |%n", t.getKey().replace("|", "/"),
                    100.0 * t.getValue().samples / taskSamples, t.getValue().nativeSamples));
        }
        String[] which = {"The busiest task", "The next busiest task"};
        for (int i = 0; i < which.length && i < byShare.size(); i++) {
            out.append(methods(which[i], byShare.get(i), top));
        }
        return out.toString();
    }

    /** Where a task's samples were: the methods they were on top of, then the job's own they passed through. */
    private static String methods(String which, Map.Entry<String, Task> task, int top) {
        return String.format("%n%s, %s:%n%n", which, task.getKey())
                + table("method it was in (self)", JAVA_SHARE, task.getValue().self, task.getValue().samples, top)
                + String.format("%n")
                + table("iopipe method it passed through (total)", JAVA_SHARE, task.getValue().total, task.getValue().samples,
                        top)
                + nativeCalls(task.getValue(), top);
    }

    /** The task's native calls, by the native method and the job's method that called it, as shares of its native samples. */
    private static String nativeCalls(Task task, int top) {
        if (task.nativeSamples == 0) {
            return "";
        }
        return String.format("%n") + table("native call (from the job's method nearest below it)",
                String.format("share of the task's %,d native samples", task.nativeSamples), task.nativeCalls,
                task.nativeSamples, top);
    }

    private static final String JAVA_SHARE = "share of the task's samples in Java code";

    /** Markdown: the `top` entries of `counts`, most first, each as a share of `of`. */
    private static String table(String heading, String share, Map<String, Long> counts, long of, int top) {
        StringBuilder out = new StringBuilder(String.format("| %s | %s |%n|---|---|%n", heading, share));
        counts.entrySet().stream().sorted((a, b) -> Long.compare(b.getValue(), a.getValue())).limit(top)
                .forEach(m -> out.append(String.format("| `%s` | %.1f%% |%n", m.getKey(), 100.0 * m.getValue() / of)));
        return out.toString();
    }
}
