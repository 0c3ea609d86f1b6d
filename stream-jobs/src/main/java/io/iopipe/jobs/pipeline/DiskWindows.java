package io.iopipe.jobs.pipeline;

import io.iopipe.jobs.detect.DiskWindow;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.TimeDomain;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Per disk, tumbling event-time windows on the disk's own clock ({@link DiskClock}):
 * how far its records have come, less the allowed out-of-orderness. A host whose clock
 * runs ahead or behind moves only its own disks' windows; with one watermark per Kafka
 * partition it would make every other host in that partition late, or hold them back.
 *
 * <p>A record for a window the disk's clock has passed is late (a side output, then a
 * dead letter). A late kernel histogram within {@code allowedLateness} of its window's
 * close also comes out as an amendment of that window, which only the latency rollups
 * read: a histogram topic read behind the diskstats (on a loaded machine, after a kind
 * went idle) loses no I/O from the rollups. A histogram or event already in its window,
 * or a histogram already in a window closed within that time (a resend), is counted and
 * merged once. A disk silent for {@code idleMs} of wall-clock time has its open windows
 * closed; silent for {@code forgetAfterMs}, it is forgotten. A job restored from a
 * checkpoint counts that silence from its restart: it heard nothing while it was down, and
 * what came meanwhile is read again from the checkpoint's offsets; and its sources may
 * take a while to read again, so it counts from its first record (see
 * {@link #firstRecordAtMs}). At the end of a bounded input (the final watermark) every
 * open window closes.
 *
 * <p>Silence is a guess: a disk whose records were held up (every Kafka node away, its
 * agent holding a backlog) looks the same as one that went away. So a window closed on
 * silence is kept whole, for {@code allowedLateness} of its disk's clock once the disk is
 * heard again, and takes the records still on their way as if it were open; once the
 * disk's clock passes it (at the disk's next check, every {@code kindIdleMs} while it
 * speaks: what comes meanwhile makes one revision, not one a record) or the disk falls
 * silent again, it is sent again whole, a revision that replaces the copy sent before.
 * Its late kernel histograms amend the latency rollups as any late histogram does; the detectors judged the window once. So is
 * a window closed before records its disk's other records prove (waited for {@code idleMs},
 * see {@link DiskClock}): they are on their way, not lost.
 *
 * <p>A record for an open window is appended to its window's open records, unread, and
 * folded into its window when the window closes: what a record costs does not grow with
 * what its window holds. Keeping each window whole while
 * it filled rewrote it, events and all, on every record, so a disk in flight recording
 * slowed the whole job down exactly when it was failing. Each window's records have a list
 * of their own (one of {@link #OPEN_RECORD_LISTS}, in turn), so a window closing reads its
 * own and rewrites none of the windows still open.
 *
 * <p>A batch (an interval's histograms, a batch of events: {@link DiskRecord#parts()}) is
 * taken part by part, in the order sent, exactly as its parts sent one by one and read at
 * the same moment would be: each moves the disk's clock, is late or not, closes windows
 * and is counted as a duplicate or not as it would alone, and its parts may fall in two
 * windows. The open records hold parts, never batches.
 *
 * <p>A disk's clock and the records it took for its open windows are kept on the heap
 * ({@link Held}), and written to its keyed state as a barrier reaches the operator, before
 * the snapshot ({@link WritingBack}): a record touches no state of its own. A snapshot holds
 * all the disk took before its barrier, as if each record had been written as it came. Read
 * and written in RocksDB at each record, the clock was most of what the windows cost on a
 * loaded cluster, and each checkpoint flushed every version of it and every open record
 * since the last, those of windows closed meanwhile too. The heap keeps them after the
 * snapshot too: what a disk wrote is all its state holds (a new disk's from the start, one
 * restored from its first window closed since), so a window closing reads nothing from
 * state, only clears what was written of it. With checkpoints as often as windows close,
 * most records were written before their window closed, and reading them back was the
 * windows' largest call into RocksDB. The heap keeps at most a share of itself so ({@link
 * Pipeline.Config#openRecordsHeapShare}); past it, a list is read back.
 */
public final class DiskWindows extends KeyedProcessFunction<String, DiskRecord, DiskWindow>
        implements WritingBack.Function {
    private final long lengthMs;
    private final long outOfOrdernessMs;
    private final long kindIdleMs;
    private final long idleMs;
    private final long forgetAfterMs;
    private final long allowedLatenessMs;
    /**
     * How many lists a disk's open records are kept in, a window's in the list of its place
     * in that cycle: as many as windows are open at once while a disk's kinds keep pace (a
     * window, and the next as far as the out-of-orderness). Where more are open (a kind
     * waited for), two windows share a list and the one closing first rewrites the other's.
     */
    static final int OPEN_RECORD_LISTS = 4;
    private final WindowFunctions.Accumulate accumulate;
    /**
     * The records of the disk's open windows (their starts are in its clock), each window's
     * in its list ({@link #listOf}), in the order they came: parts, their batch fields
     * null, as {@link DiskRecordSerializer} writes them.
     */
    private transient List<ListState<DiskRecord>> openRecords;
    /**
     * The open records as builds before the lists per window kept them, all in one list
     * (under the name the lists' state had): moved to the lists at the disk's next window
     * closing ({@link DiskClock#openRecordsByWindow}). A build before batches wrote them
     * without the batch fields; Flink's POJO serializer reads its checkpoints and savepoints
     * as they are (schema evolution: a field added).
     */
    private transient ListState<DiskRecord> openRecordsInOneList;
    /**
     * The parts of the record being taken that went to open windows, in the order they came:
     * appended to the open records together once it is taken, folded from here by a window
     * that closes meanwhile. Empty between records.
     */
    private transient List<DiskRecord> arrived;
    /** Open windows as builds before the open records kept them, whole: read once, when they close. */
    private transient MapState<Long, DiskWindow> openWindowsOfEarlierBuilds;
    /** Per window closed within allowedLateness, the identities of the kernel histograms it counted. */
    private transient MapState<Long, HashSet<Long>> closedHistograms;
    /**
     * Windows closed on silence or before records their disk owed, whole with what they saw,
     * while records may still come for them (the state keeps its first name).
     */
    private transient MapState<Long, DiskWindow> closedOnSilence;
    private transient ValueState<DiskClock> clock;
    /** Copies the clock written to state: the heap backend's snapshot keeps the object written, which the heap goes on changing. */
    private transient TypeSerializer<DiskClock> clockCopier;
    /** By disk: its clock and open records on the heap (see the class). */
    private transient Map<String, Held> held;
    /** The share of this JVM's heap that may keep what the disks' lists in state hold ({@link Held#written}). */
    private final double heapShare;
    /** That share, in parts ({@link #heldPartsAtMost}). */
    private transient long writtenPartsAtMost;
    /** The parts the heap keeps of what the disks' lists in state hold, all disks together. */
    private transient long writtenPartsHeld;
    private transient Counter duplicates;
    private transient Counter closedIdle;
    private transient Counter lateHistogramsRolledUp;
    private transient Counter revisions;
    /**
     * When this instance first ran, on the processing-time clock. A job restored from a
     * checkpoint heard no disk while it was down, and what the disks sent meanwhile is yet
     * to be read again from the checkpoint's offsets: a disk's silence counts from here, or
     * its overdue timers would close its open windows with only what the checkpoint held,
     * the detectors would judge those, and the records read a moment later would revise them.
     */
    private transient long startedAtMs = DiskClock.NONE;
    /**
     * When this instance took its first record, on the processing-time clock; NONE until
     * then. A restored job's sources may take longer than the disk idleness to read again
     * (restoring, their brokers slow to answer) while this operator already runs and its
     * timers fire: until its input resumes, no disk is silent and no kind idle.
     */
    private transient long firstRecordAtMs = DiskClock.NONE;

    /** The operator that runs windows of `windowSeconds`: it writes back what they hold on the heap. */
    public static WritingBack<DiskRecord, DiskWindow> operator(int windowSeconds, Pipeline.Config config) {
        return new WritingBack<>(new DiskWindows(windowSeconds, config));
    }

    private DiskWindows(int windowSeconds, Pipeline.Config config) {
        this.lengthMs = windowSeconds * 1000L;
        this.outOfOrdernessMs = config.outOfOrderness.toMillis();
        this.kindIdleMs = config.kindIdleness.toMillis();
        this.idleMs = config.diskIdleness.toMillis();
        this.forgetAfterMs = config.diskForgottenAfter.toMillis();
        this.allowedLatenessMs = config.allowedLateness.toMillis();
        this.heapShare = config.openRecordsHeapShare;
        this.accumulate = new WindowFunctions.Accumulate(windowSeconds);
    }

    /**
     * About what a part held on the heap takes, from the layout of its objects (compressed
     * references): an event's DiskRecord (56 bytes), IoEvent (112) and its five strings (48
     * each) come to 408, a histogram's to about 450, a diskstats delta's to about 370.
     */
    static final long BYTES_PER_PART = 400;

    /** The parts `heapShare` of this JVM's heap holds. */
    static long heldPartsAtMost(double heapShare) {
        return (long) (heapShare * Runtime.getRuntime().maxMemory() / BYTES_PER_PART);
    }

    @Override
    public void open(OpenContext openContext) {
        openRecords = new ArrayList<>();
        for (int i = 0; i < OPEN_RECORD_LISTS; i++) {
            openRecords.add(getRuntimeContext().getListState(
                    new ListStateDescriptor<>("open-window-records-" + i, DiskRecordSerializer.TYPE)));
        }
        openRecordsInOneList = getRuntimeContext().getListState(
                new ListStateDescriptor<>("open-window-records", DiskRecord.class));
        openWindowsOfEarlierBuilds =
                getRuntimeContext().getMapState(new MapStateDescriptor<>("open-windows", Long.class, DiskWindow.class));
        ValueStateDescriptor<DiskClock> clockState = new ValueStateDescriptor<>("disk-clock", DiskClock.class);
        clock = getRuntimeContext().getState(clockState);
        clockCopier = clockState.getSerializer().duplicate();
        closedHistograms = getRuntimeContext().getMapState(new MapStateDescriptor<>(
                "closed-window-histograms", Types.LONG, TypeInformation.of(new TypeHint<HashSet<Long>>() {})));
        closedOnSilence = getRuntimeContext().getMapState(
                new MapStateDescriptor<>("windows-closed-on-silence", Long.class, DiskWindow.class));
        revisions = getRuntimeContext().getMetricGroup().counter("windows_revised_total");
        duplicates = getRuntimeContext().getMetricGroup().counter("records_duplicate_total");
        closedIdle = getRuntimeContext().getMetricGroup().counter("windows_closed_idle_total");
        lateHistogramsRolledUp = getRuntimeContext().getMetricGroup().counter("late_histograms_rolled_up_total");
        arrived = new ArrayList<>();
        held = new HashMap<>();
        writtenPartsAtMost = heldPartsAtMost(heapShare);
        writtenPartsHeld = 0;
    }

    /**
     * A disk's clock, read from its state at its first record or timer since this instance
     * started, the parts it took for its open windows since the last snapshot, each window's
     * list of them as {@link #listOf} keeps them in state, and what its state's lists hold
     * where the heap knows it. Every record and timer moves the clock (when the disk was last
     * heard, when it is next checked), so a held clock is always written back.
     */
    private static final class Held {
        final DiskClock clock;
        @SuppressWarnings("unchecked")
        final List<DiskRecord>[] records = new List[OPEN_RECORD_LISTS];
        /**
         * Per list: everything its state holds, in the order written; null where that is not
         * known (records a restored snapshot or an earlier instance wrote), until the list is
         * next read and cleared.
         */
        @SuppressWarnings("unchecked")
        final List<DiskRecord>[] written = new List[OPEN_RECORD_LISTS];
        /**
         * The disk's state holds no window an earlier build kept whole: this build never writes
         * one, so once none is left none comes back, and a closing window looks for none.
         */
        boolean noWindowsOfEarlierBuilds;

        Held(DiskClock clock) {
            this.clock = clock;
        }

        /** A disk with no state: its lists hold nothing (every write of them writes its clock too), nor any earlier build's window. */
        static Held ofNewDisk() {
            Held h = new Held(DiskClock.ofNewDisk());
            for (int list = 0; list < OPEN_RECORD_LISTS; list++) {
                h.written[list] = new ArrayList<>();
            }
            h.noWindowsOfEarlierBuilds = true;
            return h;
        }
    }

    /**
     * Writes each disk's clock (a copy) and the open records it took since the last snapshot
     * to its state; the heap keeps both. A record is never changed once taken, so the heap
     * backend's snapshot may keep the objects written.
     */
    @Override
    public void writeBack(WritingBack.KeySetter toKey) throws Exception {
        for (Map.Entry<String, Held> disk : held.entrySet()) {
            toKey.setCurrentKey(disk.getKey());
            Held h = disk.getValue();
            clock.update(clockCopier.copy(h.clock));
            for (int list = 0; list < OPEN_RECORD_LISTS; list++) {
                if (h.records[list] != null) {
                    openRecords.get(list).addAll(h.records[list]);
                    keepWritten(h, list);
                    h.records[list] = null;
                }
            }
        }
    }

    /**
     * Keeps on the heap what list `list` of the disk just wrote, after what it wrote before,
     * while all disks' kept parts fit in {@link #writtenPartsAtMost}; else lets go of all the
     * list's (the window closing reads them back from state).
     */
    private void keepWritten(Held h, int list) {
        if (h.written[list] == null) {
            return;
        }
        if (writtenPartsHeld + h.records[list].size() <= writtenPartsAtMost) {
            h.written[list].addAll(h.records[list]);
            writtenPartsHeld += h.records[list].size();
        } else {
            letGoOfWritten(h, list);
        }
    }

    /** Forgets what the heap kept of list `list`'s state: it is read back when a window in it closes. */
    private void letGoOfWritten(Held h, int list) {
        if (h.written[list] != null) {
            writtenPartsHeld -= h.written[list].size();
            h.written[list] = null;
        }
    }

    @Override
    public void processElement(DiskRecord r, Context ctx, Collector<DiskWindow> out) throws Exception {
        Held h = held(ctx.getCurrentKey());
        DiskClock c = h.clock;
        long nowMs = ctx.timerService().currentProcessingTime();
        startedAt(nowMs);
        if (firstRecordAtMs == DiskClock.NONE) {
            firstRecordAtMs = nowMs;
        }
        for (DiskRecord part : r.parts()) {
            take(part, h, nowMs, ctx, out);
        }
        if (!arrived.isEmpty()) {
            keepArrived(h);
        }
    }

    /** The disk's clock and open records as the heap holds them, its clock read from state if not held yet. */
    private Held held(String key) throws Exception {
        Held h = held.get(key);
        if (h == null) {
            DiskClock inState = clockFromState();
            h = inState == null ? Held.ofNewDisk() : new Held(inState);
            held.put(key, h);
        }
        return h;
    }

    /** Keeps the parts just arrived for open windows with their windows' records. */
    private void keepArrived(Held h) throws Exception {
        if (!h.clock.openRecordsByWindow) {
            openRecordsInOneList.addAll(arrived);
        } else {
            appendToTheirLists(h, arrived);
        }
        arrived.clear();
    }

    /** Appends `records` to the lists their windows keep their open records in, each list's in the order they came. */
    private void appendToTheirLists(Held h, List<DiskRecord> records) {
        for (DiskRecord r : records) {
            int list = listOf(accumulate.windowStartMs(r));
            if (h.records[list] == null) {
                h.records[list] = new ArrayList<>();
            }
            h.records[list].add(r);
        }
    }

    private int listOf(long startMs) {
        return Math.floorMod(Math.floorDiv(startMs, lengthMs), OPEN_RECORD_LISTS);
    }

    /** One record, or one part of a batch, as if it came alone. */
    private void take(DiskRecord r, Held h, long nowMs, Context ctx, Collector<DiskWindow> out) throws Exception {
        DiskClock c = h.clock;
        long tsMs = Math.floorDiv(r.tsNs, 1_000_000L);
        long startMs = accumulate.windowStartMs(r);
        c.saw(r, tsMs, nowMs, kindIdleMs);
        if (c.checkAtMs == DiskClock.NONE || c.checkAtMs > nowMs + kindIdleMs) {
            // Checked every kindIdleMs while it speaks: a kind holding the clock back may have gone idle.
            // A check re-armed for forgetting a silent disk is brought forward, or the windows it
            // opens now would wait that long to be closed when it falls silent again.
            if (c.checkAtMs != DiskClock.NONE) {
                ctx.timerService().deleteProcessingTimeTimer(c.checkAtMs);
            }
            checkAt(c, nowMs + kindIdleMs, ctx);
        }
        if (startMs + lengthMs <= c.closedThroughMs) {
            late(r, startMs, c, ctx, out);
        } else {
            add(r, startMs, c, ctx);
        }
        advance(h, nowMs, ctx, out, false);
    }

    private void add(DiskRecord r, long startMs, DiskClock c, Context ctx) throws Exception {
        if (c.opens(startMs)) {
            // Fires only with the final watermark of a bounded input: the disk's own clock closes windows before.
            ctx.timerService().registerEventTimeTimer(startMs + lengthMs - 1);
        }
        arrived.add(r);
    }

    /** The windows closing, by their starts (ascending, as the disk's clock gives them): a record finds its window without boxing a key. */
    private static final class ClosingWindows {
        static final ClosingWindows NONE = new ClosingWindows(new long[0]);
        final long[] starts;
        final DiskWindow[] windows;

        ClosingWindows(long[] starts) {
            this.starts = starts;
            this.windows = new DiskWindow[starts.length];
        }

        /** The closing window starting at `startMs`, or null where that window is not closing. */
        DiskWindow get(long startMs) {
            int at = Arrays.binarySearch(starts, startMs);
            return at >= 0 ? windows[at] : null;
        }
    }

    /**
     * The closing windows, each folded from its records in the order they came (its open
     * records, then those just arrived), a resent record once; the records of the windows
     * still open are kept.
     */
    private ClosingWindows foldClosing(long[] closing, Held h) throws Exception {
        ClosingWindows windows = new ClosingWindows(closing);
        for (int i = 0; i < closing.length; i++) {
            windows.windows[i] = h.noWindowsOfEarlierBuilds ? accumulate.openWindow() : openedByEarlierBuild(closing[i]);
        }
        if (!h.noWindowsOfEarlierBuilds) {
            h.noWindowsOfEarlierBuilds = openWindowsOfEarlierBuilds.isEmpty();
        }
        if (!h.clock.openRecordsByWindow) {
            moveOutOfOneList(windows, h);
        }
        int lists = 0;  // a bit for each list a closing window keeps its records in
        for (long startMs : closing) {
            lists |= 1 << listOf(startMs);
        }
        for (int list = 0; list < OPEN_RECORD_LISTS; list++) {
            if ((lists & 1 << list) != 0) {
                foldList(list, h, windows);
            }
        }
        List<DiskRecord> arrivedStillOpen = new ArrayList<>();
        fold(arrived, windows, arrivedStillOpen);
        arrived.clear();
        arrived.addAll(arrivedStillOpen);
        return windows;
    }

    /**
     * Folds the closing windows' records in list `list`, those written to state (as the heap
     * knows them, else read) before those taken since; the list's state is cleared, and the
     * heap keeps the others' (a window sharing the list) until written back.
     */
    private void foldList(int list, Held h, ClosingWindows windows) throws Exception {
        List<DiskRecord> stillOpen = new ArrayList<>();
        ListState<DiskRecord> state = openRecords.get(list);
        Iterable<DiskRecord> written = h.written[list] != null ? h.written[list] : state.get();
        if (written != null && written.iterator().hasNext()) {
            fold(written, windows, stillOpen);
            state.clear();
        }
        letGoOfWritten(h, list);
        h.written[list] = new ArrayList<>();
        if (h.records[list] != null) {
            fold(h.records[list], windows, stillOpen);
        }
        h.records[list] = stillOpen.isEmpty() ? null : stillOpen;
    }

    /**
     * Folds the closing windows' records kept in one list by an earlier build, and moves the
     * others to their windows' lists: the disk keeps its records by window from here on.
     * Nothing was added to those lists meanwhile (see {@link #keepArrived}), so each keeps
     * its records in the order they came.
     */
    private void moveOutOfOneList(ClosingWindows windows, Held h) throws Exception {
        List<DiskRecord> stillOpen = new ArrayList<>();
        Iterable<DiskRecord> records = openRecordsInOneList.get();
        fold(records == null ? List.of() : records, windows, stillOpen);
        openRecordsInOneList.clear();
        appendToTheirLists(h, stillOpen);
        h.clock.openRecordsByWindow = true;
    }

    private void fold(Iterable<DiskRecord> records, ClosingWindows windows, List<DiskRecord> stillOpen) {
        for (DiskRecord r : records) {
            DiskWindow w = windows.get(accumulate.windowStartMs(r));
            if (w == null) {
                stillOpen.add(r);
            } else if (w.firstSeen(r.identity(), r.hist != null)) {
                accumulate.add(r, w);
            } else {
                duplicates.inc();
            }
        }
    }

    /** The window an earlier build kept whole for this start, taken out of its state; else a new one. */
    private DiskWindow openedByEarlierBuild(long startMs) throws Exception {
        DiskWindow w = openWindowsOfEarlierBuilds.get(startMs);
        if (w == null) {
            return accumulate.openWindow();
        }
        openWindowsOfEarlierBuilds.remove(startMs);
        return w;
    }

    /** The closed windows keeping their histograms, as the state's keys say: for a clock of a build that did not note them. */
    private long[] closedHistogramStartsInState() throws Exception {
        List<Long> starts = new ArrayList<>();
        for (Long startMs : closedHistograms.keys()) {
            starts.add(startMs);
        }
        return starts.stream().mapToLong(Long::longValue).sorted().toArray();
    }

    /** Counts as open the windows an earlier build kept whole: they close as the others do. */
    private void adoptWindowsOfEarlierBuilds(DiskClock c) throws Exception {
        for (Long startMs : openWindowsOfEarlierBuilds.keys()) {
            c.opens(startMs);
        }
    }

    /**
     * A record for a closed window is late for it; a kernel histogram it has not counted,
     * within allowedLateness of its close, also amends it for the latency rollups.
     */
    private void late(DiskRecord r, long startMs, DiskClock c, Context ctx, Collector<DiskWindow> out) throws Exception {
        DiskWindow kept = c.keptOnSilence > 0 ? closedOnSilence.get(startMs) : null;
        if (kept != null) {
            takeIntoClosedOnSilence(r, startMs, kept, c, out);
            return;
        }
        HashSet<Long> counted = r.hist == null ? null : closedHistograms.get(startMs);
        if (counted != null && !counted.add(r.identity())) {
            duplicates.inc();
            return;
        }
        ctx.output(Pipeline.LATE_RECORDS, r);
        if (counted != null) {
            closedHistograms.put(startMs, counted);
            amendRollups(r, startMs, out);
        }
    }

    /** A record for a window closed on silence: the window takes it, to be sent again whole. */
    private void takeIntoClosedOnSilence(DiskRecord r, long startMs, DiskWindow kept, DiskClock c,
            Collector<DiskWindow> out) throws Exception {
        if (!kept.firstSeen(r.identity(), r.hist != null)) {
            duplicates.inc();
            return;
        }
        accumulate.add(r, kept).revisionDue = true;
        closedOnSilence.put(startMs, kept);
        c.revisionDue = true;
        if (r.hist != null) {
            amendRollups(r, startMs, out);
        }
    }

    /** A late kernel histogram, on its own, for the latency rollups of its closed window. */
    private void amendRollups(DiskRecord r, long startMs, Collector<DiskWindow> out) {
        DiskWindow amendment = accumulate.stamped(accumulate.add(r, accumulate.openWindow()), startMs);
        amendment.amendsClosedWindow = true;
        out.collect(amendment);
        lateHistogramsRolledUp.inc();
    }

    /**
     * Sends again, whole, each window closed on silence that took records since it was
     * sent and ends at or before `clockMs`; forgets those ending at or before `forgetMs`.
     */
    private void reviseUpTo(DiskClock c, long clockMs, long forgetMs, Collector<DiskWindow> out) throws Exception {
        List<Long> starts = new ArrayList<>();
        for (Long startMs : closedOnSilence.keys()) {
            starts.add(startMs);
        }
        starts.sort(null);
        boolean due = false;
        for (long startMs : starts) {
            DiskWindow kept = closedOnSilence.get(startMs);
            if (kept.revisionDue && startMs + lengthMs <= clockMs) {
                kept.revisionDue = false;
                kept.revision++;
                DiskWindow revised = accumulate.stamped(kept.copy(), startMs);
                revised.revision = kept.revision;
                out.collect(revised);
                revisions.inc();
            }
            if (startMs + lengthMs <= forgetMs) {
                closedOnSilence.remove(startMs);
                c.keptOnSilence--;
            } else {
                closedOnSilence.put(startMs, kept);
                due |= kept.revisionDue;
            }
        }
        c.revisionDue = due;
    }

    /**
     * Moves the disk's clock to its watermark now and closes the windows it passed; at a
     * check (`revise`), sends again the kept windows it passed that took records since. Not
     * at every record: a backlog read after its kept window's end (a job restored, a Kafka
     * outage over) makes one revision at the next check, not one for each of its records.
     */
    private void advance(Held h, long nowMs, Context ctx, Collector<DiskWindow> out, boolean revise) throws Exception {
        DiskClock c = h.clock;
        long watermark = c.watermark(outOfOrdernessMs, kindIdleMs, idleMs, nowMs, inputResumedAtMs(nowMs));
        if (watermark > c.closedThroughMs) {
            c.closedThroughMs = watermark;
            closeUpTo(watermark, h, Closing.ON_ITS_CLOCK, ctx, out);
        }
        if (revise && c.keptOnSilence > 0 && watermark != DiskClock.NONE) {
            reviseUpTo(c, watermark, watermark - allowedLatenessMs, out);
        }
    }

    private void checkAt(DiskClock c, long atMs, Context ctx) {
        ctx.timerService().registerProcessingTimeTimer(atMs);
        c.checkAtMs = atMs;
    }

    /** The disk's clock as its state holds it, brought up to this build's; null for a disk with no state. */
    private DiskClock clockFromState() throws Exception {
        DiskClock c = clock.value();
        if (c == null) {
            return null;
        }
        if (c.openStarts == null) {
            c.openStarts = new long[0];
            adoptWindowsOfEarlierBuilds(c);
        }
        if (c.closedHistogramStarts == null) {
            c.closedHistogramStarts = closedHistogramStartsInState();
        }
        return c;
    }

    /** Why windows close: the disk's clock passed them, it fell silent, or the input ended. */
    private enum Closing {
        ON_ITS_CLOCK, ON_SILENCE, AT_END_OF_INPUT
    }

    /**
     * Emits, in time order, every open window of the disk (its clock `c`) that ends at or
     * before `clockMs`. A window is kept (see the class) when it closes on silence, or on
     * the disk's clock before records its disk owes for it have come; the last of those
     * closed on silence says its disk fell silent after it.
     */
    private void closeUpTo(long clockMs, Held h, Closing why, Context ctx, Collector<DiskWindow> out) throws Exception {
        DiskClock c = h.clock;
        long[] closing = c.closeOpenEndingBy(clockMs, lengthMs);
        ClosingWindows windows = closing.length == 0 ? ClosingWindows.NONE : foldClosing(closing, h);
        for (long startMs : closing) {
            ctx.timerService().deleteEventTimeTimer(startMs + lengthMs - 1);
            DiskWindow w = windows.get(startMs);
            boolean silent = why == Closing.ON_SILENCE;
            if (silent || why == Closing.ON_ITS_CLOCK && c.owesRecordsBefore(startMs + lengthMs)) {
                closedOnSilence.put(startMs, w);
                c.keptOnSilence++;
                w = w.copy();
            } else if (allowedLatenessMs > 0) {
                closedHistograms.put(startMs, new HashSet<>(w.seenHistograms));
                c.keepsHistogramsOf(startMs);
            }
            accumulate.stamped(w, startMs);
            w.lastBeforeSilence = silent && startMs == closing[closing.length - 1];
            out.collect(w);
        }
        forgetHistogramsClosedBy(clockMs - allowedLatenessMs, c);
    }

    private void forgetHistogramsClosedBy(long closedMs, DiskClock c) throws Exception {
        for (long startMs : c.histogramsClosedBy(closedMs, lengthMs)) {
            closedHistograms.remove(startMs);
        }
    }

    private long startedAt(long nowMs) {
        if (startedAtMs == DiskClock.NONE) {
            startedAtMs = nowMs;
        }
        return startedAtMs;
    }

    /**
     * From when this instance's disks may be silent and their kinds idle: its first record
     * since it started. Until one comes it waits one disk idleness for its input to resume
     * and counts from there, so that a job restored with no disk left to hear still closes
     * their windows (two idlenesses after its start).
     */
    private long inputResumedAtMs(long nowMs) {
        return firstRecordAtMs != DiskClock.NONE ? firstRecordAtMs : startedAt(nowMs) + idleMs;
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<DiskWindow> out) throws Exception {
        Held h = held(ctx.getCurrentKey());
        DiskClock c = h.clock;
        if (ctx.timeDomain() == TimeDomain.EVENT_TIME) {
            closeUpTo(timestamp + 1, h, Closing.AT_END_OF_INPUT, ctx, out);
            if (c.revisionDue) {
                reviseUpTo(c, timestamp + 1, Long.MIN_VALUE, out);
            }
            return;
        }
        c.checkAtMs = DiskClock.NONE;
        long heardMs = Math.max(c.lastHeardAtMs, inputResumedAtMs(ctx.timerService().currentProcessingTime()));
        long silentMs = timestamp - heardMs;
        if (silentMs >= idleMs) {
            if (c.revisionDue) {
                reviseUpTo(c, Long.MAX_VALUE, Long.MIN_VALUE, out);  // silent again: what came since is all there is
            }
            if (c.hasOpenWindows()) {
                // The disk went quiet: close what it sent, and move its clock past it so a straggler is not a second window.
                long lastEndMs = c.lastOpenEndMs(lengthMs);
                c.closedThroughMs = Math.max(c.closedThroughMs, lastEndMs);
                closeUpTo(lastEndMs, h, Closing.ON_SILENCE, ctx, out);
                closedIdle.inc();
            }
        } else if (c.hasOpenWindows() || c.revisionDue) {
            advance(h, timestamp, ctx, out, true);
        }
        if (silentMs >= forgetAfterMs) {
            held.remove(ctx.getCurrentKey());
            for (int list = 0; list < OPEN_RECORD_LISTS; list++) {
                letGoOfWritten(h, list);
            }
            clock.clear();
            closedHistograms.clear();
            closedOnSilence.clear();
            for (ListState<DiskRecord> list : openRecords) {
                list.clear();
            }
            openRecordsInOneList.clear();
            openWindowsOfEarlierBuilds.clear();
            return;
        }
        checkAt(c, !c.hasOpenWindows() && !c.revisionDue ? heardMs + forgetAfterMs : timestamp + kindIdleMs, ctx);
    }
}
