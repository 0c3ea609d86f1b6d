"""The alert rules file: Grafana's provisioning shape, names that say subject and symptom,
the labels Alertmanager's inhibition matches on, and a runbook for every rule."""
import re

import yaml

from iopipe.dashboards import alerts
from iopipe.dashboards.config import RULES, RUNBOOK_BASE_URL
from iopipe.paths import REPO

RUNBOOKS = REPO / "docs" / "runbooks"


def provisioned_rules():
    document = yaml.safe_load(alerts.RULES_FILE.read_text())
    assert document["apiVersion"] == 1
    return [(group, rule) for group in document["groups"] for rule in group["rules"]]


def test_every_rule_is_provisioned_once_in_its_subjects_group():
    rules = provisioned_rules()
    assert sorted(r["title"] for _, r in rules) == sorted(r["name"] for r in RULES)
    assert len({r["uid"] for _, r in rules}) == len(rules)
    for group, rule in rules:
        assert re.fullmatch(r"(Disk|Host)[A-Z][A-Za-z]+", rule["title"])
        assert group["name"] == alerts.GROUPS[rule["title"][:4]] and group["folder"] and group["interval"]
        assert 1 <= len(rule["uid"]) <= 40


def test_each_rule_is_a_clickhouse_query_and_a_threshold_on_it():
    for _, rule in provisioned_rules():
        query, condition = rule["data"]
        assert query["model"]["datasource"]["type"] == "grafana-clickhouse-datasource" and query["model"]["format"] == 1
        assert condition["refId"] == rule["condition"] and condition["model"]["expression"] == query["refId"]
        assert condition["model"]["type"] == "threshold"


def test_labels_are_the_query_columns_inhibition_matches_on():
    for _, rule in provisioned_rules():
        columns = re.match(r"SELECT (.*?) AS value", rule["data"][0]["model"]["rawSql"]).group(1)
        labels = [c.strip() for c in columns.split(",")][:2 if rule["title"].startswith("Disk") else 1]
        assert labels == (["host", "disk"] if rule["title"].startswith("Disk") else ["host"]), rule["title"]
        assert "$" not in str(rule["labels"]), "Grafana expands $ in provisioned labels from its environment"


def test_every_rule_has_a_runbook_that_names_how_to_confirm():
    for _, rule in provisioned_rules():
        name = rule["title"]
        assert rule["annotations"]["runbook_url"] == f"{RUNBOOK_BASE_URL}/{name}.md"
        text = (RUNBOOKS / f"{name}.md").read_text()
        for heading in ("## What it means", "## Confirm", "## What to do"):
            assert heading in text, (name, heading)
        assert "python3 -m iopipe.cookbook" in text, name

