"""The containers the benchmarks start themselves (iopipe/stack.py's start_container),
as they are started: what their command line shows every user of the machine, and what
they may do; and compose's stack and cluster, which must confine theirs alike (the stack
tier checks its running containers, the cluster tier runs compose.cluster.yaml)."""
from pathlib import Path

import pytest
import yaml

from iopipe import stack
from iopipe.paths import INFRA
from iopipe.ports import Ports


def started(monkeypatch, image, users):
    """The `docker run` command line start_container gives, and the environment file it
    names as docker reads it (its text and mode), which is gone once docker has started."""
    seen = {}

    def docker(argv, **_):
        env_file = Path(argv[argv.index("--env-file") + 1])
        seen.update(argv=argv, env_file=env_file, env=env_file.read_text(), mode=env_file.stat().st_mode & 0o777)
    monkeypatch.setattr(stack, "run", docker)
    stack.start_container(image, Ports(), users)
    return seen


def test_passwords_reach_the_container_in_a_file_only_its_user_reads_never_on_its_command_line(monkeypatch):
    users = stack.ClickHouseUsers.generate()
    seen = started(monkeypatch, "iopipe/clickhouse:dev", users)
    command_line = " ".join(seen["argv"])
    for password in (users.admin, users.writer, users.reader):
        assert password not in command_line, "a password on the command line, which `ps` shows"
        assert password in seen["env"]
    assert "-e" not in seen["argv"]
    assert seen["mode"] == 0o600
    assert not seen["env_file"].exists(), "the passwords' file outlives the start"


def test_a_benchmark_container_drops_every_capability_and_gains_none(monkeypatch):
    # (A Kafka node's container would have its certificates made first: ClickHouse's has none.)
    argv = started(monkeypatch, "iopipe/clickhouse:dev", None)["argv"]
    image = argv.index("iopipe/clickhouse:dev")
    options = argv[:image]
    assert [options[i + 1] for i, o in enumerate(options) if o == "--cap-drop"] == list(stack.CAP_DROP) == ["ALL"]
    assert [options[i + 1] for i, o in enumerate(options) if o == "--security-opt"] == list(stack.SECURITY_OPT)


@pytest.mark.parametrize("compose_file", ["compose.yaml", "compose.cluster.yaml"])
def test_every_compose_service_drops_every_capability_and_gains_none(compose_file):
    services = yaml.safe_load((INFRA / compose_file).read_text())["services"]
    for name, service in services.items():
        assert service.get("cap_drop") == list(stack.CAP_DROP), f"{compose_file}: {name}"
        assert service.get("security_opt") == list(stack.SECURITY_OPT), f"{compose_file}: {name}"
