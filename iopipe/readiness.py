"""Narrating and waiting, for the stack's tools, the demo and the tests: `say` prints a
progress line, `run` a command that must succeed, `wait_for` polls a probe; the probes of a
container, of ZooKeeper and of ClickHouse, and `http_json` for the services' REST APIs."""
import json
import socket
import subprocess
import time
import urllib.request


def say(message):
    print(f"[iopipe] {message}", flush=True)


def run(cmd, **kwargs):
    return subprocess.run(cmd, check=True, **kwargs)


def wait_for(what, check, timeout_s=180, every_s=1.0):
    """Polls `check` until it returns a truthy value, printing progress while waiting."""
    started = time.monotonic()
    last_note = started
    last_error = None
    while True:
        try:
            result = check()
            if result:
                say(f"{what}: ready after {time.monotonic() - started:.0f} s")
                return result
        except Exception as e:  # noqa: BLE001 - any failure of a probe means "not yet"
            last_error = e
        now = time.monotonic()
        if now - started > timeout_s:
            raise TimeoutError(f"{what} not ready after {timeout_s} s (last error: {last_error})")
        if now - last_note >= 10:
            say(f"waiting for {what} ({now - started:.0f} s)")
            last_note = now
        time.sleep(every_s)


def container_log_contains(container, text):
    logs = subprocess.run(["docker", "logs", container], capture_output=True, text=True)
    return text in logs.stdout or text in logs.stderr


def http_json(url, data=None, method=None, timeout=30):
    body = json.dumps(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read() or b"null")


def zookeeper_answers(ports):
    with socket.create_connection(("127.0.0.1", ports.zookeeper), timeout=5) as s:
        s.sendall(b"ruok")
        return s.recv(4) == b"imok"


def clickhouse_answers(ports):
    with urllib.request.urlopen(f"{ports.clickhouse_url}/ping", timeout=5) as response:
        return response.read().strip() == b"Ok."


def container_alive(container):
    """Raises, with the container's last log lines, when it has exited: waiting longer is pointless."""
    state = subprocess.run(["docker", "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", container],
                           capture_output=True, text=True).stdout.split()
    if state and state[0] in ("exited", "dead"):
        raise SystemExit(f"container {container} exited with code {state[1]}:\n{container_log_tail(container, 20)}")
    return True


def container_log_tail(container, lines):
    logs = subprocess.run(["docker", "logs", "--tail", str(lines), container], capture_output=True, text=True)
    return logs.stdout + logs.stderr
