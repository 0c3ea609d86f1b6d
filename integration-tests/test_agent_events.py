"""The agent's sampled events on a real block device with a known latency shape: every
outlier appears (over the disk's own threshold and over the fixed ceiling), a cluster of
outliers records every I/O for a while, so does a quiet disk, and the per-disk budget
drops are counted."""
import json
import time
from pathlib import Path

import jsonschema
import pytest

from iopipe.faultdisk import BLOCK, FaultDisk, direct_read_spans, read_sectors, timed_direct_reads, write_burst

from tracing_agent import TracingAgent

pytestmark = pytest.mark.disks

REPO = Path(__file__).resolve().parent.parent
EVENT_SCHEMA = json.loads((REPO / "schema/records/io.event.v1.schema.json").read_text())
HIST_SCHEMA = json.loads((REPO / "schema/records/io.hist.v1.schema.json").read_text())
BASE = "units=1 read_us=2500"
QUIET_IOS = 20  # completions in the last second under which a disk is quiet


def events_of(records, disk, reason=None):
    events = [r for r in records if r["schema"] == "io.event.v1" and r["disk"] == disk]
    for event in events:
        jsonschema.validate(event, EVENT_SCHEMA)
    return [e for e in events if reason is None or e["sample_reason"] == reason]


def test_every_slow_io_over_the_disks_own_threshold_is_an_event(agent_bin):
    # The ceiling is far above the injected tail: only the threshold learnt from the
    # disk's own 2.5 ms history can flag the 20-60 ms I/Os.
    with FaultDisk(BASE) as disk:
        agent = TracingAgent(agent_bin, "--outlier-quantile", "0.99", "--outlier-ceiling-ms", "10000",
                             "--uniform-every", "0")
        timed_direct_reads(disk.device, 1500, first_block=0, stride=1)  # history: about 4 s
        disk.set_profile(f"{BASE} tail_prob=0.02 tail_min_us=20000 tail_max_us=60000 seed=5")
        burst_ns = time.time_ns()
        latencies = timed_direct_reads(disk.device, 400, first_block=1, stride=7)
        records = agent.stop()
        name = disk.name
    # A completion whose program the kernel skipped (reported missing) holds its tag's
    # place in the depth count until the tag is taken again: depth exceeds 1 by at most that.
    depth_allowed = 1 + agent.reported_missing(name)

    sectors = read_sectors(400, first_block=1)
    slow = {sectors[i]: ms for i, ms in enumerate(latencies) if ms >= 20}
    assert len(slow) >= 3, f"the profile injects about 8 slow reads: {sorted(latencies)[-10:]}"
    outliers = {e["sector"]: e for e in events_of(records, name, "outlier") if e["issue_ns"] >= burst_ns}
    missing = sorted(set(slow) - set(outliers))
    assert not missing, f"slow reads with no outlier event: {missing}; events at {sorted(outliers)}"
    for sector, ms in slow.items():
        event = outliers[sector]
        device_ms = (event["complete_ns"] - event["issue_ns"]) / 1e6
        assert 20 <= device_ms <= ms, (sector, device_ms, ms)
        assert event["op"] == "R" and event["bytes"] == BLOCK and 1 <= event["inflight"] <= depth_allowed \
            and event["sample_weight"] == 1, f"a lone reader's read at depth {event['inflight']} " \
            f"({depth_allowed - 1} completions missing): {event}; all events: {events_of(records, name)}"
    # The 2.5 ms reads stay below the threshold: outliers are the tail, not a sample of all.
    assert len(outliers) < 0.05 * 400, len(outliers)


def test_every_io_over_the_ceiling_is_an_event(agent_bin):
    # 16.384 ms is a log2 bucket edge: the total-latency histogram counts exactly the
    # I/Os above it, and each must be an event.
    profile = f"{BASE} tail_prob=0.1 tail_min_us=12000 tail_max_us=40000 seed=7"
    with FaultDisk(profile) as disk:
        agent = TracingAgent(agent_bin, "--outlier-ceiling-ms", "16.384", "--uniform-every", "0")
        timed_direct_reads(disk.device, 300)
        records = agent.stop()
        name = disk.name

    totals = [r for r in records if r["schema"] == "io.hist.v1" and r["disk"] == name and r["latency"] == "total"]
    for hist in totals:
        jsonschema.validate(hist, HIST_SCHEMA)
    over_ceiling = sum(sum(h["buckets_log2_us"][14:]) for h in totals)
    agent.assert_counted_or_reported_missing(name, sum(h["count"] for h in totals), 300)
    assert over_ceiling >= 10, totals
    outliers = events_of(records, name, "outlier")
    assert len(outliers) == over_ceiling
    assert all(e["complete_ns"] - e["issue_ns"] + e["queue_ns"] > 16_384_000 for e in outliers)
    assert agent.counters()["outliers_dropped"] == 0


def test_a_cluster_of_outliers_records_every_io_for_a_while(agent_bin):
    with FaultDisk(BASE) as disk:
        agent = TracingAgent(agent_bin, "--outlier-ceiling-ms", "10", "--uniform-every", "0",
                             "--cluster-outliers", "5", "--recorder-seconds", "3", "--quiet-ios", "0")
        timed_direct_reads(disk.device, 100, first_block=0)
        # 12 slow reads in about 0.2 s: at least 6 fall within one second.
        disk.set_profile("units=1 read_us=15000")
        timed_direct_reads(disk.device, 12, first_block=1000)
        disk.set_profile(BASE)
        during = time.monotonic()
        timed_direct_reads(disk.device, 200, first_block=2000)  # about 0.6 s
        time.sleep(max(0.0, during + 3.5 - time.monotonic()))
        timed_direct_reads(disk.device, 100, first_block=3000)
        records = agent.stop()
        name = disk.name

    recorded = {e["sector"] for e in events_of(records, name, "recorder")}
    # Each recorded, or counted: dropped, or its completion reported missing.
    counters = agent.counters()
    unrecorded = set(read_sectors(200, first_block=2000)) - recorded
    counted = counters["events_dropped_budget"] + counters["events_dropped_ringbuf"] + agent.reported_missing(name)
    assert len(unrecorded) <= counted, (sorted(unrecorded), counters)
    assert not set(read_sectors(100, first_block=3000)) & recorded, "the recording ended"
    assert not set(read_sectors(100, first_block=0)) & recorded, "nothing was recorded before the cluster"
    assert agent.counters()["recorder_starts_cluster"] >= 1


def test_every_io_of_a_quiet_disk_is_recorded_and_a_busy_disks_are_not(agent_bin):
    """S3's shape: a burst of 11 writes on an idle disk that serves one at a time. No
    outlier threshold can exist for so few I/Os; each is recorded, depth and all."""
    with FaultDisk("units=1 write_us=19000 read_us=2500") as disk:
        agent = TracingAgent(agent_bin, "--uniform-every", "0", "--quiet-ios", str(QUIET_IOS))
        time.sleep(1.5)  # a second with no I/O: the disk is quiet
        burst_ns = time.time_ns()
        assert write_burst(disk.device, 11) == 11
        time.sleep(1.1)
        reads = direct_read_spans(disk.device, 1000)  # about 400 a second
        records = agent.stop()
        name = disk.name

    burst = sorted((e for e in events_of(records, name, "recorder") if e["op"] == "W"), key=lambda e: e["complete_ns"])
    assert len(burst) == 11, burst
    assert all(e["issue_ns"] >= burst_ns and e["sample_weight"] == 1 for e in burst)
    assert max(e["issue_ns"] for e in burst) - min(e["issue_ns"] for e in burst) < 5_000_000, "submitted together"
    device_ms = [(e["complete_ns"] - e["issue_ns"]) / 1e6 for e in burst]
    assert all(19 * (k + 1) <= ms < 19 * (k + 1) + 15 for k, ms in enumerate(device_ms)), device_ms
    assert max(e["inflight"] for e in burst) >= 10, [e["inflight"] for e in burst]

    quiet_before = quiet_seconds_before(reads)
    read_at_sector = dict(zip(read_sectors(len(reads), first_block=0), reads))
    recorded = [e for e in events_of(records, name) if e["op"] == "R"]
    busy = [e for e in recorded if not any(quiet_before(second) for second in seconds_of(read_at_sector[e["sector"]]))]
    assert not busy, f"{len(busy)} reads of a disk at 400 I/Os a second recorded: {[(e['sample_reason'], (e['complete_ns'] - e['issue_ns']) // 1000) for e in busy]}"
    after_busy = [span for span in reads if not any(quiet_before(second) for second in seconds_of(span))]
    assert len(after_busy) >= len(reads) // 2, "the machine stalled the reader so long that the disk was seldom busy"



def seconds_of(span):
    """The seconds of CLOCK_MONOTONIC the kernel may have completed a read of this span in."""
    submitted, returned = span
    return {submitted // 1_000_000_000, returned // 1_000_000_000}


def quiet_seconds_before(spans):
    """Whether the kernel counted fewer than QUIET_IOS completions in the second before a
    given one, as far as these reads show: a loaded machine may stall the reader for
    most of a second, and the disk is then truly quiet. Only reads whose whole span lies
    in a second surely completed in it, so the count is never over the kernel's."""
    surely_in = {}
    for submitted, returned in spans:
        if submitted // 1_000_000_000 == returned // 1_000_000_000:
            surely_in[returned // 1_000_000_000] = surely_in.get(returned // 1_000_000_000, 0) + 1
    return lambda second: surely_in.get(second - 1, 0) < QUIET_IOS


def test_the_per_disk_budget_bounds_events_and_counts_every_drop(agent_bin):
    with FaultDisk("units=1 read_us=1000") as disk:
        agent = TracingAgent(agent_bin, "--uniform-every", "1", "--event-budget", "50")
        started = time.monotonic()
        timed_direct_reads(disk.device, 1500)
        elapsed = time.monotonic() - started
        records = agent.stop()
        name = disk.name

    events = events_of(records, name)
    counters = agent.counters()
    # Budgets are per second of the kernel's clock: at most 50 in each second touched.
    assert len(events) <= 50 * (int(elapsed) + 2), (len(events), elapsed)
    assert len(events) >= 50 * int(elapsed), (len(events), elapsed)
    # Every I/O was sampled (1 in 1): each is an event or a counted drop (other disks'
    # I/O may add drops, never remove them), unless its completion was reported missing.
    missing = agent.reported_missing(name)
    assert len(events) + counters["events_dropped_budget"] + missing >= 1500, (missing, counters)
    assert missing <= 1500 / 100, (missing, counters)
    assert counters["events_dropped_ringbuf"] == 0
    # Nothing lost between the kernel and stdout: every event the ring buffer took was sent.
    sent = [r for r in records if r["schema"] == "io.event.v1"]
    assert counters["events_sampled"] == len(sent) == sum(counters[f"events_sent_{reason}"] for reason in ("outlier", "uniform", "recorder"))
