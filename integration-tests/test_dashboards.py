"""Every dashboard panel's SQL, macros expanded as Grafana would, runs on the real
ClickHouse and gives the exact figures for known windows: a one-minute bucket of six
10 s windows shows the bucket's true rates and latencies, not an average of averages.
Every panel, annotation, variable and alert rule of the other dashboards answers the
known rows of testkit/known_rows.py exactly, and hosts and disks named with
quotes, backslashes and injections read literally (the same checks run on chdb)."""
import json
import math
import uuid

import pytest

from iopipe.dashboards import macros
from iopipe.dashboards.config import BASE_WINDOW_S
from iopipe.paths import REPO
from testkit import known_rows

pytestmark = pytest.mark.stack

MINUTE_START_S = 1_763_700_000  # a whole minute
WINDOW_S = BASE_WINDOW_S


def insert_windows(clickhouse, host):
    """Disk sdb: six windows, busy then idle; disk sdc: one window."""
    rows = []
    reads = [70, 70, 70, 0, 0, 10]
    awaits = [270.0, 270.0, 270.0, 0.0, 0.0, 8.0]
    for i, (n, await_ms) in enumerate(zip(reads, awaits)):
        rows.append(("sdb", MINUTE_START_S + i * WINDOW_S, n, await_ms, 1.97 if n else 0.0, 100.0 if n else 0.0))
    rows.append(("sdc", MINUTE_START_S, 5, 1.0, 0.01, 0.5))
    values = ", ".join(
        f"('{host}', '{disk}', 'all', {WINDOW_S}, toDateTime({start}), {start * 10**9}, {(start + WINDOW_S) * 10**9}, "
        f"10.0, 10, 1, {n}, {n / 10.0}, {await_ms}, {n * 12.8}, {aqu}, {util})"
        for disk, start, n, await_ms, aqu, util in rows)
    clickhouse.query(
        "INSERT INTO iopipe.windows (host, disk, op, window_s, window_start, window_start_ns, window_end_ns, "
        "interval_s, samples, rotational, reads_completed, reads_per_s, read_await_ms, read_kib_per_s, queue_size, util_pct) "
        f"VALUES {values}")


def run_panels(clickhouse, host):
    board = json.loads((REPO / "dashboards/json/iopipe-iostat.json").read_text())
    results = {}
    for title, sql in macros.panel_queries(board):
        expanded = macros.expand(sql, MINUTE_START_S - 60, MINUTE_START_S + 120, 60, selected={"host": [host]})
        text = clickhouse.query(expanded + " FORMAT JSONEachRow")
        results.setdefault(title, []).extend(json.loads(line) for line in text.splitlines())
    return results


def series_value(rows, series):
    matching = [float(r["value"]) for r in rows if r["series"] == series]
    assert len(matching) == 1, (series, rows)
    return matching[0]


def test_every_panel_query_runs_and_buckets_are_exact(pipeline):
    host = f"dash-{uuid.uuid4().hex[:8]}"
    insert_windows(pipeline.clickhouse, host)
    panels = run_panels(pipeline.reader, host)
    assert all(rows for rows in panels.values()), {t: len(r) for t, r in panels.items()}

    # 220 reads over 60 s; the naive mean of the six r/s values would be the same here,
    # but await must weight by I/Os: (3*70*270 + 10*8) / 220, not mean(270,270,270,0,0,8).
    assert math.isclose(series_value(panels["IOPS"], f"{host}/sdb r/s"), 220 / 60)
    await_rows = panels["Await (request latency incl. queue)"]
    assert math.isclose(series_value(await_rows, f"{host}/sdb r_await"), (3 * 70 * 270 + 10 * 8) / 220)
    util_rows = next(rows for title, rows in panels.items() if title.startswith("%util"))
    assert math.isclose(series_value(util_rows, f"{host}/sdb %util"), 4 * 100.0 / 6)  # busy in 4 of 6 windows
    latest = panels["Latest iostat -x line per disk"]
    assert [(r["disk"], float(r["read_await_ms"])) for r in latest] == [("sdb", 8.0), ("sdc", 1.0)]


def json_rows(clickhouse):
    """run(sql) -> [row dict], as known_rows' checks call it."""
    return lambda sql: [json.loads(line) for line in clickhouse.query(sql + " FORMAT JSONEachRow").splitlines()]


def test_fleet_disk_and_anomaly_views_and_alert_rules_answer_exactly(pipeline):
    known_rows.check_all(json_rows(pipeline.reader), pipeline.clickhouse.query, uuid.uuid4().hex[:8])


def test_no_picked_value_breaks_out_of_its_literal(pipeline):
    # 18.16 reads backslash escapes in literals as the modern engine does: a host named
    # x\') OR 1=1 -- reads as its plain-named twin, and a value naming nobody finds nothing.
    known_rows.check_picked_values_stay_literal(json_rows(pipeline.reader), pipeline.clickhouse.query, uuid.uuid4().hex[:8])
