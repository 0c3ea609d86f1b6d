package io.iopipe.jobs.records;

/**
 * The /proc/diskstats counters of one disk, one long field each, named as io.diskstats.v1
 * names them in camelCase ({@link DiskstatsFields}): what a sample read, what grew between
 * two samples, or what a window's intervals summed to. The one list of them in the job;
 * iostat's formulas read them by name, and whatever goes over every counter binds them by
 * the schema's list. `inFlight` is a gauge, so only a sample holds it: a delta or a sum
 * leaves it 0.
 */
public class DiskstatsCounters {
    static final DiskstatsFields.Counters<DiskstatsCounters> ALL = DiskstatsFields.of(DiskstatsCounters.class, DiskstatsFields.COUNTERS);
    private static final DiskstatsFields.Counters<DiskstatsCounters> CUMULATIVE =
            DiskstatsFields.of(DiskstatsCounters.class, DiskstatsFields.CUMULATIVE);

    public long readsCompleted;
    public long readsMerged;
    public long sectorsRead;
    public long readTimeMs;
    public long writesCompleted;
    public long writesMerged;
    public long sectorsWritten;
    public long writeTimeMs;
    public long inFlight;
    public long ioTimeMs;
    public long weightedIoTimeMs;
    public long discardsCompleted;
    public long discardsMerged;
    public long sectorsDiscarded;
    public long discardTimeMs;
    public long flushesCompleted;
    public long flushTimeMs;

    /** Every counter, in the schema's order. */
    public long[] values() {
        long[] values = new long[ALL.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = ALL.get(this, i);
        }
        return values;
    }

    /** The counters `values` gives in the schema's order ({@link #values()}). */
    public static DiskstatsCounters of(long[] values) {
        if (values.length != ALL.size()) {
            throw new IllegalArgumentException(values.length + " counters, not the schema's " + ALL.size());
        }
        DiskstatsCounters counters = new DiskstatsCounters();
        for (int i = 0; i < values.length; i++) {
            ALL.set(counters, i, values[i]);
        }
        return counters;
    }

    /** What each counter that only grows counted from `earlier` to these. */
    public DiskstatsCounters since(DiskstatsCounters earlier) {
        DiskstatsCounters grown = new DiskstatsCounters();
        for (int i = 0; i < CUMULATIVE.size(); i++) {
            CUMULATIVE.set(grown, i, CUMULATIVE.get(this, i) - CUMULATIVE.get(earlier, i));
        }
        return grown;
    }

    /** Whether a counter that only grows is below `earlier`'s: the device was re-created, or its host rebooted. */
    public boolean anyBelow(DiskstatsCounters earlier) {
        for (int i = 0; i < CUMULATIVE.size(); i++) {
            if (CUMULATIVE.get(this, i) < CUMULATIVE.get(earlier, i)) {
                return true;
            }
        }
        return false;
    }

    /** Adds what `more` counted, counter by counter. */
    public void add(DiskstatsCounters more) {
        for (int i = 0; i < CUMULATIVE.size(); i++) {
            CUMULATIVE.set(this, i, CUMULATIVE.get(this, i) + CUMULATIVE.get(more, i));
        }
    }
}
