"""The shipped Alertmanager configuration as Alertmanager itself reads it (amtool of the
pinned version): it loads, each alert iopipe sends is routed to its receiver, and the
ticket templates render an alert the bridge posts into a ticket with its evidence."""
import json
import os
import subprocess
from pathlib import Path

import pytest

CONFIG_DIR = Path(__file__).resolve().parent.parent / "alertmanager"
CONFIG = CONFIG_DIR / "alertmanager.yml"


@pytest.fixture(scope="module")
def amtool():
    path = Path(os.environ.get("IOPIPE_AMTOOL_BIN", ""))
    if not path.is_file():
        pytest.fail(f"amtool not found at {str(path)!r}: run `make alertmanager` (make test-infra builds it)")
    return path


def run(amtool, *args):
    done = subprocess.run([str(amtool), *args], cwd=CONFIG_DIR, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def test_the_config_loads_with_its_templates(amtool):
    out = run(amtool, "check-config", str(CONFIG))
    assert "SUCCESS" in out and "1 templates" in out, out


@pytest.mark.parametrize("labels, receiver", [
    (["alertname=DiskFailing", "host=web-17", "disk=sdb", "severity=critical"], "disk-tickets"),
    (["alertname=HostTelemetryMissing", "host=web-17", "severity=critical"], "host-pager"),
    (["alertname=HostTelemetryMissing", "host=web-17", "severity=warning"], "sre-webhook"),
    (["alertname=DiskRetrying", "host=web-17", "disk=sdb", "severity=warning"], "sre-webhook"),
])
def test_each_alert_reaches_its_receiver(amtool, labels, receiver):
    assert run(amtool, "config", "routes", "test", f"--config.file={CONFIG}", *labels) == receiver


def test_a_ticket_carries_the_disk_its_evidence_and_where_to_look(amtool, tmp_path):
    alert = {"status": "firing",
             "labels": {"alertname": "DiskFailing", "host": "web-17", "disk": "sdb", "model": "ST4000NM0035",
                        "serial": "ZC1ABC", "kind": "failing_disk", "severity": "critical"},
             "annotations": {"summary": "web-17/sdb is failing: service time 180 ms",
                             "description": "ticket t-1, opened 2026-11-26T04:00:00Z",
                             "evidence": "failing_disk critical: service time 180 ms beyond 60 ms",
                             "dashboard_url": "https://grafana/d/iopipe-disk?var-host=web-17&var-disk=sdb",
                             "heatmap_url": "http://bridge:9466/heatmap.svg?host=web-17&disk=sdb",
                             "histogram_url": "http://bridge:9466/histogram.svg?anomaly=a1",
                             "runbook_url": "https://iopipe.example/docs/runbooks/DiskFailing.md",
                             "cookbook_sql": "SELECT kind FROM iopipe.anomalies"}}
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"status": "firing", "alerts": [alert], "commonLabels": alert["labels"],
                                "groupLabels": {"host": "web-17", "disk": "sdb"}}))

    def render(name):
        return run(amtool, "template", "render", "--template.glob=templates/*.tmpl", f"--template.data={data}",
                   f"--template.text={{{{ template \"{name}\" . }}}}")

    assert render("iopipe.ticket.summary") == "DiskFailing web-17/sdb (ST4000NM0035 ZC1ABC)"
    description = render("iopipe.ticket.description")
    for annotation in ("summary", "evidence", "dashboard_url", "heatmap_url", "histogram_url", "runbook_url",
                       "cookbook_sql"):
        assert alert["annotations"][annotation] in description, (annotation, description)
