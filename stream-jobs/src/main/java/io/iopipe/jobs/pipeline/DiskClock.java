package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.iostat.DiskstatsDelta;
import java.util.Arrays;

/**
 * One disk's event-time clock. Its records come by three paths (diskstats, histograms,
 * events: separate topics, read at their own pace, and diskstats through one more
 * operator), so the clock follows the slowest of the kinds an agent sends every
 * interval, as a Flink watermark follows its slowest input, and like one it stops
 * waiting for a kind that has been idle on the wall clock for {@code kindIdleMs}: a disk
 * whose I/O stopped sends no histograms, but its diskstats go on. A kind still far
 * behind but arriving (a topic read behind the others after an outage) is waited for.
 * A kind not heard yet is waited for that long from the disk's first record, and so is
 * every kind once the disk is heard again after that long a silence: when a host's
 * records resume (its agent restarted, a Kafka outage ended) the topics are read at their
 * own pace again, and the first kind back must not close windows the others still fill.
 * Events are samples and never hold the clock back.
 *
 * <p>A quiet kind is not always an idle disk: the disk's other records can prove it is on
 * its way. An agent samples the diskstats of every disk it reports each interval, so any
 * record of the disk past its last diskstats proves diskstats owed. It sends a histogram
 * for each interval that completed I/O, so an event (a completed I/O) past the last
 * histogram, or an interval of diskstats that shows completions and begins where the
 * histograms have reached, proves histograms owed. An owed kind is waited for longer,
 * {@code owedWaitMs}: after a Kafka outage one topic's partitions may come back well
 * after another's, and its backlog must not find its windows closed.
 */
public class DiskClock {
    static final long NONE = Long.MIN_VALUE;

    public long diskstatsMs = NONE;
    public long histMs = NONE;
    public long eventsMs = NONE;
    /** Where the latest diskstats interval that completed I/O began: histograms reach past it. */
    public long ioIntervalFromMs = NONE;
    /** Wall-clock ms each kind, and the disk, were first or last heard from. */
    public long diskstatsHeardAtMs = NONE;
    public long histHeardAtMs = NONE;
    public long firstHeardAtMs = NONE;
    public long lastHeardAtMs = NONE;
    /** Wall-clock ms the disk was heard again after a silence of a kind's idleness, if ever. */
    public long resumedAtMs = NONE;
    /** When the processing-time check on this disk is due; NONE if none is set. */
    public long checkAtMs = NONE;
    /** Every window ending at or before this is closed: the clock never goes back. */
    public long closedThroughMs = NONE;
    /**
     * How many of the disk's windows closed on silence, or before records it owed, are kept for
     * records still on their way (named for the first case: the name is the state's).
     */
    public int keptOnSilence;
    /** Whether one of them took records since it was last sent. */
    public boolean revisionDue;
    /**
     * Starts of the disk's open windows, ascending: their records wait unread in
     * DiskWindows' open records. Null in a clock restored from a build that kept each open
     * window whole (a field its state did not have).
     */
    public long[] openStarts;
    /**
     * Whether DiskWindows keeps the disk's open records in one list per window; false in a
     * clock restored from a build that kept them all in one list (a field its state did not
     * have), until its next window closes and moves them.
     */
    public boolean openRecordsByWindow;
    /**
     * Starts of the closed windows whose histograms DiskWindows keeps for late ones, ascending:
     * forgotten without reading the state's keys at every close. Null in a clock restored
     * from a build that did not keep them (a field its state did not have) until they are
     * read once from the state's keys.
     */
    public long[] closedHistogramStarts;

    /** The clock of a disk not heard before. */
    public static DiskClock ofNewDisk() {
        DiskClock c = new DiskClock();
        c.openStarts = new long[0];
        c.openRecordsByWindow = true;
        c.closedHistogramStarts = new long[0];
        return c;
    }

    /** Notes that the window starting at `startMs`, after every other noted, keeps its histograms. */
    void keepsHistogramsOf(long startMs) {
        closedHistogramStarts = Arrays.copyOf(closedHistogramStarts, closedHistogramStarts.length + 1);
        closedHistogramStarts[closedHistogramStarts.length - 1] = startMs;
    }

    /** Removes and returns the starts of the windows of `lengthMs` keeping histograms that ended at or before `closedMs`. */
    long[] histogramsClosedBy(long closedMs, long lengthMs) {
        int past = endingBy(closedHistogramStarts, closedMs, lengthMs);
        long[] forgotten = Arrays.copyOf(closedHistogramStarts, past);
        closedHistogramStarts = Arrays.copyOfRange(closedHistogramStarts, past, closedHistogramStarts.length);
        return forgotten;
    }

    /** How many of `starts` (ascending), of windows of `lengthMs`, end at or before `byMs`. */
    private static int endingBy(long[] starts, long byMs, long lengthMs) {
        int n = 0;
        while (n < starts.length && starts[n] + lengthMs <= byMs) {
            n++;
        }
        return n;
    }

    boolean hasOpenWindows() {
        return openStarts.length > 0;
    }

    /** Where the disk's last open window ends. */
    long lastOpenEndMs(long lengthMs) {
        return openStarts[openStarts.length - 1] + lengthMs;
    }

    /** Notes the window starting at `startMs` as open; true if it was not already. */
    public boolean opens(long startMs) {
        int at = Arrays.binarySearch(openStarts, startMs);
        if (at >= 0) {
            return false;
        }
        int insertAt = -at - 1;
        long[] starts = new long[openStarts.length + 1];
        System.arraycopy(openStarts, 0, starts, 0, insertAt);
        starts[insertAt] = startMs;
        System.arraycopy(openStarts, insertAt, starts, insertAt + 1, openStarts.length - insertAt);
        openStarts = starts;
        return true;
    }

    /** Removes and returns, ascending, the starts of the open windows of `lengthMs` ending at or before `clockMs`. */
    long[] closeOpenEndingBy(long clockMs, long lengthMs) {
        int due = endingBy(openStarts, clockMs, lengthMs);
        long[] closing = Arrays.copyOf(openStarts, due);
        openStarts = Arrays.copyOfRange(openStarts, due, openStarts.length);
        return closing;
    }

    void saw(DiskRecord r, long tsMs, long nowMs, long kindIdleMs) {
        if (firstHeardAtMs == NONE) {
            firstHeardAtMs = nowMs;
        } else if (nowMs - lastHeardAtMs >= kindIdleMs) {
            resumedAtMs = nowMs;
        }
        lastHeardAtMs = nowMs;
        if (r.hist != null) {
            histMs = Math.max(histMs, tsMs);
            histHeardAtMs = nowMs;
        } else if (r.event != null) {
            eventsMs = Math.max(eventsMs, tsMs);
        } else {
            diskstatsMs = Math.max(diskstatsMs, tsMs);
            diskstatsHeardAtMs = nowMs;
            if (r.delta != null && completedIo(r.delta)) {
                ioIntervalFromMs = Math.max(ioIntervalFromMs, Math.floorDiv(r.delta.startNs, 1_000_000L));
            }
        }
    }

    private static boolean completedIo(DiskstatsDelta d) {
        return d.counters.readsCompleted + d.counters.writesCompleted + d.counters.discardsCompleted > 0;
    }

    /** Whether the disk's other records prove diskstats it has not sent yet (see the class). */
    boolean diskstatsOwed() {
        return diskstatsMs != NONE && Math.max(histMs, eventsMs) > diskstatsMs;
    }

    /** Whether its events or diskstats prove histograms it has not sent yet (see the class). */
    boolean histogramsOwed() {
        return histMs != NONE && (eventsMs > histMs || ioIntervalFromMs != NONE && ioIntervalFromMs >= histMs);
    }

    /** Whether a window ending at `endMs` closes before records its disk owes for it. */
    boolean owesRecordsBefore(long endMs) {
        return histogramsOwed() && histMs < endMs || diskstatsOwed() && diskstatsMs < endMs;
    }

    /**
     * Up to where windows may close now: the slowest kind waited for, less the
     * out-of-orderness. No kind is idle for what it was not heard before `inputResumedAtMs`
     * (a job restored, its input not read again yet: see DiskWindows).
     */
    long watermark(long outOfOrdernessMs, long kindIdleMs, long owedWaitMs, long nowMs, long inputResumedAtMs) {
        long latest = Math.max(diskstatsMs, Math.max(histMs, eventsMs));
        long owedMs = Math.max(kindIdleMs, owedWaitMs);
        long slowest = Math.min(latest, waitedFor(diskstatsMs, diskstatsHeardAtMs,
                diskstatsOwed() ? owedMs : kindIdleMs, nowMs, inputResumedAtMs));
        slowest = Math.min(slowest, waitedFor(histMs, histHeardAtMs,
                histogramsOwed() ? owedMs : kindIdleMs, nowMs, inputResumedAtMs));
        return slowest == NONE ? NONE : slowest - outOfOrdernessMs;
    }

    /** How far a kind holds the clock back: where it has reached while it is waited for, else not at all. */
    private long waitedFor(long reachedMs, long heardAtMs, long waitMs, long nowMs, long inputResumedAtMs) {
        long since = Math.max(Math.max(reachedMs == NONE ? firstHeardAtMs : heardAtMs, resumedAtMs), inputResumedAtMs);
        return nowMs - since < waitMs ? reachedMs : Long.MAX_VALUE;
    }
}
