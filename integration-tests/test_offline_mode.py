"""`make detect`, as a user types it, on a hand-written file with malformed lines."""
import json
import subprocess
from pathlib import Path

import jsonschema

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
