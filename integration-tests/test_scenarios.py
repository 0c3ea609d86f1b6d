"""The seed scenarios S1-S6 as generated agent records (iopipe/synthetic/scenarios.py)
through `make detect`: each prints exactly the verdicts EXPECTED lists (the "no anomaly"
ones too), with the seeds' numbers in the evidence, and every record it writes keeps to
its schema."""
import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from iopipe.contract import BASE_WINDOW_S
from iopipe.synthetic import fleet, scenarios

pytestmark = pytest.mark.jar

REPO = Path(__file__).resolve().parent.parent
VALIDATORS = {path.name.removesuffix(".schema.json"): jsonschema.Draft202012Validator(json.loads(path.read_text()))
              for path in (REPO / "schema/records").glob("*.schema.json")}

EXPECTED = {
    "S1": ["anomaly failing_disk critical s1/sdb", "health s1/sdb healthy -> failing (ticket open)"],
    "S2": ["anomaly bimodal_retries warning s2/sdc", "health s2/sdc healthy -> suspect"],
    "S3": ["anomaly queue_ramp info s3/sd2"],
    "S4": [],
    "S5": ["anomaly failing_disk warning s5/sdf", "health s5/sdf healthy -> suspect"],
    "S6": ["anomaly saturation info s6/nvme0n1", "anomaly saturation warning s6/nvme0n1"],
}


def detect(tmp_path, name, seed=1, path=None):
    """`make detect` over a scenario's records (or the file of records given): its printed
    verdicts and the records it wrote, each checked against its schema."""
    if path is None:
        path = tmp_path / f"{name}.ndjson"
        with open(path, "w") as f:
            for record in scenarios.generate(name, seed):
                f.write(json.dumps(record, separators=(",", ":")) + "\n")
    output = tmp_path / f"{name}.out.ndjson"
    run = subprocess.run(["make", "-s", "detect", f"INPUT={path}", f"OUTPUT={output}"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert " 0 rejected" in run.stderr, run.stderr
    out = [json.loads(line) for line in output.read_text().splitlines()]
    for record in out:
        VALIDATORS[record["schema"]].validate(record)
    return run.stdout.splitlines(), out


def verdict(line):
    """A printed verdict without its explanation, and a ticket without its id."""
    head = line.split(":")[0]
    return head.split(" (ticket ")[0] + (" (ticket " + head.split(" (ticket ")[1].split()[0] + ")" if " (ticket " in head else "")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_make_detect_prints_exactly_the_scenarios_verdicts(tmp_path, name):
    printed, out = detect(tmp_path, name)
    assert [verdict(line) for line in printed] == EXPECTED[name], "\n".join(printed)
    anomalies = [r for r in out if r["schema"] == "io.anomaly.v1"]
    check_evidence[name](anomalies)


def s1(anomalies):
    [a] = anomalies
    assert a["evidence"]["queue_depth"] < 4 and a["evidence"]["service_ms"] > 100, a["evidence"]
    assert a["evidence"]["iostat"]["r_per_s"] < 10 and a["evidence"]["worst_events"], a["evidence"]


def s2(anomalies):
    [a] = anomalies
    assert abs(a["evidence"]["gap_ms"] - scenarios.REVOLUTION_7200_MS) < 0.5, a["evidence"]
    assert {"rpm": 7200, "revolutions": 1, "revolution_ms": 8.333} in a["evidence"]["whole_revolutions"]
    main, retries = a["evidence"]["modes"][:2]
    assert 1.5 < main["median_ms"] < 2.6 and main["share"] > 0.8 and 0.02 < retries["share"] < 0.15, a["evidence"]


def s3(anomalies):
    [a] = anomalies
    e = a["evidence"]
    assert e["burst_size"] == 11 and e["dispatch_span_ms"] < 1.5, e
    assert 13 < e["slope_ms_per_io"] < 25 and 13 < e["completion_spacing_ms"] < 25, e


def s5(anomalies):
    [a] = anomalies
    assert a["evidence"]["ios_over_1s"] >= 1 and a["evidence"]["service_ms"] < 20, a["evidence"]


def s6(anomalies):
    onset, saturated = anomalies
    assert onset["evidence"]["level"] == "onset" and 3 <= onset["evidence"]["ratio_to_qd1"] < 5, onset["evidence"]
    assert saturated["evidence"]["level"] == "saturated" and saturated["evidence"]["ratio_to_qd1"] > 10
    assert abs(onset["evidence"]["qd1_latency_ms"] - 0.14) < 0.01


check_evidence = {"S1": s1, "S2": s2, "S3": s3, "S4": lambda anomalies: None, "S5": s5, "S6": s6}


def test_a_replay_names_every_verdict_as_before(tmp_path):
    _, first = detect(tmp_path, "S1")
    _, again = detect(tmp_path, "S1")
    ids = lambda out: sorted(r["id"] for r in out if r["schema"] in ("io.anomaly.v1", "io.health.v1"))
    assert ids(first) == ids(again) and ids(first)


def test_a_mixed_fleet_raises_the_pathologies_verdicts_and_nothing_on_its_healthy_disks(tmp_path):
    """Hundreds of healthy disks of every kind (HDDs at 5400-15k rpm, with caches, streaming;
    SSDs with GC stalls; NVMe below its knee; idle disks) beside each scenario's disks."""
    healthy = 240
    printed, out = detect(tmp_path, "fleet", path=fleet.mixed_fleet_file(healthy, 150))
    expected = sorted(line for lines in EXPECTED.values() for line in lines)
    assert sorted(verdict(line) for line in printed) == expected, "\n".join(printed)
    windowed = {r["host"] + "/" + r["disk"] for r in out if r["schema"] == "io.window.v1" and r["host"].startswith("fleet-")}
    assert len(windowed) == healthy, "every healthy disk must have been judged, window by window"


def test_windows_hold_exact_quantiles_and_queue_depth_when_every_io_is_an_event(tmp_path):
    """S2 sends every I/O as an event: its windows' quantiles are exact and say so, and
    its reader's one request in flight shows; S6 (histograms only) interpolates."""
    _, out = detect(tmp_path, "S2")
    reads = [r["latency"]["R"] for r in out
             if r["schema"] == "io.window.v1" and r["window_s"] == BASE_WINDOW_S and "R" in r.get("latency", {})]
    assert reads and all(r["quantiles"] == "every_io" for r in reads), reads[:1]
    for r in reads:
        device = sorted(us for us in (r["device"]["p50_us"], r["device"]["p90_us"], r["device"]["p99_us"]))
        assert [r["device"]["p50_us"], r["device"]["p90_us"], r["device"]["p99_us"]] == device
        assert 1570 <= r["device"]["p50_us"] <= 2550, r["device"]  # the seed's main mode, not a bucket's edge
        assert r["device"]["p99_us"] <= r["device"]["max_us"]
        assert r["inflight_mean"] == 1.0, r
    _, out = detect(tmp_path, "S6")
    reads = [r["latency"]["R"] for r in out if r["schema"] == "io.window.v1" and "R" in r.get("latency", {})]
    assert reads and all(r["quantiles"] == "log2_buckets" and "inflight_mean" not in r for r in reads)
