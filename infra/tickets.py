"""Tickets on one machine: Alertmanager and the ticket bridge as local processes, for the
demo and the tests. Production runs the same two programs with the shipped
infra/alertmanager/alertmanager.yml (see infra/alertmanager/README.md).

The local Alertmanager reads the shipped configuration (its routes, grouping, inhibition
and templates) with each receiver's integrations replaced by one webhook to `receiver_url`
+ "/<receiver name>", so what a Jira or PagerDuty receiver would get can be seen, and
with the timings given: a test cannot wait hours for a repeat.
"""
import json
import os
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

import stack

ALERTMANAGER_DIR = stack.INFRA / "alertmanager"
SHIPPED_CONFIG = ALERTMANAGER_DIR / "alertmanager.yml"
BRIDGE = ALERTMANAGER_DIR / "bridge.py"
# The bridge imports the ClickHouse client, the cookbook and the heatmap from where they live.
BRIDGE_PYTHONPATH = [stack.REPO / "schema" / "clickhouse", stack.REPO / "schema" / "queries", stack.REPO / "dashboards"]


@dataclass(frozen=True)
class Timings:
    group_wait: str = "30s"
    group_interval: str = "5m"
    repeat_interval: str = "4h"
    bridge_interval_s: float = 60.0


QUICK = Timings(group_wait="2s", group_interval="5s", repeat_interval="20s", bridge_interval_s=5.0)


def local_config(receiver_url, timings):
    """The shipped configuration, its receivers all webhooks to `receiver_url`/<name>."""
    config = yaml.safe_load(SHIPPED_CONFIG.read_text())
    config["route"].update(group_wait=timings.group_wait, group_interval=timings.group_interval,
                           repeat_interval=timings.repeat_interval)
    config["receivers"] = [{"name": r["name"], "webhook_configs": [
        {"url": f"{receiver_url.rstrip('/')}/{r['name']}", "send_resolved": True}]} for r in config["receivers"]]
    return config


def alertmanager_bin():
    path = Path(os.environ.get("IOPIPE_ALERTMANAGER_BIN",
                               stack.CACHE / "alertmanager-v0.28.1" / "alertmanager"))
    if not path.is_file():
        sys.exit(f"{path} is missing: run `make alertmanager` (it builds Alertmanager from the Go module proxy)")
    return path


class LocalTickets:
    """Alertmanager and the bridge (unless `clickhouse_url` is None: Alertmanager alone),
    started on enter and stopped on exit; their logs in `workdir`."""

    def __init__(self, clickhouse_url, reader_password, receiver_url, timings=QUICK, grafana_url="http://127.0.0.1:3000"):
        self.clickhouse_url, self.reader_password = clickhouse_url, reader_password
        self.receiver_url, self.timings, self.grafana_url = receiver_url, timings, grafana_url
        self.alertmanager_port, self.bridge_port, self.cluster_port = stack.free_ports(3)
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
            stack.wait_for("Alertmanager ready", lambda: stack.http_json(f"{self.alertmanager_url}/api/v2/status"),
                           timeout_s=60)
            if self.clickhouse_url is None:
                return self
            self._start("bridge", [
                sys.executable, str(BRIDGE), "--clickhouse", self.clickhouse_url, "--alertmanager", self.alertmanager_url,
                "--listen", f"127.0.0.1:{self.bridge_port}", "--grafana-url", self.grafana_url,
                "--interval-s", str(self.timings.bridge_interval_s)],
                env={"PYTHONPATH": os.pathsep.join(map(str, BRIDGE_PYTHONPATH)),
                     "IOPIPE_CLICKHOUSE_READER_PASSWORD": self.reader_password})
            stack.wait_for("ticket bridge ready", lambda: self.bridge_metrics() is not None, timeout_s=60)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self, name, command, env=None):
        log = open(self.workdir / f"{name}.log", "w")
        self.processes.append((name, subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
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


class Receiver:
    """A webhook receiver on a free port: keeps every notification Alertmanager posts, with
    the receiver it was posted for (the last part of the path)."""

    def __init__(self):
        self.notifications = []  # (receiver, payload)
        self.lock = threading.Lock()
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with received.lock:
                    received.notifications.append((self.path.rsplit("/", 1)[-1], payload))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", stack.free_ports(1)[0]), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True, name="receiver").start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_port}"

    def received(self):
        with self.lock:
            return list(self.notifications)

    def close(self):
        self.server.shutdown()
