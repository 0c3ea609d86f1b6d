package io.iopipe.jobs.detect;

/**
 * Arithmetic on counts that holds at the largest long instead of wrapping around. Each
 * record the jobs accept is bounded, but a window merges any number of them: a sum
 * beyond 2^63-1 that wrapped would read as a few I/Os, or a negative number of them.
 */
public final class Saturating {
    private Saturating() {}

    public static long add(long a, long b) {
        long sum = a + b;
        // Overflowed exactly when both operands have a sign the sum lacks.
        if (((a ^ sum) & (b ^ sum)) < 0) {
            return a < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
        return sum;
    }

    /** The product of two non-negative numbers, at most Long.MAX_VALUE. */
    public static long multiply(long a, long b) {
        long high = Math.multiplyHigh(a, b);
        long product = a * b;
        return high != 0 || product < 0 ? Long.MAX_VALUE : product;
    }
}
