package io.iopipe.jobs.pipeline;

/** A 64-bit mix of a few fields (splitmix64 steps): collisions among a window's records are out of reach. */
final class Fingerprint {
    private Fingerprint() {}

    static long of(long a, long b, long c, long d) {
        return step(step(step(step(0x9E3779B97F4A7C15L, a), b), c), d);
    }

    private static long step(long h, long v) {
        long x = (h ^ v) * 0xBF58476D1CE4E5B9L;
        return x ^ (x >>> 31);
    }
}
