"""The seed scenarios S1-S6 as generated agent records: each one's disks in its function
(s1 ... s6, SCENARIOS), the verdicts each must raise in integration-tests/test_scenarios.py.

Each disk is simulated I/O by I/O where the seeds describe single I/Os (S1-S5): a
device serving requests one at a time in arrival order, its service times drawn from
the physics the seeds give (seek + rotation, retries one revolution apart, a dusty
disk's 100 ms-2 s). The records are what the agent would send for that I/O stream:
io.diskstats.v1 every second (counters integrated from the I/Os, as the kernel does),
io.hist.v1 per second, op and latency kind, and every I/O as an io.event.v1 (as a
converted biosnoop capture sends them). S6 runs at 7k-131k IOPS, so it is generated
per second as the kernel's histograms would count it, without events.

    python3 -m iopipe.synthetic.scenarios S3 > s3.ndjson && make detect INPUT=s3.ndjson OUTPUT=out.ndjson
"""
import bisect
import heapq
import json
import math
import random
import sys
import time

from iopipe.contract import moved_in_time
from iopipe.synthetic.agent_records import (MS_NS, SECTOR_BYTES, US_NS, AgentRecords, DiskCounters, Log2Histogram,
                                            latency_histograms, whole_ms)

START_NS = 1_763_700_000_000_000_000  # a multiple of every window length
SECOND_NS = 1_000_000_000
# The agent samples on its own clock, not on window edges: an interval then falls in
# the window that holds its I/Os' completions, give or take the interval at each edge.
SAMPLE_PHASE_NS = 400_000_000
REVOLUTION_7200_MS = 60_000 / 7200
# What a converted biosnoop capture names as the task of each I/O: the generator.
TASK = {"comm": "gen", "pid": 1}


class Io:
    __slots__ = ("op", "bytes", "sector", "arrive_ns", "issue_ns", "complete_ns", "inflight", "error")

    def __init__(self, op, size, sector, arrive_ns):
        self.op, self.bytes, self.sector, self.arrive_ns = op, size, sector, arrive_ns
        self.issue_ns = arrive_ns  # dispatched at once: any waiting happens inside the device
        self.complete_ns = 0
        self.inflight = 0
        self.error = 0


class SerialDisk:
    """A device that serves one request at a time, in arrival order (an HDD without
    command reordering): an I/O's device time is the wait for those ahead plus its own
    service time."""

    def __init__(self, service_ms):
        self.service_ms = service_ms
        self.free_at_ns = 0
        self.in_device = []  # completion times of I/Os dispatched and not yet complete

    def submit(self, io):
        while self.in_device and self.in_device[0] <= io.issue_ns:
            heapq.heappop(self.in_device)
        io.inflight = len(self.in_device) + 1
        begin = max(io.issue_ns, self.free_at_ns)
        io.complete_ns = begin + int(self.service_ms(io) * MS_NS)
        self.free_at_ns = io.complete_ns
        heapq.heappush(self.in_device, io.complete_ns)
        return io


def closed_loop(disk, streams, seconds, make_io, think_ms=lambda: 0.0):
    """`streams` synchronous issuers: each submits its next I/O when its last one completes."""
    end_ns = START_NS + seconds * SECOND_NS
    ready = [(START_NS + i * 1000, i) for i in range(streams)]
    ios = []
    while ready:
        at, stream = heapq.heappop(ready)
        if at >= end_ns:
            continue
        io = disk.submit(make_io(at))
        ios.append(io)
        heapq.heappush(ready, (io.complete_ns + int(think_ms() * MS_NS), stream))
    return ios


def poisson(disk, rate_per_s, seconds, make_io, rng, start_s=0):
    ios = []
    t = START_NS + start_s * SECOND_NS
    end_ns = START_NS + seconds * SECOND_NS
    while True:
        t += int(rng.expovariate(rate_per_s) * SECOND_NS)
        if t >= end_ns:
            return ios
        ios.append(disk.submit(make_io(t)))


def records_of(host, disk, rotational, ios, seconds, with_events=True):
    """The agent's records of one disk's I/Os: diskstats and histograms every second, events."""
    agent, counters = AgentRecords(TASK, host=host, disk=disk, rotational=rotational), DiskCounters()
    out = []
    ios = sorted(ios, key=lambda io: io.complete_ns)
    completions = [io.complete_ns for io in ios]
    busy = BusyTime(ios)
    counted = 0
    for second in range(seconds):
        t = START_NS + second * SECOND_NS + SAMPLE_PHASE_NS
        done = bisect.bisect_right(completions, t)
        for io in ios[counted:done]:
            counters.complete(io.op, 1, io.bytes // SECTOR_BYTES, io.complete_ns - io.arrive_ns)
        counted = done
        counters.add_busy(busy.busy_ns(t) - counters.busy_ns, busy.weighted_ns(t) - counters.weighted_ns)
        out.append(agent.diskstats(t, counters, sum(1 for io in ios if io.arrive_ns <= t < io.complete_ns)))
        if second > 0:
            out.extend(histograms(agent, t - SECOND_NS, t, ios[bisect.bisect_right(completions, t - SECOND_NS):done]))
    if with_events:
        out.extend(event(agent, io) for io in ios if io.complete_ns <= START_NS + seconds * SECOND_NS)
    return out


class BusyTime:
    """io_time_ms and weighted_io_time_ms as the kernel integrates them: time with at least
    one I/O in flight, and the integral of the number in flight."""

    def __init__(self, ios):
        self.spans = sorted((io.arrive_ns, io.complete_ns) for io in ios)
        self.union = []
        for begin, end in self.spans:
            if self.union and begin <= self.union[-1][1]:
                self.union[-1][1] = max(self.union[-1][1], end)
            else:
                self.union.append([begin, end])

    def busy_ns(self, t):
        return sum(max(0, min(end, t) - begin) for begin, end in self.union if begin < t)

    def weighted_ns(self, t):
        return sum(max(0, min(end, t) - begin) for begin, end in self.spans if begin < t)


def histograms(agent, start_ns, end_ns, interval):
    """The interval's histograms per op and latency kind, each I/O's times to the µs."""
    out = []
    for op in sorted({io.op for io in interval}):
        mine = [io for io in interval if io.op == op]
        times = [(io.complete_ns - io.issue_ns, io.issue_ns - io.arrive_ns) for io in mine]
        hists = latency_histograms(times, to_us=lambda ns: ns // US_NS)
        out.extend(agent.histograms(op, start_ns, end_ns, hists, errors=sum(1 for io in mine if io.error)))
    return out


def event(agent, io):
    """The I/O as a capture of every I/O sends it."""
    return agent.event(op=io.op, bytes=io.bytes, sector=io.sector, issue_ns=io.issue_ns, complete_ns=io.complete_ns,
                       queue_ns=io.issue_ns - io.arrive_ns, inflight=io.inflight, error=io.error,
                       sample_reason="all", sample_weight=1)


def random_reads(rng, size, op="R", blocks=1 << 28):
    return lambda at: Io(op, size, rng.randrange(blocks) * (size // SECTOR_BYTES), at)


def sequential_reads(size):
    """One reader going through the disk in order, like dd."""
    position = [0]

    def next_read(at):
        position[0] += size // SECTOR_BYTES
        return Io("R", size, position[0], at)
    return next_read


def seek_and_rotate(rng, max_seek_ms, revolution_ms=REVOLUTION_7200_MS):
    """A random access: a seek across part of the disk, then half a revolution on average."""
    return rng.uniform(0.5, max_seek_ms) + rng.uniform(0, revolution_ms)


def healthy_hdd(rng, host, disk, seconds, size=16384):
    """S4: a 7200 rpm disk doing random reads at a queue of one, with the rare long
    recalibration a healthy disk has (its max over the test: 160 ms)."""
    def service(io):
        if rng.random() < 0.0005:
            return rng.uniform(60, 160)
        return seek_and_rotate(rng, 7.2) + 0.1
    return records_of(host, disk, True, closed_loop(SerialDisk(service), 1, seconds, random_reads(rng, size)), seconds)


def dusty_disk(rng, host, disk, seconds):
    """A dusty disk answering in 100 ms-2 s to one dd stream (two in flight with readahead)."""
    def dusty(io):
        if rng.random() < 0.005:
            return rng.uniform(2000, 3500)
        return rng.lognormvariate(math.log(150), 0.55)
    return records_of(host, disk, True, closed_loop(SerialDisk(dusty), 2, seconds, sequential_reads(131072)), seconds)


def s1(rng):
    """The dusty disk beside a healthy NVMe and a device-mapper volume on it."""
    seconds = 60
    flash = lambda io: min(8.0, max(0.008, rng.lognormvariate(math.log(4.0), 0.6)))
    sdb = dusty_disk(rng, "s1", "sdb", seconds)
    nvme = poisson(SerialDisk(flash), 20, seconds, random_reads(rng, 4096), rng)
    dm = poisson(SerialDisk(flash), 15, seconds, random_reads(rng, 4096), rng)
    return (sdb + records_of("s1", "nvme0n1", False, nvme, seconds)
            + records_of("s1", "dm-0", False, dm, seconds))


def s2(rng):
    """Retries: most reads take 1.57-2.55 ms; a retried one waits a whole revolution more
    per retry (8.33 ms at 7200 rpm)."""
    seconds = 90
    def service(io):
        ms = rng.uniform(1.57, 2.55)
        while rng.random() < (0.08 if ms < 3 else 0.3):
            ms += REVOLUTION_7200_MS + rng.uniform(-0.1, 0.1)
        return ms
    return records_of("s2", "sdc", True, closed_loop(SerialDisk(service), 1, seconds, sequential_reads(131072)), seconds)


def s3(rng):
    """A near-idle disk and fsflush: every 30 s, 11 writes of 8 KiB to random blocks,
    dispatched within 1.5 ms, served one after another at ~19 ms each."""
    seconds = 120
    disk = SerialDisk(lambda io: rng.uniform(13, 25) if io.op == "W" else seek_and_rotate(rng, 8))
    arrivals = [("R", START_NS + int(rng.uniform(0, seconds) * SECOND_NS)) for _ in range(int(1.3 * seconds))]
    arrivals += [("W", START_NS + int(rng.uniform(0, seconds) * SECOND_NS)) for _ in range(int(0.3 * seconds))]
    for burst_s in range(15, seconds, 30):
        arrivals += [("W", START_NS + burst_s * SECOND_NS + int(k * 0.14 * MS_NS)) for k in range(11)]
    arrivals.sort(key=lambda a: a[1])
    ios = [disk.submit(Io(op, 8192, rng.randrange(1 << 24) * 16, at)) for op, at in arrivals]
    return records_of("s3", "sd2", True, ios, seconds)


def s4(rng):
    """A healthy 7200 rpm disk at a queue of one: %util 100, 8 ms per read."""
    return healthy_hdd(rng, "s4", "sdb", 60)


def s5(rng):
    """A fail-slow suspect: ordinary service times (a few track-cache hits from 0.58 ms),
    but its device-time tail reaches past a second, beside a healthy sibling."""
    seconds = 30
    long_ones = [1050.0, 1152.8]

    def service(io):
        if long_ones and io.arrive_ns >= START_NS + (8 + 14 * (2 - len(long_ones))) * SECOND_NS:
            return long_ones.pop(0)
        draw = rng.random()
        if draw < 0.05:
            return rng.uniform(0.58, 1.0)
        if draw < 0.054:
            return rng.uniform(100, 400)
        return seek_and_rotate(rng, 10.5) + 0.2
    mixed = lambda at: Io("W" if rng.random() < 0.55 else "R", 16384, rng.randrange(1 << 28) * 32, at)
    sdf = closed_loop(SerialDisk(service), 1, seconds, mixed)
    return records_of("s5", "sdf", True, sdf, seconds) + healthy_hdd(rng, "s5", "sdb", seconds)


# S6: (threads, mean latency ms, lognormal sigma from the seed's p95/mean)
S6_SWEEP = [(1, 0.14, 0.12), (4, 0.15, 0.2), (16, 0.21, 0.3), (64, 0.50, 0.4), (256, 1.95, 0.42)]
S6_PHASE_S = 30
S6_DRAWS = 4000
S6_READ_BYTES = 16384


def s6(rng):
    """An NVMe under 1 to 256 threads of 16 KiB random reads, 30 s each: per second, the
    kernel's histograms of rate × latency draws (Little's law: rate = depth / latency)."""
    agent, counters = AgentRecords(TASK, host="s6", disk="nvme0n1", rotational=False), DiskCounters()
    out = [agent.diskstats(START_NS + SAMPLE_PHASE_NS, counters, 0)]
    second = 0
    for threads, mean_ms, sigma in S6_SWEEP:
        mu = math.log(mean_ms * 1000) - sigma * sigma / 2
        rate = int(threads / (mean_ms / 1000))
        for _ in range(S6_PHASE_S):
            start, second = START_NS + second * SECOND_NS + SAMPLE_PHASE_NS, second + 1
            hist = Log2Histogram(int(rng.lognormvariate(mu, sigma)) for _ in range(S6_DRAWS))
            hist.scale_to(rate)
            out.append(agent.histogram("R", "device", start, start + SECOND_NS, hist))
            counters.complete("R", rate, rate * S6_READ_BYTES // SECTOR_BYTES, whole_ms(hist.sum_us // 1000))
            counters.add_busy(whole_ms(min(1000, rate * mean_ms)), whole_ms(rate * mean_ms))
            out.append(agent.diskstats(start + SECOND_NS, counters, threads))
    return out


SCENARIOS = {"S1": s1, "S2": s2, "S3": s3, "S4": s4, "S5": s5, "S6": s6}


def time_of(record):
    """When what a record describes ended: the event time the job windows it by."""
    return record.get("ts_ns") or record.get("end_ns") or record["complete_ns"]


def generate(name, seed=1):
    return sorted(SCENARIOS[name](random.Random(seed)), key=time_of)


def shifted_to_now(records):
    """The records moved to the present, on a whole minute, so the live job's windows and
    the tables' partitions see today's data."""
    first = min(time_of(r) for r in records)
    shift = (time.time_ns() - first) // (60 * SECOND_NS) * (60 * SECOND_NS)
    return [moved_in_time(r, shift) for r in records]


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in SCENARIOS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(SCENARIOS)}}} [seed] > records.ndjson")
    for record in generate(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1):
        print(json.dumps(record, separators=(",", ":")))
