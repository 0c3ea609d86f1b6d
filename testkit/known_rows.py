"""Known rows in every table the dashboards and alert rules read, and what each panel and
rule must answer about them. The same check runs on the modern engine (chdb, in
dashboards/tests) and on the 18.16 server (integration-tests/test_dashboards.py), each
through a `run(sql) -> [row dict]` and an `execute(sql)` of its own.

Hosts carry a suffix so a shared server's other rows never mix in; times sit in 2096,
far from any other test's and never past the tables' retention (a modern server drops
rows older than their TTL as it writes them). Expected figures are derived from the rows with plain Python.
"""
import json
import math
from dataclasses import dataclass

from iopipe.dashboards import alerts, generate, heatmap_svg, macros
from iopipe.dashboards.config import BASE_WINDOW_S, DISK, FLEET

NOW_S = 4_000_000_020  # a whole minute; "now" for every query and rule
HOUR_S = 3600
NS = 1_000_000_000
INTERVAL_S = 60
BURST_START = NOW_S - 600  # the failing disk's minute of slow I/O


class At(int):
    """A DateTime value, written as toDateTime(seconds) so no time zone reads it."""


def literal(value):
    if isinstance(value, At):
        return f"toDateTime({int(value)})"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    return repr(value)


def insert_sql(table, rows):
    columns = list(rows[0])
    names = ", ".join(f"`{c}`" for c in columns)
    values = ", ".join("(" + ", ".join(literal(r[c]) for c in columns) + ")" for r in rows)
    return f"INSERT INTO iopipe.{table} ({names}) VALUES {values}"


def histogram(host, disk, start_s, buckets, latency="device", op="R", sum_us=None):
    counts = [0] * (max(buckets) + 1)
    for index, n in buckets.items():
        counts[index] = n
    total = sum(counts)
    return {"host": host, "disk": disk, "op": op, "latency": latency, "start_ns": start_s * NS, "end_ns": (start_s + 1) * NS,
            "start": At(start_s), "buckets_log2_us": counts, "count": total,
            "sum_us": sum_us if sum_us is not None else sum(n * 2 ** i * 3 // 2 for i, n in buckets.items()),
            "max_us": 2 ** (max(buckets) + 1) - 1, "errors": 0}


def anomaly(host, disk, kind, severity, start_s, end_s=None, evidence=None):
    end_s = end_s or start_s + 10
    return {"id": f"{kind}:{host}/{disk}:{start_s}:{severity}", "host": host, "disk": disk, "kind": kind,
            "severity": severity, "start_ns": start_s * NS, "end_ns": end_s * NS, "start": At(start_s),
            "summary": f"{disk} {kind}", "evidence_json": json.dumps(evidence or {}, separators=(",", ":")), "received_at": At(end_s),
            "earliest_first": 4294967295 - end_s}


def health(host, disk, at_s, from_state, to_state, action="", ticket=""):
    return {"id": f"{host}/{disk}:{at_s}", "host": host, "disk": disk, "ts_ns": at_s * NS, "ts": At(at_s),
            "from_state": from_state, "to_state": to_state, "reason": f"{from_state} to {to_state}",
            "anomaly_ids": [], "ticket.action": action, "ticket.ticket_id": ticket}


def window(host, disk, start_s, util_pct, queue_size, write_await_ms, writes):
    """One of the job's first windows (the ones the panels read), of one-second samples."""
    return {"host": host, "disk": disk, "op": "all", "window_s": BASE_WINDOW_S, "window_start": At(start_s),
            "window_start_ns": start_s * NS, "window_end_ns": (start_s + BASE_WINDOW_S) * NS,
            "interval_s": float(BASE_WINDOW_S), "samples": BASE_WINDOW_S, "rotational": 0,
            "writes_completed": writes, "writes_per_s": writes / BASE_WINDOW_S, "write_await_ms": write_await_ms,
            "queue_size": queue_size, "util_pct": util_pct}


def inventory(host, disk, last_seen_s):
    return {"host": host, "disk": disk, "model": "ST4000NM0035", "serial": f"Z{disk}", "rotational": 1,
            "last_seen": At(last_seen_s)}


def minute_rollup(host, disk, period_s, buckets):
    h = histogram(host, disk, period_s, buckets)
    return {"host": host, "disk": disk, "op": "R", "latency": "device", "period": At(period_s), "revision": 1,
            "buckets_log2_us": h["buckets_log2_us"], "count": h["count"], "errors": 0, "sum_us": h["sum_us"],
            "max_us": h["max_us"]}


def event(host, disk, issue_s, latency_ms, queue_ms=0.5):
    issue_ns = issue_s * NS
    return {"host": host, "disk": disk, "op": "R", "issue_ns": issue_ns, "complete_ns": issue_ns + int(latency_ms * 1e6),
            "issue_time": At(issue_s), "sector": issue_s, "bytes": 4096, "queue_ns": int(queue_ms * 1e6), "inflight": 1,
            "error": 0, "comm": "fio", "pid": 7, "sample_reason": "outlier", "sample_weight": 1.0}


@dataclass
class Fleet:
    """A: sdb failing (ticket open, then updated), sdc an NVMe at %util 100 and queue depth 1
    with healthy latency, sdd idle but for a flush/write burst (the detector calls it a
    queue ramp: workload), sde retrying, sdf saturated, sdg slower than its peers, sdh failed
    and recovered (ticket resolved). B: its telemetry stopped ten minutes ago. C: three
    disks failing within the hour."""
    a: str
    b: str
    c: str

    @classmethod
    def named(cls, suffix):
        return cls(f"dash-a-{suffix}", f"dash-b-{suffix}", f"dash-c-{suffix}")

    def histograms(self):
        slow = [histogram(self.a, "sdb", BURST_START, {2: 5, 10: 3}),
                histogram(self.a, "sdb", BURST_START + 10, {2: 1, 30: 2}),  # beyond the last row: counted in it
                histogram(self.a, "sdb", BURST_START + 10, {2: 4}, op="W"),
                histogram(self.a, "sdb", BURST_START + 60, {12: 7}),
                histogram(self.a, "sdb", BURST_START, {4: 9}, latency="queue"),
                histogram(self.a, "sdb", BURST_START - 2 * HOUR_S, {5: 1})]  # outside the range
        healthy = [histogram(self.a, "sdc", BURST_START, {6: 500})]
        return slow + healthy

    def tables(self):
        a, b, c = self.a, self.b, self.c
        failing_evidence = {"device_p50_ms": 180.5, "device_p99_ms": 1100.0, "device_max_ms": 1203.4,
                            "iostat": {"aqu_sz": 1.2, "util_pct": 99.5}}
        histograms = self.histograms()
        return {
            "histograms": histograms + [histograms[0]],  # a replayed record counts once
            "anomalies": [
                anomaly(a, "sdb", "failing_disk", "critical", BURST_START, evidence=failing_evidence),
                anomaly(a, "sdd", "queue_ramp", "info", BURST_START),
                anomaly(a, "sde", "bimodal_retries", "warning", NOW_S - 1200),
                anomaly(a, "sdf", "saturation", "warning", NOW_S - 900),
                anomaly(a, "sdf", "saturation", "critical", NOW_S - 900, NOW_S - 300),  # the same episode, escalated
                anomaly(a, "sdg", "slow_vs_peers", "warning", NOW_S - 5 * HOUR_S, NOW_S - 2 * HOUR_S),
                anomaly(a, "sde", "bimodal_retries", "warning", NOW_S - 3 * HOUR_S),  # long over
                *[anomaly(c, d, "failing_disk", "critical", NOW_S - 1800 + i * 60) for i, d in enumerate(("sda", "sdb", "sdc"))],
            ],
            "health": [
                health(a, "sdb", BURST_START + 20, "healthy", "suspect"),
                health(a, "sdb", BURST_START + 40, "suspect", "failing", "open", f"iopipe-{a}-sdb"),
                health(a, "sdb", BURST_START + 100, "failing", "failing", "update", f"iopipe-{a}-sdb"),
                health(a, "sdh", NOW_S - 2 * HOUR_S, "suspect", "failing", "open", f"iopipe-{a}-sdh"),
                health(a, "sdh", NOW_S - HOUR_S - 60, "failing", "suspect"),
                health(a, "sdh", NOW_S - HOUR_S, "suspect", "healthy", "resolve", f"iopipe-{a}-sdh"),
            ],
            "windows": [window(a, "sdc", start_s, 100.0, 1.0, 0.08, 120_000)
                        for start_s in range(NOW_S - 60, NOW_S, BASE_WINDOW_S)]
                       + [window(a, "sdd", NOW_S - 60, 3.1, 0.2, 146.0, 11)],
            "disk_inventory": [inventory(a, d, NOW_S - 5) for d in ("sdb", "sdc", "sdd", "sde", "sdf", "sdg", "sdh")]
                              + [inventory(b, "sda", NOW_S - 600), inventory(c, "sda", NOW_S - 5),
                                 inventory(c, "sdb", NOW_S - 5), inventory(c, "sdc", NOW_S - 5)],
            "latency_minutes": [minute_rollup(a, "sdb", BURST_START, {10: 190, 20: 10}),
                                minute_rollup(a, "sdc", BURST_START, {6: 50})],  # too few I/Os for a p99
            "events": [event(a, "sdb", BURST_START + s, ms) for s, ms in ((1, 12.0), (2, 1203.4), (3, 180.5))],
        }


def insert(execute, tables):
    for table, rows in tables.items():
        execute(insert_sql(table, rows))


def expanded(sql, selected=None, range_s=HOUR_S):
    return macros.expand(sql, NOW_S - range_s, NOW_S, INTERVAL_S, selected or {})


def board(uid):
    return generate.as_dict(generate.BOARDS[uid]())


def panel(uid, title_start):
    return next(p for p in board(uid)["panels"] if p["title"].startswith(title_start))["targets"][0]["rawSql"]


# --- what the panels must answer -------------------------------------------------------

def expected_heatmap(records, last=DISK["heatmap_buckets"]):
    """{(bucket start s, bucket low µs): ios} of the device histograms in the range."""
    cells = {}
    for r in records:
        start_s = r["start_ns"] // NS
        if r["latency"] != "device" or not NOW_S - HOUR_S <= start_s <= NOW_S:
            continue
        for i, n in enumerate(r["buckets_log2_us"]):
            key = (start_s // INTERVAL_S * INTERVAL_S, 2 ** min(i, last - 1))
            cells[key] = cells.get(key, 0) + n
    return {k: v for k, v in cells.items() if v}


def heatmap_cells(rows):
    return {(int(r["time_s"]), int(k)): int(v) for r in rows for k, v in r.items()
            if k not in ("time", "time_s") and int(v)}


def p99_ms(buckets):
    """The cookbook's p99: log-linear inside the log2 bucket holding the 99th percentile."""
    total, cumulative = sum(buckets), 0
    for i, n in enumerate(buckets):
        if cumulative + n >= 0.99 * total:
            return round(2 ** (i + (0.99 * total - cumulative) / n) / 1000, 3)
        cumulative += n


def check_disk_view(run, fleet):
    selected = {"host": fleet.a, "disk": "sdb"}  # single-valued variables: Grafana holds a string
    sql = heatmap_svg.heatmap_sql(fleet.a, "sdb", NOW_S - HOUR_S, NOW_S, INTERVAL_S)
    assert sql == expanded(panel(DISK["uid"], "Device latency heatmap"), selected), "the picture's SQL is the panel's"
    rows = run(f"SELECT toUInt32(time) AS time_s, * FROM ({sql})")
    assert heatmap_cells(rows) == expected_heatmap([h for h in fleet.histograms() if h["disk"] == "sdb"])
    assert heatmap_svg.svg(run(sql), "sdb").count('class="cell"') == len(heatmap_cells(rows))

    means = run(f"SELECT toUInt32(time) AS time_s, series, value FROM ({expanded(panel(DISK['uid'], 'Device vs queue'), selected)})")
    slow_minute = [h for h in fleet.histograms() if h["disk"] == "sdb" and h["start_ns"] // NS // 60 == BURST_START // 60]
    for latency in ("device", "queue"):
        mine = [h for h in slow_minute if h["latency"] == latency]
        got = [float(r["value"]) for r in means if r["series"] == f"{latency} mean" and int(r["time_s"]) == BURST_START]
        assert got and math.isclose(got[0], sum(h["sum_us"] for h in mine) / sum(h["count"] for h in mine) / 1000), means

    worst = run(expanded(panel(DISK["uid"], "Worst"), selected))
    assert [float(r["latency_ms"]) for r in worst] == [1203.4, 180.5, 12.0]

    notes = run(expanded(macros.annotation_queries(board(DISK["uid"]))[0][1], selected))
    assert [(r["text"], r["tags"]) for r in notes] == [("failing_disk (critical): sdb failing_disk", "failing_disk,critical")]


def check_fleet_view(run, fleet):
    by_health = run(expanded(panel(FLEET["uid"], "Disks by health"), range_s=HOUR_S))
    # Seen in the last hour: A's seven disks and C's three (B last sent ten minutes ago: seen too).
    assert [(r["state"], int(r["disks"])) for r in by_health] == [("healthy", 10), ("failing", 1)]

    kinds = run(expanded(panel(FLEET["uid"], "Anomaly episodes by kind")))
    per_kind = {}
    for r in kinds:
        per_kind[r["series"]] = per_kind.get(r["series"], 0) + int(r["value"])
    # sdf's escalated episode counts once; sdg's and sde's older episodes started before the hour.
    assert per_kind == {"failing_disk": 4, "queue_ramp": 1, "bimodal_retries": 1, "saturation": 1}

    worst = run(expanded(panel(FLEET["uid"], "Worst")))
    rollup = fleet.tables()["latency_minutes"][0]
    assert [(r["host"], r["disk"], float(r["p99_ms"])) for r in worst] == [
        (fleet.a, "sdb", p99_ms(rollup["buckets_log2_us"]))]

    tickets = [r for r in run(expanded(panel(FLEET["uid"], "Open tickets"))) if r["host"] in (fleet.a, fleet.b, fleet.c)]
    assert [(r["disk"], r["ticket_id"], r["last_action"], r["state"]) for r in tickets] == [
        ("sdb", f"iopipe-{fleet.a}-sdb", "update", "failing")]


def check_anomaly_view(run, fleet):
    table = run(expanded(panel("iopipe-anomaly", "Anomalies with"), {"kind": ["failing_disk"], "host": [fleet.a]}))
    assert [(r["disk"], float(r["p99_ms"]), float(r["util_pct"])) for r in table] == [("sdb", 1100.0, 99.5)]
    everything = run(expanded(panel("iopipe-anomaly", "Anomalies with"), {"host": [fleet.a]}))
    assert len(everything) == 5  # the hour's rows of A, each severity its own


def check_every_query_runs(run, fleet):
    selections = {"host": [fleet.a], "disk": ["sdb"]}
    for uid in generate.BOARDS:
        for where, sql in macros.all_queries(board(uid)):
            run(expanded(sql, selections))


# --- what a picked value cannot do -------------------------------------------------------

# Values a link can hand a dashboard (var-host=...): a quote, backslashes (a trailing one
# ended Grafana's singlequote literal early), classic injections, a percent sign.
UNSAFE_VALUES = ["o'neil", "evil\\", "back\\slash", "x\\') OR 1=1 --", "' OR '1'='1", "%41", "a b;--"]
# Disks named by them have rows two hours back: outside the fleet view's hour, so its
# counts never see them, and inside the range read here, beside the fleet's own rows.
NAMED_AT_S = NOW_S - 2 * HOUR_S
NAMED_RANGE_S = 3 * HOUR_S
TWIN_DISK = "sdq"


def one_disk(host, disk):
    """One disk's rows in every table a picked value filters."""
    return {"windows": [window(host, disk, NAMED_AT_S, 40.0, 2.0, 3.5, 700)],
            "histograms": [histogram(host, disk, NAMED_AT_S, {7: 30, 15: 2}),
                           histogram(host, disk, NAMED_AT_S, {3: 30}, latency="queue")],
            "events": [event(host, disk, NAMED_AT_S + 1, 70.0)],
            "anomalies": [anomaly(host, disk, "saturation", "warning", NAMED_AT_S)],
            "disk_inventory": [inventory(host, disk, NAMED_AT_S)]}


def held(uid, values):
    """`values` as Grafana holds them on the board: a list for a multi-valued variable."""
    variables = board(uid).get("templating", {}).get("list", [])
    return {v["name"]: [values[v["name"]]] if v["multi"] else values[v["name"]] for v in variables if v["name"] in values}


def queries_reading(variable):
    """(board uid, SQL) of every query of every board that interpolates the variable."""
    return [(uid, sql) for uid in generate.BOARDS for _, sql in macros.all_queries(board(uid)) if f"${{{variable}:" in sql]


def renamed(rows, names):
    """The rows with each name in every text written as `names` maps it."""
    def rename(value):
        if isinstance(value, str):
            for name, other in names.items():
                value = value.replace(name, other)
        return value
    return [{k: rename(v) for k, v in r.items()} for r in rows]


def check_picked_values_stay_literal(run, execute, suffix):
    """Every query reading a variable answers for a host and disk named by an unsafe value
    exactly as for a plain-named twin with the same rows, and finds nothing for an unsafe
    value naming nothing: never the fleet's rows, never a syntax error."""
    twin = f"dash-twin-{suffix}"
    named = {f"dash-{suffix}-{value}": value for value in UNSAFE_VALUES}  # host: its one disk
    for host, disk in [(twin, TWIN_DISK), *named.items()]:
        insert(execute, one_disk(host, disk))

    for uid, sql in queries_reading("host"):
        def answer(host, disk):
            return run(expanded(sql, held(uid, {"host": host, "disk": disk, "kind": "saturation"}), NAMED_RANGE_S))
        expected = answer(twin, TWIN_DISK)
        assert expected, sql
        for host, disk in named.items():
            assert renamed(answer(host, disk), {host: twin, disk: TWIN_DISK}) == expected, (host, sql)

    for variable in ("host", "disk", "kind"):
        for uid, sql in queries_reading(variable):
            for value in UNSAFE_VALUES:
                nobody = held(uid, {variable: f"nobody-{suffix}-{value}"})
                assert run(expanded(sql, nobody, NAMED_RANGE_S)) == [], (variable, value, sql)


# --- what the rules must answer ---------------------------------------------------------

def firing(run, fleet):
    """{rule name: [labels of each instance that fires]}, for this fleet's hosts only."""
    fired = {}
    for group in alerts.provisioning()["groups"]:
        for rule in group["rules"]:
            query = next(d for d in rule["data"] if d["refId"] == "A")
            condition = next(d for d in rule["data"] if d["refId"] == rule["condition"])["model"]["conditions"][0]
            assert condition["evaluator"]["type"] == "gt"
            sql = expanded(query["model"]["rawSql"], range_s=query["relativeTimeRange"]["from"])
            rows = [r for r in run(sql) if r["host"] in (fleet.a, fleet.b, fleet.c)]
            fired[rule["title"]] = [{k: v for k, v in r.items() if k != "value"} for r in rows
                                    if float(r["value"]) > condition["evaluator"]["params"][0]]
    return fired


def check_rules(run, fleet):
    fired = firing(run, fleet)
    a, b, c = fleet.a, fleet.b, fleet.c
    assert fired == {
        "DiskFailing": [{"host": a, "disk": "sdb"}],  # sdh recovered
        "DiskRetrying": [{"host": a, "disk": "sde"}],
        "DiskQueueSaturated": [{"host": a, "disk": "sdf"}],
        "DiskSlowerThanPeers": [{"host": a, "disk": "sdg"}],
        "HostTelemetryMissing": [{"host": b}],
        "HostManyDisksFailing": [{"host": c}],  # A has one failing disk: its own alert, not the host's
    }, fired
    quiet = [(name, labels) for name, instances in fired.items() for labels in instances
             if labels.get("disk") in ("sdc", "sdd") and labels["host"] == a]
    assert quiet == [], "%util 100 at queue depth 1 and a flush burst on an idle disk alert nobody"


def check_all(run, execute, suffix):
    fleet = Fleet.named(suffix)
    insert(execute, fleet.tables())
    check_disk_view(run, fleet)
    check_fleet_view(run, fleet)
    check_anomaly_view(run, fleet)
    check_every_query_runs(run, fleet)
    check_rules(run, fleet)
