"""The ticket bridge's alerts from the rows ClickHouse gives it: an open ticket fires until
a few cycles ahead, a resolved one ends when its disk turned healthy, and a ticket waits
for its labels (disk identity, opening anomaly) so they never change after its first post."""

import socket
import subprocess
import sys
import threading
import urllib.request

import pytest

from iopipe import bridge
from iopipe.migrate import ClickHouseError, ClickHouseHttp
from iopipe.paths import REPO
from iopipe.readiness import wait_for

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


class Misbehaving:
    """A server that reads each request and then, as `how` says: closes the connection
    without a word ("close"), never answers ("stall"), or sends a reply shorter than it
    announced and closes ("cut")."""

    def __init__(self, how):
        self.how, self.held = how, []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            connection, _ = self.server.accept()
            connection.recv(65536)
            if self.how == "stall":
                self.held.append(connection)
                continue
            if self.how == "cut":
                connection.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{"host": "web-')
            connection.close()


@pytest.mark.parametrize("how", ["close", "stall", "cut"])
def test_a_clickhouse_that_drops_stalls_or_cuts_short_a_reply_is_a_clickhouse_error(how):
    with pytest.raises(ClickHouseError, match="did not answer whole"):
        ClickHouseHttp(Misbehaving(how).url, "iopipe_bridge").query("SELECT 1", timeout=1)


@pytest.mark.parametrize("how", ["close", "cut"])
def test_an_alertmanager_that_drops_or_cuts_short_a_reply_is_a_failed_post_retried_next_cycle(how):
    counters = bridge.Counters()
    b = bridge.Bridge(FakeClickHouse([], [], []), [Misbehaving(how).url], "https://grafana", "http://bridge:9466",
                      60.0, counters)
    b.post([{"labels": {"alertname": "DiskFailing"}}])
    assert counters.values["post_failures_total"] == 1


def test_the_bridge_outlives_a_clickhouse_that_drops_every_connection():
    """Run as in service: each cycle fails, is counted, and the next one comes (it once
    ended with a traceback on the first dropped connection, and nothing restarted it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        listen = f"127.0.0.1:{probe.getsockname()[1]}"
    process = subprocess.Popen([sys.executable, "-m", "iopipe.bridge", "--clickhouse", Misbehaving("close").url,
                                "--alertmanager", Misbehaving("close").url, "--listen", listen, "--interval-s", "0.2"],
                               cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        def failures():
            with urllib.request.urlopen(f"http://{listen}/metrics", timeout=2) as response:
                metrics = dict(line.split() for line in response.read().decode().splitlines())
            return int(metrics["iopipe_bridge_cycle_failures_total"])
        wait_for("three failed cycles counted", lambda: process.poll() is None and failures() >= 3, timeout_s=30)
        assert process.poll() is None
    finally:
        process.terminate()
        output = process.communicate(timeout=10)[0]
    assert "Traceback" not in output, output
    assert "did not answer whole" in output
