"""iostat -x arithmetic written down once more, independently of the Java job, straight
from sysstat's formulas: the yardstick the integration tests hold the pipeline to."""
from iopipe.diskstats_fields import CUMULATIVE


def delta(prev, curr):
    return {f: curr.get(f, 0) - prev.get(f, 0) for f in CUMULATIVE}


def per_op(completed, merged, sectors, time_ms, seconds):
    return {
        "per_s": completed / seconds,
        "kib_per_s": sectors / 2.0 / seconds,
        "merges_per_s": merged / seconds,
        "merges_pct": merged * 100.0 / (merged + completed) if merged + completed else 0.0,
        "await_ms": time_ms / completed if completed else 0.0,
        "req_kib": sectors / completed / 2.0 if completed else 0.0,
    }


def metrics(d, interval_ns):
    """iostat -x metrics of summed counter deltas `d` over `interval_ns`."""
    seconds = interval_ns / 1e9
    out = {"interval_s": seconds}
    for op, prefix, plural in (("read", "reads", "reads"), ("write", "writes", "writes"), ("discard", "discards", "discards")):
        sectors = d["sectors_read"] if op == "read" else d["sectors_written"] if op == "write" else d["sectors_discarded"]
        m = per_op(d[f"{prefix}_completed"], d[f"{prefix}_merged"], sectors, d[f"{op}_time_ms"], seconds)
        out[f"{plural}_per_s"] = m["per_s"]
        out[f"{op}_kib_per_s"] = m["kib_per_s"]
        out[f"{op}_merges_per_s"] = m["merges_per_s"]
        out[f"{op}_merges_pct"] = m["merges_pct"]
        out[f"{op}_await_ms"] = m["await_ms"]
        out[f"{op}_req_kib"] = m["req_kib"]
    out["flushes_per_s"] = d["flushes_completed"] / seconds
    out["flush_await_ms"] = d["flush_time_ms"] / d["flushes_completed"] if d["flushes_completed"] else 0.0
    out["queue_size"] = d["weighted_io_time_ms"] / seconds / 1000.0
    out["util_pct"] = d["io_time_ms"] / seconds / 1000.0 * 100.0
    return out


def windows(samples, window_s):
    """Expected io.window.v1 content per (disk, window_start_ns) from one host's samples:
    consecutive samples of a disk give a delta stamped with the later sample's time (in
    whole ms, as Flink stamps it); a window sums the deltas whose stamp falls inside it."""
    by_disk = {}
    for s in sorted(samples, key=lambda s: s["ts_ns"]):
        by_disk.setdefault(s["disk"], []).append(s)
    window_ms = window_s * 1000
    sums = {}
    for disk, series in by_disk.items():
        for prev, curr in zip(series, series[1:]):
            stamp_ms = curr["ts_ns"] // 1_000_000
            key = (disk, (stamp_ms - stamp_ms % window_ms) * 1_000_000)
            acc = sums.setdefault(key, {"interval_ns": 0, "samples": 0, **{f: 0 for f in CUMULATIVE}})
            for f, v in delta(prev, curr).items():
                acc[f] += v
            acc["interval_ns"] += curr["ts_ns"] - prev["ts_ns"]
            acc["samples"] += 1
    return {key: {**metrics(acc, acc["interval_ns"]), "samples": acc["samples"],
                  "reads_completed": acc["reads_completed"], "writes_completed": acc["writes_completed"],
                  "window_end_ns": key[1] + window_ms * 1_000_000}
            for key, acc in sums.items()}
