package io.iopipe.jobs.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the profile reads of the kernel's accounting: threads' names and CPU times, a container's CPU. */
class ThreadCpuTest {
    /** A thread's stat line as Linux writes it (a JVM thread named with a space and parentheses). */
    private static final String STAT = "1525 (detectors (1/2)) S 1524 1525 1525 0 -1 4194560 17000 287778 0 100 "
            + "613 214 898 179 20 0 1 0 5065 5320704 1000 18446744073709551615";

    @Test
    void aThreadsNameMayHoldParenthesesAndSpaces() {
        assertEquals("detectors (1/2)", ThreadCpu.name(STAT));
        assertEquals(613 + 214, ThreadCpu.cpuTicks(STAT), "user (field 14) plus system (field 15) time");
        assertEquals(-1, ThreadCpu.cpuTicks("not a stat line"));
    }

    @Test
    void aThreadPoolIsOneKind() {
        assertEquals("GC Thread##", ThreadCpu.kind("GC Thread#3"));
        assertEquals("C# CompilerThre", ThreadCpu.kind("C2 CompilerThre"));
    }

    @Test
    void aContainersCpuIsReadFromEitherCgroupVersion() {
        assertEquals(123_456_789L, ThreadCpu.cgroupCpuNs("123456789\n"), "cgroup v1 cpuacct.usage: ns");
        assertEquals(5_000_000L, ThreadCpu.cgroupCpuNs("usage_usec 5000\nuser_usec 4000\nsystem_usec 1000\n"),
                "cgroup v2 cpu.stat: µs");
        assertEquals(-1, ThreadCpu.cgroupCpuNs(""));
    }

    @Test
    void theRunsCpuIsBetweenTheSamplesInsideIt(@TempDir Path dir) throws Exception {
        Path broker = Files.writeString(dir.resolve("cpuacct.usage"), "0");
        long[] fromTo = new long[2];
        ThreadCpu cpu = ThreadCpu.sampling(broker, () -> {
            fromTo[0] = System.currentTimeMillis();
            Thread.sleep(2 * ThreadCpu.PERIOD_MS);  // a sample inside the window before the work
            java.util.concurrent.CountDownLatch spun = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch measured = new java.util.concurrent.CountDownLatch(1);
            // A thread that lives on past the window, as a task's does past its last output.
            Thread spinner = new Thread(() -> {
                spinForCpuSeconds();
                spun.countDown();
                awaitQuietly(measured);
            }, "cpu spinner");
            spinner.start();
            spun.await();
            Files.writeString(broker, "300000000");  // the broker used 0.3 s of CPU meanwhile
            Thread.sleep(2 * ThreadCpu.PERIOD_MS);  // and one after it
            fromTo[1] = System.currentTimeMillis();
            measured.countDown();
            spinner.join();
            return null;
        });
        ThreadCpu.Window w = cpu.between(fromTo[0], fromTo[1]);
        assertTrue(w.seconds() > 0, "two samples inside the run");
        assertEquals(0.3, w.coresByKind().get(ThreadCpu.BROKER) * w.seconds(), 1e-9);
        // The spinner used 0.4 s of CPU, however long that took: the kernel counts it, in 10 ms ticks.
        assertEquals(0.4, w.coresByKind().getOrDefault("cpu spinner", 0.0) * w.seconds(), 0.05, w.coresByKind().toString());
    }

    private static void awaitQuietly(java.util.concurrent.CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void spinForCpuSeconds() {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        long until = threads.getCurrentThreadCpuTime() + 400_000_000L;
        while (threads.getCurrentThreadCpuTime() < until) {
            Thread.onSpinWait();
        }
    }
}
