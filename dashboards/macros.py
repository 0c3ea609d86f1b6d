"""Expands the grafana-clickhouse-datasource macros and Grafana template variables in a
panel's, annotation's, variable's or alert rule's SQL the way Grafana and the plugin
would (plugin source: pkg/macros/macros.go), so tests and tools can run the real query."""
import re

CONDITIONAL_ALL = re.compile(r"\$__conditionalAll\((.*?),\s*\$(\w+)\)")
TIME_FILTER = re.compile(r"\$__timeFilter\((\w+)\)")
TIME_INTERVAL = re.compile(r"\$__timeInterval\((\w+)\)")
SINGLEQUOTE = re.compile(r"\$\{(\w+):singlequote\}")


def singlequoted(values):
    # Grafana's singlequote format: each value in quotes, a quote inside escaped.
    return ",".join("'" + v.replace("'", "\\'") + "'" for v in values)


def expand(sql, from_s, to_s, interval_s, selected):
    """`selected` maps a variable to its chosen values; a variable absent from it is "All"."""
    def conditional_all(match):
        condition, variable = match.group(1), match.group(2)
        return condition if variable in selected else "1=1"

    sql = CONDITIONAL_ALL.sub(conditional_all, sql)
    sql = SINGLEQUOTE.sub(lambda m: singlequoted(selected[m.group(1)]), sql)
    sql = TIME_FILTER.sub(lambda m: f"{m.group(1)} >= toDateTime({from_s}) AND {m.group(1)} <= toDateTime({to_s})", sql)
    sql = TIME_INTERVAL.sub(lambda m: f"toStartOfInterval(toDateTime({m.group(1)}), INTERVAL {interval_s} second)", sql)
    sql = sql.replace("$__fromTime", f"toDateTime({from_s})").replace("$__toTime", f"toDateTime({to_s})")
    sql = sql.replace("$__interval_s", str(interval_s))
    leftover = re.search(r"\$\{?\w+", sql)
    if leftover:
        raise ValueError(f"unexpanded macro or variable {leftover.group(0)} in: {sql}")
    return sql


def panel_queries(dashboard):
    """(panel title, rawSql) of every query target in a dashboard's JSON."""
    return [(panel["title"], target["rawSql"]) for panel in dashboard["panels"] for target in panel.get("targets", [])]


def annotation_queries(dashboard):
    """(annotation name, rawSql) of every ClickHouse annotation of a dashboard's JSON."""
    return [(a["name"], a["target"]["rawSql"]) for a in dashboard.get("annotations", {}).get("list", [])
            if "rawSql" in a.get("target", {})]


def variable_queries(dashboard):
    """(variable name, SQL) of every query variable of a dashboard's JSON."""
    return [(v["name"], v["query"]) for v in dashboard.get("templating", {}).get("list", []) if v.get("type") == "query"]


def all_queries(dashboard):
    """Every SQL text a dashboard sends: panels, annotations and variables."""
    return panel_queries(dashboard) + annotation_queries(dashboard) + variable_queries(dashboard)
