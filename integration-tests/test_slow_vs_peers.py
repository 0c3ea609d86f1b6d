"""slow_vs_peers on real fleet telemetry, as `make evaluate-peers` runs it: Perseus hosts
converted with `iopipe-agent convert --from perseus`, judged by `make detect`."""
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

pytestmark = pytest.mark.jar

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "stream-jobs/bench/slow_vs_peers.py"
NO_DATA = 3  # slow_vs_peers.py's exit status when it finds no data set


def test_the_labelled_fail_slow_drives_and_only_them_are_flagged_with_their_evidence(tmp_path):
    figures = tmp_path / "figures.json"
    run = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "RESULTS.md"), "--json", str(figures)],
                         cwd=REPO, capture_output=True, text=True, timeout=900)
    if run.returncode == NO_DATA:
        pytest.skip(run.stderr.strip())
    assert run.returncode == 0, run.stderr
    r = json.loads(figures.read_text())
    assert r["labelled"], "labels.csv names the fail-slow drives"
    assert r["flagged"] == r["labelled"]
    assert r["rejects"] == 0
    assert all(h["drives"] >= 4 and h["windows"] > 0 for h in r["hosts"].values())

    schemas = {name: json.loads((REPO / f"schema/records/{name}.schema.json").read_text())
               for name in ("io.anomaly.v1", "io.health.v1")}
    for record in r["anomalies"] + r["health"]:
        jsonschema.validate(record, schemas[record["schema"]])
    assert {a["kind"] for a in r["anomalies"]} == {"slow_vs_peers"}
    assert len(r["anomalies"]) == len(r["labelled"]), "one anomaly per drive's episode"
    for key in r["labelled"]:
        evidence = r["drives"][key]["evidence"]
        assert evidence["slowdown_ratio"] > 1 and evidence["peers"] >= 3, evidence
        assert evidence["persistence"]["slow_hours_in_a_row"] >= 3, evidence
        assert r["drives"][key]["failing_after_days"] is not None, f"{key} stays slow for days: failing, with a ticket"
    touched = {f"{h['host']}/{h['disk']}" for h in r["health"]}
    assert touched == set(r["labelled"]), "no other drive's health moved"
    assert any(h.get("ticket", {}).get("action") == "open" for h in r["health"])
