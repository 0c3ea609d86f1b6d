"""The agent's in-kernel histograms on a real block device with a known latency shape:
every I/O the workload issued is counted exactly once, as the kernel's own diskstats
count it, and each lands in the log2 bucket its measured latency belongs to."""
import json
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from faultdisk import FaultDisk, direct_writes, timed_direct_reads
from tracing_agent import TracingAgent

REPO = Path(__file__).resolve().parent.parent
HIST_SCHEMA = json.loads((REPO / "schema/records/io.hist.v1.schema.json").read_text())
# Service times kept clear of the 2048/4096/8192/16384 us bucket edges, so the workload's
# own timing and the kernel's agree on every I/O's bucket.
BASE_US = 2500
REVOLUTION_US = 8333


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


def assert_same_shape(kernel, workload, total):
    """Each I/O's device time (kernel) is at most its syscall's time (workload clock), so at
    every bucket the kernel's cumulative count is at least the workload's; beyond that the
    two may differ only by I/Os a VM hiccup pushed across a bucket edge (at most 1%)."""
    kernel_cdf = workload_cdf = 0
    for bucket in range(max([*kernel, *workload]) + 1):
        kernel_cdf += kernel[bucket]
        workload_cdf += workload[bucket]
        assert kernel_cdf >= workload_cdf, (bucket, kernel, workload)
        assert kernel_cdf - workload_cdf <= 0.01 * total, (bucket, kernel, workload)


def log2_bucket(ms):
    return max(int(ms * 1000), 1).bit_length() - 1



@pytest.mark.parametrize("attachment", ["tp_btf", "raw_tp"])
def test_every_io_is_counted_once_in_the_bucket_of_its_latency(agent_bin, attachment):
    with FaultDisk(f"units=1 read_us={BASE_US} write_us={BASE_US}") as disk:
        agent = TracingAgent(agent_bin, *(["--raw-tp"] if attachment == "raw_tp" else []))
        before = disk.diskstats()
        latencies = timed_direct_reads(disk.device, 300)
        direct_writes(disk.device, 100)
        after = disk.diskstats()
        records = agent.stop()
        name = disk.name

    assert [r["tracing"] for r in records if r["schema"] == "io.agent.v1"][-1] == attachment
    reads = hists_of(records, name, "R", "device")
    writes = hists_of(records, name, "W", "device")
    assert sum(h["count"] for h in reads) == 300 == after["reads_completed"] - before["reads_completed"]
    assert sum(h["count"] for h in writes) == 100 == after["writes_completed"] - before["writes_completed"]
    buckets = merged_buckets(reads)
    assert_same_shape(buckets, Counter(log2_bucket(ms) for ms in latencies), 300)
    assert buckets[11] >= 297, f"the injected {BASE_US} us lands in [2048, 4096) us: {buckets}"
    assert sum(h["count"] for h in hists_of(records, name, "R", "queue")) == 300
    assert max(h["max_us"] for h in reads) < max(latencies) * 1000


def test_retries_show_as_the_modes_of_the_histogram(agent_bin):
    profile = f"units=1 read_us={BASE_US} retry_prob=0.3 revolution_us={REVOLUTION_US} max_retries=3 seed=11"
    with FaultDisk(profile) as disk:
        agent = TracingAgent(agent_bin)
        latencies = timed_direct_reads(disk.device, 400)
        records = agent.stop()
        name = disk.name

    buckets = merged_buckets(hists_of(records, name, "R", "device"))
    assert sum(buckets.values()) == 400
    assert_same_shape(buckets, Counter(log2_bucket(ms) for ms in latencies), 400)
    modes = {11: "2.5 ms", 13: "2.5 + 8.3 ms", 14: "2.5 + 16.7 or 25 ms"}
    assert all(buckets[b] > 0 for b in modes), buckets
    # The rest are scheduling hiccups of this VM, seen alike by the workload's clock.
    assert sum(buckets[b] for b in modes) >= 0.98 * 400, buckets
    assert 0.6 < buckets[11] / 400 < 0.8, buckets
