"""The ticket bridge: every ticket iopipe keeps for a failing disk, as an alert in Alertmanager.

    python3 -m iopipe.bridge --clickhouse http://127.0.0.1:8123 \\
        --alertmanager http://127.0.0.1:9093 --grafana-url https://grafana.example --public-url http://bridge:9466

Each cycle it reads the tickets from ClickHouse (the cookbook's `tickets` query over the
health transitions the stream job wrote) and posts them to Alertmanager's v2 API: an
open ticket as a firing alert, re-posted every cycle with an end a few cycles ahead; a
resolved one with its end at the moment the disk turned healthy. It keeps no state of
its own: the health table is the durable, replicated record of every transition, so a
restarted bridge posts the same alerts with the same labels and start, and Alertmanager
(which names an alert by its labels) sees the ticket it already has, never a second one.

It also draws what says more than rows, and the alerts link to both: the disk's latency
heatmap from the disk dashboard's own panel SQL (/heatmap.svg), and the latency histogram
of the window an anomaly was found in, from its evidence (/histogram.svg).
"""
import argparse
import http.client
import json
import logging
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from iopipe import cookbook
from iopipe.dashboards import config as dashboard_config
from iopipe.dashboards import heatmap_svg, histogram_svg
from iopipe.migrate import ClickHouseError, ClickHouseHttp

NS = 1_000_000_000
ALERT_NAME = "DiskFailing"
# How long an alert stays firing without being posted again: a few missed cycles are not a
# resolution, a bridge gone for longer lets Alertmanager resolve it (as Prometheus does).
CYCLES_UNTIL_STALE = 4
# A ticket is posted once its disk's identity and its anomalies are stored, so the alert's
# labels never change after its first post (changed labels would be a second alert).
# Past this age it is posted with what is known.
LABELS_SETTLE_S = 300
RESOLVED_HOURS = 24  # resolved tickets re-posted as resolved, for an Alertmanager that missed it
EVIDENCE_CHARS = 4000
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}

log = logging.getLogger("iopipe-bridge")


class Counters:
    """What the bridge did, for /metrics."""

    def __init__(self):
        self.values = {"cycles_total": 0, "cycle_failures_total": 0, "alerts_posted_total": 0,
                       "post_failures_total": 0, "tickets_open": 0, "tickets_waiting_for_labels": 0}
        self.lock = threading.Lock()

    def add(self, name, n=1):
        with self.lock:
            self.values[name] += n

    def set(self, name, value):
        with self.lock:
            self.values[name] = value

    def prometheus(self):
        with self.lock:
            return "".join(f"iopipe_bridge_{k} {v}\n" for k, v in sorted(self.values.items()))


def sql_in(values):
    return ", ".join(cookbook.literal(v, "String") for v in values) or "''"


def anomalies_by_id(clickhouse, ids):
    if not ids:
        return {}
    rows = clickhouse.json_rows(
        "SELECT id, host, disk, kind, severity, summary, start_ns, end_ns, evidence_json FROM iopipe.anomalies FINAL "
        f"WHERE id IN ({sql_in(sorted(ids))})")
    return {r["id"]: r for r in rows}


def identities(clickhouse, disks):
    """(host, disk) -> {model, serial} of the disks the inventory knows."""
    if not disks:
        return {}
    pairs = ", ".join(f"({cookbook.literal(h, 'String')}, {cookbook.literal(d, 'String')})" for h, d in sorted(disks))
    rows = clickhouse.json_rows(
        "SELECT host, disk, argMax(model, last_seen) AS model, argMax(serial, last_seen) AS serial "
        f"FROM iopipe.disk_inventory WHERE (host, disk) IN ({pairs}) GROUP BY host, disk")
    return {(r["host"], r["disk"]): {"model": r["model"], "serial": r["serial"]} for r in rows}


def iso(ns):
    return datetime.fromtimestamp(ns / NS, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Bridge:
    def __init__(self, clickhouse, alertmanagers, grafana_url, public_url, interval_s, counters):
        self.clickhouse = clickhouse
        self.alertmanagers = alertmanagers
        self.grafana_url = grafana_url.rstrip("/")
        self.public_url = public_url.rstrip("/")
        self.interval_s = interval_s
        self.counters = counters

    def cycle(self, now_s=None):
        """Reads the tickets and posts them; returns the alerts posted."""
        now_s = time.time() if now_s is None else now_s
        tickets = self.clickhouse.json_rows(cookbook.render("tickets", {"resolved_hours": RESOLVED_HOURS}))
        anomalies = anomalies_by_id(self.clickhouse, {i for t in tickets for i in t["cited_anomaly_ids"]})
        known = identities(self.clickhouse, {(t["host"], t["disk"]) for t in tickets})
        alerts, waiting = [], 0
        for t in tickets:
            identity = known.get((t["host"], t["disk"]))
            if not self.labels_settled(t, identity, anomalies, now_s):
                waiting += 1
                continue
            alerts.append(self.alert(t, identity or {}, anomalies, now_s))
        self.counters.set("tickets_open", sum(1 for t in tickets if t["last_action"] != "resolve"))
        self.counters.set("tickets_waiting_for_labels", waiting)
        if alerts:
            self.post(alerts)
        return alerts

    @staticmethod
    def labels_settled(ticket, identity, anomalies, now_s):
        stored = identity is not None and all(i in anomalies for i in ticket["opened_anomaly_ids"])
        return stored or now_s - int(ticket["opened_ns"]) / NS >= LABELS_SETTLE_S

    def alert(self, ticket, identity, anomalies, now_s):
        host, disk = ticket["host"], ticket["disk"]
        opened_ns, last_ns = int(ticket["opened_ns"]), int(ticket["last_ns"])
        resolved = ticket["last_action"] == "resolve"
        ends_ns = last_ns if resolved else int((now_s + CYCLES_UNTIL_STALE * self.interval_s) * NS)
        return {
            "labels": {"alertname": ALERT_NAME, "severity": "critical", "host": host, "disk": disk,
                       "model": identity.get("model", ""), "serial": identity.get("serial", ""),
                       "kind": opening_kind(ticket, anomalies)},
            "annotations": self.annotations(ticket, anomalies, now_s),
            "startsAt": iso(opened_ns),
            "endsAt": iso(ends_ns),
            "generatorURL": f"{self.grafana_url}/d/iopipe-disk?" + urllib.parse.urlencode({"var-host": host, "var-disk": disk}),
        }

    def annotations(self, ticket, anomalies, now_s):
        """What a ticket says: why, the evidence, and where to look (the links span its life)."""
        host, disk = ticket["host"], ticket["disk"]
        opened_ns, last_ns = int(ticket["opened_ns"]), int(ticket["last_ns"])
        cited = sorted((anomalies[i] for i in ticket["cited_anomaly_ids"] if i in anomalies),
                       key=lambda a: -int(a["end_ns"]))
        until_ns = last_ns if ticket["last_action"] == "resolve" else int(now_s * NS)
        span_ms = {"from": opened_ns // 10**6 - 3_600_000, "to": until_ns // 10**6 + 600_000}
        return {
            "summary": f"{host}/{disk} is failing: {ticket['opened_reason']}",
            "description": f"ticket {ticket['ticket_id']}, opened {iso(opened_ns)}; "
                           f"last {ticket['last_action']} {iso(last_ns)}: {ticket['last_reason']}",
            "ticket_id": ticket["ticket_id"],
            "evidence": evidence_text(cited),
            "dashboard_url": f"{self.grafana_url}/d/iopipe-disk?" + urllib.parse.urlencode(
                {"var-host": host, "var-disk": disk, **span_ms}),
            "heatmap_url": f"{self.public_url}/heatmap.svg?" + urllib.parse.urlencode(
                {"host": host, "disk": disk, "from": span_ms["from"] // 1000, "to": span_ms["to"] // 1000}),
            "histogram_url": f"{self.public_url}/histogram.svg?" + urllib.parse.urlencode({"anomaly": cited[0]["id"]})
                             if cited else "",
            "runbook_url": f"{dashboard_config.RUNBOOK_BASE_URL}/{ALERT_NAME}.md",
            "cookbook_sql": without_comments(cookbook.render("anomalies_of_disk", {
                "host": host, "disk": disk, "hours": int(now_s - opened_ns / NS) // 3600 + 2})),
        }

    def post(self, alerts):
        body = json.dumps(alerts).encode()
        for url in self.alertmanagers:
            request = urllib.request.Request(f"{url.rstrip('/')}/api/v2/alerts", data=body, method="POST",
                                             headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    response.read()
                self.counters.add("alerts_posted_total", len(alerts))
            except (http.client.HTTPException, OSError) as e:  # URLError too; closed, reset or cut short
                # The next cycle posts every ticket again: that is the retry.
                self.counters.add("post_failures_total")
                log.warning("posting %d alerts to %s failed: %s%s; retrying next cycle", len(alerts), url, e, _reason(e))


def _reason(error):
    """What Alertmanager said of a refused post (its first line), if it said anything."""
    if not isinstance(error, urllib.error.HTTPError):
        return ""
    said = error.read(2000).decode(errors="replace").strip().splitlines()
    return f" ({said[0]})" if said else ""


def opening_kind(ticket, anomalies):
    """The kind of anomaly that opened the ticket: its worst, then its earliest."""
    opened = [anomalies[i] for i in ticket["opened_anomaly_ids"] if i in anomalies]
    if not opened:
        return "unknown"
    return min(opened, key=lambda a: (SEVERITY_ORDER.get(a["severity"], 9), int(a["start_ns"])))["kind"]


def without_comments(sql):
    """The query alone: its documentation stays in the cookbook."""
    return "\n".join(line for line in sql.splitlines() if not line.startswith("--"))


def evidence_text(cited):
    """Newest first: each anomaly's summary, then the newest one's evidence as JSON."""
    if not cited:
        return "no stored anomaly cited yet"
    lines = [f"{iso(int(a['start_ns']))} {a['kind']} {a['severity']}: {a['summary']}" for a in cited]
    text = "\n".join(lines) + "\nevidence of the newest: " + cited[0]["evidence_json"]
    return text if len(text) <= EVIDENCE_CHARS else text[:EVIDENCE_CHARS - 1] + "…"


def serve(clickhouse, listen, counters):
    host, _, port = listen.rpartition(":")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/metrics":
                return self.reply(200, "text/plain; version=0.0.4", counters.prometheus())
            if url.path == "/heatmap.svg":
                return self.heatmap(urllib.parse.parse_qs(url.query))
            if url.path == "/histogram.svg":
                return self.histogram(urllib.parse.parse_qs(url.query))
            return self.reply(404, "text/plain",
                              "serves /heatmap.svg?host=&disk=&from=&to=, /histogram.svg?anomaly= and /metrics\n")

        def histogram(self, query):
            if "anomaly" not in query:
                return self.reply(400, "text/plain", "histogram.svg needs anomaly (an anomaly's id)\n")
            try:
                found = anomalies_by_id(clickhouse, {query["anomaly"][0]})
            except ClickHouseError as e:
                return self.reply(502, "text/plain", f"ClickHouse refused the anomaly query: {e}\n")
            if not found:
                return self.reply(404, "text/plain", "no such anomaly\n")
            a = next(iter(found.values()))
            histogram = json.loads(a["evidence_json"]).get("device_histogram_us", {})
            self.reply(200, "image/svg+xml",
                       histogram_svg.svg(histogram, f"{a['host']}/{a['disk']} {a['kind']} {a['severity']} at {iso(int(a['end_ns']))}"))

        def heatmap(self, query):
            try:
                host, disk = query["host"][0], query["disk"][0]
                to_s = int(query.get("to", [time.time()])[0])
                from_s = int(query.get("from", [to_s - 3600])[0])
            except (KeyError, ValueError):
                return self.reply(400, "text/plain", "heatmap.svg needs host, disk and optionally from, to (epoch seconds)\n")
            interval_s = max(10, (to_s - from_s) // 120 // 10 * 10)
            try:
                rows = clickhouse.json_rows(heatmap_svg.heatmap_sql(host, disk, from_s, to_s, interval_s))
            except ClickHouseError as e:
                return self.reply(502, "text/plain", f"ClickHouse refused the heatmap query: {e}\n")
            self.reply(200, "image/svg+xml", heatmap_svg.svg(rows, f"{host}/{disk} device latency"))

        def reply(self, status, content_type, text):
            body = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer((host or "127.0.0.1", int(port)), Handler)
    threading.Thread(target=server.serve_forever, daemon=True, name="http").start()
    return server


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clickhouse", default="http://127.0.0.1:8123", help="ClickHouse HTTP URL")
    p.add_argument("--user", default="iopipe_bridge", help="a ClickHouse user that may read iopipe's tables "
                   "(iopipe_bridge: a quota of its own, which dashboards cannot spend)")
    p.add_argument("--password-env", default="IOPIPE_CLICKHOUSE_BRIDGE_PASSWORD",
                   help="environment variable holding that user's password (never on the command line)")
    p.add_argument("--alertmanager", action="append", required=True,
                   help="an Alertmanager URL; repeat for each member of a cluster (each gets every alert)")
    p.add_argument("--grafana-url", default="http://127.0.0.1:3000", help="where the alerts' dashboard links point")
    p.add_argument("--listen", default="127.0.0.1:9466", help="address for /heatmap.svg and /metrics")
    p.add_argument("--public-url", help="how alert readers reach --listen (default http://<listen>)")
    p.add_argument("--interval-s", type=float, default=60.0, help="seconds between cycles")
    p.add_argument("--once", action="store_true", help="one cycle, print the alerts, exit")
    return p.parse_args(argv)


def main(argv):
    logging.basicConfig(level=logging.INFO, format="%(asctime)s iopipe-bridge %(levelname)s %(message)s")
    args = parse(argv)
    clickhouse = ClickHouseHttp(args.clickhouse, args.user, os.environ.get(args.password_env, ""))
    counters = Counters()
    bridge = Bridge(clickhouse, args.alertmanager, args.grafana_url, args.public_url or f"http://{args.listen}",
                    args.interval_s, counters)
    if args.once:
        print(json.dumps(bridge.cycle(), indent=2))
        return
    serve(clickhouse, args.listen, counters)
    log.info("posting tickets from %s to %s every %.0f s", args.clickhouse, ", ".join(args.alertmanager), args.interval_s)
    while True:
        started = time.monotonic()
        counters.add("cycles_total")
        try:
            alerts = bridge.cycle()
            if alerts:
                log.info("posted %d alerts", len(alerts))
        except ClickHouseError as e:
            counters.add("cycle_failures_total")
            log.warning("reading tickets failed: %s; trying again next cycle", str(e).splitlines()[0])
        time.sleep(max(0.0, args.interval_s - (time.monotonic() - started)))


if __name__ == "__main__":
    main(sys.argv[1:])
