"""The shipped Alertmanager routes, grouping and inhibition, run by a real Alertmanager
(every receiver a webhook of the test's own): a disk's alerts go to the tickets receiver
as one group, and a host-level alert holds back the disks of its host, not of others."""
import json
import urllib.request
import uuid

import pytest

import stack
import tickets


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


def disk_failing(host, disk, kind="failing_disk"):
    return {"labels": {"alertname": "DiskFailing", "severity": "critical", "host": host, "disk": disk, "kind": kind},
            "annotations": {"summary": f"{host}/{disk} is failing"}}


def notified(alertmanager, host):
    return [(receiver, n) for receiver, n in alertmanager.receiver.received() if n["groupLabels"].get("host") == host
            or n["commonLabels"].get("host") == host]


def test_a_disks_alerts_are_one_group_at_the_tickets_receiver(alertmanager):
    host = f"am-{uuid.uuid4().hex[:6]}"
    post(alertmanager, disk_failing(host, "sdb"), disk_failing(host, "sdb", kind="bimodal_retries"),
         disk_failing(host, "sdc"))
    notes = stack.wait_for("both disks notified", lambda: len({n["groupKey"] for _, n in notified(alertmanager, host)}) == 2
                           and notified(alertmanager, host), timeout_s=60)
    by_disk = {n["groupLabels"]["disk"]: (receiver, n) for receiver, n in notes}
    assert {r for r, _ in by_disk.values()} == {"disk-tickets"}, notes
    assert sorted(a["labels"]["kind"] for a in by_disk["sdb"][1]["alerts"]) == ["bimodal_retries", "failing_disk"]
    assert [a["labels"]["kind"] for a in by_disk["sdc"][1]["alerts"]] == ["failing_disk"]


def test_a_host_level_alert_inhibits_its_disks_and_only_its_own(alertmanager):
    sick, other = f"sick-{uuid.uuid4().hex[:6]}", f"other-{uuid.uuid4().hex[:6]}"
    post(alertmanager, {"labels": {"alertname": "HostTelemetryMissing", "severity": "critical", "host": sick}})
    stack.wait_for("the host alert", lambda: notified(alertmanager, sick), timeout_s=60)
    post(alertmanager, disk_failing(sick, "sdb"), disk_failing(other, "sdb"))
    stack.wait_for("the other host's disk notified", lambda: notified(alertmanager, other), timeout_s=60)
    with urllib.request.urlopen(f"{alertmanager.alertmanager_url}/api/v2/alerts", timeout=10) as response:
        states = {(a["labels"]["host"], a["labels"]["alertname"]): a["status"] for a in json.load(response)
                  if a["labels"]["host"] in (sick, other)}
    assert states[(sick, "DiskFailing")]["inhibitedBy"], states
    assert not states[(other, "DiskFailing")]["inhibitedBy"], states
    assert [(r, n["commonLabels"]["alertname"]) for r, n in notified(alertmanager, sick)] == [
        ("host-pager", "HostTelemetryMissing")]
