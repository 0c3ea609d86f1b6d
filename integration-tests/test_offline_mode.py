"""`make detect`, as a user types it, on a hand-written file with malformed lines."""
import json
import subprocess
from pathlib import Path

import jsonschema

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "stream-jobs" / "examples" / "diskstats-two-disks.ndjson"


def test_make_detect_writes_windows_and_rejects_malformed_lines_without_stopping(tmp_path):
    output = tmp_path / "out.ndjson"
    run = subprocess.run(["make", "-s", "detect", f"INPUT={EXAMPLE}", f"OUTPUT={output}"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "8 records" in run.stderr and "2 rejected" in run.stderr, run.stderr

    window_schema = json.loads((REPO / "schema/records/io.window.v1.schema.json").read_text())
    windows = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(windows) == 8
    for window in windows:
        jsonschema.validate(window, window_schema)
    sdb = [w for w in windows if w["disk"] == "sdb" and w["samples"] == 10]
    assert sdb and all(abs(w["read_await_ms"] - 269.71) < 0.01 and abs(w["queue_size"] - 1.97) < 1e-9 for w in sdb)

    rejects = [json.loads(line) for line in Path(f"{output}.rejects.ndjson").read_text().splitlines()]
    rejects.sort(key=lambda r: r["source"])
    assert [r["source"] for r in rejects] == ["diskstats-two-disks.ndjson:33", "diskstats-two-disks.ndjson:34"]
    assert rejects[0]["reason"] == 'ts_ns must be an integer, got "yesterday"'
    assert rejects[1]["reason"].startswith("not JSON")
