"""The ticket bridge's alerts from the rows ClickHouse gives it: an open ticket fires until
a few cycles ahead, a resolved one ends when its disk turned healthy, and a ticket waits
for its labels (disk identity, opening anomaly) so they never change after its first post."""

from iopipe import bridge

NS = 10**9
NOW_S = 1_795_000_000


class FakeClickHouse:
    """Answers the bridge's three queries from fixed rows."""

    def __init__(self, tickets, anomalies, inventory):
        self.tickets, self.anomalies, self.inventory = tickets, anomalies, inventory

    def json_rows(self, sql):
        if "FROM iopipe.health" in sql:
            return self.tickets
        if "FROM iopipe.anomalies" in sql:
            return [a for a in self.anomalies if f"'{a['id']}'" in sql]
        return [row for row in self.inventory if f"'{row['disk']}'" in sql]


def ticket(disk, opened_s, last_action="open", last_s=None, opened_ids=("a1",)):
    return {"host": "web-17", "disk": disk, "ticket_id": f"t-{disk}", "opened_ns": str(opened_s * NS),
            "opened_reason": "service time 180 ms", "opened_anomaly_ids": list(opened_ids), "last_action": last_action,
            "last_ns": str((last_s or opened_s) * NS), "last_reason": "r", "cited_anomaly_ids": list(opened_ids)}


ANOMALY = {"id": "a1", "host": "web-17", "disk": "sdb", "kind": "failing_disk", "severity": "critical",
           "summary": "service time 180 ms beyond 60 ms", "start_ns": str((NOW_S - 70) * NS),
           "end_ns": str((NOW_S - 60) * NS), "evidence_json": '{"device_histogram_us":{"131072-262143":40}}'}
INVENTORY = [{"host": "web-17", "disk": "sdb", "model": "ST4000NM0035", "serial": "ZC1ABC"}]


def alerts(tickets, anomalies=(ANOMALY,), inventory=INVENTORY, now_s=NOW_S):
    posted = []
    b = bridge.Bridge(FakeClickHouse(tickets, list(anomalies), inventory), ["http://alertmanager"], "https://grafana",
                      "http://bridge:9466", 60.0, bridge.Counters())
    b.post = posted.extend
    b.cycle(now_s)
    return posted


def test_an_open_ticket_fires_with_its_labels_evidence_and_links():
    (alert,) = alerts([ticket("sdb", NOW_S - 60)])
    assert alert["labels"] == {"alertname": "DiskFailing", "severity": "critical", "host": "web-17", "disk": "sdb",
                               "model": "ST4000NM0035", "serial": "ZC1ABC", "kind": "failing_disk"}
    assert alert["startsAt"] == bridge.iso((NOW_S - 60) * NS)
    assert alert["endsAt"] == bridge.iso((NOW_S + 4 * 60) * NS)
    notes = alert["annotations"]
    assert "failing_disk critical: service time 180 ms beyond 60 ms" in notes["evidence"]
    assert notes["histogram_url"] == "http://bridge:9466/histogram.svg?anomaly=a1"
    assert notes["heatmap_url"].startswith("http://bridge:9466/heatmap.svg?host=web-17&disk=sdb&from=")
    assert "disk = CAST('sdb' AS String)" in notes["cookbook_sql"] and "--" not in notes["cookbook_sql"]


def test_a_resolved_ticket_ends_when_its_disk_turned_healthy():
    (alert,) = alerts([ticket("sdb", NOW_S - 900, last_action="resolve", last_s=NOW_S - 30)])
    assert alert["endsAt"] == bridge.iso((NOW_S - 30) * NS)
    assert alert["startsAt"] == bridge.iso((NOW_S - 900) * NS)


def test_the_same_ticket_gives_the_same_alert_labels_and_start_every_cycle():
    rows = [ticket("sdb", NOW_S - 60)]
    first, later = alerts(rows), alerts(rows, now_s=NOW_S + 600)
    assert [(a["labels"], a["startsAt"]) for a in first] == [(a["labels"], a["startsAt"]) for a in later]


def test_a_ticket_waits_for_its_labels_then_goes_with_what_is_known():
    unknown_disk = ticket("sdc", NOW_S - 60, opened_ids=("a9",))
    assert alerts([unknown_disk]) == []
    (late,) = alerts([unknown_disk], now_s=NOW_S - 60 + bridge.LABELS_SETTLE_S)
    assert (late["labels"]["kind"], late["labels"]["model"]) == ("unknown", "")
    assert late["annotations"]["evidence"] == "no stored anomaly cited yet"
