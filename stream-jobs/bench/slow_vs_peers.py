#!/usr/bin/env python3
"""slow_vs_peers on real fleet telemetry: every host of a Perseus-layout data set
(`cluster_X/host_N/DATE.csv.gz`, `labels.csv`) converted with `iopipe-agent convert
--from perseus` and judged by `make detect`; the drives flagged against the labelled ones,
and how long each labelled drive took to flag. Results: stream-jobs/bench/RESULTS-slow-vs-peers.md.

    make evaluate-peers   (or: python3 stream-jobs/bench/slow_vs_peers.py [--data DIR] [--json FILE])

The data is found at --data, else $IOPIPE_PERSEUS_DATA, else shared/data/perseus beside
this repository or beside the one it was cloned from."""
import argparse
import csv
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
AGENT = Path(os.environ.get("IOPIPE_AGENT_BIN",
                            Path.home() / ".cache/iopipe/cargo-target/release/iopipe-agent"))
HOUR_S = 3600
NO_DATA = 3  # the exit status when no data set is found, for a caller to tell from a failure


def data_dir(given):
    candidates = [given, os.environ.get("IOPIPE_PERSEUS_DATA"), REPO.parent / "shared/data/perseus"]
    origin = subprocess.run(["git", "-C", str(REPO), "remote", "get-url", "origin"], capture_output=True, text=True)
    if origin.returncode == 0 and Path(origin.stdout.strip()).is_dir():
        candidates.append(Path(origin.stdout.strip()).resolve().parent / "shared/data/perseus")
    for c in candidates:
        if c and (Path(c) / "labels.csv").is_file():
            return Path(c)
    return None


def host_name(host_dir):
    """cluster_A/host_22 -> cluster_A-host_22: a host name cannot hold the / of a host/disk key."""
    return f"{host_dir.parent.name}-{host_dir.name}"


def convert_host(host_dir, scratch, records):
    """Every day of one host converted, appended to `records`; returns (windows, malformed lines)."""
    windows = malformed = 0
    for day in sorted(host_dir.glob("*.csv.gz")):
        plain = scratch / day.name.removesuffix(".gz")
        plain.write_bytes(gzip.decompress(day.read_bytes()))
        run = subprocess.run([str(AGENT), "convert", "--from", "perseus", str(plain), "--host", host_name(host_dir)],
                             stdout=records, stderr=subprocess.PIPE, text=True)
        if run.returncode:
            sys.exit(f"converting {day} failed: {run.stderr}")
        counts = re.search(r"(\d+) windows, (\d+) malformed lines skipped", run.stderr)
        windows += int(counts[1])
        malformed += int(counts[2])
        plain.unlink()
    return windows, malformed


def first_hours(host_dir):
    """Each drive's observed hours (Unix hours with a row), sorted."""
    hours = defaultdict(set)
    for day in host_dir.glob("*.csv.gz"):
        with gzip.open(day, "rt") as f:
            for row in csv.DictReader(f):
                hours[row["disk_id"]].add(int(row["ts"]) // HOUR_S)
    return {disk: sorted(h) for disk, h in hours.items()}


def evaluate(data):
    hosts = sorted(p.parent for p in data.glob("*/*/*.csv.gz"))
    hosts = sorted(set(hosts))
    labelled = set()
    with open(data / "labels.csv") as f:
        for row in csv.DictReader(f):
            labelled.add(f"{row['cluster']}-{row['host_name']}/{row['disk_id']}")
    with tempfile.TemporaryDirectory(prefix="iopipe-peers-") as scratch:
        scratch = Path(scratch)
        records = scratch / "windows.ndjson"
        converted = {}
        with open(records, "w") as out:
            for i, host_dir in enumerate(hosts, 1):
                print(f"converting {host_name(host_dir)} ({i} of {len(hosts)})", file=sys.stderr, flush=True)
                converted[host_name(host_dir)] = convert_host(host_dir, scratch, out)
        print(f"judging {sum(w for w, _ in converted.values())} windows with make detect", file=sys.stderr, flush=True)
        output = scratch / "verdicts.ndjson"
        run = subprocess.run(["make", "-s", "detect", f"INPUT={records}", f"OUTPUT={output}"], cwd=REPO,
                             capture_output=True, text=True)
        if run.returncode:
            sys.exit(f"make detect failed: {run.stderr}")
        verdicts = [json.loads(line) for line in output.read_text().splitlines()]
        rejects = Path(f"{output}.rejects.ndjson").read_text().splitlines()
    anomalies = [r for r in verdicts if r["schema"] == "io.anomaly.v1"]
    health = [r for r in verdicts if r["schema"] == "io.health.v1"]
    drives = {}
    for host_dir in hosts:
        for disk, hours in first_hours(host_dir).items():
            key = f"{host_name(host_dir)}/{disk}"
            drives[key] = {"observed_hours": hours}
    result = {"data": str(data), "hosts": {}, "labelled": sorted(labelled), "rejects": len(rejects),
              "anomalies": anomalies, "health": health, "drives": {}}
    for name, (windows, malformed) in converted.items():
        result["hosts"][name] = {"windows": windows, "malformed": malformed,
                                 "drives": sum(1 for k in drives if k.startswith(name + "/"))}
    flagged = {}
    for a in anomalies:
        flagged.setdefault(f"{a['host']}/{a['disk']}", a)
    for key, a in flagged.items():
        hours = drives[key]["observed_hours"]
        failing = next((h for h in health if f"{h['host']}/{h['disk']}" == key and h["to_state"] == "failing"), None)
        result["drives"][key] = {
            "kind": a["kind"], "severity": a["severity"], "summary": a["summary"], "evidence": a["evidence"],
            "warned_after_observed_hours": sum(1 for h in hours if h < a["end_ns"] // 10**9 // HOUR_S),
            "failing_after_observed_hours": None if failing is None
            else sum(1 for h in hours if h < failing["ts_ns"] // 10**9 // HOUR_S),
            "failing_after_days": None if failing is None else round((failing["ts_ns"] // 10**9 - hours[0] * HOUR_S) / 86400, 1),
        }
    true_positive = len(set(flagged) & labelled)
    result["precision"] = true_positive / len(flagged) if flagged else 1.0
    result["recall"] = true_positive / len(labelled) if labelled else 1.0
    result["flagged"] = sorted(flagged)
    result["drives_judged"] = len(drives)
    return result


def markdown(r):
    lines = [
        "# slow_vs_peers on real fleet telemetry",
        "",
        "Perseus-layout per-drive telemetry (throughput and mean latency every 15 s; Alibaba, FAST'23), every host",
        "converted with `iopipe-agent convert --from perseus` and judged by `make detect`. Reproduce with",
        "`make evaluate-peers` (writes this file; `--json FILE` for every verdict).",
        "",
        f"Drives judged: {r['drives_judged']}; labelled fail-slow: {len(r['labelled'])}; flagged: {len(r['flagged'])}.",
        f"**Precision {r['precision']:.2f}, recall {r['recall']:.2f}** (per drive, any slow_vs_peers anomaly).",
        f"Records rejected by the job: {r['rejects']}.",
        "",
        "| host | drives | windows | NA rows skipped | flagged |",
        "|---|---|---|---|---|",
    ]
    for name, h in r["hosts"].items():
        flagged = ", ".join(k.split("/")[1] for k in r["flagged"] if k.startswith(name + "/")) or "none"
        lines.append(f"| {name} | {h['drives']} | {h['windows']} | {h['malformed']} | {flagged} |")
    lines += ["", "Time to detect, in hours the drive was observed (the telemetry covers about 3 hours a day):", "",
              "| drive | labelled | warning after | failing after | slowdown when raised | peers |",
              "|---|---|---|---|---|---|"]
    for key, d in r["drives"].items():
        failing = "never" if d["failing_after_observed_hours"] is None else \
            f"{d['failing_after_observed_hours']} h ({d['failing_after_days']} days)"
        lines.append(f"| {key} | {'yes' if key in r['labelled'] else 'no'} | {d['warned_after_observed_hours']} h | "
                     f"{failing} | {d['evidence']['slowdown_ratio']:.2f}x | {d['evidence']['peers']} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data")
    parser.add_argument("--out", default=str(REPO / "stream-jobs/bench/RESULTS-slow-vs-peers.md"))
    parser.add_argument("--json", help="also write every figure and verdict here")
    args = parser.parse_args()
    data = data_dir(args.data)
    if data is None:
        print("no Perseus data found: pass --data DIR (cluster_X/host_N/DATE.csv.gz and labels.csv) "
              "or set IOPIPE_PERSEUS_DATA", file=sys.stderr)
        sys.exit(NO_DATA)
    if not AGENT.exists():
        sys.exit(f"{AGENT} is missing: run `make agent` first (or set IOPIPE_AGENT_BIN)")
    r = evaluate(data)
    Path(args.out).write_text(markdown(r))
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=1))
    print(f"precision {r['precision']:.2f}, recall {r['recall']:.2f}: flagged {', '.join(r['flagged']) or 'none'}; "
          f"written to {args.out}")


if __name__ == "__main__":
    main()
