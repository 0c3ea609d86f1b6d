"""Expands the grafana-clickhouse-datasource macros and Grafana template variables in a
panel's, annotation's, variable's or alert rule's SQL the way Grafana and the plugin
would (plugin source: src/data/CHDatasource.ts for $__conditionalAll, pkg/macros/macros.go
for the rest; Grafana's formats: @grafana/scenes formatRegistry.ts), so tests and tools
can run the real query."""
import re
from urllib.parse import quote

CONDITIONAL_ALL = "$__conditionalAll("
VARIABLE_ARGUMENT = re.compile(r"(?<=\$\{)\w+(?=\})|(?<=\$)\w+")
PERCENTENCODE = re.compile(r"\$\{(\w+):percentencode\}")
TIME_FILTER = re.compile(r"\$__timeFilter\((\w+)\)")
TIME_INTERVAL = re.compile(r"\$__timeInterval\((\w+)\)")


def percentencoded(value):
    """Grafana's percentencode: encodeURIComponent with !'()* encoded too, so only letters,
    digits, -_.~ and %XX remain; a multi-valued variable's list is encoded as a glob, {a,b}."""
    if isinstance(value, list):
        value = "{" + ",".join(value) + "}"
    return quote(value, safe="")


def macro_arguments(sql, open_at):
    """The arguments of the macro whose "(" is at open_at, split as the plugin's getMacroArgs
    splits them: at commas outside nested parentheses, quotes not looked at."""
    arguments, depth, start = [], 0, open_at + 1
    for i in range(open_at, len(sql)):
        depth += {"(": 1, ")": -1}.get(sql[i], 0)
        if sql[i] == "," and depth == 1:
            arguments.append(sql[start:i])
            start = i + 1
        if depth == 0:
            return arguments + [sql[start:i]]
    return []


def conditional_alls(sql, selected):
    """The plugin's $__conditionalAll(condition, $variable), last first as it goes: the
    condition, or 1=1 where the variable is All or has no value."""
    at = sql.rfind(CONDITIONAL_ALL)
    while at != -1:
        arguments = macro_arguments(sql, at + len(CONDITIONAL_ALL) - 1)
        if len(arguments) != 2:
            return sql
        condition, argument = arguments
        variable = VARIABLE_ARGUMENT.search(argument)
        if variable and not selected.get(variable.group(0)):
            condition = "1=1"
        sql = sql.replace(f"{CONDITIONAL_ALL}{arguments[0]},{argument})", condition, 1)
        at = sql.rfind(CONDITIONAL_ALL)
    return sql


def expand(sql, from_s, to_s, interval_s, selected):
    """`selected` maps a variable to its value as Grafana holds it: a list for a multi-valued
    variable, a string for a single-valued one; a variable absent from it is "All"."""
    sql = conditional_alls(sql, selected)
    sql = PERCENTENCODE.sub(lambda m: percentencoded(selected[m.group(1)]), sql)
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
