"""The agent's other outputs: NDJSON to a unix socket (Vector's socket source), which may
start after the agent and go away, and its counters on a Prometheus metrics endpoint."""
import re
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

from iopipe.faultdisk import FaultDisk, timed_direct_reads

from tracing_agent import TracingAgent, agent_records

pytestmark = pytest.mark.disks


class LineListener:
    """A unix stream socket server collecting NDJSON lines, as Vector's socket source would."""

    def __init__(self, path):
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen()
        self.lines = []
        self.connections = 0
        self.active = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            while True:
                connection, _ = self.server.accept()
                self.connections += 1
                self.active = connection
                with connection, connection.makefile("r") as stream:
                    self.lines.extend(line for line in stream)
        except OSError:
            return  # closed

    def close(self):
        """Goes away as a stopped Vector would: no new connections, the open one cut."""
        self.server.close()
        if self.active:
            try:
                self.active.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # the agent had already hung up
        self.thread.join(timeout=5)


def test_unix_socket_output_survives_a_late_and_a_restarted_listener(agent_bin, tmp_path):
    path = tmp_path / "agent.sock"
    agent = subprocess.Popen([str(agent_bin), "run", "--no-trace", "--host", "itest", "--interval-ms", "200",
                              "--count", "15", "--output", "unix", "--socket", str(path)],
                             stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)  # the agent starts first and buffers
    first = LineListener(path)
    time.sleep(1.0)
    first.close()
    path.unlink()
    time.sleep(0.5)  # the listener is away: the agent keeps buffering
    second = LineListener(path)
    _, stderr = agent.communicate(timeout=30)
    assert agent.returncode == 0, stderr
    time.sleep(0.3)
    second.close()

    records = agent_records(first.lines + second.lines)
    samples = {r["ts_ns"] for r in records if r["schema"] == "io.diskstats.v1"}
    assert len(samples) == 15, f"every sample arrives once the listener is back: {len(samples)}\n{stderr}"
    final = [r for r in records if r["schema"] == "io.agent.v1"][-1]["counters"]
    assert final["socket_shed"] == 0
    assert second.connections >= 1 and "nobody listens" in stderr


def metrics_address(agent):
    """Where the agent says it serves metrics (it picks a free port for 127.0.0.1:0)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in list(agent.stderr_lines):
            if found := re.search(r"metrics on (http://\S+)", line):
                return found.group(1)
        time.sleep(0.05)
    raise AssertionError("the agent did not say where it serves metrics: " + "".join(agent.stderr_lines))


def test_metrics_endpoint_serves_the_agents_counters(agent_bin):
    with FaultDisk("units=1 read_us=500") as disk:
        agent = TracingAgent(agent_bin, "--metrics-listen", "127.0.0.1:0")
        address = metrics_address(agent)
        timed_direct_reads(disk.device, 200)
        time.sleep(0.7)  # one interval publishes the counters
        with urllib.request.urlopen(address, timeout=10) as response:
            content_type = response.headers["Content-Type"]
            text = response.read().decode()
        agent.stop()

    assert content_type.startswith("text/plain; version=0.0.4")
    values = {}
    for name, host, value in re.findall(r'^(iopipe_agent_\w+_total)\{host="([^"]*)"\} (\d+)$', text, re.M):
        assert f"# TYPE {name} counter" in text and f"# HELP {name} " in text
        assert host == "itest"
        values[name] = int(value)
    assert values["iopipe_agent_ios_completed_total"] >= 200, text
    assert values["iopipe_agent_events_dropped_ringbuf_total"] == 0
    assert "iopipe_agent_stdout_records_total" in values


def resident_kib(pid):
    status = open(f"/proc/{pid}/status").read()
    return int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1))


def test_an_oversized_metrics_request_is_cut_off_and_costs_the_agent_no_memory(agent_bin):
    """A 400 MiB request line once grew an agent by as much: it is read no further than
    its limit, refused, and the next scrape is answered."""
    agent = TracingAgent(agent_bin, "--metrics-listen", "127.0.0.1:0")
    try:
        address = metrics_address(agent)
        host, port = re.match(r"http://([^:/]+):(\d+)/", address).groups()
        before_kib = resident_kib(agent.process.pid)
        sent = 0
        with socket.create_connection((host, int(port)), timeout=10) as conn:
            conn.sendall(b"GET /")
            chunk = b"x" * (1 << 20)
            try:
                while sent < 400 << 20:
                    conn.sendall(chunk)
                    sent += len(chunk)
            except OSError:
                pass  # the agent closed the connection at its limit
        grown_kib = resident_kib(agent.process.pid) - before_kib
        with urllib.request.urlopen(address, timeout=10) as response:
            assert response.status == 200
    finally:
        agent.stop()
    assert sent < 64 << 20, f"the agent took {sent >> 20} MiB of one request"
    assert grown_kib < 8 << 10, f"the agent grew by {grown_kib} KiB"
