"""Generates the Grafana dashboards and alert rules from config.py, with Grafana's foundation SDK.

    python3 -m iopipe.dashboards.generate            # rewrites dashboards/json/*.json and provisioning/alerting/
    python3 -m iopipe.dashboards.generate --check    # fails when a committed file is stale

Panels query ClickHouse through the grafana-clickhouse-datasource plugin. Rates and
latencies over a time bucket are recomputed from the bucket's counts and intervals
(I/Os / seconds, time-weighted queue and busy time, I/O-weighted await, summed kernel
histograms), so a zoomed-out graph shows the exact figure for the bucket, never an
average of averages.
"""
import json
import sys

from grafana_foundation_sdk.builders import barchart, dashboard, heatmap, table, timeseries
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import heatmap as heatmap_model
from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableRefresh

from iopipe.dashboards import alerts
from iopipe.dashboards.config import ANOMALY, BASE_WINDOW_S, DATASOURCE_TYPE, DATASOURCE_UID, DISK, FLEET, IOSTAT
from iopipe.paths import REPO

OUT = REPO / "dashboards" / "json"
DATASOURCE = DataSourceRef(type_val=DATASOURCE_TYPE, uid=DATASOURCE_UID)
WINDOWS = "iopipe.windows FINAL"


def in_variable(column):
    r"""The column's value is one picked in the dashboard variable of the same name, or
    anything while the variable is All.

    Grafana's singlequote and sqlstring formats escape a quote but not a backslash, while a
    ClickHouse literal reads backslash escapes: a value such as x\') OR 1=1 -- (a link can
    carry any, var-host=...) would end its literal early and be read as SQL. percentencode
    leaves only letters, digits, -_.~ and %XX, which cannot end a literal, and
    decodeURLComponent gives the exact value back. A multi-valued variable arrives as a
    glob, {a,b}, a single-valued one bare: braces and commas part names, so a name holding
    one reads as several, each still compared whole. IN a subquery, so the primary key still
    narrows the read."""
    glob = f"decodeURLComponent('${{{column}:percentencode}}')"
    names = f"arrayFilter(name -> name != '', splitByChar(',', replaceAll(replaceAll({glob}, '{{', ','), '}}', ',')))"
    return f"$__conditionalAll({column} IN (SELECT arrayJoin({names})), ${column})"


SELECTED = f"{in_variable('host')} AND {in_variable('disk')}"


def bucket(time_column):
    """The start of the $__interval_s bucket a DateTime column falls in."""
    return f"toDateTime(intDiv(toUInt32({time_column}), $__interval_s) * $__interval_s)"


def p99_ms(histogram="h", cumulative="cum", ios="ios", index="i99"):
    """p99 interpolated log-linearly inside the log2 µs bucket that holds it, as the
    cookbook's worst_disks_p99_last_hour computes it."""
    return (f"round(pow(2, {index} - 1 + (0.99 * {ios} - if({index} > 1, {cumulative}[{index} - 1], 0)) "
            f"/ {histogram}[{index}]) / 1000, 3)")


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


class DataLink:
    """A field's data link as Grafana stores it (the SDK offers only dashboard links)."""

    def __init__(self, title, url):
        self.title, self.url = title, url

    def to_json(self):
        return {"title": self.title, "url": self.url, "targetBlank": False}


class Link(cogbuilder.Builder[DataLink]):
    def __init__(self, title, url):
        self._link = DataLink(title, url)

    def build(self):
        return self._link


class ClickHouseAnnotation:
    """A dashboard annotation read from ClickHouse: rows of time, timeEnd, text and tags."""

    def __init__(self, name, sql, color):
        self.name, self.sql, self.color = name, sql, color

    def to_json(self):
        return {"name": self.name, "enable": True, "iconColor": self.color, "datasource": DATASOURCE.to_json(),
                "target": ClickHouseQuery("Anno", self.sql, table_format=True).to_json()}


class Annotation(cogbuilder.Builder[ClickHouseAnnotation]):
    def __init__(self, name, sql, color):
        self._annotation = ClickHouseAnnotation(name, sql, color)

    def build(self):
        return self._annotation


# --- iostat -------------------------------------------------------------------------

def series_sql(label, expression):
    return (f"SELECT {bucket('window_start')} AS time, concat(host, '/', disk, ' {label}') AS series, {expression} AS value "
            f"FROM {WINDOWS} WHERE $__timeFilter(window_start) AND window_s = {BASE_WINDOW_S} AND {SELECTED} "
            "GROUP BY time, series ORDER BY time")


def latest_sql(columns):
    picked = ", ".join(f"round(argMax({c}, window_start_ns), 2) AS {c}" for c in columns)
    return (f"SELECT host, disk, toDateTime(intDiv(max(window_end_ns), 1000000000)) AS window_end, {picked} "
            f"FROM {WINDOWS} WHERE $__timeFilter(window_start) AND window_s = {BASE_WINDOW_S} AND {SELECTED} "
            "GROUP BY host, disk ORDER BY host, disk")


def variable(name, sql, multi=True):
    return (dashboard.QueryVariable(name).label(name).datasource(DATASOURCE).query(sql)
            .multi(multi).include_all(multi).refresh(VariableRefresh.ON_TIME_RANGE_CHANGED))


def host_disk_variables(board, table_name, multi=True):
    return (board.with_variable(variable("host", f"SELECT DISTINCT host FROM iopipe.{table_name} ORDER BY host", multi))
            .with_variable(variable("disk", f"SELECT DISTINCT disk FROM iopipe.{table_name} WHERE "
                                            f"{in_variable('host')} ORDER BY disk", multi)))


def new_board(config, tags):
    return (dashboard.Dashboard(config["title"]).uid(config["uid"]).tags(["iopipe", *tags])
            .time("now-1h", "now").refresh("30s").readonly())


def iostat_panels(config):
    for panel in config["panels"]:
        graph = timeseries.Panel().title(panel["title"]).unit(panel["unit"]).min(0).datasource(DATASOURCE).span(12).height(8)
        for i, (label, expression) in enumerate(panel["series"].items()):
            graph = graph.with_target(Query(chr(ord("A") + i), series_sql(label, expression)))
        yield graph
    yield (table.Panel().title("Latest iostat -x line per disk").datasource(DATASOURCE).span(24).height(8)
           .with_target(Query("A", latest_sql(config["latest_table"]), table_format=True)))


def iostat_board(config=IOSTAT):
    board = host_disk_variables(new_board(config, ["iostat"]), "windows")
    for panel in iostat_panels(config):
        board = board.with_panel(panel)
    return board.build()


# --- disk view -----------------------------------------------------------------------

def heatmap_sql(config=DISK):
    """One row per time bucket, one column per log2 µs bucket named by its lower bound;
    the last column also counts every slower I/O. Exact counts of every I/O."""
    last = config["heatmap_buckets"]
    columns = [f"h[{i + 1}] AS `{2 ** i}`" for i in range(last - 1)]
    columns.append(f"arraySum(arraySlice(h, {last})) AS `{2 ** (last - 1)}`")
    return (f"SELECT time, {', '.join(columns)} FROM ("
            f"SELECT {bucket('start')} AS time, sumForEach(buckets_log2_us) AS h FROM iopipe.histograms FINAL "
            f"WHERE $__timeFilter(start) AND latency = '{config['heatmap_latency']}' AND {SELECTED} "
            "GROUP BY time) ORDER BY time")


def device_vs_queue_sql():
    return (f"SELECT {bucket('start')} AS time, concat(latency, ' mean') AS series, sum(sum_us) / sum(count) / 1000 AS value "
            f"FROM iopipe.histograms FINAL WHERE $__timeFilter(start) AND latency IN ('device', 'queue') AND {SELECTED} "
            "GROUP BY time, series HAVING sum(count) > 0 ORDER BY time")


def worst_events_sql(limit):
    # An event timed from the queue (a converted capture) has no device time of its own:
    # its latency is the whole request's, and timed_from says so.
    return ("SELECT issue_time AS time, op, timed_from, round((complete_ns - issue_ns) / 1000000, 3) AS latency_ms, "
            "round(queue_ns / 1000000, 3) AS queue_ms, inflight, bytes, sector, error, comm, pid, sample_reason "
            f"FROM iopipe.events FINAL WHERE $__timeFilter(issue_time) AND {SELECTED} "
            f"ORDER BY latency_ms DESC, issue_ns LIMIT {limit}")


def anomaly_annotation_sql():
    return ("SELECT start AS time, toDateTime(intDiv(end_ns, 1000000000)) AS timeEnd, "
            "concat(kind, ' (', severity, '): ', summary) AS text, concat(kind, ',', severity) AS tags "
            f"FROM iopipe.anomalies FINAL WHERE $__timeFilter(start) AND {SELECTED} ORDER BY start_ns")


def heatmap_panel(config):
    return (heatmap.Panel().title(f"{config['heatmap_latency'].capitalize()} latency heatmap (log2 µs buckets, every I/O)")
            .datasource(DATASOURCE).span(24).height(10)
            .calculate(False)
            .rows_frame(heatmap.RowsHeatmapOptions().layout(common.HeatmapCellLayout.GE))
            .y_axis(heatmap.YAxisConfig().unit("µs"))
            .color(heatmap.HeatmapColorOptions().mode(heatmap_model.HeatmapColorMode.SCHEME).scheme("Oranges")
                   .scale(heatmap_model.HeatmapColorScale.EXPONENTIAL).exponent(0.5))
            .cell_values(heatmap.CellValues().unit("short"))
            .with_target(Query("A", heatmap_sql(config), table_format=True)))


def disk_board(config=DISK):
    board = host_disk_variables(new_board(config, ["disk"]), "disk_inventory", multi=False)
    board = board.annotation(Annotation("iopipe anomalies", anomaly_annotation_sql(), "red"))
    board = board.with_panel(heatmap_panel(config))
    board = board.with_panel(timeseries.Panel().title("Device vs queue time (mean per I/O)").unit("ms").min(0)
                             .datasource(DATASOURCE).span(24).height(8).with_target(Query("A", device_vs_queue_sql())))
    for panel in iostat_panels(IOSTAT):
        board = board.with_panel(panel)
    board = board.with_panel(table.Panel().title(f"Worst {config['worst_events']} sampled I/Os by latency")
                             .datasource(DATASOURCE).span(24).height(8)
                             .with_target(Query("A", worst_events_sql(config["worst_events"]), table_format=True)))
    return board.build()


# --- fleet overview ---------------------------------------------------------------------

def disks_by_health_sql(states):
    order = ", ".join(f"'{s}'" for s in states)
    return ("SELECT if(latest_state = '', 'healthy', latest_state) AS state, count() AS disks FROM ("
            "SELECT host, disk FROM iopipe.disk_inventory GROUP BY host, disk HAVING max(last_seen) >= $__fromTime"
            ") AS seen ANY LEFT JOIN ("
            "SELECT host, disk, argMax(to_state, ts_ns) AS latest_state FROM iopipe.health FINAL GROUP BY host, disk"
            f") AS latest USING (host, disk) GROUP BY state ORDER BY indexOf([{order}], state)")


def anomalies_by_kind_sql():
    # An episode is reported once per severity it reaches: counted once, by its start.
    return (f"SELECT {bucket('start')} AS time, kind AS series, uniqExact(host, disk, start_ns) AS value "
            "FROM iopipe.anomalies FINAL WHERE $__timeFilter(start) GROUP BY time, series ORDER BY time")


def worst_disks_sql(limit, min_ios):
    return ("SELECT host, disk, ios, errors, round(sum_us / ios / 1000, 3) AS mean_ms, "
            f"{p99_ms()} AS p99_ms, round(max_us / 1000, 3) AS max_ms FROM ("
            "SELECT host, disk, sumForEach(buckets_log2_us) AS h, arrayCumSum(h) AS cum, sum(count) AS ios, "
            "sum(errors) AS errors, sum(sum_us) AS sum_us, max(max_us) AS max_us, "
            "arrayFirstIndex(c -> c >= 0.99 * ios, cum) AS i99 "
            "FROM iopipe.latency_minutes FINAL WHERE latency = 'device' AND $__timeFilter(period) "
            f"GROUP BY host, disk HAVING ios >= {min_ios}) ORDER BY p99_ms DESC, host, disk LIMIT {limit}")


def open_tickets_sql():
    # A ticket is open until its last action resolves it (cookbook: tickets); rows between
    # without a ticket action (failing -> suspect) leave it open.
    return ("SELECT host, disk, ticket_id, last_action, toDateTime(intDiv(opened_ns, 1000000000)) AS opened, "
            "state, reason FROM ("
            "SELECT host, disk, `ticket.ticket_id` AS ticket_id, min(ts_ns) AS opened_ns, "
            "argMax(`ticket.action`, ts_ns) AS last_action, argMax(to_state, ts_ns) AS state, "
            "argMax(reason, ts_ns) AS reason FROM iopipe.health FINAL WHERE `ticket.ticket_id` != '' "
            "GROUP BY host, disk, ticket_id) WHERE last_action IN ('open', 'update') ORDER BY opened_ns, host, disk")


def disk_view_url():
    return (f"/d/{DISK['uid']}/?var-host=${{__data.fields.host}}&var-disk=${{__data.fields.disk}}"
            "&from=${__from}&to=${__to}")


def fleet_board(config=FLEET):
    board = new_board(config, ["fleet"])
    board = board.with_panel(barchart.Panel().title("Disks by health (latest state; no transition yet is healthy)")
                             .datasource(DATASOURCE).span(8).height(8).x_field("state")
                             .with_target(Query("A", disks_by_health_sql(config["health_states"]), table_format=True)))
    board = board.with_panel(timeseries.Panel().title("Anomaly episodes by kind").unit("short").min(0)
                             .datasource(DATASOURCE).span(16).height(8).with_target(Query("A", anomalies_by_kind_sql())))
    board = board.with_panel(table.Panel().title(f"Worst {config['worst_disks']} disks by p99 device latency (click: disk view)")
                             .datasource(DATASOURCE).span(24).height(10)
                             .data_links([Link("Disk view: ${__data.fields.host}/${__data.fields.disk}", disk_view_url())])
                             .with_target(Query("A", worst_disks_sql(config["worst_disks"], config["worst_min_ios"]),
                                                table_format=True)))
    board = board.with_panel(table.Panel().title("Open tickets (disks to replace)").datasource(DATASOURCE).span(24).height(8)
                             .data_links([Link("Disk view: ${__data.fields.host}/${__data.fields.disk}", disk_view_url())])
                             .with_target(Query("A", open_tickets_sql(), table_format=True)))
    return board.build()


# --- anomaly view ------------------------------------------------------------------------

KIND_SELECTED = in_variable("kind")


def anomalies_sql(limit):
    # The evidence's headline figures as the cookbook's anomalies_of_disk reads them, and
    # the whole evidence as JSON text; visitParam* reads it on every server version.
    return ("SELECT start AS onset, host, disk, kind, severity, summary, "
            "visitParamExtractFloat(evidence_json, 'device_p50_ms') AS p50_ms, "
            "visitParamExtractFloat(evidence_json, 'device_p99_ms') AS p99_ms, "
            "visitParamExtractFloat(evidence_json, 'device_max_ms') AS max_ms, "
            "visitParamExtractFloat(visitParamExtractRaw(evidence_json, 'iostat'), 'aqu_sz') AS aqu_sz, "
            "visitParamExtractFloat(visitParamExtractRaw(evidence_json, 'iostat'), 'util_pct') AS util_pct, "
            "evidence_json AS evidence "
            f"FROM iopipe.anomalies FINAL WHERE $__timeFilter(start) AND {KIND_SELECTED} AND {SELECTED} "
            f"ORDER BY start_ns DESC, host, disk, kind, severity LIMIT {limit}")


def anomaly_count_sql():
    return (f"SELECT {bucket('start')} AS time, concat(kind, ' ', severity) AS series, count() AS value "
            f"FROM iopipe.anomalies FINAL WHERE $__timeFilter(start) AND {KIND_SELECTED} AND {SELECTED} "
            "GROUP BY time, series ORDER BY time")


def anomaly_board(config=ANOMALY):
    board = new_board(config, ["anomalies"]).with_variable(
        variable("kind", "SELECT DISTINCT kind FROM iopipe.anomalies WHERE $__timeFilter(start) ORDER BY kind"))
    board = host_disk_variables(board, "anomalies")
    board = board.with_panel(timeseries.Panel().title("Anomalies by kind and severity").unit("short").min(0)
                             .datasource(DATASOURCE).span(24).height(7).with_target(Query("A", anomaly_count_sql())))
    board = board.with_panel(table.Panel().title("Anomalies with their evidence (newest first)")
                             .datasource(DATASOURCE).span(24).height(14)
                             .data_links([Link("Disk view: ${__data.fields.host}/${__data.fields.disk}", disk_view_url())])
                             .with_target(Query("A", anomalies_sql(config["rows"]), table_format=True)))
    return board.build()


# --- output ----------------------------------------------------------------------------

BOARDS = {IOSTAT["uid"]: iostat_board, FLEET["uid"]: fleet_board, DISK["uid"]: disk_board, ANOMALY["uid"]: anomaly_board}


def as_dict(board):
    model = json.loads(json.dumps(board, cls=JSONEncoder))
    for var in model.get("templating", {}).get("list", []):
        # The SDK writes an interval variable's auto-step settings on every variable; Grafana's
        # schema has them on none, and they mean nothing on a query variable.
        if var.get("type") != "interval":
            for key in ("auto", "auto_count", "auto_min"):
                var.pop(key, None)
    return model


def render(uid):
    return json.dumps(as_dict(BOARDS[uid]()), indent=2, sort_keys=True) + "\n"


def outputs():
    """{path: text} of every generated file."""
    files = {OUT / f"{uid}.json": render(uid) for uid in BOARDS}
    files[alerts.RULES_FILE] = alerts.render()
    return files


def main(argv):
    files = outputs()
    if argv == ["--check"]:
        stale = [str(p) for p, text in files.items() if not p.exists() or p.read_text() != text]
        if stale:
            sys.exit(f"stale: {', '.join(stale)}: run `python3 -m iopipe.dashboards.generate`")
        return
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
