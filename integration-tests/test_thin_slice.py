"""The thin slice on real services: the agent samples this machine's /proc/diskstats and
ships to Kafka, the live Flink job on the session cluster computes iostat windows,
ClickHouse ingests them; the rows must equal what the diskstats deltas imply."""
import json
import math
import subprocess
import uuid

import pytest

from iopipe.contract import BASE_WINDOW_S, PIPELINE
from iopipe.readiness import wait_for
from iopipe.stack_kafka import agent_access

import iostat_reference
from kafka_records import consume_agent_records

pytestmark = pytest.mark.stack

WINDOW_S = BASE_WINDOW_S
SAMPLES = 32
# A window closes once the watermark (newest sample minus the job's allowed disorder)
# passes its end; windows ending that long and a second more before the last sample must exist.
CLOSED_MARGIN_NS = (PIPELINE["out_of_orderness_s"] + 1) * 1_000_000_000
COMPARED = ("interval_s", "samples", "reads_completed", "writes_completed",
            "reads_per_s", "writes_per_s", "read_kib_per_s", "write_kib_per_s",
            "read_merges_per_s", "write_merges_per_s", "read_merges_pct", "write_merges_pct",
            "read_await_ms", "write_await_ms", "read_req_kib", "write_req_kib",
            "discards_per_s", "discard_kib_per_s", "discard_await_ms",
            "flushes_per_s", "flush_await_ms", "queue_size", "util_pct")


def run_agent_with_disk_io(agent_bin, brokers, host, scratch):
    """The real agent for SAMPLES seconds while dd writes with O_DIRECT, so the disk is busy."""
    workload = subprocess.Popen(["dd", "if=/dev/zero", f"of={scratch}", "bs=1M", "count=400", "oflag=direct", "status=none"])
    try:
        agent = subprocess.run([str(agent_bin), "run", "--output", "kafka", "--brokers", brokers,
                                *agent_access(brokers, host).args(), "--host", host, "--count", str(SAMPLES)],
                               capture_output=True, text=True, timeout=SAMPLES + 60)
    finally:
        workload.wait(timeout=120)
    assert agent.returncode == 0, agent.stderr
    assert "kafka_failed 0, kafka_shed 0" in agent.stderr, agent.stderr
    return agent.stderr


def clickhouse_windows(clickhouse, host):
    text = clickhouse.query(f"SELECT * FROM iopipe.windows WHERE host = '{host}' AND window_s = {WINDOW_S} FORMAT JSONEachRow")
    return [json.loads(line) for line in text.splitlines()]


def test_clickhouse_windows_equal_what_the_diskstats_deltas_imply(pipeline, agent_bin, tmp_path):
    host = f"itest-{uuid.uuid4().hex[:8]}"
    summary = run_agent_with_disk_io(agent_bin, pipeline.ports.brokers, host, tmp_path / "dd.bin")

    samples = consume_agent_records(pipeline.ports.brokers, "io.diskstats.v1", host)
    disks = {s["disk"] for s in samples}
    assert len(samples) == SAMPLES * len(disks), summary
    expected = iostat_reference.windows(samples, WINDOW_S)
    newest_ns = max(s["ts_ns"] for s in samples)
    must_exist = {key for key, w in expected.items() if w["window_end_ns"] <= newest_ns - CLOSED_MARGIN_NS}
    assert len(must_exist) >= 2 * len(disks), "the run is long enough to close two windows per disk"

    rows = wait_for("iostat windows in ClickHouse", timeout_s=90, check=lambda: (
        lambda rows: rows if must_exist <= {(r["disk"], int(r["window_start_ns"])) for r in rows} else None
    )(clickhouse_windows(pipeline.clickhouse, host)))

    keys = [(r["disk"], int(r["window_start_ns"])) for r in rows]
    assert len(keys) == len(set(keys)), "each window lands once"
    for row in rows:
        want = expected[(row["disk"], int(row["window_start_ns"]))]
        assert int(row["window_end_ns"]) == want["window_end_ns"]
        for field in COMPARED:
            got = float(row[field])
            assert math.isclose(got, want[field], rel_tol=1e-9, abs_tol=1e-9), (row["disk"], row["window_start_ns"], field, got, want[field])
    busy = [r for r in rows if float(r["write_kib_per_s"]) > 0]
    assert busy, "the dd workload shows up as writes in some window"
