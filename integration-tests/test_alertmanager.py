"""The shipped Alertmanager routes, grouping, inhibition and receivers, run by a real
Alertmanager whose integrations reach the test's own webhook, PagerDuty and Jira: a disk's
alerts are one group and one Jira issue, updated while they fire and resolved with them;
a host-level alert pages and holds back the disks of its host, not of others."""
import json
import urllib.request
import uuid

import pytest

from iopipe import tickets
from iopipe.readiness import wait_for

pytestmark = pytest.mark.stack


@pytest.fixture(scope="module")
def alertmanager():
    receiver = tickets.Receiver()
    try:
        with tickets.LocalTickets(None, None, receiver.url) as local:
            local.receiver = receiver
            yield local
    finally:
        receiver.close()


def post(alertmanager, *alerts):
    request = urllib.request.Request(f"{alertmanager.alertmanager_url}/api/v2/alerts", data=json.dumps(alerts).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()


def disk_failing(host, disk, kind="failing_disk", ends_at=None):
    alert = {"labels": {"alertname": "DiskFailing", "severity": "critical", "host": host, "disk": disk, "kind": kind},
             "annotations": {"summary": f"{host}/{disk} is failing", "evidence": f"{kind} on {disk}"}}
    if ends_at:
        alert["endsAt"] = ends_at
    return alert


def issues_of(alertmanager, host, disk):
    return {key: issue for key, issue in alertmanager.receiver.jira_issues().items()
            if f"{host}/{disk}" in issue["fields"]["summary"]}


def notified(alertmanager, host):
    return [(receiver, n) for receiver, n in alertmanager.receiver.received() if n["groupLabels"].get("host") == host
            or n["commonLabels"].get("host") == host]


def test_a_disks_alerts_are_one_group_at_the_tickets_receiver(alertmanager):
    host = f"am-{uuid.uuid4().hex[:6]}"
    post(alertmanager, disk_failing(host, "sdb"), disk_failing(host, "sdb", kind="bimodal_retries"),
         disk_failing(host, "sdc"))
    notes = wait_for("both disks notified", lambda: len({n["groupKey"] for _, n in notified(alertmanager, host)}) == 2
                     and notified(alertmanager, host), timeout_s=60)
    by_disk = {n["groupLabels"]["disk"]: (receiver, n) for receiver, n in notes}
    assert {r for r, _ in by_disk.values()} == {"disk-tickets"}, notes
    assert sorted(a["labels"]["kind"] for a in by_disk["sdb"][1]["alerts"]) == ["bimodal_retries", "failing_disk"]
    assert [a["labels"]["kind"] for a in by_disk["sdc"][1]["alerts"]] == ["failing_disk"]


def test_a_host_level_alert_inhibits_its_disks_and_only_its_own(alertmanager):
    sick, other = f"sick-{uuid.uuid4().hex[:6]}", f"other-{uuid.uuid4().hex[:6]}"
    post(alertmanager, {"labels": {"alertname": "HostTelemetryMissing", "severity": "critical", "host": sick}})
    wait_for("the host alert", lambda: notified(alertmanager, sick), timeout_s=60)
    post(alertmanager, disk_failing(sick, "sdb"), disk_failing(other, "sdb"))
    wait_for("the other host's disk notified", lambda: notified(alertmanager, other), timeout_s=60)
    with urllib.request.urlopen(f"{alertmanager.alertmanager_url}/api/v2/alerts", timeout=10) as response:
        states = {(a["labels"]["host"], a["labels"]["alertname"]): a["status"] for a in json.load(response)
                  if a["labels"]["host"] in (sick, other)}
    assert states[(sick, "DiskFailing")]["inhibitedBy"], states
    assert not states[(other, "DiskFailing")]["inhibitedBy"], states
    assert [(r, n["commonLabels"]["alertname"]) for r, n in notified(alertmanager, sick)] == [
        ("host-pager", "HostTelemetryMissing")]
    pages = [event for _, event in alertmanager.receiver.pages if sick in event["payload"]["summary"]]
    assert [p["event_action"] for p in pages] == ["trigger"], pages
    # Alertmanager notifies a receiver's webhook and Jira each on its own: the issue may come after the webhook.
    wait_for("the other host's disk's issue", lambda: issues_of(alertmanager, other, "sdb"), timeout_s=60)
    assert not issues_of(alertmanager, sick, "sdb")


def test_a_disk_is_one_jira_issue_updated_while_it_fails_and_resolved_with_it(alertmanager):
    host = f"jira-{uuid.uuid4().hex[:6]}"
    post(alertmanager, disk_failing(host, "sdb"))
    (key, issue), = wait_for("the Jira issue", lambda: issues_of(alertmanager, host, "sdb"), timeout_s=60).items()
    assert issue["fields"]["project"]["key"] == "STOR" and "failing_disk on sdb" in issue["fields"]["description"]
    assert any(label.startswith("ALERT{") for label in issue["fields"]["labels"]), issue["fields"]["labels"]
    post(alertmanager, disk_failing(host, "sdb"), disk_failing(host, "sdb", kind="bimodal_retries"))
    wait_for("the issue updated with the new evidence", lambda: "bimodal_retries on sdb" in
             issues_of(alertmanager, host, "sdb")[key]["fields"]["description"], timeout_s=60)
    resolved = "2020-01-01T00:00:00Z"
    post(alertmanager, disk_failing(host, "sdb", ends_at=resolved),
         disk_failing(host, "sdb", kind="bimodal_retries", ends_at=resolved))
    wait_for("the issue resolved", lambda: issues_of(alertmanager, host, "sdb")[key]["category"] == "done",
             timeout_s=60)
    final = issues_of(alertmanager, host, "sdb")
    assert list(final) == [key] and final[key]["transitions"] == ["Done"], final
