"""The pipeline's iostat arithmetic against the real `iostat -x` of Debian's sysstat on the
same counters. iostat reads a fixture bind-mounted over the device's counters and over
/proc/uptime in a private mount namespace: its first report (since "boot") then covers
exactly the fixture's deltas over the fixture's uptime, which is what the offline job
computes from the two samples those deltas came from."""
import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from iopipe.contract import BASE_WINDOW_S
from iopipe.diskstats_fields import COUNTERS

pytestmark = pytest.mark.jar

REPO = Path(__file__).resolve().parent.parent
DETECT = REPO / "stream-jobs" / "bin" / "iopipe-detect"
WINDOW_START_NS = 1_763_700_000_000_000_000
# iostat JSON key -> io.window.v1 field
IOSTAT_TO_WINDOW = {
    "r/s": "reads_per_s", "w/s": "writes_per_s", "d/s": "discards_per_s", "f/s": "flushes_per_s",
    "rkB/s": "read_kib_per_s", "wkB/s": "write_kib_per_s", "dkB/s": "discard_kib_per_s",
    "rrqm/s": "read_merges_per_s", "wrqm/s": "write_merges_per_s", "drqm/s": "discard_merges_per_s",
    "rrqm": "read_merges_pct", "wrqm": "write_merges_pct", "drqm": "discard_merges_pct",
    "r_await": "read_await_ms", "w_await": "write_await_ms", "d_await": "discard_await_ms", "f_await": "flush_await_ms",
    "rareq-sz": "read_req_kib", "wareq-sz": "write_req_kib", "dareq-sz": "discard_req_kib",
    "aqu-sz": "queue_size", "util": "util_pct",
}


def a_real_block_device():
    """iostat only reports devices that exist: borrow a real one's name and counter file."""
    devices = sorted(p.name for p in Path("/sys/block").iterdir() if (p / "stat").exists())
    preferred = [d for d in devices if not d.startswith(("loop", "ram", "zram"))]
    return (preferred or devices)[0]


def random_deltas(rng, seconds):
    """Counter deltas a real disk could produce in `seconds` (busy time never exceeds the interval)."""
    ms = int(seconds * 1000)
    reads, writes = rng.randint(0, 200 * int(seconds) + 1), rng.randint(0, 150 * int(seconds) + 1)
    discards, flushes = rng.choice([0, rng.randint(1, 40)]), rng.choice([0, rng.randint(1, 30)])
    return {
        "reads_completed": reads, "reads_merged": rng.randint(0, reads), "sectors_read": reads * rng.choice([8, 32, 256]),
        "read_time_ms": reads * rng.randint(0, 30), "writes_completed": writes, "writes_merged": rng.randint(0, writes),
        "sectors_written": writes * rng.choice([8, 16, 1024]), "write_time_ms": writes * rng.randint(0, 20),
        "in_flight": rng.randint(0, 4), "io_time_ms": rng.randint(0, ms), "weighted_io_time_ms": rng.randint(0, 8 * ms),
        "discards_completed": discards, "discards_merged": rng.randint(0, discards), "sectors_discarded": discards * 2048,
        "discard_time_ms": discards * rng.randint(0, 5), "flushes_completed": flushes, "flush_time_ms": flushes * rng.randint(0, 9),
    }


CASES = [
    # (name, interval in centiseconds, deltas): the seeds' disks, then random ones.
    ("S1 dusty disk, 128 KiB reads", 1000, {"reads_completed": 73, "sectors_read": 73 * 256, "read_time_ms": 19688,
                                            "io_time_ms": 10000, "weighted_io_time_ms": 19700, "in_flight": 2}),
    ("S4 healthy HDD at QD1", 1000, {"reads_completed": 1247, "sectors_read": 1247 * 32, "read_time_ms": 9988,
                                     "io_time_ms": 10000, "weighted_io_time_ms": 10000, "in_flight": 1}),
    ("S6 NVMe at QD1", 1000, {"reads_completed": 76128, "sectors_read": 76128 * 32, "read_time_ms": 9897,
                              "io_time_ms": 9368, "weighted_io_time_ms": 9700, "in_flight": 1}),
] + [(f"random {i}", rng_cs, random_deltas(random.Random(i), rng_cs / 100))
     for i, rng_cs in enumerate(random.Random(42).choices([100, 337, 1000, 6000, 12345], k=12))]


def full(deltas):
    return {c: deltas.get(c, 0) for c in COUNTERS}


def iostat_of(device, deltas, interval_cs, workdir):
    """Runs the real iostat -x on fixture counters `deltas` over `interval_cs` centiseconds."""
    values = " ".join(str(deltas[c]) for c in COUNTERS)
    stat, diskstats, uptime = workdir / "stat", workdir / "diskstats", workdir / "uptime"
    stat.write_text(values + "\n")
    diskstats.write_text(f"   1 0 {device} {values}\n")
    uptime.write_text(f"{interval_cs // 100}.{interval_cs % 100:02d} 0.00\n")
    script = (f"mount --bind {diskstats} /proc/diskstats && mount --bind {stat} /sys/block/{device}/stat"
              f" && mount --bind {uptime} /proc/uptime && iostat -x -d -o JSON {device}")
    out = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, check=True).stdout
    stats = json.loads(out)["sysstat"]["hosts"][0]["statistics"][0]["disk"]
    return {d["disk_device"]: d for d in stats}[device]


def sample(host, device, ts_ns, counters):
    return {"schema": "io.diskstats.v1", "host": host, "disk": device, "ts_ns": ts_ns, "rotational": True, **counters}


@pytest.fixture(scope="module")
def device():
    if shutil.which("iostat") is None or shutil.which("unshare") is None:
        pytest.fail("iostat (sysstat) and unshare (util-linux) are needed: `bash infra/bootstrap.sh` installs them")
    return a_real_block_device()


def test_window_metrics_equal_real_iostat_on_the_same_snapshots(device, tmp_path):
    lines = []
    for i, (_, interval_cs, deltas) in enumerate(CASES):
        start = full({c: random.Random(i).randint(10**6, 10**9) for c in COUNTERS})
        end = {c: start[c] + full(deltas)[c] for c in COUNTERS}
        end["in_flight"] = full(deltas)["in_flight"]
        # Both samples of a case fall in one event-time window: the first at the window's start.
        lines.append(json.dumps(sample(f"case-{i}", device, WINDOW_START_NS + 1, start)))
        lines.append(json.dumps(sample(f"case-{i}", device, WINDOW_START_NS + 1 + interval_cs * 10_000_000, end)))
    records = tmp_path / "records.ndjson"
    records.write_text("\n".join(lines) + "\n")
    output = tmp_path / "windows.ndjson"
    subprocess.run([str(DETECT), "--input", str(records), "--output", str(output)], check=True, capture_output=True)
    windows = {r["host"]: r for r in map(json.loads, output.read_text().splitlines()) if r["schema"] == "io.window.v1" and r["window_s"] == BASE_WINDOW_S}
    assert len(windows) == len(CASES)

    for i, (name, interval_cs, deltas) in enumerate(CASES):
        want = iostat_of(device, full(deltas), interval_cs, tmp_path)
        got = windows[f"case-{i}"]
        for iostat_key, field in IOSTAT_TO_WINDOW.items():
            # iostat prints two decimals; a value on a rounding edge may print either way.
            assert abs(round(got[field], 2) - want[iostat_key]) <= 0.0100001, (name, iostat_key, got[field], want[iostat_key])
