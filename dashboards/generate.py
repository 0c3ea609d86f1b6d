#!/usr/bin/env python3
"""Generates the Grafana dashboards from CONFIG, with Grafana's foundation SDK.

    python dashboards/generate.py            # rewrites dashboards/json/*.json
    python dashboards/generate.py --check    # fails when the committed JSON is stale

Panels query ClickHouse through the grafana-clickhouse-datasource plugin. Rates and
latencies over a time bucket are recomputed from the windows' counts and intervals
(I/Os / seconds, time-weighted queue and busy time, I/O-weighted await), so a zoomed-out
graph shows the exact figure for the bucket, never an average of averages.
"""
import json
import sys
from pathlib import Path

from grafana_foundation_sdk.builders import dashboard, table, timeseries
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableRefresh

OUT = Path(__file__).resolve().parent / "json"
DATASOURCE = DataSourceRef(type_val="grafana-clickhouse-datasource", uid="iopipe-clickhouse")
WINDOWS = "iopipe.windows FINAL"
SELECTED = ("$__conditionalAll(host IN (${host:singlequote}), $host) "
            "AND $__conditionalAll(disk IN (${disk:singlequote}), $disk)")
BUCKET = "toDateTime(intDiv(toUInt32(window_start), $__interval_s) * $__interval_s)"


def weighted(value, weight):
    return f"if(sum({weight}) = 0, 0, sum({value} * {weight}) / sum({weight}))"


# One config: what each iostat panel shows and how a bucket's value is computed.
CONFIG = {
    "uid": "iopipe-iostat",
    "title": "iopipe / disk iostat",
    "panels": [
        {"title": "IOPS", "unit": "iops", "series": {
            "r/s": "sum(reads_completed) / sum(interval_s)",
            "w/s": "sum(writes_completed) / sum(interval_s)"}},
        {"title": "Throughput", "unit": "KiBs", "series": {
            "rkB/s": weighted("read_kib_per_s", "interval_s"),
            "wkB/s": weighted("write_kib_per_s", "interval_s")}},
        {"title": "Await (request latency incl. queue)", "unit": "ms", "series": {
            "r_await": weighted("read_await_ms", "reads_completed"),
            "w_await": weighted("write_await_ms", "writes_completed")}},
        {"title": "Average queue size (aqu-sz)", "unit": "short", "series": {
            "aqu-sz": weighted("queue_size", "interval_s")}},
        {"title": "%util (busy time; 100% is not saturation for devices that serve I/O in parallel)",
         "unit": "percent", "series": {"%util": weighted("util_pct", "interval_s")}},
    ],
    "latest_table": ["reads_per_s", "writes_per_s", "read_kib_per_s", "write_kib_per_s",
                     "read_await_ms", "write_await_ms", "read_req_kib", "write_req_kib", "queue_size", "util_pct"],
}


class ClickHouseQuery(cogvariants.Dataquery):
    """A grafana-clickhouse-datasource query; the SDK has no typed builder for that plugin."""

    def __init__(self, ref_id, sql, table_format):
        self.ref_id, self.sql, self.table_format = ref_id, sql, table_format

    def to_json(self):
        return {"refId": self.ref_id, "datasource": DATASOURCE.to_json(), "editorType": "sql",
                "queryType": "table" if self.table_format else "timeseries",
                "format": 1 if self.table_format else 0, "rawSql": self.sql}


class Query(cogbuilder.Builder[ClickHouseQuery]):
    def __init__(self, ref_id, sql, table_format=False):
        self._query = ClickHouseQuery(ref_id, sql, table_format)

    def build(self):
        return self._query


def series_sql(label, expression):
    return (f"SELECT {BUCKET} AS time, concat(host, '/', disk, ' {label}') AS series, {expression} AS value "
            f"FROM {WINDOWS} WHERE $__timeFilter(window_start) AND window_s = 10 AND {SELECTED} "
            "GROUP BY time, series ORDER BY time")


def latest_sql(columns):
    picked = ", ".join(f"round(argMax({c}, window_start_ns), 2) AS {c}" for c in columns)
    return (f"SELECT host, disk, toDateTime(intDiv(max(window_end_ns), 1000000000)) AS window_end, {picked} "
            f"FROM {WINDOWS} WHERE $__timeFilter(window_start) AND window_s = 10 AND {SELECTED} "
            "GROUP BY host, disk ORDER BY host, disk")


def variable(name, sql):
    return (dashboard.QueryVariable(name).label(name).datasource(DATASOURCE).query(sql)
            .multi(True).include_all(True).refresh(VariableRefresh.ON_TIME_RANGE_CHANGED))


def build(config):
    board = (dashboard.Dashboard(config["title"]).uid(config["uid"]).tags(["iopipe", "iostat"])
             .time("now-1h", "now").refresh("30s").readonly()
             .with_variable(variable("host", "SELECT DISTINCT host FROM iopipe.windows ORDER BY host"))
             .with_variable(variable("disk", "SELECT DISTINCT disk FROM iopipe.windows WHERE "
                                             "$__conditionalAll(host IN (${host:singlequote}), $host) ORDER BY disk")))
    for panel in config["panels"]:
        graph = timeseries.Panel().title(panel["title"]).unit(panel["unit"]).min(0).datasource(DATASOURCE).span(12).height(8)
        for i, (label, expression) in enumerate(panel["series"].items()):
            graph = graph.with_target(Query(chr(ord("A") + i), series_sql(label, expression)))
        board = board.with_panel(graph)
    latest = (table.Panel().title("Latest iostat -x line per disk").datasource(DATASOURCE).span(24).height(8)
              .with_target(Query("A", latest_sql(config["latest_table"]), table_format=True)))
    return board.with_panel(latest).build()


def render(config=CONFIG):
    return json.dumps(build(config), cls=JSONEncoder, indent=2, sort_keys=True) + "\n"


def main(argv):
    target = OUT / f"{CONFIG['uid']}.json"
    text = render()
    if argv == ["--check"]:
        if not target.exists() or target.read_text() != text:
            sys.exit(f"{target} is stale: run `python dashboards/generate.py`")
        return
    OUT.mkdir(exist_ok=True)
    target.write_text(text)
    print(f"wrote {target}")


if __name__ == "__main__":
    main(sys.argv[1:])
