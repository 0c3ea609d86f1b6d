"""The records an agent sends (io.diskstats.v1, io.hist.v1, io.event.v1), written one way
for every generator: a disk's /proc/diskstats counters integrated from its I/Os as the
kernel integrates them (DiskCounters), latencies counted in log2 buckets as the agent
counts them (Log2Histogram), and each record with its disk's header and its fields in
its schema's order (AgentRecords). The field names come from schema/records: the records
the agent produces (schema/topics.json), the counters in the kernel's column order
(iopipe.diskstats_fields).
"""
import functools
import json

from iopipe.diskstats_fields import COUNTERS
from iopipe.paths import SCHEMA

_TOPICS = json.loads((SCHEMA / "topics.json").read_text())["topics"]
_SCHEMAS = {topic["record"]: json.loads((SCHEMA / "records" / f"{topic['record']}.schema.json").read_text())
            for topic in _TOPICS if topic["producer"] == "agent"}
FIELDS = {name: tuple(schema["properties"]) for name, schema in _SCHEMAS.items()}
REQUIRED = {name: frozenset(schema["required"]) for name, schema in _SCHEMAS.items()}

DISKSTATS, HIST, EVENT = "io.diskstats.v1", "io.hist.v1", "io.event.v1"
assert {DISKSTATS, HIST, EVENT} <= FIELDS.keys(), FIELDS.keys()

US_NS = 1000
MS_NS = 1_000_000
SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's (iostats.rst)

# iostats.rst's fields 1-11: reads (completed, merged, sectors, ms), writes (the same), I/Os
# in flight, ms busy, weighted ms. Discards (12-15, since 4.18) and flushes (16-17, since
# 5.5) are left out, as older kernels leave them: the models here issue neither.
_OP_COUNTERS = {"R": COUNTERS[0:4], "W": COUNTERS[4:8]}
_IN_FLIGHT, _IO_TIME, _WEIGHTED_IO_TIME = COUNTERS[8:11]

# Each latency kind of a histogram from an I/O's device and queue times.
LATENCY_KINDS = {"device": lambda device, queue: device, "queue": lambda device, queue: queue,
                 "total": lambda device, queue: device + queue}
assert list(LATENCY_KINDS) == _SCHEMAS[HIST]["properties"]["latency"]["enum"], LATENCY_KINDS


class DiskCounters:
    """One disk's /proc/diskstats counters as the kernel keeps them: per op, I/Os completed,
    sectors and time in ns; the time with at least one I/O in flight (io_time) and the
    integral of the number in flight (weighted_io_time), in ns. Sampled in whole ms, as
    the kernel prints them. No model here merges requests: merges stay 0."""

    def __init__(self):
        self.completed = dict.fromkeys(_OP_COUNTERS, 0)
        self.sectors = dict.fromkeys(_OP_COUNTERS, 0)
        self.time_ns = dict.fromkeys(_OP_COUNTERS, 0)
        self.busy_ns = 0
        self.weighted_ns = 0

    def complete(self, op, ios, sectors, time_ns):
        """`ios` completions of `op`, of `sectors` and `time_ns` (arrival to completion) in all."""
        self.completed[op] += ios
        self.sectors[op] += sectors
        self.time_ns[op] += time_ns

    def add_busy(self, busy_ns, weighted_ns):
        """`busy_ns` more with an I/O in flight, `weighted_ns` more of I/Os in flight (each counted)."""
        self.busy_ns += busy_ns
        self.weighted_ns += weighted_ns

    def sample(self, in_flight):
        """The counters as /proc/diskstats shows them, by name, with `in_flight` I/Os in flight."""
        out = {}
        for op, (completed, merged, sectors, time_ms) in _OP_COUNTERS.items():
            out.update({completed: self.completed[op], merged: 0, sectors: self.sectors[op],
                        time_ms: self.time_ns[op] // MS_NS})
        out.update({_IN_FLIGHT: in_flight, _IO_TIME: self.busy_ns // MS_NS,
                    _WEIGHTED_IO_TIME: self.weighted_ns // MS_NS})
        return out


def whole_ms(ms):
    """A time a model knows to the whole ms (an interval's, not each I/O's), in ns."""
    return int(ms) * MS_NS


def bucket_of(us):
    """The log2 bucket of a latency, as the agent counts it: [2^i, 2^(i+1)) µs, below 2 µs in 0."""
    return 0 if us <= 1 else us.bit_length() - 1


class Log2Histogram:
    """Latencies (whole µs) counted as the agent counts them in the kernel: how many in each
    log2 bucket (bucket_of) up to the highest one used, their count, sum and maximum."""

    def __init__(self, latencies_us=()):
        self.buckets = [0]
        self.count = self.sum_us = self.max_us = 0
        self.add(latencies_us)

    def add(self, latencies_us):
        latencies_us = list(latencies_us)
        if not latencies_us:
            return
        self.max_us = max(self.max_us, *latencies_us)
        self.buckets.extend([0] * (bucket_of(self.max_us) + 1 - len(self.buckets)))
        for us in latencies_us:
            self.buckets[bucket_of(us)] += 1
        self.count += len(latencies_us)
        self.sum_us += sum(latencies_us)

    def scale_to(self, count):
        """Draws scaled to the `count` I/Os they stand for, the total exact (largest remainder);
        the maximum stays the largest drawn."""
        drawn = self.count
        exact = [b * count / drawn for b in self.buckets]
        buckets = [int(x) for x in exact]
        for i in sorted(range(len(exact)), key=lambda i: exact[i] - buckets[i], reverse=True)[:count - sum(buckets)]:
            buckets[i] += 1
        self.buckets, self.count, self.sum_us = buckets, count, self.sum_us * count // drawn

    def sent_buckets(self):
        """The buckets without trailing empty ones, as the agent sends them."""
        used = len(self.buckets)
        while used > 1 and self.buckets[used - 1] == 0:
            used -= 1
        return self.buckets[:used]


def latency_histograms(ios, to_us=int):
    """A Log2Histogram of each latency kind (LATENCY_KINDS) of `ios`, given as (device time,
    queue time) each, `to_us` turning a time into whole µs."""
    return {kind: Log2Histogram([to_us(latency(device, queue)) for device, queue in ios])
            for kind, latency in LATENCY_KINDS.items()}


@functools.cache
def schema_order(schema, names):
    """`names` in the order of `schema`'s properties; a name it does not have, or a required
    one missing, is an error."""
    order = tuple(name for name in FIELDS[schema] if name in names)
    unknown, missing = set(names) - set(order), REQUIRED[schema] - set(names)
    if unknown or missing:
        raise ValueError(f"{schema} has no {sorted(unknown)}, requires {sorted(missing)}")
    return order


class AgentRecords:
    """What one disk's agent sends. `header` the fields that describe the disk (host, disk,
    rotational, model...), each written in the records whose schema has it; `task` the
    comm and pid its events name; events whose I/Os a model does not place (spread_events)
    go to the sectors after `first_sector`, one after another."""

    def __init__(self, task, first_sector=0, **header):
        unknown = header.keys() - {name for fields in FIELDS.values() for name in fields}
        if unknown:
            raise ValueError(f"no agent record has {sorted(unknown)}")
        self.headers = {schema: {"schema": schema, **{k: v for k, v in header.items() if k in fields}}
                        for schema, fields in FIELDS.items()}
        self.task = task
        self.sector = first_sector

    def record(self, schema, **fields):
        """A record of `schema`: the disk's header and `fields`, in the schema's order."""
        given = {**self.headers[schema], **fields}
        return {name: given[name] for name in schema_order(schema, tuple(given))}

    def diskstats(self, ts_ns, counters, in_flight):
        """A /proc/diskstats sample of `counters` (DiskCounters) at `ts_ns`."""
        return self.record(DISKSTATS, ts_ns=ts_ns, **counters.sample(in_flight))

    def histogram(self, op, latency, start_ns, end_ns, hist, errors=0):
        """The io.hist.v1 of `hist` (Log2Histogram), the `latency` kind of `op`'s I/Os over the interval."""
        return self.record(HIST, op=op, start_ns=start_ns, end_ns=end_ns, latency=latency,
                           buckets_log2_us=hist.sent_buckets(), count=hist.count, sum_us=hist.sum_us,
                           max_us=hist.max_us, errors=errors)

    def histograms(self, op, start_ns, end_ns, hists, errors=0):
        """The io.hist.v1 records of every latency kind, from latency_histograms."""
        return [self.histogram(op, kind, start_ns, end_ns, hist, errors) for kind, hist in hists.items()]

    def event(self, **fields):
        """An io.event.v1 of one I/O, dispatched by the disk's task."""
        return self.record(EVENT, **fields, **self.task)

    def spread_events(self, op, end_ns, interval_ns, sampled):
        """The events of I/Os sampled from an interval whose model times no single completion:
        spread evenly over the interval ending at `end_ns`, each at the sectors after the
        last one's. `sampled`: (bytes, device_us, queue_us, inflight, sample_reason,
        sample_weight) of each; a weight below 1 is sent as 1, as the schema requires."""
        out = []
        for i, (size, device_us, queue_us, inflight, reason, weight) in enumerate(sampled):
            complete = end_ns - interval_ns + (i + 1) * interval_ns // (len(sampled) + 1)
            self.sector += size // SECTOR_BYTES
            out.append(self.event(op=op, bytes=size, sector=self.sector, issue_ns=complete - int(device_us * US_NS),
                                  complete_ns=complete, queue_ns=int(queue_us * US_NS), inflight=inflight, error=0,
                                  sample_reason=reason, sample_weight=max(1.0, weight)))
        return out
