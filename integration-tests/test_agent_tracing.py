"""The agent's in-kernel histograms on a real block device with a known latency shape:
every I/O the workload issued is counted exactly once, as the kernel's own diskstats
count it, and each lands in the log2 bucket its measured latency belongs to."""
import contextlib
import fcntl
import json
import os
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from iopipe.faultdisk import FaultDisk, direct_writes, read_sectors, settle_udev, timed_direct_reads
from iopipe.faultdisk.seeds import REVOLUTION_7200_RPM_US

from tracing_agent import TracingAgent

pytestmark = pytest.mark.disks

REPO = Path(__file__).resolve().parent.parent
HIST_SCHEMA = json.loads((REPO / "schema/records/io.hist.v1.schema.json").read_text())
# Service times kept clear of the 2048/4096/8192/16384 us bucket edges, so each mode
# (2.5 ms, and a revolution or two more) sits in a bucket of its own.
BASE_US = 2500


def hists_of(records, disk, op, latency):
    hists = [r for r in records if r["schema"] == "io.hist.v1" and r["disk"] == disk and r["op"] == op and r["latency"] == latency]
    for h in hists:
        jsonschema.validate(h, HIST_SCHEMA)
        assert h["count"] == sum(h["buckets_log2_us"])
    return hists


def merged_buckets(hists):
    total = Counter()
    for h in hists:
        total.update({i: n for i, n in enumerate(h["buckets_log2_us"]) if n})
    return total


def assert_each_read_in_the_bucket_of_its_latency(buckets, records, agent, name, sectors, latencies_ms):
    """The agent sampled every I/O (--uniform-every 1), so each read is also an event with
    its own device time: the histograms hold exactly the buckets of those times, I/O by
    I/O. Each time is the kernel's, from dispatch to completion: at least the service time
    the disk was given, and within the read's syscall on the workload's clock (which
    also waits for the process to run again, so only bounds it)."""
    # The per-disk budget (1,000 events a second) is beyond this disk's rate, one read at a
    # time of at least BASE_US: drops by budget are other disks'.
    assert agent.counters()["events_dropped_ringbuf"] == 0, agent.counters()
    events = {e["sector"]: e for e in records if e["schema"] == "io.event.v1" and e["disk"] == name and e["op"] == "R"}
    device_us = {sector: (e["complete_ns"] - e["issue_ns"]) // 1000 for sector, e in events.items()}
    assert Counter(log2_bucket(us / 1000) for us in device_us.values()) == buckets, (buckets, sorted(device_us.values()))
    # The agent reports what it missed per disk, not per operation: a read without its
    # event is one of the disk's reported missing (which may be a write instead).
    assert len(device_us) <= len(sectors)
    assert len(sectors) - len(device_us) <= agent.reported_missing(name), (len(device_us), agent.reported_missing(name))
    for sector, ms in zip(sectors, latencies_ms):
        if sector in device_us:
            assert BASE_US <= device_us[sector] <= ms * 1000, (sector, device_us[sector], ms)


def log2_bucket(ms):
    return max(int(ms * 1000), 1).bit_length() - 1



@pytest.mark.parametrize("attachment", ["tp_btf", "raw_tp"])
def test_every_io_is_counted_once_in_the_bucket_of_its_latency(agent_bin, attachment):
    with FaultDisk(f"units=1 read_us={BASE_US} write_us={BASE_US}") as disk:
        agent = TracingAgent(agent_bin, "--uniform-every", "1", *(["--raw-tp"] if attachment == "raw_tp" else []))
        before = disk.diskstats()
        latencies = timed_direct_reads(disk.device, 300)
        direct_writes(disk.device, 100)
        after = disk.diskstats()
        records = agent.stop()
        name = disk.name

    assert [r["tracing"] for r in records if r["schema"] == "io.agent.v1"][-1] == attachment
    reads = hists_of(records, name, "R", "device")
    writes = hists_of(records, name, "W", "device")
    counted = (sum(h["count"] for h in reads), sum(h["count"] for h in writes))
    completed = (after["reads_completed"] - before["reads_completed"], after["writes_completed"] - before["writes_completed"])
    assert completed == (300, 100)
    assert counted[0] <= 300 and counted[1] <= 100, counted
    agent.assert_counted_or_reported_missing(name, sum(counted), sum(completed))
    buckets = merged_buckets(reads)
    assert_each_read_in_the_bucket_of_its_latency(buckets, records, agent, name, read_sectors(300), latencies)
    # A loaded machine delays some I/Os past 4096 us: the injected latency is the floor
    # and the mode, not every I/O's bucket.
    assert min(buckets) == 11 and buckets.most_common(1)[0][0] == 11, buckets
    assert sum(h["count"] for h in hists_of(records, name, "R", "queue")) == counted[0]
    assert max(h["max_us"] for h in reads) < max(latencies) * 1000


def test_a_stop_sends_the_diskstats_of_the_interval_it_cut_short(agent_bin):
    """The histograms of the interval a stop cut short come after a diskstats sample of that
    moment, as every interval's do: a stream job windows histograms with the diskstats of
    their time, and a window of histograms alone has no iostat line to carry them."""
    with FaultDisk(f"units=1 read_us={BASE_US} write_us={BASE_US}") as disk:
        agent = TracingAgent(agent_bin)
        reading = threading.Thread(target=timed_direct_reads, args=(disk.device, 1200))  # 3 s of reads
        reading.start()
        try:
            time.sleep(1)
            records = agent.stop()  # while the reads go on
        finally:
            reading.join()
        name = disk.name
    last = max(hists_of(records, name, "R", "device"), key=lambda h: h["end_ns"])
    sampled = max(r["ts_ns"] for r in records if r["schema"] == "io.diskstats.v1" and r["disk"] == name)
    assert last["start_ns"] < sampled <= last["end_ns"], (last["start_ns"], sampled, last["end_ns"])


def test_retries_show_as_the_modes_of_the_histogram(agent_bin):
    profile = f"units=1 read_us={BASE_US} retry_prob=0.3 revolution_us={REVOLUTION_7200_RPM_US} max_retries=3 seed=11"
    with FaultDisk(profile) as disk:
        agent = TracingAgent(agent_bin, "--uniform-every", "1")
        latencies = timed_direct_reads(disk.device, 400)
        records = agent.stop()
        name = disk.name

    buckets = merged_buckets(hists_of(records, name, "R", "device"))
    agent.assert_counted_or_reported_missing(name, sum(buckets.values()), 400)
    assert_each_read_in_the_bucket_of_its_latency(buckets, records, agent, name, read_sectors(400), latencies)
    modes = {11: "2.5 ms", 13: "2.5 + 8.3 ms", 14: "2.5 + 16.7 or 25 ms"}
    assert min(buckets) == 11 and all(buckets[b] > 0 for b in modes), buckets
    # Seven in ten reads are not retried: the first mode's, but for those the machine's
    # scheduling delayed past its bucket.
    assert 0.6 < buckets[11] / 400 < 0.8, buckets


def test_an_agent_told_its_disks_reports_those_only(agent_bin):
    """--disk: one agent a disk, as several on one host each watch their own; the other
    disk's I/O, though traced by the same programs, is in none of its records."""
    with FaultDisk(f"units=1 read_us={BASE_US}") as watched, FaultDisk(f"units=1 read_us={BASE_US}") as other:
        agent = TracingAgent(agent_bin, "--uniform-every", "1", "--disk", watched.name, "--disk", "no-such-disk")
        before = watched.diskstats()
        for disk in (watched, other):
            timed_direct_reads(disk.device, 100)
        after = watched.diskstats()
        records = agent.stop()
        names = watched.name, other.name

    reported = {r["disk"] for r in records if "disk" in r}
    assert reported == {names[0]}, (reported, names)
    counted = sum(h["count"] for h in hists_of(records, names[0], "R", "device"))
    agent.assert_counted_or_reported_missing(names[0], counted, after["reads_completed"] - before["reads_completed"])
    # The other disk's reads, each an event but one the kernel may have skipped (as in
    # assert_counted_or_reported_missing), and whatever else touched it.
    assert agent.counters()["events_unselected"] >= 99, agent.counters()
    assert "--disk no-such-disk: /proc/diskstats has no such disk" in "".join(agent.stderr_lines)


FLUSH_US = 8000


def test_writes_made_durable_are_counted_once_and_timed_apart_from_their_flushes(agent_bin):
    """On a disk with a volatile cache and no FUA the kernel takes each flush as a request
    of its own, and counts the write that asked for it once, when its flushes are done:
    the fsyncs' empty writes as well as the RWF_DSYNC writes' data. The write histograms
    hold each data write once, timed without its flush; the kernel's extra writes are
    the flush sequences the agent counts, and nothing is reported missing for them."""
    with FaultDisk(f"units=1 read_us={BASE_US} write_us={BASE_US} flush_us={FLUSH_US}") as disk:
        queue = Path(f"/sys/block/{disk.name}/queue")
        assert (queue / "write_cache").read_text().strip() == "write back" and (queue / "fua").read_text().strip() == "0"
        agent = TracingAgent(agent_bin)
        before = disk.diskstats()
        # Made durable the two ways databases do: 20 writes each followed by an fsync (an
        # empty write asking for a cache flush), 20 written with RWF_DSYNC (asking for FUA,
        # which a loop device lacks: the kernel flushes after their data).
        direct_writes(disk.device, 20, first_block=0, fsync=True)
        direct_writes(disk.device, 20, first_block=20, flags=os.RWF_DSYNC)
        after = disk.diskstats()
        records = agent.stop()
        name = disk.name

    kernel_writes = after["writes_completed"] - before["writes_completed"]
    kernel_flushes = after["flushes_completed"] - before["flushes_completed"]
    assert kernel_writes > 40 and kernel_flushes >= 40, (kernel_writes, kernel_flushes)
    writes = hists_of(records, name, "W", "device")
    flushes = hists_of(records, name, "F", "device")
    agent.assert_counted_or_reported_missing(name, sum(h["count"] for h in writes), 40)
    # Ended sequences: the kernel's writes beyond the data ones, and the 20 RWF_DSYNC
    # writes whose data went through one.
    sequences, missing = agent.counters()["write_flush_sequences"], agent.reported_missing(name)
    assert kernel_writes - 40 + 20 - missing <= sequences <= kernel_writes - 40 + 20, (sequences, missing, kernel_writes)
    assert sum(h["count"] for h in flushes) <= kernel_flushes, flushes
    # Each flush timed as one, at least its service time: never a write's.
    assert min(merged_buckets(flushes)) >= log2_bucket(FLUSH_US / 1000), merged_buckets(flushes)


LOOP_CTL_ADD, LOOP_CTL_REMOVE = 0x4C80, 0x4C81


@contextlib.contextmanager
def new_loop_disk(backing, avoid=()):
    """A loop device created for the test and removed after it: removing frees its request
    queue's number, which the kernel hands to the next queue created."""
    control = os.open("/dev/loop-control", os.O_RDWR)
    try:
        number = next(n for n in range(900, 1000) if n not in avoid and not Path(f"/sys/block/loop{n}").exists())
        fcntl.ioctl(control, LOOP_CTL_ADD, number)
        device = f"/dev/loop{number}"
        try:
            subprocess.run(["losetup", "--direct-io=on", device, str(backing)], check=True)
            settle_udev()
            yield number
        finally:
            subprocess.run(["losetup", "-d", device], check=False)
            for _ in range(50):  # the detach completes asynchronously
                try:
                    fcntl.ioctl(control, LOOP_CTL_REMOVE, number)
                    break
                except OSError:
                    time.sleep(0.1)
            # The queue's number is freed by an RCU callback after a grace period, which
            # a loaded machine runs late (0.2 s was not always enough with both cores busy).
            time.sleep(1.0)
    finally:
        os.close(control)


def reads_on_every_cpu(device, count):
    cpus = sorted(os.sched_getaffinity(0))
    try:
        for i, cpu in enumerate(cpus):
            os.sched_setaffinity(0, {cpu})
            timed_direct_reads(device, count // len(cpus) + (i < count % len(cpus)), first_block=i * 64)
    finally:
        os.sched_setaffinity(0, cpus)


def test_a_disk_that_takes_over_a_removed_disks_request_queue_loses_none_of_its_counts(agent_bin):
    """The kernel tables are indexed by request queue number, which a removed disk frees
    for the next. The first disk's last reads and the second disk's first fall in one
    agent interval: the first's counts on every CPU must retire intact, and the second's
    start from zero."""
    interval_s = 2.0
    backing = Path("/dev/shm") / f"iopipe-test-{os.getpid()}.img"
    backing.write_bytes(bytes(16 << 20))
    try:
        agent = TracingAgent(agent_bin, interval_ms=int(interval_s * 1000))
        with new_loop_disk(backing) as first:
            reads_on_every_cpu(f"/dev/loop{first}", 50)
            time.sleep(interval_s * 1.25)  # the agent names a disk from sysfs while it exists
            reads_on_every_cpu(f"/dev/loop{first}", 50)
        with new_loop_disk(backing, avoid={first}) as second:
            reads_on_every_cpu(f"/dev/loop{second}", 50)
            time.sleep(interval_s * 1.25)
        records = agent.stop()
    finally:
        backing.unlink()
    counts = {f"loop{n}": sum(h["count"] for h in hists_of(records, f"loop{n}", "R", "device")) for n in (first, second)}
    assert counts == {f"loop{first}": 100, f"loop{second}": 50}
    counters = agent.counters()
    assert counters["hists_retired"] >= 1, f"the second disk did not take the first's request queue: {counters}"
    assert counters["retired_lost"] == 0
