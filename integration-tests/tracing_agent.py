"""The real agent, tracing block I/O, as tests run it: NDJSON on stdout until stopped."""
import json
import signal
import subprocess
import threading
import time

# What the agent prints on stderr once its programs are attached (agent/src/tracer.rs).
ATTACHED = "tracing block I/O"


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
        return [json.loads(line) for line in self.stdout_lines]

    def counters(self):
        """The agent's own counters at exit, from its last io.agent.v1 record."""
        reports = [json.loads(line) for line in self.stdout_lines if '"schema":"io.agent.v1"' in line]
        assert reports, "the agent sent no io.agent.v1 record"
        return reports[-1]["counters"]
