"""An agent killed (SIGKILL) and started again with the same --state-file loses nothing
silently: every I/O the kernel completed on a busy disk is in the histograms of one of
the two runs, or reported missing by one of them, and the second run counts apart, as
lost to the restart, the I/Os of the interval the first had not delivered and all those
completed while no agent ran."""
import json
import re
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import jsonschema
import pytest

from iopipe.faultdisk import FaultDisk, timed_direct_reads

from tracing_agent import ATTACHED, RECONCILED_OPS, agent_records

pytestmark = pytest.mark.disks

REPO = Path(__file__).resolve().parent.parent
AGENT_SCHEMA = json.loads((REPO / "schema/records/io.agent.v1.schema.json").read_text())
INTERVAL_MS = 1000
DOWN_S = 3.0


class FileAgent:
    """The real agent with stdout and stderr in files: whatever it wrote is there the moment
    it wrote it, also after a SIGKILL, as a pipe's reader would have it."""

    def __init__(self, agent_bin, directory, name, *args):
        self.out_path = directory / f"{name}.ndjson"
        self.err_path = directory / f"{name}.stderr"
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.process = subprocess.Popen(
                [str(agent_bin), "run", "--interval-ms", str(INTERVAL_MS), "--host", "itest", *args],
                stdout=out, stderr=err)
        deadline = time.monotonic() + 30
        while ATTACHED not in self.stderr():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise AssertionError("agent did not attach: " + self.stderr())
            time.sleep(0.05)

    def stderr(self):
        return self.err_path.read_text()

    def records(self):
        """Its complete lines (a stopped agent may be halfway through one)."""
        text = self.out_path.read_text()
        return agent_records(text[:text.rfind("\n") + 1].splitlines())

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        assert self.process.returncode == 0, self.stderr()
        return self.records()


class SteadyReads:
    """Direct reads of a disk, one at a time, until stopped."""

    def __init__(self, device):
        self.device = device
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while not self.stopped.is_set():
            timed_direct_reads(self.device, 10)

    def stop(self):
        """Returns once the last read has completed."""
        self.stopped.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()


def completions(disk):
    stats = disk.diskstats()
    return stats["reads_completed"] + stats["writes_completed"] + stats["discards_completed"]


def traced(records, disk):
    return sum(r["count"] for r in records
               if r["schema"] == "io.hist.v1" and r["disk"] == disk and r["latency"] == "device" and r["op"] in RECONCILED_OPS)


def reports(records):
    found = [r for r in records if r["schema"] == "io.agent.v1"]
    for report in found:
        jsonschema.validate(report, AGENT_SCHEMA)
    return found


def missing(records, disk):
    """What the run reported missing for the disk in the last report it delivered."""
    found = reports(records)
    return found[-1].get("untraced_by_disk", {}).get(disk, 0) if found else 0


def accounted(state_file, disk):
    """The completions the position in the state file says delivered records account for
    (None before the disk's first traced I/O was delivered)."""
    if not state_file.exists():
        return None
    disks = json.loads(state_file.read_text())["disks"]
    return next((d["accounted_completions"] for d in disks if d["name"] == disk), None)


def kill_mid_interval(agent, state_file, disk, anchor):
    """SIGKILLs the agent halfway through an interval, once its state file holds the position
    of every record it wrote: it is stopped (SIGSTOP) first and let go on when caught
    between writing an interval and recording where it stands, which a kill may also hit
    (the next run then reports that interval missing as well: more, never less)."""
    for _ in range(30):
        time.sleep(INTERVAL_MS / 2000)
        agent.process.send_signal(signal.SIGSTOP)
        records = agent.records()
        if accounted(state_file, disk) == anchor + traced(records, disk) + missing(records, disk):
            agent.process.kill()
            agent.process.wait(timeout=30)
            return agent.records()
        agent.process.send_signal(signal.SIGCONT)
    agent.process.kill()
    raise AssertionError(f"the state file never held the position of what the agent wrote: {state_file.read_text()}")


def metrics_counters(agent):
    address = re.search(r"metrics on (http://\S+)", agent.stderr()).group(1)
    text = urllib.request.urlopen(address, timeout=10).read().decode()
    return {m[1]: int(m[2]) for m in re.finditer(r"^iopipe_agent_(\w+)_total\{[^}]*\} (\d+)$", text, re.M)}


def reports_after(agent, wall_ns, count):
    """Waits for `count` io.agent.v1 reports stamped after `wall_ns`: the last one's
    diskstats reading was taken after it."""
    deadline = time.monotonic() + 30
    while sum(r["ts_ns"] > wall_ns for r in reports(agent.records())) < count:
        assert time.monotonic() < deadline, agent.stderr()
        time.sleep(0.2)


def test_a_killed_agent_restarted_with_its_state_file_loses_nothing_silently(agent_bin, tmp_path):
    state_file = tmp_path / "agent-state.json"
    agents = []
    with FaultDisk("units=1 read_us=2000") as disk:
        try:
            before = completions(disk)
            first = FileAgent(agent_bin, tmp_path, "first", "--state-file", str(state_file))
            agents.append(first)
            workload = SteadyReads(disk.device)
            try:
                first_records = kill_mid_interval(first, state_file, disk.name, before)
                at_kill = completions(disk)
                time.sleep(DOWN_S)  # the reads go on with no agent
                at_restart = completions(disk)
                second = FileAgent(agent_bin, tmp_path, "second", "--state-file", str(state_file),
                                   "--metrics-listen", "127.0.0.1:0")
                agents.append(second)
                attached = completions(disk)
                time.sleep(3 * INTERVAL_MS / 1000)
            finally:
                workload.stop()
            idle_since_ns = time.time_ns()
            after = completions(disk)
            reports_after(second, idle_since_ns, 2)
            scraped = metrics_counters(second)
            second_records = second.stop()
            name = disk.name
        finally:
            for agent in agents:
                if agent.process.poll() is None:
                    agent.process.kill()
                    agent.process.wait(timeout=30)

    assert "does not exist yet" in first.stderr()
    assert "resumed" in second.stderr(), second.stderr()
    first_traced, first_missing = traced(first_records, name), missing(first_records, name)
    second_traced, second_missing = traced(second_records, name), missing(second_records, name)
    accounting = {"kernel": after - before, "first traced": first_traced, "first missing": first_missing,
                  "second traced": second_traced, "second missing": second_missing,
                  "completed while no agent ran": at_restart - at_kill}
    assert first_traced > 0 and second_traced > 0 and at_restart > at_kill, accounting
    assert after - before == first_traced + first_missing + second_traced + second_missing, accounting

    lost = [r.get("lost_restart_by_disk", {}).get(name, 0) for r in reports(second_records)]
    assert len(set(lost)) == 1, f"fixed for the run: {lost}"
    lost = lost[0]
    # At least everything while no agent ran; at most everything after the first run's
    # delivered records up to the second's attaching.
    assert at_restart - at_kill <= lost <= attached - (before + first_traced + first_missing), (lost, accounting)
    assert lost <= second_missing, (lost, accounting)
    final = reports(second_records)[-1]["counters"]
    assert final["ios_lost_restart"] == sum(reports(second_records)[-1]["lost_restart_by_disk"].values())
    assert scraped["ios_lost_restart"] == final["ios_lost_restart"] and final["state_write_errors"] == 0, scraped
    # Stopped cleanly, the second run leaves the position of everything it delivered.
    assert accounted(state_file, name) == after, accounting
