package io.iopipe.jobs.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;

/**
 * Where the machine's CPU went while a run measured, thread by thread: every thread of
 * this JVM (the Flink tasks', but also the garbage collector's, the JIT compilers', the
 * Kafka clients', RocksDB's own background threads, none of which a Java profiler samples)
 * and, given its container's CPU accounting, the Kafka broker's. Read from the kernel's
 * accounting (/proc/self/task/<tid>/stat: user and system time; the container's cgroup),
 * every {@link #PERIOD_MS} while the run goes, so that the samples nearest the run's first
 * record and last output bound it.
 * A thread is named as the kernel has it: its Java name cut to 15 characters ("diskstats
 * delta", "Source: bench t", "C2 CompilerThre"), the digits of the thread pools' names
 * folded ("GC Thread##").
 */
final class ThreadCpu {
    static final long PERIOD_MS = 250;
    /** The kernel's clock tick (USER_HZ), in which /proc gives CPU time: 10 ms on Linux's ABI. */
    private static final long NS_PER_TICK = 10_000_000L;
    static final String BROKER = "the Kafka broker (its container)";

    /** CPU time so far, ns, by thread: "name\ttid" for this JVM's threads, {@link #BROKER} for the broker's container. */
    private record Sample(long epochMs, Map<String, Long> nsByThread) {}

    private final List<Sample> samples = new ArrayList<>();
    private final Path brokerCpu;

    private ThreadCpu(Path brokerCpu) {
        this.brokerCpu = brokerCpu;
    }

    /**
     * Runs `run` while sampling every thread's CPU time; `brokerCpu` is the broker
     * container's cgroup CPU account (cgroup v1 cpuacct.usage, ns; v2 cpu.stat), or null.
     */
    static <T> ThreadCpu sampling(Path brokerCpu, Callable<T> run) throws Exception {
        ThreadCpu cpu = new ThreadCpu(brokerCpu);
        Thread sampler = new Thread(cpu::sampleUntilInterrupted, "thread-cpu-sampler");
        sampler.setDaemon(true);
        sampler.start();
        try {
            run.call();
        } finally {
            sampler.interrupt();
            sampler.join();
        }
        return cpu;
    }

    private void sampleUntilInterrupted() {
        try {
            while (!Thread.currentThread().isInterrupted()) {
                Sample s = sample();
                synchronized (samples) {
                    samples.add(s);
                }
                Thread.sleep(PERIOD_MS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Sample last = sample();
        synchronized (samples) {
            samples.add(last);
        }
    }

    private Sample sample() {
        Map<String, Long> ns = new HashMap<>();
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            tasks.forEach(task -> {
                String stat = read(task.resolve("stat"));
                long ticks = cpuTicks(stat);
                if (ticks >= 0) {
                    ns.put(name(stat) + "\t" + task.getFileName(), ticks * NS_PER_TICK);
                }
            });
        } catch (IOException | java.io.UncheckedIOException e) {
            // The threads' listing failed: this sample holds what was read.
        }
        long broker = brokerCpu == null ? -1 : cgroupCpuNs(read(brokerCpu));
        if (broker >= 0) {
            ns.put(BROKER + "\t", broker);
        }
        return new Sample(System.currentTimeMillis(), ns);
    }

    /** A cgroup's CPU time so far, ns: cgroup v1's cpuacct.usage (ns), or v2's cpu.stat (its usage_usec line); -1 if neither. */
    static long cgroupCpuNs(String account) {
        String text = account.trim();
        if (text.matches("\\d+")) {
            return Long.parseLong(text);
        }
        for (String line : text.split("\n")) {
            if (line.startsWith("usage_usec ")) {
                return Long.parseLong(line.substring("usage_usec ".length()).trim()) * 1000L;
            }
        }
        return -1;
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            return "";  // a thread that ended between the listing and the read
        }
    }

    /** The name in a /proc stat line: from the first "(" to the last ")" (it may hold both). */
    static String name(String stat) {
        int open = stat.indexOf('(');
        int close = stat.lastIndexOf(')');
        return open < 0 || close < open ? "?" : stat.substring(open + 1, close);
    }

    /** User plus system clock ticks of a /proc stat line (its fields 14 and 15), or -1 if it is not one. */
    static long cpuTicks(String stat) {
        int close = stat.lastIndexOf(')');
        if (close < 0 || close + 2 > stat.length()) {
            return -1;
        }
        String[] fields = stat.substring(close + 2).trim().split(" ");
        // After the name: the state is field 3, so utime (14) and stime (15) are at 11 and 12.
        return fields.length < 13 ? -1 : Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
    }

    /** A thread pool's members under one name: digits folded ("GC Thread#3" is "GC Thread##"). */
    static String kind(String threadName) {
        return threadName.replaceAll("[0-9]", "#");
    }

    /**
     * Cores used between the samples nearest `fromEpochMs` and `toEpochMs` (inside them),
     * by kind of thread, and the seconds between those samples. A thread that started
     * meanwhile counts from nothing; one that ended counts up to the last sample it was in.
     */
    Window between(long fromEpochMs, long toEpochMs) {
        List<Sample> inside;
        synchronized (samples) {
            inside = samples.stream().filter(s -> s.epochMs() >= fromEpochMs && s.epochMs() <= toEpochMs).toList();
        }
        if (inside.size() < 2) {
            return new Window(0, Map.of());
        }
        Sample from = inside.get(0);
        Map<String, Long> lastSeen = new HashMap<>();
        for (Sample s : inside) {
            lastSeen.putAll(s.nsByThread());
        }
        double seconds = (inside.get(inside.size() - 1).epochMs() - from.epochMs()) / 1000.0;
        Map<String, Double> cores = new HashMap<>();
        for (Map.Entry<String, Long> t : lastSeen.entrySet()) {
            long before = from.nsByThread().getOrDefault(t.getKey(), 0L);
            String kind = kind(t.getKey().substring(0, t.getKey().indexOf('\t')));
            cores.merge(kind, (t.getValue() - before) / 1e9 / seconds, Double::sum);
        }
        return new Window(seconds, cores);
    }

    /** Cores by kind of thread over `seconds`. */
    record Window(double seconds, Map<String, Double> coresByKind) {
        double total() {
            return coresByKind.values().stream().mapToDouble(Double::doubleValue).sum();
        }

        /** Markdown: each kind's cores and µs per disk-second at `diskSecondsPerS`, the `top` most, then the rest together. */
        String report(double diskSecondsPerS, int top) {
            if (seconds == 0) {
                return "No two samples of the threads' CPU inside the measured run.\n";
            }
            StringBuilder out = new StringBuilder(String.format(
                    "| thread (as the kernel names it) | cores | µs per disk-second |%n|---|---|---|%n"));
            List<Map.Entry<String, Double>> byCores = coresByKind.entrySet().stream()
                    .sorted((a, b) -> Double.compare(b.getValue(), a.getValue())).toList();
            double rest = 0;
            for (int i = 0; i < byCores.size(); i++) {
                if (i < top) {
                    out.append(row("`" + byCores.get(i).getKey() + "`", byCores.get(i).getValue(), diskSecondsPerS));
                } else {
                    rest += byCores.get(i).getValue();
                }
            }
            if (byCores.size() > top) {
                out.append(row("the " + (byCores.size() - top) + " other kinds", rest, diskSecondsPerS));
            }
            out.append(row("**all**", total(), diskSecondsPerS));
            return out.toString();
        }

        private static String row(String name, double cores, double diskSecondsPerS) {
            return String.format("| %s | %.2f | %,.0f |%n", name.replace("|", "/"), cores, cores / diskSecondsPerS * 1e6);
        }
    }
}
