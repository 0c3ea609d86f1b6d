package io.iopipe.jobs.detect;

/**
 * One op's latencies in one window. The kernel's histograms count every I/O; where a
 * source sent none (a converted capture), the events' own, weighted, stand in.
 */
public class OpLatency {
    public Log2Histogram device = new Log2Histogram();
    public Log2Histogram queue = new Log2Histogram();
    public Log2Histogram total = new Log2Histogram();
    public long errors;
    public Log2Histogram eventDevice = new Log2Histogram();
    public Log2Histogram eventQueue = new Log2Histogram();
    public Log2Histogram eventTotal = new Log2Histogram();
    public long eventErrors;
    /** Sampled events of this op, whatever they weigh. */
    public long events;
    /** The slowest median of the kernel's interval histograms merged here (µs); 0 if none. */
    public double slowestIntervalMedianUs;
    /** The kernel's interval histograms of device time, each apart: when the I/Os came. */
    public IntervalCounts deviceIntervals = new IntervalCounts();
    /** Σ weight × in-flight depth at dispatch, and Σ weight, over the events that know their depth. */
    public double eventDepthSum;
    public double eventDepthWeight;

    /** One interval of the kernel's device-time histogram. */
    public void addDeviceInterval(long[] buckets, long count, long sumUs, long maxUs) {
        device.addBuckets(buckets, count, sumUs, maxUs);
        Log2Histogram interval = new Log2Histogram();
        interval.addBuckets(buckets, count, sumUs, maxUs);
        if (interval.count > 0) {
            slowestIntervalMedianUs = Math.max(slowestIntervalMedianUs, interval.quantileUs(0.5));
        }
        deviceIntervals.add(buckets);
    }

    public boolean hasKernelHistograms() {
        return device.count > 0;
    }

    public Log2Histogram device() {
        return hasKernelHistograms() ? device : eventDevice;
    }

    public Log2Histogram queue() {
        return hasKernelHistograms() ? queue : eventQueue;
    }

    public Log2Histogram total() {
        return hasKernelHistograms() ? total : eventTotal;
    }

    public long errors() {
        return hasKernelHistograms() ? errors : eventErrors;
    }

    /** Mean requests in flight at dispatch, counting each I/O itself; NaN when no event knew. */
    public double meanInflight() {
        return eventDepthWeight == 0 ? Double.NaN : eventDepthSum / eventDepthWeight;
    }

    public long count() {
        return device().count;
    }

    public OpLatency merge(OpLatency o) {
        device.merge(o.device);
        queue.merge(o.queue);
        total.merge(o.total);
        errors = Saturating.add(errors, o.errors);
        eventDevice.merge(o.eventDevice);
        eventQueue.merge(o.eventQueue);
        eventTotal.merge(o.eventTotal);
        eventErrors = Saturating.add(eventErrors, o.eventErrors);
        events += o.events;
        slowestIntervalMedianUs = Math.max(slowestIntervalMedianUs, o.slowestIntervalMedianUs);
        deviceIntervals.merge(o.deviceIntervals);
        eventDepthSum += o.eventDepthSum;
        eventDepthWeight += o.eventDepthWeight;
        return this;
    }
}
