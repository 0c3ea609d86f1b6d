"""Grafana-managed alert rules from config.RULES, as a Grafana 11 alerting provisioning file.

Each rule is one ClickHouse query (refId A, table format) and a threshold expression on it
(refId B). The query returns one row per disk or host: its string columns become the alert
instance's labels (host, or host and disk) and its one number, `value`, is what the
threshold compares. Where a detector exists, the query reads its verdict (the health
table, the anomalies table) instead of re-deriving it from raw figures.
"""

import yaml

from iopipe.dashboards.config import ALERTING_SEVERITIES, DATASOURCE_TYPE, DATASOURCE_UID, DISK, RULES, RUNBOOK_BASE_URL
from iopipe.paths import REPO

RULES_FILE = REPO / "dashboards" / "provisioning" / "alerting" / "iopipe-rules.yaml"
FOLDER = "iopipe"
EVALUATE_EVERY = "1m"
GROUPS = {"Host": "iopipe-hosts", "Disk": "iopipe-disks"}


def quoted(values):
    return ", ".join(f"'{v}'" for v in values)


def reported_in_range():
    """An anomaly counts from the window that reported it (end_ns): an episode that reached
    a higher severity later is reported again then, with the episode's first start."""
    return "intDiv(end_ns, 1000000000) >= toUInt32($__fromTime) AND intDiv(end_ns, 1000000000) <= toUInt32($__toTime)"


def health_sql(rule):
    # Only disks ever in the state are returned; the latest transition decides (1 or 0).
    return (f"SELECT host, disk, toUInt8(argMax(to_state, ts_ns) = '{rule['state']}') AS value "
            f"FROM iopipe.health FINAL GROUP BY host, disk HAVING countIf(to_state = '{rule['state']}') > 0 "
            "ORDER BY host, disk")


def anomalies_sql(rule):
    # Episodes, not rows: an episode is reported once per severity it reaches.
    return ("SELECT host, disk, uniqExact(start_ns) AS value FROM iopipe.anomalies FINAL "
            f"WHERE {reported_in_range()} AND kind IN ({quoted(rule['kinds'])}) "
            f"AND severity IN ({quoted(ALERTING_SEVERITIES)}) GROUP BY host, disk ORDER BY host, disk")


def inventory_sql(rule):
    # The inventory keeps each disk's latest diskstats sample time (a few rows per disk),
    # so a day of hosts costs nothing to scan. A host silent for longer than the range has
    # left the fleet and is no longer alerted on.
    return ("SELECT host, toInt64(toUInt32($__toTime)) - toInt64(toUInt32(max(last_seen))) AS value "
            "FROM iopipe.disk_inventory WHERE last_seen >= $__fromTime GROUP BY host ORDER BY host")


def host_anomalies_sql(rule):
    return ("SELECT host, uniqExact(disk) AS value FROM iopipe.anomalies FINAL "
            f"WHERE {reported_in_range()} AND kind IN ({quoted(rule['kinds'])}) "
            f"AND severity IN ({quoted(ALERTING_SEVERITIES)}) GROUP BY host ORDER BY host")


QUERIES = {"health": health_sql, "anomalies": anomalies_sql, "inventory": inventory_sql, "host_anomalies": host_anomalies_sql}


def threshold(rule):
    """The value above which an instance fires."""
    if rule["source"] == "inventory":
        return rule["silent_s"]
    if rule["source"] == "host_anomalies":
        return rule["min_disks"] - 1
    return 0


def subject(rule):
    return next(s for s in GROUPS if rule["name"].startswith(s))


def rule_sql(rule):
    return QUERIES[rule["source"]](rule)


def uid(rule):
    return "iopipe-" + "".join(f"-{c.lower()}" if c.isupper() else c for c in rule["name"]).lstrip("-")


def links(rule):
    annotations = {"summary": rule["summary"], "description": rule["description"],
                   "runbook_url": f"{RUNBOOK_BASE_URL}/{rule['name']}.md"}
    if subject(rule) == "Disk":
        annotations["dashboard_url"] = f"/d/{DISK['uid']}/?var-host={{{{ $labels.host }}}}&var-disk={{{{ $labels.disk }}}}"
    return annotations


def grafana_rule(rule):
    return {
        "uid": uid(rule),
        "title": rule["name"],
        "condition": "B",
        "data": [
            {"refId": "A", "datasourceUid": DATASOURCE_UID,
             "relativeTimeRange": {"from": rule.get("range_s", 600), "to": 0},
             "model": {"refId": "A", "datasource": {"type": DATASOURCE_TYPE, "uid": DATASOURCE_UID},
                       "editorType": "sql", "format": 1, "queryType": "table", "rawSql": rule_sql(rule)}},
            {"refId": "B", "datasourceUid": "__expr__",
             "model": {"refId": "B", "datasource": {"type": "__expr__", "uid": "__expr__"}, "type": "threshold",
                       "expression": "A", "conditions": [{"evaluator": {"type": "gt", "params": [threshold(rule)]}}]}},
        ],
        # No row means nothing to alert on (no disk in the state); a query error is an alert of its own.
        "noDataState": "OK",
        "execErrState": "Error",
        "for": "0s",
        "annotations": links(rule),
        "labels": {"severity": rule["severity"]},
        "isPaused": False,
    }


def provisioning():
    groups = []
    for prefix, name in GROUPS.items():
        rules = [grafana_rule(r) for r in RULES if subject(r) == prefix]
        groups.append({"orgId": 1, "name": name, "folder": FOLDER, "interval": EVALUATE_EVERY, "rules": rules})
    return {"apiVersion": 1, "groups": groups}


class _Dumper(yaml.SafeDumper):
    pass


def _text(dumper, value):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def render():
    header = ("# Grafana alert rules for iopipe (Grafana 11 alerting file provisioning), generated by\n"
              "# iopipe/dashboards/generate.py from iopipe/dashboards/config.py: do not edit. Runbooks: docs/runbooks/.\n")
    return header + yaml.dump(provisioning(), Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=True)
