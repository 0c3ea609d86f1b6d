"""The agent traces with exactly CAP_BPF and CAP_PERFMON as an unprivileged user, and
without them stops with an error that names what is missing and how to run without."""
import shutil
import subprocess

import pytest

from tracing_agent import ATTACHED

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
    assert '"schema":"io.diskstats.v1"' in run.stdout


def test_without_capabilities_says_which_are_needed(agent_for_nobody):
    run = run_as_nobody(agent_for_nobody)
    assert run.returncode == 1
    error = next(line for line in run.stderr.splitlines() if line.startswith("iopipe-agent: error:"))
    assert "CAP_BPF and CAP_PERFMON" in error and "--no-trace" in error, run.stderr


def test_no_trace_needs_no_privileges(agent_for_nobody):
    run = subprocess.run(["setpriv", *NOBODY, str(agent_for_nobody), "run", "--no-trace", "--count", "1"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert '"schema":"io.diskstats.v1"' in run.stdout
