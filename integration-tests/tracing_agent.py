"""The real agent, tracing block I/O, as tests run it: NDJSON on stdout until stopped, or
straight into Kafka."""
import json
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from iopipe.record_batches import unfold
from iopipe.stack_kafka import agent_access

# What the agent prints on stderr once its programs are attached (agent/src/tracer.rs).
ATTACHED = "tracing block I/O"
# Ops whose completions /proc/diskstats counts with reads, writes and discards (flushes
# are reconciled by other rules: agent/src/reconcile.rs).
RECONCILED_OPS = {"R", "W", "D"}


def agent_records(lines):
    """The records of the agent's NDJSON lines, each batch unfolded into the records it
    carries (iopipe/record_batches.py): what a test counts is the same either way."""
    return [part for line in lines if line.strip() for part in unfold(json.loads(line))]


class TracingAgent:
    def __init__(self, agent_bin, *args, interval_ms=300):
        self.process = subprocess.Popen(
            [str(agent_bin), "run", "--interval-ms", str(interval_ms), "--host", "itest", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.stderr_lines = []
        self.stdout_lines = []
        self.attached = threading.Event()
        # Both pipes are drained as the agent writes: a full pipe would stall it.
        self.readers = [threading.Thread(target=self._read_stderr, daemon=True),
                        threading.Thread(target=self._read_stdout, daemon=True)]
        for reader in self.readers:
            reader.start()
        if not self.attached.wait(timeout=30):
            self.process.kill()
            raise AssertionError("agent did not attach: " + "".join(self.stderr_lines))

    def _read_stderr(self):
        for line in self.process.stderr:
            self.stderr_lines.append(line)
            if ATTACHED in line:
                self.attached.set()

    def _read_stdout(self):
        for line in self.process.stdout:
            self.stdout_lines.append(line)

    def stop(self):
        """Stops the agent (its last interval is flushed on SIGTERM) and returns its records."""
        time.sleep(0.7)  # let the interval holding the last completions end
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        for reader in self.readers:
            reader.join(timeout=10)
        assert self.process.returncode == 0, "".join(self.stderr_lines)
        return agent_records(self.stdout_lines)

    def last_report(self):
        """The agent's last io.agent.v1 record: what it says of itself at exit."""
        reports = [json.loads(line) for line in self.stdout_lines if '"schema":"io.agent.v1"' in line]
        assert reports, "the agent sent no io.agent.v1 record"
        return reports[-1]

    def counters(self):
        """The agent's own counters at exit."""
        return self.last_report()["counters"]

    def reported_missing(self, disk):
        """The disk's completions the kernel counted and the agent's histograms do not
        hold, as its last report says (agent/src/reconcile.rs)."""
        return self.last_report().get("untraced_by_disk", {}).get(disk, 0)

    def assert_counted_or_reported_missing(self, disk, counted, completed):
        """Every completion is in the histograms or reported missing, never both. The
        kernel now and then skips a completion's program (1 in 8,000 to 40,000 under load
        on Linux 6.18): a test's I/Os may lose one, not one in a hundred."""
        missing = self.reported_missing(disk)
        assert counted + missing == completed, {"counted": counted, "missing": missing, "kernel": completed,
                                                **{k: v for k, v in self.counters().items() if v}}
        assert missing <= max(1, completed // 100), {"counted": counted, "missing": missing, "kernel": completed}


class KafkaTracingAgent:
    """The real agent tracing into Kafka under a host name of its own, as a host runs it;
    what it says on stderr is kept in a file (it says much while Kafka is away)."""

    def __init__(self, agent_bin, brokers, host, *args, attach_timeout_s=60):
        self.host = host
        self.log = tempfile.NamedTemporaryFile("w+", prefix="iopipe-agent-", suffix=".log")
        self.process = subprocess.Popen(
            [str(agent_bin), "run", "--output", "kafka", "--brokers", brokers, "--host", host,
             *agent_access(brokers, host).args(), *args],
            stderr=self.log, text=True)
        # Counts checked against the kernel's must start after the agent traces: it counts
        # missing completions from its start.
        deadline = time.monotonic() + attach_timeout_s
        while ATTACHED not in self.said():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise AssertionError(f"the agent did not attach (exit {self.process.poll()}): {self.said()}")
            time.sleep(0.2)

    def said(self):
        return Path(self.log.name).read_text()

    def stop(self, check=True):
        """Stops the agent (it sends its last interval and waits for Kafka to take what it
        holds) and returns what it said; with `check`, it must have exited cleanly."""
        if self.process.poll() is None:
            self.process.terminate()
            # It waits until every record it holds is delivered or past its delivery timeout
            # (300 s, agent/src/output.rs), and a little longer for librdkafka to say so.
            self.process.wait(timeout=360)
        said = self.said()
        assert not check or self.process.returncode == 0, said
        return said
