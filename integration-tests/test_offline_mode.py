"""`make detect`, as a user types it, on a hand-written file with malformed lines."""
import json
import random
import subprocess
from pathlib import Path

import jsonschema
import pytest

from iopipe import record_batches
from iopipe.contract import BASE_WINDOW_S, PIPELINE
from iopipe.synthetic import scenarios

pytestmark = pytest.mark.jar

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "stream-jobs" / "examples" / "diskstats-two-disks.ndjson"


def test_make_detect_writes_windows_and_verdicts_and_rejects_malformed_lines_without_stopping(tmp_path):
    output = tmp_path / "out.ndjson"
    run = subprocess.run(["make", "-s", "detect", f"INPUT={EXAMPLE}", f"OUTPUT={output}"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "12 records" in run.stderr and "2 rejected" in run.stderr, run.stderr
    # The example is S1's dusty disk from its diskstats alone (r_await 270 ms at aqu-sz 1.97).
    assert [line.split(":")[0].split(" (ticket")[0] for line in run.stdout.splitlines()] == [
        "anomaly failing_disk critical web-17/sdb", "health web-17/sdb healthy -> failing"], run.stdout

    schemas = {name: json.loads((REPO / f"schema/records/{name}.schema.json").read_text())
               for name in ("io.window.v1", "io.anomaly.v1", "io.health.v1")}
    records = [json.loads(line) for line in output.read_text().splitlines()]
    for record in records:
        jsonschema.validate(record, schemas[record["schema"]])
    windows = [r for r in records if r["schema"] == "io.window.v1"]
    short, long = PIPELINE["window_s"]
    assert sorted(w["window_s"] for w in windows) == [short] * 8 + [long] * 2
    sdb = [w for w in windows if w["disk"] == "sdb" and w["samples"] == 10]
    assert sdb and all(abs(w["read_await_ms"] - 269.71) < 0.01 and abs(w["queue_size"] - 1.97) < 1e-9 for w in sdb)

    rejects = [json.loads(line) for line in Path(f"{output}.rejects.ndjson").read_text().splitlines()]
    rejects.sort(key=lambda r: r["source"])
    assert [r["source"] for r in rejects] == ["diskstats-two-disks.ndjson:33", "diskstats-two-disks.ndjson:34"]
    assert rejects[0]["reason"] == 'ts_ns must be an integer, got "yesterday"'
    assert rejects[1]["reason"].startswith("not JSON")


def test_iopipe_detect_help_says_how_to_run_it():
    run = subprocess.run([REPO / "stream-jobs/bin/iopipe-detect", "--help"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: iopipe-detect --input records.ndjson --output out.ndjson"), run.stdout


def biosnoop_capture(events):
    """Events as bcc's biosnoop -Q prints them: completion time since the trace began, the
    device time (LAT) and the time queued before it (QUE), in ms."""
    lines = ["TIME(s)     COMM           PID    DISK    T SECTOR     BYTES   QUE(ms) LAT(ms)"]
    for e in sorted(events, key=lambda e: e["complete_ns"]):
        lines.append(f"{(e['complete_ns'] - scenarios.START_NS) / 1e9:.6f} {e['comm']} {e['pid']} {e['disk']} {e['op']} "
                     f"{e['sector']} {e['bytes']} {e['queue_ns'] / 1e6:.3f} {(e['complete_ns'] - e['issue_ns']) / 1e6:.3f}")
    return "\n".join(lines) + "\n"


def test_a_converted_capture_given_its_disks_class_is_windowed_and_judged_by_it(tmp_path, agent_bin):
    # S2's retrying disk as a biosnoop capture: every I/O, no diskstats, no class.
    events = [r for r in scenarios.s2(random.Random(2)) if r["schema"] == "io.event.v1"]
    capture = tmp_path / "sdc.txt"
    capture.write_text(biosnoop_capture(events))

    def judged(*facts):
        records = tmp_path / "records.ndjson"
        with open(records, "w") as out:
            run = subprocess.run([str(agent_bin), "convert", "--from", "biosnoop", str(capture), "--host", "s2",
                                  "--start-ns", str(scenarios.START_NS), *facts], stdout=out, stderr=subprocess.PIPE, text=True)
        assert run.returncode == 0, run.stderr
        output = tmp_path / "out.ndjson"
        run = subprocess.run(["make", "-s", "detect", f"INPUT={records}", f"OUTPUT={output}"], cwd=REPO,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0 and "0 rejected" in run.stderr, run.stderr
        return [json.loads(line) for line in output.read_text().splitlines()]

    def kinds(out):
        return sorted({(r["kind"], r["severity"]) for r in out if r["schema"] == "io.anomaly.v1"})

    as_hdd = judged("--rotational", "true", "--model", "ST4000NM0035")
    windows = [w for w in as_hdd if w["schema"] == "io.window.v1" and w["window_s"] == BASE_WINDOW_S]
    assert windows and all(w["rotational"] for w in windows)
    reads = sum(w["reads_completed"] for w in windows)
    assert reads == len(events), "every I/O of the capture is counted once in the windows' diskstats"
    assert ("bimodal_retries", "warning") in kinds(as_hdd), kinds(as_hdd)
    # Told it is flash, the same capture is not judged for retries (flash has no revolutions).
    assert ("bimodal_retries", "warning") not in kinds(judged("--rotational", "false")), "flash is no disk arm"
    # Without its class: no diskstats, so no window record, as before.
    assert not [w for w in judged() if w["schema"] == "io.window.v1"]


def iosnoop_queued_capture(events):
    """Events as perf-tools' `iosnoop -Qts` prints them: START is the insertion in the queue,
    so LATms, END less START, holds the queue time too; seconds since boot."""
    boot_ns = scenarios.START_NS - 5_000 * 10**9
    lines = ["STARTs         ENDs           COMM         PID    TYPE DEV      BLOCK        BYTES     LATms"]
    for e in sorted(events, key=lambda e: e["complete_ns"]):
        start, end = e["issue_ns"] - e["queue_ns"] - boot_ns, e["complete_ns"] - boot_ns
        lines.append(f"{start / 1e9:.6f} {end / 1e9:.6f} {e['comm']} {e['pid']} {e['op']} 8,32 {e['sector']} "
                     f"{e['bytes']} {(end - start) / 1e6:.2f}")
    return "\n".join(lines) + "\n"


def test_a_capture_timed_from_the_queue_is_windowed_by_its_totals_and_never_judged_on_device_time(tmp_path, agent_bin):
    # S2's retrying disk again, captured by a tool whose clock starts at the queue.
    events = [r for r in scenarios.s2(random.Random(2)) if r["schema"] == "io.event.v1"]
    capture = tmp_path / "sdc-Q.txt"
    capture.write_text(iosnoop_queued_capture(events))
    records = tmp_path / "records.ndjson"
    with open(records, "w") as out:
        run = subprocess.run([str(agent_bin), "convert", "--from", "iosnoop", "--queued", str(capture), "--host", "s2",
                              "--disk", "sdc", "--start-ns", str(scenarios.START_NS), "--rotational", "true"],
                             stdout=out, stderr=subprocess.PIPE, text=True)
    assert run.returncode == 0, run.stderr
    assert f"{len(events)} events timed from the queue" in run.stderr, run.stderr
    output = tmp_path / "out.ndjson"
    run = subprocess.run(["make", "-s", "detect", f"INPUT={records}", f"OUTPUT={output}"], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "0 rejected" in run.stderr, run.stderr
    out = [json.loads(line) for line in output.read_text().splitlines()]
    windows = [w for w in out if w["schema"] == "io.window.v1" and w["window_s"] == BASE_WINDOW_S and "latency" in w]
    assert sum(w["latency"]["R"]["count"] for w in windows) == len(events), "every I/O counted by its total time"
    for w in windows:
        assert w["latency"]["R"]["total"]["buckets_log2_us"] and not w["latency"]["R"]["device"]["buckets_log2_us"], w
    # The same I/Os timed from their dispatch show S2's retries (the test above); their
    # totals claim no device time, so no mode of it is judged.
    assert not [r for r in out if r["schema"] == "io.anomaly.v1" and r["kind"] == "bimodal_retries"]


def test_a_biosnoop_bt_capture_of_unknown_ops_is_read_but_counts_no_diskstats(tmp_path, agent_bin):
    capture = REPO / "agent/tests/fixtures/captures/biosnoop-bt-tracepoints.txt"
    records = tmp_path / "records.ndjson"
    with open(records, "w") as out:
        run = subprocess.run([str(agent_bin), "convert", "--from", "biosnoop-bt", str(capture), "--host", "h"],
                             stdout=out, stderr=subprocess.PIPE, text=True)
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in records.read_text().splitlines()]
    assert len(events) == 4 and all(e["op"] == "?" and e["timed_from"] == "queue" for e in events), events
    output = tmp_path / "out.ndjson"
    run = subprocess.run(["make", "-s", "detect", f"INPUT={records}", f"OUTPUT={output}"], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "0 rejected" in run.stderr, run.stderr
    assert not output.read_text(), "no diskstats, so no window; no device time, so no verdict"
    run = subprocess.run([str(agent_bin), "convert", "--from", "biosnoop-bt", str(capture), "--host", "h",
                          "--rotational", "true"], capture_output=True, text=True)
    assert run.returncode != 0 and "which I/Os read and which wrote" in run.stderr, run.stderr


def test_make_detect_reads_batched_records_as_the_records_they_batch(tmp_path):
    """S1's records as an agent sends them by default, batched (iopipe/record_batches.py),
    and one by one: the same windows and the same verdicts."""
    records = scenarios.generate("S1")
    verdicts, windows = {}, {}
    for name, stream in (("single", records), ("batched", record_batches.batched_stream(records))):
        path, output = tmp_path / f"{name}.ndjson", tmp_path / f"{name}.out.ndjson"
        path.write_text("".join(json.dumps(r) + "\n" for r in stream))
        run = subprocess.run(["make", "-s", "detect", f"INPUT={path}", f"OUTPUT={output}"],
                             cwd=REPO, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0 and "0 rejected" in run.stderr, run.stderr
        verdicts[name] = run.stdout.splitlines()
        windows[name] = sorted(line for line in output.read_text().splitlines() if '"io.window.v1"' in line)
    assert verdicts["batched"] == verdicts["single"] and any("failing_disk" in v for v in verdicts["single"])
    assert windows["batched"] == windows["single"] and windows["single"]
