"""A mixed fleet of healthy disks as their agents would send it, to prove the detectors
quiet on everything that is not a seed pathology.

Each disk is one of several kinds (7200 and 15k rpm HDDs with and without track-cache
hits or write-back cache, a 5400 rpm disk streaming sequentially, SATA SSDs with rare
garbage-collection stalls, NVMe drives at queue depths below their knee, idle disks),
each with its own parameters drawn per disk, each kind one drive model, and a load that
changes every few seconds. Per second it sends what the agent would: io.diskstats.v1
counters, io.hist.v1 device, queue and total histograms per op, and io.event.v1: a thin
uniform sample and every rare I/O, or the events the agent's default sampling sends
(HealthyDisk's as_the_agent_samples, which the benchmarks' disks use). Latencies come
from the kind's physics (seek + rotation + transfer; flash service time with parallel
channels; Little's law for the rate at a depth), drawn for up to DRAWS I/Os a second of
the interval and scaled to its count, as scenarios.s6 does: the kernel's histograms count
every I/O, so an interval of 10 s draws ten times as many as one of a second, or its
histograms would carry the noise of a few dozen draws (one mode's share twice what it is).

    python3 -m iopipe.synthetic.fleet 240 > fleet.ndjson
"""
import json
import math
import random
import sys

from iopipe.contract import SAMPLING
from iopipe.synthetic import cached, scenarios
from iopipe.synthetic.agent_records import (LATENCY_KINDS, SECTOR_BYTES, AgentRecords, DiskCounters,
                                            latency_histograms, whole_ms)
from iopipe.synthetic.scenarios import SAMPLE_PHASE_NS, SECOND_NS, START_NS

DRAWS = 32
EVENT_EVERY = 8  # of the draws: a uniform sample, weighted by how many I/Os each stands for
LOAD_CHANGES_EVERY_S = 5
HOST_PREFIX = "fleet-"
DISKS_PER_HOST = 8
# The application whose I/Os the agent samples.
TASK = {"comm": "app", "pid": 4242}


class Kind:
    """How one disk serves I/O: `service_us(rng, op, size)` is one I/O's own time on the
    device; `rare` the (share, service_us) of what happens to few I/Os, drawn per I/O
    so a rare stall stays as rare as it is; `channels` how many I/Os it serves at once
    (1 for a disk arm). `model` what its agent reads from sysfs: every disk of a kind is
    one model, so a fleet's flash drives meet their model's peers as real fleets' do."""

    def __init__(self, name, model, rotational, channels, depths, read_share, size, service_us, rare=()):
        self.name, self.model, self.rotational, self.channels = name, model, rotational, channels
        self.depths, self.read_share, self.size, self.service_us = depths, read_share, size, service_us
        self.rare = rare


def rotating(rng, rpm, max_seek_ms, track_cache_hits=0.0, write_cache=False):
    """Random access on a disk arm: seek, half a revolution on average, transfer; some
    reads come from the track cache, and a write-back cache acknowledges writes at once."""
    revolution_ms = 60_000 / rpm
    mb_per_s = rng.uniform(100, 200)

    def service_us(r, op, size):
        if op == "W" and write_cache:
            return r.uniform(50, 200)
        if op == "R" and r.random() < track_cache_hits:
            return r.uniform(300, 800)
        return 1000 * (r.uniform(0.5, max_seek_ms) + r.uniform(0, revolution_ms)) + size / mb_per_s
    return service_us


def streaming(rng):
    """Sequential reads at 5400 rpm: transfer, and a head switch at each track's end (track
    skew hides the rotation)."""
    mb_per_s = rng.uniform(80, 120)

    def service_us(r, op, size):
        us = size / mb_per_s
        return us + r.uniform(500, 1200) if r.random() < 0.125 else us
    return service_us


# A recalibration or a remapped sector: rare on a healthy disk arm.
RECALIBRATION = (0.0005, lambda r: r.uniform(60_000, 160_000))


def gc_stall(share):
    """A flash drive's garbage collection holding an I/O for a few ms."""
    return (share, lambda r: r.uniform(2000, 8000))


def flash(read_mean_us, write_mean_us):
    """Flash: lognormal service times; writes land in DRAM."""
    def service_us(r, op, size):
        mean = read_mean_us if op == "R" else write_mean_us
        return r.lognormvariate(math.log(mean) - 0.06, 0.35) + size / 2000
    return service_us


def kinds(rng):
    """Every kind of healthy disk, with this disk's own parameters."""
    return [
        Kind("hdd7200", "HDD-7200-4T", True, 1, (1, 1, 2), rng.uniform(0.5, 0.9), rng.choice((4096, 16384, 65536)),
             rotating(rng, 7200, rng.uniform(6, 10), track_cache_hits=rng.uniform(0, 0.25)), [RECALIBRATION]),
        Kind("hdd7200-wb", "HDD-7200-8T-WB", True, 1, (1, 2), rng.uniform(0.3, 0.7), 16384,
             rotating(rng, 7200, rng.uniform(6, 10), write_cache=True), [RECALIBRATION]),
        Kind("hdd15k", "HDD-15K-600G", True, 1, (1, 2), rng.uniform(0.6, 0.95), rng.choice((8192, 16384)),
             rotating(rng, 15_000, rng.uniform(2, 4.5)), [RECALIBRATION]),
        Kind("hdd5400-seq", "HDD-5400-8T", True, 1, (1, 2), 1.0, 131072, streaming(rng)),
        Kind("ssd", "SSD-SATA-960G", False, 8, (1, 2, 4, 6), rng.uniform(0.5, 0.9), rng.choice((4096, 16384)),
             flash(rng.uniform(100, 250), rng.uniform(30, 60)), [gc_stall(0.001)]),
        Kind("nvme", "NVMe-3.84T", False, 32, (1, 2, 4, 8, 16), rng.uniform(0.5, 0.9), 4096,
             flash(rng.uniform(70, 110), rng.uniform(15, 30)), [gc_stall(0.0002)]),
        Kind("idle", "SSD-SATA-240G", False, 8, (0,), 0.5, 4096, flash(100, 30)),
    ]


def poisson(rng, mean):
    """How many of many I/Os, each rarely, do something: Knuth's method, or the normal
    approximation when many do."""
    if mean > 30:
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, k, p = math.exp(-mean), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def mean_of(draws):
    return sum(d + q for d, q in draws) / len(draws) if draws else 0


class HealthyDisk:
    """One disk's agent records. Its events are either a thin sample (EVENT_EVERY of its
    latency draws, each standing for its share of the I/Os: few events, for the detection
    tests' sets) or, with `as_the_agent_samples`, those the agent's default sampling sends
    (schema/sampling.json), for the benchmarks."""

    def __init__(self, rng, host, name, kind, interval_ns=SECOND_NS, as_the_agent_samples=False):
        self.rng, self.host, self.name, self.kind = rng, host, name, kind
        self.interval_ns = interval_ns  # how often its agent sends: every second by default
        self.as_the_agent_samples = as_the_agent_samples
        self.completed_before = None  # its completions in the interval before, as the agent counts them
        self.budget_left = 0  # events the agent may still send in this interval
        self.counters = DiskCounters()
        self.agent = AgentRecords(TASK, first_sector=rng.randrange(1 << 30), host=host, disk=name,
                                  rotational=kind.rotational, model=kind.model)
        self.depth = 0

    def second(self, second):
        """The records of one interval (a second by default), ending at `end`: histograms per
        op, diskstats, events."""
        end = START_NS + (second + 1) * self.interval_ns + SAMPLE_PHASE_NS
        if second % LOAD_CHANGES_EVERY_S == 0:
            self.depth = self.rng.choice(self.kind.depths)
        # The agent samples diskstats as it starts, before any interval.
        out = [self.agent.diskstats(end - self.interval_ns, self.counters, self.depth)] if second == 0 else []
        in_flight_ms = 0.0
        rate = self.depth / (self.mean_latency_us() / 1e6) if self.depth else 0
        quiet = self.quiet()
        self.budget_left = SAMPLING["event_budget"] * self.interval_ns // SECOND_NS
        completed = 0
        for op, share in (("R", self.kind.read_share), ("W", 1 - self.kind.read_share)):
            count = int(rate * share * self.interval_ns / SECOND_NS * self.rng.uniform(0.85, 1.15))
            if count == 0:
                continue
            completed += count
            rare = [self.latency(op, service) for share, service in self.kind.rare
                    for _ in range(poisson(self.rng, count * share))][:count]
            common = [self.latency(op) for _ in range(min(count - len(rare), DRAWS * self.interval_ns // SECOND_NS))]
            out.extend(self.histograms(op, end, count, common, rare))
            if self.as_the_agent_samples:
                out.extend(self.agent_events(op, end, count - len(rare), common, rare, quiet))
            else:
                out.extend(self.sampled_events(op, end, count - len(rare), common))
                out.extend(self.outlier_events(op, end, rare))
            latency_ms = (mean_of(common) * (count - len(rare)) + sum(d + q for d, q in rare)) / 1000
            self.counters.complete(op, count, count * self.kind.size // SECTOR_BYTES, whole_ms(latency_ms))
            in_flight_ms += latency_ms
        self.completed_before = completed
        self.add_busy_time(in_flight_ms)
        out.append(self.agent.diskstats(end, self.counters, self.depth))
        return out

    def add_busy_time(self, in_flight_ms):
        """weighted_io_time grows by the time each I/O was in flight; io_time by the time at
        least one was: with L in flight on average, a disk arm is busy L/(1+L) of the time
        (M/M/1), a device of many channels 1 - e^-L of it (Poisson arrivals)."""
        interval_ms = self.interval_ns / 1e6
        mean_in_flight = in_flight_ms / interval_ms
        if self.kind.channels == 1:
            busy = mean_in_flight / (1 + mean_in_flight)
        else:
            busy = 1 - math.exp(-mean_in_flight)
        self.counters.add_busy(whole_ms(interval_ms * busy), whole_ms(in_flight_ms))

    def mean_latency_us(self):
        return sum(sum(self.latency(op)) for op in "RWRWRWRW") / 8

    def latency(self, op, rare_service=None):
        """(device, queue) µs of one I/O at this second's depth: a disk arm serves the
        I/Os ahead of it first; flash serves up to `channels` at once, a little slower."""
        k = self.kind
        own = rare_service(self.rng) if rare_service else k.service_us(self.rng, op, k.size)
        if k.channels == 1:
            ahead = sum(k.service_us(self.rng, op, k.size) for _ in range(max(0, self.depth - 1)))
            device = own + ahead * self.rng.uniform(0.5, 1.0)
        else:
            device = own * (1 + 0.02 * max(0, self.depth - 1))
        return int(device), int(self.rng.uniform(2, 20))

    def histograms(self, op, end, count, common, rare):
        """The common I/Os' draws scaled to their count, plus each rare I/O as itself."""
        hists = latency_histograms(common)
        for kind, hist in hists.items():
            if common:
                hist.scale_to(count - len(rare))
            hist.add(LATENCY_KINDS[kind](device, queue) for device, queue in rare)
        return self.agent.histograms(op, end - self.interval_ns, end, hists)

    def sampled_events(self, op, end, count, draws):
        """The agent's uniform sample: a few of the common I/Os, each standing for its share of them."""
        chosen = draws[::EVENT_EVERY]
        return self.agent.spread_events(op, end, self.interval_ns,
                                        [self.sampled(d, "uniform", count / len(chosen)) for d in chosen])

    def quiet(self):
        """Whether the agent finds the disk quiet: fewer completions than quiet_ios a second
        in the interval before (it counts the last second; here the interval's mean)."""
        if self.completed_before is None or not SAMPLING["quiet_ios"]:
            return False
        return self.completed_before * SECOND_NS / self.interval_ns < SAMPLING["quiet_ios"]

    def agent_events(self, op, end, common_count, common, rare, quiet):
        """The events the agent's default sampling sends of one op's I/Os in the interval:
        every I/O of a quiet disk (its draws are every I/O then: a quiet disk has fewer than
        DRAWS a second); else each rare I/O as an outlier and about 1 in uniform_every of the
        others, each standing for uniform_every; at most the disk's event budget, both ops
        together. Left out: the common I/Os past the disk's outlier quantile (at most
        1 - outlier_quantile of them, as many again as the uniform sample at the default
        settings) and flight recordings, which a healthy disk's outliers do not cluster
        enough to start."""
        if quiet and len(common) == common_count:
            events = [self.sampled(d, "recorder", 1) for d in common + rare]
        else:
            every = SAMPLING["uniform_every"]
            uniform = poisson(self.rng, common_count / every) if every and common else 0
            events = ([self.sampled(d, "outlier", 1) for d in rare]
                      + [self.sampled(self.rng.choice(common), "uniform", every) for _ in range(uniform)])
        events = events[:self.budget_left]
        self.budget_left -= len(events)
        return self.agent.spread_events(op, end, self.interval_ns, events)

    def outlier_events(self, op, end, rare):
        """The agent sends every outlier as itself: a rare I/O never stands for common ones."""
        return self.agent.spread_events(op, end, self.interval_ns, [self.sampled(d, "outlier", 1) for d in rare])

    def sampled(self, draw, reason, weight):
        """A drawn I/O as AgentRecords.spread_events takes it."""
        device, queue = draw
        return self.kind.size, device, queue, self.depth, reason, weight


def disk_name(kind, index):
    """The disk's name on its host: `index` is its place there, below DISKS_PER_HOST."""
    if kind.rotational:
        return "sd" + chr(ord("a") + index % 26)
    return f"nvme{index}n1" if kind.name == "nvme" else f"sd{chr(ord('a') + index % 26)}"


def healthy_disks(disks, seed=1, as_the_agent_samples=False):
    """`disks` healthy disks, DISKS_PER_HOST to a host, the kinds in turn (HealthyDisk says
    what `as_the_agent_samples` changes)."""
    rng = random.Random(seed)
    fleet = []
    for d in range(disks):
        options = kinds(rng)
        kind = options[d % len(options)]
        fleet.append(HealthyDisk(random.Random(rng.random()), f"{HOST_PREFIX}{d // DISKS_PER_HOST:03d}",
                                 disk_name(kind, d % DISKS_PER_HOST), kind, as_the_agent_samples=as_the_agent_samples))
    return fleet


def healthy_fleet(disks, seconds, seed=1):
    """The records of `disks` healthy disks (healthy_disks) over `seconds`, in time order."""
    fleet = healthy_disks(disks, seed)
    out = []
    for second in range(seconds):
        for disk in fleet:
            out.extend(disk.second(second))
    return out


def mixed_fleet(disks, seconds, seed=1):
    """The healthy fleet plus every seed scenario's disks, in one time-ordered stream."""
    records = healthy_fleet(disks, seconds, seed)
    for name in scenarios.SCENARIOS:
        records.extend(scenarios.generate(name, seed))
    return sorted(records, key=scenarios.time_of)


def mixed_fleet_file(disks, seconds, seed=1):
    """The mixed fleet's records as a file, generated once for each version of what
    generates them and kept in the cache."""
    return cached.records_file("fleet", f"mixed-{disks}-disks-{seconds}-s", f"{disks} {seconds} {seed}",
                               lambda: mixed_fleet(disks, seconds, seed))


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 240
    for record in mixed_fleet(count, 150):
        print(json.dumps(record, separators=(",", ":")))
