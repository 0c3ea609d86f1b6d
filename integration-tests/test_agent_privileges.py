"""The agent traces with exactly CAP_BPF and CAP_PERFMON as an unprivileged user, and
without them stops with an error that names what is missing and how to run without; once
its programs are attached it holds no capability at all, and it can leave task names and
pids out of its events."""
import shutil
import subprocess
from pathlib import Path

import pytest

from iopipe.faultdisk import FaultDisk, timed_direct_reads
from iopipe.readiness import wait_for

from tracing_agent import ATTACHED, TracingAgent, agent_records

pytestmark = pytest.mark.disks

# What the agent prints on stderr once it has dropped its capabilities (agent/src/main.rs).
DROPPED = "every capability dropped"

NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.fixture
def agent_for_nobody(agent_bin, tmp_path):
    """A copy nobody can execute (the build lives under root's home)."""
    tmp_path.chmod(0o755)
    copy = tmp_path / "iopipe-agent"
    shutil.copy2(agent_bin, copy)
    copy.chmod(0o755)
    return copy


def run_as_nobody(agent, *setpriv_args):
    return subprocess.run(["setpriv", *NOBODY, *setpriv_args, str(agent), "run", "--count", "2", "--interval-ms", "100"],
                          capture_output=True, text=True, timeout=60)


def test_traces_with_only_cap_bpf_and_cap_perfmon(agent_for_nobody):
    run = run_as_nobody(agent_for_nobody, "--inh-caps=+bpf,+perfmon", "--ambient-caps=+bpf,+perfmon")
    assert run.returncode == 0, run.stderr
    assert ATTACHED in run.stderr
    assert any(r["schema"] == "io.diskstats.v1" for r in agent_records(run.stdout.splitlines()))


def test_without_capabilities_says_which_are_needed(agent_for_nobody):
    run = run_as_nobody(agent_for_nobody)
    assert run.returncode == 1
    error = next(line for line in run.stderr.splitlines() if line.startswith("iopipe-agent: error:"))
    assert "CAP_BPF and CAP_PERFMON" in error and "--no-trace" in error, run.stderr


def test_no_trace_needs_no_privileges(agent_for_nobody):
    run = subprocess.run(["setpriv", *NOBODY, str(agent_for_nobody), "run", "--no-trace", "--count", "1"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert any(r["schema"] == "io.diskstats.v1" for r in agent_records(run.stdout.splitlines()))


def capability_sets(pid):
    """{thread id: {CapInh, CapPrm, CapEff, CapAmb}} of every thread of the process."""
    sets = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        lines = (task / "status").read_text().splitlines()
        sets[task.name] = {k: int(v, 16) for k, v in (line.split(":\t") for line in lines)
                           if k in ("CapInh", "CapPrm", "CapEff", "CapAmb")}
    return sets


def test_once_attached_it_holds_no_capability_and_goes_on_tracing(agent_bin):
    """Started as root (every capability), its metrics endpoint's thread running: no
    thread keeps one, and the I/Os after the drop are still traced, every one."""
    with FaultDisk("units=1 read_us=500") as disk:
        agent = TracingAgent(agent_bin, "--metrics-listen", "127.0.0.1:0")
        wait_for("capabilities dropped", lambda: any(DROPPED in line for line in agent.stderr_lines), timeout_s=30)
        sets = capability_sets(agent.process.pid)
        assert len(sets) >= 2 and all(not any(s.values()) for s in sets.values()), sets
        completed_before = disk.diskstats()["reads_completed"]
        timed_direct_reads(disk.device, 200, first_block=0, stride=3)
        completed = disk.diskstats()["reads_completed"] - completed_before
        records = agent.stop()
    traced = sum(h["count"] for h in records if h["schema"] == "io.hist.v1" and h["disk"] == disk.name
                 and h["op"] == "R" and h["latency"] == "device")
    assert traced + agent.reported_missing(disk.name) >= completed >= 200, (traced, completed)


def test_no_comm_leaves_task_names_and_pids_out_of_events(agent_bin):
    with FaultDisk("units=1 read_us=500") as disk:
        agent = TracingAgent(agent_bin, "--no-comm", "--uniform-every", "1")
        timed_direct_reads(disk.device, 50, first_block=0, stride=3)
        records = agent.stop()
    events = [r for r in records if r["schema"] == "io.event.v1" and r["disk"] == disk.name]
    assert len(events) >= 50 and {(e["comm"], e["pid"]) for e in events} == {("", 0)}, events[:3]
