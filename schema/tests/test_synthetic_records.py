"""The generated agent records (iopipe.synthetic) keep the contract: every record the
scenarios, the healthy fleet and the precision set write validates against its schema,
and the one writer they share counts and orders fields as the agent and the kernel do."""
import json
import random

import jsonschema
import pytest

from iopipe.paths import SCHEMA
from iopipe.synthetic import fleet, precision, scenarios
from iopipe.synthetic.agent_records import DISKSTATS, EVENT, FIELDS, HIST, AgentRecords, DiskCounters, Log2Histogram

FOUR_KIB_SECTORS = 8
ONE_AND_A_HALF_MS_NS = 1_500_000
TASK = {"comm": "test", "pid": 7}


def validators():
    return {name: jsonschema.Draft202012Validator(json.loads((SCHEMA / "records" / f"{name}.schema.json").read_text()))
            for name in (DISKSTATS, HIST, EVENT)}


GENERATED = {
    "scenario S3": lambda: scenarios.generate("S3"),
    "scenario S6": lambda: scenarios.generate("S6"),
    "healthy fleet": lambda: fleet.healthy_fleet(disks=len(fleet.kinds(random.Random(0))), seconds=3),
    "precision set": lambda: list(precision.records(count=10, minutes=1)),
}


@pytest.mark.parametrize("generator", GENERATED)
def test_every_generated_record_validates_with_its_fields_in_schema_order(generator):
    by_schema = validators()
    records = GENERATED[generator]()
    assert records and {r["schema"] for r in records} <= set(by_schema)
    for record in records:
        by_schema[record["schema"]].validate(record)
        order = FIELDS[record["schema"]]
        assert sorted(record, key=order.index) == list(record)


def test_read_time_is_kept_in_ns_and_printed_in_whole_ms_as_the_kernel_does():
    counters = DiskCounters()
    for _ in range(2):
        counters.complete("R", 1, FOUR_KIB_SECTORS, ONE_AND_A_HALF_MS_NS)
    sample = counters.sample(in_flight=0)
    assert (sample["reads_completed"], sample["sectors_read"], sample["read_time_ms"]) == (2, 16, 3)
    assert sample["writes_completed"] == sample["write_time_ms"] == sample["reads_merged"] == 0


def test_busy_time_accumulates_across_samples():
    counters = DiskCounters()
    counters.add_busy(999_999, 1_999_999)
    assert (counters.sample(0)["io_time_ms"], counters.sample(0)["weighted_io_time_ms"]) == (0, 1)
    counters.add_busy(1, 1)
    assert (counters.sample(0)["io_time_ms"], counters.sample(0)["weighted_io_time_ms"]) == (1, 2)


def test_latencies_fall_in_log2_buckets_and_are_sent_without_trailing_empty_ones():
    hist = Log2Histogram([0, 1, 2, 3, 4, 1000])
    assert hist.sent_buckets() == [2, 2, 1, 0, 0, 0, 0, 0, 0, 1]
    assert (hist.count, hist.sum_us, hist.max_us) == (6, 1010, 1000)
    assert Log2Histogram().sent_buckets() == [0]


def test_scaling_draws_keeps_the_count_exact_and_the_largest_drawn():
    hist = Log2Histogram([10, 10, 100])
    hist.scale_to(1000)
    assert sum(hist.sent_buckets()) == hist.count == 1000
    assert hist.sent_buckets()[3] == 667 and hist.sent_buckets()[6] == 333
    assert hist.max_us == 100


def test_the_disk_header_goes_only_into_records_whose_schema_has_it():
    agent = AgentRecords(TASK, host="h", disk="sda", rotational=True, model="HDD-7200")
    diskstats = agent.diskstats(10**18, DiskCounters(), in_flight=0)
    hist = agent.histogram("R", "device", 10**18, 10**18 + 10**9, Log2Histogram([5]))
    assert (diskstats["rotational"], diskstats["model"]) == (True, "HDD-7200")
    assert "rotational" not in hist and "model" not in hist
    assert (hist["host"], hist["disk"]) == ("h", "sda")


def test_spread_events_are_even_over_the_interval_on_consecutive_sectors():
    agent = AgentRecords(TASK, first_sector=100, host="h", disk="nvme0n1", rotational=False)
    end_ns, interval_ns = 10**18 + 3 * 10**9, 3 * 10**9
    events = agent.spread_events("R", end_ns, interval_ns, [(4096, 50, 2, 1, "uniform", 1000.0),
                                                            (4096, 70, 3, 2, "outlier", 0.5)])
    assert [e["complete_ns"] for e in events] == [end_ns - 2 * 10**9, end_ns - 10**9]
    assert [e["sector"] for e in events] == [108, 116]
    assert events[0]["issue_ns"] == events[0]["complete_ns"] - 50_000
    assert [e["sample_weight"] for e in events] == [1000.0, 1.0]
    assert (events[0]["comm"], events[0]["pid"]) == ("test", 7)


def test_a_field_the_schema_lacks_is_refused():
    agent = AgentRecords(TASK, host="h", disk="sda", rotational=True)
    with pytest.raises(ValueError):
        agent.event(op="R", bytes=4096, sector=0, issue_ns=10**18, complete_ns=10**18, queue_ns=0, inflight=1,
                    error=0, sample_reason="all", sample_weight=1, latency_us=3)
    with pytest.raises(ValueError):
        AgentRecords(TASK, host="h", disk="sda", colour="blue")
