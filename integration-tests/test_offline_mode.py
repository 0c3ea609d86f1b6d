"""`make detect`, as a user types it, on a hand-written file with malformed lines."""
import json
import random
import subprocess
from pathlib import Path

import jsonschema

import scenarios

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
    assert sorted(w["window_s"] for w in windows) == [10] * 8 + [60] * 2
    sdb = [w for w in windows if w["disk"] == "sdb" and w["samples"] == 10]
    assert sdb and all(abs(w["read_await_ms"] - 269.71) < 0.01 and abs(w["queue_size"] - 1.97) < 1e-9 for w in sdb)

    rejects = [json.loads(line) for line in Path(f"{output}.rejects.ndjson").read_text().splitlines()]
    rejects.sort(key=lambda r: r["source"])
    assert [r["source"] for r in rejects] == ["diskstats-two-disks.ndjson:33", "diskstats-two-disks.ndjson:34"]
    assert rejects[0]["reason"] == 'ts_ns must be an integer, got "yesterday"'
    assert rejects[1]["reason"].startswith("not JSON")


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
    windows = [w for w in as_hdd if w["schema"] == "io.window.v1" and w["window_s"] == 10]
    assert windows and all(w["rotational"] for w in windows)
    reads = sum(w["reads_completed"] for w in windows)
    assert reads == len(events), "every I/O of the capture is counted once in the windows' diskstats"
    assert ("bimodal_retries", "warning") in kinds(as_hdd), kinds(as_hdd)
    # Told it is flash, the same capture is not judged for retries (flash has no revolutions).
    assert ("bimodal_retries", "warning") not in kinds(judged("--rotational", "false")), "flash is no disk arm"
    # Without its class: no diskstats, so no window record, as before.
    assert not [w for w in judged() if w["schema"] == "io.window.v1"]
