"""Tickets on one machine: Alertmanager and the ticket bridge as local processes, for the
demo and the tests. Production runs the same two programs with the shipped
infra/alertmanager/alertmanager.yml (see infra/alertmanager/README.md).

The local Alertmanager reads the shipped configuration (its routes, grouping, inhibition,
templates and receivers) with every integration pointed at a `Receiver` here: webhooks
post to it, PagerDuty's events reach it, and its Jira answers the calls Alertmanager's
Jira receiver makes. Timings are the ones given: a test cannot wait hours for a repeat.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

from iopipe.paths import CACHE, INFRA, REPO
from iopipe.ports import free_ports
from iopipe.readiness import http_json, wait_for

ALERTMANAGER_DIR = INFRA / "alertmanager"
SHIPPED_CONFIG = ALERTMANAGER_DIR / "alertmanager.yml"


@dataclass(frozen=True)
class Timings:
    group_wait: str = "30s"
    group_interval: str = "5m"
    repeat_interval: str = "4h"
    bridge_interval_s: float = 60.0


QUICK = Timings(group_wait="2s", group_interval="5s", repeat_interval="20s", bridge_interval_s=5.0)


def local_config(receiver_url, timings):
    """The shipped configuration with every integration pointed at `receiver_url` (a
    `Receiver`) and no secret files: webhooks at /webhook/<receiver>, PagerDuty at
    /pagerduty/<receiver>, Jira's API at /jira/rest/api/2."""
    config = yaml.safe_load(SHIPPED_CONFIG.read_text())
    config["route"].update(group_wait=timings.group_wait, group_interval=timings.group_interval,
                           repeat_interval=timings.repeat_interval)
    base = receiver_url.rstrip("/")
    for receiver in config["receivers"]:
        name = receiver["name"]
        for webhook in receiver.get("webhook_configs", []):
            webhook.pop("url_file", None)
            webhook["url"] = f"{base}/webhook/{name}"
        for pager in receiver.get("pagerduty_configs", []):
            pager.pop("routing_key_file", None)
            pager.update(routing_key="local", url=f"{base}/pagerduty/{name}")
        for jira in receiver.get("jira_configs", []):
            jira.pop("http_config", None)
            jira["api_url"] = f"{base}/jira/rest/api/2"
    return config


def alertmanager_bin():
    path = Path(os.environ.get("IOPIPE_ALERTMANAGER_BIN",
                               CACHE / "alertmanager-v0.28.1" / "alertmanager"))
    if not path.is_file():
        sys.exit(f"{path} is missing: run `make alertmanager` (it builds Alertmanager from the Go module proxy)")
    return path


class LocalTickets:
    """Alertmanager and the bridge (unless `clickhouse_url` is None: Alertmanager alone),
    started on enter and stopped on exit; their logs in `workdir`."""

    def __init__(self, clickhouse_url, bridge_password, receiver_url, timings=QUICK, grafana_url="http://127.0.0.1:3000"):
        self.clickhouse_url, self.bridge_password = clickhouse_url, bridge_password
        self.receiver_url, self.timings, self.grafana_url = receiver_url, timings, grafana_url
        self.alertmanager_port, self.bridge_port, self.cluster_port = free_ports(3)
        self.workdir = Path(tempfile.mkdtemp(prefix="iopipe-tickets-"))
        self.processes = []

    @property
    def alertmanager_url(self):
        return f"http://127.0.0.1:{self.alertmanager_port}"

    @property
    def bridge_url(self):
        return f"http://127.0.0.1:{self.bridge_port}"

    def __enter__(self):
        shutil.copytree(ALERTMANAGER_DIR / "templates", self.workdir / "templates")
        config = self.workdir / "alertmanager.yml"
        config.write_text(yaml.safe_dump(local_config(self.receiver_url, self.timings), sort_keys=False))
        try:
            self._start("alertmanager", [
                str(alertmanager_bin()), f"--config.file={config}", f"--storage.path={self.workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.alertmanager_port}",
                f"--cluster.listen-address=127.0.0.1:{self.cluster_port}"])
            wait_for("Alertmanager ready", lambda: http_json(f"{self.alertmanager_url}/api/v2/status"),
                     timeout_s=60)
            if self.clickhouse_url is not None:
                self._start_bridge()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start_bridge(self):
        self._start("bridge", [
            sys.executable, "-m", "iopipe.bridge", "--clickhouse", self.clickhouse_url, "--alertmanager", self.alertmanager_url,
            "--listen", f"127.0.0.1:{self.bridge_port}", "--grafana-url", self.grafana_url,
            "--interval-s", str(self.timings.bridge_interval_s)],
            env={"IOPIPE_CLICKHOUSE_BRIDGE_PASSWORD": self.bridge_password})
        wait_for("ticket bridge ready", lambda: self.bridge_metrics() is not None, timeout_s=60)

    def restart_bridge(self):
        """Kills the bridge and starts it again: it keeps no state, so it posts the same alerts."""
        (name, process), = [(n, p) for n, p in self.processes if n == "bridge"]
        process.kill()
        process.wait(timeout=10)
        self.processes.remove((name, process))
        self._start_bridge()

    def _start(self, name, command, env=None):
        # The process writes to its own copy of the descriptor: ours closes at once. It runs from
        # the repository root, where `python -m iopipe.bridge` finds its package.
        with open(self.workdir / f"{name}.log", "a") as log:
            self.processes.append((name, subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                                                          env={**os.environ, **(env or {})})))

    def bridge_metrics(self):
        """The bridge's counters, name -> value."""
        with urllib.request.urlopen(f"{self.bridge_url}/metrics", timeout=5) as response:
            lines = response.read().decode().splitlines()
        return {name.removeprefix("iopipe_bridge_"): float(value) for name, value in (line.split() for line in lines)}

    def log(self, name):
        return (self.workdir / f"{name}.log").read_text()

    def __exit__(self, *exc):
        for _, process in reversed(self.processes):
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        self.processes = []
        shutil.rmtree(self.workdir, ignore_errors=True)


class Jira:
    """The part of Jira's REST API (v2) that Alertmanager's Jira receiver calls: search by
    label, create, update, and the transitions that resolve and reopen an issue."""

    TRANSITIONS = {"31": ("Done", "done"), "41": ("Reopen", "new")}  # id -> (name, status category)

    def __init__(self):
        self.issues = {}  # key -> {"fields": ..., "category": "new"|"done", "updates": n, "transitions": [names]}

    def handle(self, method, path, body):
        """(HTTP status, response body) for one call; `path` is relative to /rest/api/2/."""
        if (method, path) == ("POST", "search"):
            return 200, self.search(re.search(r'labels="([^"]+)"', body["jql"]).group(1))
        if (method, path) == ("POST", "issue"):
            key = f"{body['fields']['project']['key']}-{len(self.issues) + 1}"
            self.issues[key] = {"fields": body["fields"], "category": "new", "updates": 0, "transitions": []}
            return 201, {"key": key}
        issue = re.fullmatch(r"issue/([A-Z]+-\d+)(/transitions)?", path)
        if not issue or issue.group(1) not in self.issues:
            return 404, {"errorMessages": [f"no {method} {path} here"]}
        record = self.issues[issue.group(1)]
        if method == "PUT" and not issue.group(2):
            record["fields"].update(summary=body["fields"]["summary"], description=body["fields"]["description"])
            record["updates"] += 1
            return 204, None
        if method == "GET" and issue.group(2):
            return 200, {"transitions": [{"id": i, "name": name} for i, (name, _) in self.TRANSITIONS.items()]}
        if method == "POST" and issue.group(2):
            name, record["category"] = self.TRANSITIONS[body["transition"]["id"]]
            record["transitions"].append(name)
            return 204, None
        return 405, {"errorMessages": [f"{method} {path} is not emulated"]}

    def search(self, label):
        """Issues with the label, open ones first (as Alertmanager's JQL orders them)."""
        found = sorted((k for k, i in self.issues.items() if label in i["fields"]["labels"]),
                       key=lambda k: self.issues[k]["category"] == "done")
        return {"total": len(found), "issues": [
            {"key": k, "fields": {"status": {"name": self.issues[k]["category"],
                                             "statusCategory": {"key": self.issues[k]["category"]}}}} for k in found]}


class Receiver:
    """Every integration of the local Alertmanager, on a free port: keeps each webhook
    notification with the receiver it was posted for, each PagerDuty event, and a `Jira`."""

    def __init__(self):
        self.notifications = []  # (receiver, payload) of the webhooks
        self.pages = []  # (receiver, PagerDuty event)
        self.jira = Jira()
        self.lock = threading.Lock()
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.answer("GET")

            def do_PUT(self):
                self.answer("PUT")

            def do_POST(self):
                self.answer("POST")

            def answer(self, method):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length)) if length else None
                with received.lock:
                    status, reply = received.handle(method, self.path, body)
                data = json.dumps(reply).encode() if reply is not None else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_ports(1)[0]), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True, name="receiver").start()

    def handle(self, method, path, body):
        integration, _, rest = path.lstrip("/").partition("/")
        if integration == "webhook" and method == "POST":
            self.notifications.append((rest, body))
            return 200, None
        if integration == "pagerduty" and method == "POST":
            self.pages.append((rest, body))
            return 202, {"status": "success", "message": "Event processed"}
        if integration == "jira" and rest.startswith("rest/api/2/"):
            return self.jira.handle(method, rest.removeprefix("rest/api/2/"), body)
        return 404, {"error": f"nothing at {method} {path}"}

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_port}"

    def received(self):
        """(receiver, notification) of every webhook notification so far."""
        with self.lock:
            return list(self.notifications)

    def jira_issues(self):
        """Jira's issues so far, key -> issue (a copy)."""
        with self.lock:
            return json.loads(json.dumps(self.jira.issues))

    def close(self):
        self.server.shutdown()
