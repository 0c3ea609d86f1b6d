"""Expands the grafana-clickhouse-datasource macros and Grafana template variables in a
panel's SQL the way Grafana and the plugin would, so tests can run the real query."""
import re

CONDITIONAL_ALL = re.compile(r"\$__conditionalAll\((.*?),\s*\$(\w+)\)")
TIME_FILTER = re.compile(r"\$__timeFilter\((\w+)\)")
SINGLEQUOTE = re.compile(r"\$\{(\w+):singlequote\}")


def expand(sql, from_s, to_s, interval_s, selected):
    """`selected` maps a variable to its chosen values; a variable absent from it is "All"."""
    def conditional_all(match):
        condition, variable = match.group(1), match.group(2)
        return condition if variable in selected else "1=1"

    sql = CONDITIONAL_ALL.sub(conditional_all, sql)
    sql = SINGLEQUOTE.sub(lambda m: ",".join(f"'{v}'" for v in selected[m.group(1)]), sql)
    sql = TIME_FILTER.sub(lambda m: f"{m.group(1)} >= toDateTime({from_s}) AND {m.group(1)} <= toDateTime({to_s})", sql)
    sql = sql.replace("$__interval_s", str(interval_s))
    leftover = re.search(r"\$\{?\w+", sql)
    if leftover:
        raise ValueError(f"unexpanded macro or variable {leftover.group(0)} in: {sql}")
    return sql


def panel_queries(dashboard):
    """(panel title, rawSql) of every query target in a dashboard's JSON."""
    return [(panel["title"], target["rawSql"]) for panel in dashboard["panels"] for target in panel.get("targets", [])]
