"""The precision set: a fleet that looks like production, to prove the detectors quiet on
healthy disks whose load is bursty, and awake on the pathologies injected beside them.

Healthy: every kind of fleet.py, and the bursts real fleets show: NVMe drives fed a
batch of I/Os at once every few tens of ms (depth 32-128: the device queues them inside,
its writes wait on its buffer), disk arms behind bursts of 8-32 requests (an fsync storm,
a checkpoint: 10-100 ms at the back of the queue), and writeback flushing a few hundred
large writes every 5 s in front of the reads. Sizes are mixed: small reads, large writes.
Each burst is served I/O by I/O by an exact FIFO model of the device (its channels and
queue depth), so every I/O's device time, queue time and requests in flight at dispatch
are what they would be. Pathologies: NVMe drives slow at 5, 10 and 25 times their
class's service time, and an NVMe whose load ramps in depth 1, 4, 32, 128 with steps that
do not fall on window edges, latency rising with depth (saturation).

Agents here send every 10 s (`--interval-ms 10000`), so 30 minutes of 2,000 disks stays a
few million records; those of the disk arms behind bursts every second, the agent's
default, each interval with its diskstats sample: whether a slower mode is a burst's queue
or retries shows in when in a window its I/Os came, which one interval a window hides.

    python3 -m iopipe.synthetic.precision 2000 > precision.ndjson   # then make detect
    make evaluate-precision   # generate, judge with make detect, tally: integration-tests/PRECISION.md
"""
import argparse
import collections
import heapq
import json
import math
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from iopipe.paths import REPO
from iopipe.synthetic import cached, fleet
from iopipe.synthetic.agent_records import SECTOR_BYTES, AgentRecords, DiskCounters, latency_histograms, whole_ms
from iopipe.synthetic.scenarios import SAMPLE_PHASE_NS, SECOND_NS, START_NS

INTERVAL_NS = 10 * SECOND_NS
MINUTES = 30
# The agent's sampling defaults (iopipe-agent run --help): 1 in --uniform-every I/Os, every
# outlier past --outlier-quantile's log2 bucket or --outlier-ceiling-ms, every I/O of a disk
# completing fewer than --quiet-ios a second.
UNIFORM_EVERY = 1000
OUTLIER_QUANTILE = 0.999
OUTLIER_CEILING_US = 500_000
QUIET_IOS = 20
HOST_PREFIX = "prec-"


def serve(arrivals, channels, device_depth, service_us):
    """Exact FIFO service: `arrivals` [(arrive_us, op, size)] in time order reach the block
    layer; at most `device_depth` are at the device at once (the rest wait: queue time),
    which serves `channels` at a time. Each I/O's (op, size, device_us, queue_us, inflight,
    arrive_us), device time counted from dispatch to completion as the kernel counts it,
    inflight the I/Os at the device when it was dispatched, itself included."""
    at_device = []  # completion times of the I/Os at the device
    channel_free = [0.0] * channels
    done = []
    for arrive, op, size in arrivals:
        while at_device and at_device[0] <= arrive:
            heapq.heappop(at_device)
        dispatch = arrive
        if len(at_device) >= device_depth:
            dispatch = heapq.heappop(at_device)
            while at_device and at_device[0] <= dispatch:
                heapq.heappop(at_device)
        start = max(dispatch, heapq.heappop(channel_free))
        complete = start + service_us(op, size)
        heapq.heappush(channel_free, complete)
        heapq.heappush(at_device, complete)
        done.append((op, size, complete - dispatch, dispatch - arrive, len(at_device), arrive))
    return done


def busy_us(ios):
    """How long at least one of `ios` was in flight (io_time): the union of their spans from
    arrival to completion, not their sum, which counts overlapping I/Os twice."""
    busy, reach = 0.0, None
    for start, end in sorted((io[5], io[5] + io[3] + io[2]) for io in ios):
        if reach is None or start > reach:
            busy += end - start
            reach = end
        elif end > reach:
            busy += end - reach
            reach = end
    return busy


def completing_in_parts(ios, parts, span_s):
    """`ios` (as `serve` returns them) in `parts` equal slices of the span by completion
    time; those completing after the span in the last."""
    if parts == 1:
        return [ios]
    out = [[] for _ in range(parts)]
    for io in ios:
        completed_us = io[5] + io[3] + io[2]
        out[min(parts - 1, int(completed_us / (span_s * 1e6) * parts))].append(io)
    return out


class Workload:
    """What a disk is asked to do over one span: (arrive_us, op, size) in time order.
    `agent_intervals`: how many histogram intervals its agent sends per INTERVAL_NS (1
    keeps the set small; a disk whose verdict depends on when in a window its I/Os came
    gets the agent's default of one a second)."""

    def __init__(self, channels, device_depth, service_us, arrivals, simulated_s, rotational, model, agent_intervals=1):
        self.channels, self.device_depth, self.service_us = channels, device_depth, service_us
        self.arrivals, self.simulated_s = arrivals, simulated_s
        self.rotational, self.model = rotational, model
        self.agent_intervals = agent_intervals


def poisson_reads(rng, rate, span_s, sizes):
    """Reads arriving at random, `rate` a second on average, over `span_s`: (µs, "R", bytes) each."""
    out, t = [], 0.0
    while True:
        t += rng.expovariate(rate) * 1e6
        if t >= span_s * 1e6:
            return out
        out.append((t, "R", rng.choice(sizes)))


def nvme_batches(rng):
    """An application submitting a batch of 32-128 I/Os at once every 20-100 ms (a
    database flushing its pages, a queue consumer): an NVMe of 32 channels serves them,
    the last of a batch waiting inside the device; writes land in a DRAM buffer of 48
    slots, beyond which each waits for a flash program (~1 ms)."""
    batch, every_ms = rng.choice((32, 64, 128)), rng.uniform(20, 100)
    read_share, read_us, write_us = rng.uniform(0.3, 0.8), rng.uniform(70, 110), rng.uniform(15, 30)
    pending_writes = []

    def service_us(op, size):
        if op == "R":
            return rng.lognormvariate(math.log(read_us), 0.3) + size / 3000
        # The buffer drains at the flash's pace: a burst of writes beyond it waits.
        pending_writes.append(0)
        over = len(pending_writes) > 48
        if len(pending_writes) >= batch:
            pending_writes.clear()
        return rng.lognormvariate(math.log(write_us), 0.3) + (rng.uniform(800, 1300) if over else 0)

    def arrivals(span_s):
        out, t = [], rng.uniform(0, every_ms) * 1000
        while t < span_s * 1e6:
            for i in range(batch):
                op = "R" if rng.random() < read_share else "W"
                out.append((t + i * 0.5, op, 4096 if op == "R" else rng.choice((4096, 16384, 131072))))
            t += every_ms * 1000 * rng.uniform(0.8, 1.2)
        return out
    return Workload(32, 1023, service_us, arrivals, 0.25, False, "NVMe-batch-1T")


def disk_arm_bursts(rng):
    """A 7200 rpm disk with NCQ (32 deep): steady small reads, most of them on a hot region
    (short seeks), a share served from the drive's buffer (its read-ahead), and every 2-6 s
    a burst of 8-32 requests at once (an fsync storm, a checkpoint) that queue at the arm,
    the last of them 10-100 ms behind. Every read from the platter, however short its seek,
    then waits for its sector to come round: uniformly up to a revolution."""
    rate, hot_region, buffer_hits = rng.uniform(30, 80), rng.uniform(0.5, 1.1), rng.uniform(0.1, 0.5)
    revolution_ms = 60_000 / 7200

    def service_us(op, size):
        if op == "R" and size <= 16384:
            if rng.random() < buffer_hits:
                return 1000 * rng.uniform(0.15, 0.4) + size / 600
            if rng.random() < 0.8:
                return 1000 * (rng.uniform(hot_region * 0.6, hot_region) + rng.uniform(0, revolution_ms)) + size / 150
        return 1000 * (rng.uniform(0.5, 8) + rng.uniform(0, revolution_ms)) + size / 150

    def arrivals(span_s):
        out = poisson_reads(rng, rate, span_s, (4096, 8192, 16384))
        burst_at = rng.uniform(0, 4e6)
        while burst_at < span_s * 1e6:
            size = rng.randint(8, 32)
            out.extend((burst_at + i * 10, rng.choice("RW"), rng.choice((65536, 262144))) for i in range(size))
            burst_at += rng.uniform(2, 6) * 1e6
        return sorted(out)
    return Workload(1, 32, service_us, arrivals, 10, True, "HDD-7200-bursts", agent_intervals=10)


def writeback(rng):
    """A SATA SSD (8 channels, NCQ 32 deep) reading small blocks at a steady rate while
    writeback flushes 64-256 writes of 128 KiB-1 MiB every 5 s: the reads behind a flush
    wait in the block layer, then at the device."""
    rate, flush = rng.uniform(20, 60), rng.randint(64, 256)
    read_us, write_us_per_kib = rng.uniform(100, 200), rng.uniform(1.5, 3)

    def service_us(op, size):
        if op == "R":
            return rng.lognormvariate(math.log(read_us), 0.3)
        return write_us_per_kib * size / 1024 * rng.uniform(0.8, 1.2)

    def arrivals(span_s):
        out = poisson_reads(rng, rate, span_s, (4096, 16384))
        first = rng.uniform(0, 5e6)
        for k in range(int(span_s / 5) + 1):
            at = first + k * 5e6
            if at < span_s * 1e6:
                out.extend((at + i * 2, "W", rng.choice((131072, 524288, 1048576))) for i in range(flush))
        return sorted(out)
    return Workload(8, 32, service_us, arrivals, 10, False, "SSD-writeback")


def fail_slow_flash(factor):
    """An NVMe whose every I/O takes `factor` times its class's: a failing controller or
    worn flash retrying reads; at 25x a few I/Os stall for over a second."""
    def make(rng):
        read_us, depth = rng.uniform(70, 110), rng.choice((1, 2, 4))

        def service_us(op, size):
            if factor >= 25 and rng.random() < 0.0005:
                return rng.uniform(1.1e6, 2e6)
            return factor * rng.lognormvariate(math.log(read_us), 0.3)

        def arrivals(span_s):
            # Closed loop at `depth`: as many I/Os as the slow drive completes.
            per_s = depth / (factor * read_us / 1e6)
            n = min(int(per_s * span_s), 4000)
            return [(i * span_s * 1e6 / n, "R", 4096) for i in range(n)]
        return Workload(32, 1023, service_us, arrivals, 1, False, "NVMe-batch-1T")
    return make


def ramp(rng, phase_s=7):
    """An NVMe whose load steps in depth 1, 4, 32, 128 every 15 s from `phase_s` on (not on
    window edges), and repeats; its latency rises with depth past its knee (about 94 us at
    1, 16 times that at 128). A closed loop at each depth: every I/O is dispatched with
    `depth` in flight; one draw stands for DRAW_WEIGHT of its I/Os."""
    base = rng.uniform(85, 100)

    def ios(span_s, start_s):
        out = []
        for slice_index in range(int(span_s / RAMP_SLICE_S)):
            t = start_s + slice_index * RAMP_SLICE_S
            depth = (1, 4, 32, 128)[int((t - phase_s) // 15) % 4] if t >= phase_s else 1
            latency_us = base * (1 + (depth - 1) / 8.5)
            draws = max(1, round(depth / (latency_us / 1e6) * RAMP_SLICE_S / DRAW_WEIGHT))
            out.extend(("R", 16384, rng.lognormvariate(math.log(latency_us), 0.2), rng.uniform(2, 8), depth)
                       for _ in range(draws))
        return out
    w = Workload(32, 1023, None, None, INTERVAL_NS / SECOND_NS, False, "NVMe-ramp")
    w.direct, w.weight = ios, DRAW_WEIGHT
    return w


DRAW_WEIGHT = 100
RAMP_SLICE_S = 0.25


class SimulatedDisk:
    """One disk whose I/Os are served by `serve`, one interval at a time: the interval's
    I/Os (or a slice of them, scaled) give its histograms, events and diskstats."""

    def __init__(self, rng, host, name, workload):
        self.rng, self.host, self.name, self.w = rng, host, name, workload
        self.counters = DiskCounters()
        self.agent = AgentRecords(fleet.TASK, first_sector=rng.randrange(1 << 30), host=host, disk=name,
                                  rotational=workload.rotational, model=workload.model)
        self.sampling = random.Random(rng.random())

    def second(self, index):
        """The records of interval `index` (named as fleet.HealthyDisk's)."""
        end = START_NS + (index + 1) * INTERVAL_NS + SAMPLE_PHASE_NS
        w = self.w
        span_s = w.simulated_s
        if hasattr(w, "direct"):
            ios, scale = w.direct(span_s, index * INTERVAL_NS / SECOND_NS), w.weight
        else:
            ios = serve(w.arrivals(span_s), w.channels, w.device_depth, w.service_us)
            scale = INTERVAL_NS / SECOND_NS / span_s
        # The agent samples diskstats as it starts, before any interval.
        out = [self.agent.diskstats(end - INTERVAL_NS, self.counters, 0)] if index == 0 else []
        # Each of the agent's intervals: its histograms and events, then its diskstats sample.
        parts = getattr(w, "agent_intervals", 1)
        part_ns = INTERVAL_NS // parts
        for part, part_ios in enumerate(completing_in_parts(ios, parts, span_s)):
            part_end = end - INTERVAL_NS + (part + 1) * part_ns
            for op in ("R", "W"):
                mine = [io for io in part_ios if io[0] == op]
                if mine:
                    count = round(len(mine) * scale)
                    out.extend(self.histograms(op, part_end, part_ns, mine, count))
                    out.extend(self.events(op, part_end, part_ns, mine, count))
                    self.add(op, mine, count)
            interval_ms = part_ns / 1e6
            in_flight_ms = sum(io[2] + io[3] for io in part_ios) / 1000 * scale
            if hasattr(w, "direct"):  # a closed loop: always something in flight
                busy = min(1.0, in_flight_ms / interval_ms)
            else:
                busy = min(1.0, busy_us(part_ios) / 1000 * scale / interval_ms)
            self.counters.add_busy(whole_ms(interval_ms * busy), whole_ms(in_flight_ms))
            out.append(self.agent.diskstats(part_end, self.counters, part_ios[-1][4] if part_ios else 0))
        return out

    def histograms(self, op, end, interval_ns, ios, count):
        """The histograms of `ios`, scaled to the `count` I/Os they stand for."""
        hists = latency_histograms([(io[2], io[3]) for io in ios])
        for hist in hists.values():
            hist.scale_to(count)
        return self.agent.histograms(op, end - interval_ns, end, hists)

    def events(self, op, end, interval_ns, ios, count):
        """The interval's events as the agent samples them (its default settings): every I/O
        of a quiet disk (fewer than QUIET_IOS a second); else every outlier (device time past
        the log2 bucket of the interval's 99.9th percentile, or total time past the ceiling)
        and 1 in UNIFORM_EVERY of the others, weighted by it. A drawn I/O stands for `count`
        / len(ios) of the disk's; its flight recorder is left out."""
        scale = count / len(ios)
        if count < QUIET_IOS * interval_ns / SECOND_NS:
            picked = [(io, "all", scale) for io in ios]
        else:
            device = sorted(io[2] for io in ios)
            p999 = device[min(len(device) - 1, int(OUTLIER_QUANTILE * len(device)))]
            past_bucket = 1 << int(p999).bit_length()
            picked = []
            for io in ios:
                if io[2] >= past_bucket or io[2] + io[3] > OUTLIER_CEILING_US:
                    picked.append((io, "outlier", scale))
                elif self.sampling.random() < scale / UNIFORM_EVERY:
                    picked.append((io, "uniform", float(UNIFORM_EVERY)))
        sampled = [(size, device_us, queue_us, inflight, reason, weight)
                   for (_, size, device_us, queue_us, inflight, *_), reason, weight in picked]
        return self.agent.spread_events(op, end, interval_ns, sampled)

    def add(self, op, ios, count):
        """`ios` completed, standing for `count` of the disk's: their sectors and time scaled alike."""
        scale = count / len(ios)
        self.counters.complete(op, count, int(sum(io[1] for io in ios) * scale) // SECTOR_BYTES,
                               whole_ms(sum(io[2] + io[3] for io in ios) * scale / 1000))


BURSTY = {"nvme-batches": nvme_batches, "hdd-bursts": disk_arm_bursts, "writeback": writeback}
PATHOLOGIES = {"fail-slow-5x": fail_slow_flash(5), "fail-slow-10x": fail_slow_flash(10),
               "fail-slow-25x": fail_slow_flash(25), "saturation-ramp": ramp}
# What each pathology must raise.
EXPECTED_KIND = {"fail-slow-5x": "failing_disk", "fail-slow-10x": "failing_disk", "fail-slow-25x": "failing_disk",
                 "saturation-ramp": "saturation"}


def disks(count, seed=1):
    """`count` healthy disks (fleet.py's kinds and the bursty ones in turn, fleet.DISKS_PER_HOST
    to a host) and one host of every pathology: [(kind name, disk)]."""
    rng = random.Random(seed)
    out = []
    for d in range(count):
        steady = fleet.kinds(rng)
        kinds = [k.name for k in steady] + list(BURSTY)
        name = kinds[d % len(kinds)]
        host = f"{HOST_PREFIX}{d // fleet.DISKS_PER_HOST:04d}"
        disk_rng = random.Random(rng.random())
        if name in BURSTY:
            disk = SimulatedDisk(disk_rng, host, f"d{d % fleet.DISKS_PER_HOST}", BURSTY[name](disk_rng))
        else:
            kind = steady[kinds.index(name)]
            disk = fleet.HealthyDisk(disk_rng, host, fleet.disk_name(kind, d % fleet.DISKS_PER_HOST), kind,
                                     interval_ns=INTERVAL_NS)
        out.append((name, disk))
    for i, (name, make) in enumerate(PATHOLOGIES.items()):
        disk_rng = random.Random(rng.random())
        out.append((name, SimulatedDisk(disk_rng, f"sick-{i}", f"nvme{i}n1", make(disk_rng))))
    return out


def records(count, minutes=MINUTES, seed=1):
    """Every record of the set, in time order, as its agents would send them."""
    fleet_disks = disks(count, seed)
    for index in range(minutes * 60 * SECOND_NS // INTERVAL_NS):
        for _, disk in fleet_disks:
            yield from disk.second(index)




def generated(count, minutes=MINUTES, seed=1):
    """The set's records as a file, generated once for each version of what generates them
    and kept in the cache."""
    return cached.records_file("precision", f"{count}-disks-{minutes}-min", f"{count} {minutes} {seed}",
                               lambda: records(count, minutes, seed))


def evaluate(count, minutes=MINUTES, seed=1):
    """Generates the set, judges it with `make detect`; per kind of disk, how many disks
    and which verdicts (kind and severity) they raised."""
    kind_of = {f"{d.host}/{d.name}": name for name, d in disks(count, seed)}
    records_file = generated(count, minutes, seed)
    with open(records_file) as f:
        record_count = sum(1 for _ in f)
    with tempfile.TemporaryDirectory(prefix="iopipe-precision-") as scratch:
        output = Path(scratch) / "verdicts.ndjson"
        print(f"judging {record_count:,} records with make detect", file=sys.stderr, flush=True)
        run = subprocess.run(["make", "-s", "detect", f"INPUT={records_file}", f"OUTPUT={output}"], cwd=REPO,
                             capture_output=True, text=True)
        if run.returncode:
            sys.exit(f"make detect failed: {run.stderr}")
        verdicts = [json.loads(line) for line in output.read_text().splitlines()]
    raised = collections.defaultdict(collections.Counter)
    disks_raising = collections.defaultdict(set)
    health_changes = collections.defaultdict(collections.Counter)
    detected_after_s = {}
    for v in verdicts:
        key = f"{v['host']}/{v['disk']}" if "host" in v else None
        if v["schema"] == "io.anomaly.v1":
            kind = kind_of[key]
            raised[kind][(v["kind"], v["severity"])] += 1
            if v["severity"] != "info":
                disks_raising[kind].add(key)
                if v["kind"] == EXPECTED_KIND.get(kind):
                    after = (v["end_ns"] - START_NS) / SECOND_NS
                    detected_after_s[kind] = min(after, detected_after_s.get(kind, after))
        elif v["schema"] == "io.health.v1":
            health_changes[kind_of[key]][v["to_state"]] += 1
    return {"records": record_count, "disks": collections.Counter(kind_of.values()), "raised": raised,
            "disks_raising": disks_raising, "health_changes": health_changes, "detected_after_s": detected_after_s,
            "minutes": minutes}


def false_alarms(result):
    """Per healthy kind of disk, the disks that raised a warning or critical verdict or changed health."""
    out = {}
    for kind in result["disks"]:
        if kind not in EXPECTED_KIND and (result["disks_raising"][kind] or result["health_changes"][kind]):
            out[kind] = (sorted(result["disks_raising"][kind]), dict(result["health_changes"][kind]))
    return out


def missed(result):
    """The pathologies that raised no warning or critical verdict of their kind."""
    return [kind for kind, expected in EXPECTED_KIND.items()
            if not any(k == expected and s != "info" for k, s in result["raised"][kind])]


def markdown(r, count):
    lines = [f"# The precision set: {count} healthy disks and the injected pathologies over {r['minutes']} minutes", "",
             "Generated by `iopipe/synthetic/precision.py` (deterministic, seed 1), judged by `make detect`;",
             f"{r['records']:,} records. Reproduce with `make evaluate-precision` (writes this file).", "",
             "| disk kind | disks | disks with a warning or critical verdict | verdicts (kind, severity: count) "
             "| health changes (to: count) |",
             "|---|---|---|---|---|"]
    not_found = missed(r)
    for kind, n in r["disks"].items():
        tally = ", ".join(f"{k} {s}: {c}" for (k, s), c in sorted(r["raised"][kind].items())) or "none"
        health = ", ".join(f"{to}: {c}" for to, c in sorted(r["health_changes"][kind].items())) or "none"
        expected = EXPECTED_KIND.get(kind)
        found = "" if expected is None else (f" (**missed**: expected {expected})" if kind in not_found
                                              else f" (found: {expected} at {r['detected_after_s'][kind]:.0f} s)")
        lines.append(f"| {kind}{found} | {n} | {len(r['disks_raising'][kind])} | {tally} | {health} |")
    healthy = [k for k in r["disks"] if k not in EXPECTED_KIND]
    false = sum(len(r["disks_raising"][k]) for k in healthy)
    total = sum(r["disks"][k] for k in healthy)
    lines += ["", f"Healthy disks with a warning or critical verdict: {false} of {total}. "
                  f"Pathologies found with their kind: {len(EXPECTED_KIND) - len(not_found)} of {len(EXPECTED_KIND)}.",
              "", "Each pathology is there from the first second; `at N s` is the end of the window whose verdict first "
                  "named it (warning or critical). Precision per kind is the healthy disks' column: a disk of a healthy "
                  "kind with any warning or critical verdict is a false alarm; recall, the pathologies found."]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("disks", nargs="?", type=int, default=2000)
    parser.add_argument("--evaluate", action="store_true",
                        help="judge the set and print the tally (Markdown) instead of the records")
    parser.add_argument("--out", help="with --evaluate, write the tally to this file instead")
    args = parser.parse_args()
    if not args.evaluate:
        for record in records(args.disks):
            print(json.dumps(record, separators=(",", ":")))
        return
    tally = markdown(evaluate(args.disks), args.disks)
    if not args.out:
        print(tally, end="")
        return
    Path(args.out).write_text(tally)
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
