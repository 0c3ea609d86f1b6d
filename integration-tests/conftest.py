"""Fixtures for the integration tests: the real stack in containers, the real agent.

The containers are the images `make images` builds (the same ones `make demo` runs),
started through testcontainers on free ports with host networking, so a test stack
never collides with a running demo.
"""
import os
import shutil
import subprocess
import tomllib
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

# Only locally built images exist here: no Ryuk reaper (it would be pulled from a registry).
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
os.environ.setdefault("TESTCONTAINERS_CONNECTION_MODE", "docker_host")

from testcontainers.core.container import DockerContainer

from iopipe import stack
from iopipe import tickets as tickets_local
from iopipe.kafka_access import MOUNT as KAFKA_MOUNT
from iopipe.migrate import ClickHouseHttp
from iopipe.paths import REPO
from iopipe.ports import Ports
from iopipe.stack_kafka import kafka_access, prepare_kafka_access

SERVICES = {  # service -> (image, command)
    "kafka": ("iopipe/kafka:dev", None),
    "clickhouse": ("iopipe/clickhouse:dev", None),
    "flink-jobmanager": ("iopipe/flink:dev", "jobmanager"),
    "flink-taskmanager": ("iopipe/flink:dev", "taskmanager"),
}


@dataclass
class RunningPipeline:
    ports: Ports
    job_id: str
    users: stack.ClickHouseUsers
    clickhouse: ClickHouseHttp  # the writer: fixtures insert rows
    reader: ClickHouseHttp  # what Grafana and analysts use
    containers: dict  # service -> container name


@pytest.fixture(scope="session")
def agent_bin():
    path = Path(os.environ.get("IOPIPE_AGENT_BIN", REPO / "agent/target/release/iopipe-agent"))
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make agent` (or `make test`, which builds it)")
    return path


FLINK_STATE = "/var/lib/iopipe/flink"  # where start-flink.sh keeps checkpoints and savepoints


@contextmanager
def services(names, env=None, flink=True):
    """The named services on free ports, ready (Flink's slots not waited for unless
    `flink`), with fresh ClickHouse users (and the further environment `env`), and the
    name of each one's container; stopped after. Kafka gets a new CA, certificates and principals,
    and each service its own directory of them. The Flink processes share a volume for
    checkpoints, as the stack's: a Docker volume, which takes its owner (the image's
    unprivileged flink user) from the image's directory."""
    ports = Ports.free()
    users = stack.ClickHouseUsers.generate()
    suffix = uuid.uuid4().hex[:8]
    flink_state = f"iopipe-test-flink-state-{suffix}"
    kafka_dirs = prepare_kafka_access(ports, f"iopipe-test-kafka-{suffix}").mounts()
    started = {}
    try:
        for service in names:
            image, command = SERVICES[service]
            container = DockerContainer(image).with_name(f"iopipe-test-{service}-{suffix}").with_kwargs(
                network_mode="host", cap_drop=list(stack.CAP_DROP), security_opt=list(stack.SECURITY_OPT))
            container.with_volume_mapping(str(kafka_dirs[service.split("-")[0]]), KAFKA_MOUNT, "ro")
            for key, value in {**ports.env(), **users.env(), **(env or {})}.items():
                container.with_env(key, value)
            if command:
                container.with_command(command)
            if service.startswith("flink-"):
                container.with_volume_mapping(flink_state, FLINK_STATE, "rw")
            container.start()
            started[service] = container
        containers = {s: c.get_wrapped_container().name for s, c in started.items()}
        stack.wait_until_ready(ports, containers, flink)
        yield ports, users, containers
    finally:
        for container in started.values():
            container.stop()
        subprocess.run(["docker", "volume", "rm", "-f", flink_state], capture_output=True)
        shutil.rmtree(kafka_access(ports.brokers).root, ignore_errors=True)


# A disk steps its health down after 30 s of quiet (three of the job's first windows that
# say nothing of it) rather than five minutes, so a failing disk's ticket resolves within a
# test (two steps: failing, suspect, healthy). In the seeds end to end, S1's ticket fires for
# about 90 s and is resolved within about 90 s of S1's workload ending, while S6 plays or soon after.
HEALTH_RECOVERY = "PT30S"
# How long the job waits on a silent disk before closing its windows: half the default, so
# a test's last windows close sooner once its records end. A test's records that come
# after a longer silence are late ones: the job revises the windows it closed with them.
DISK_IDLENESS = "PT30S"


# The tiers: the markers pyproject.toml declares (pytest's own config adds its plugins' markers).
TIER_MARKERS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]


def pytest_collection_modifyitems(config, items):
    """Every test is in exactly one tier (`pytestmark` of its module; the tiers are the
    markers pyproject.toml declares). The modules that use the session's pipeline run last,
    each whole and in its order: the stack then stands idle through none of the others,
    which have the machine's two cores to themselves. Tests marked after_the_rest run last of all."""
    tiers = [line.split(":")[0] for line in TIER_MARKERS]
    untiered = {item.nodeid: [m.name for m in item.iter_markers() if m.name in tiers] for item in items}
    untiered = {test: marked for test, marked in untiered.items() if len(marked) != 1}
    if untiered:
        raise pytest.UsageError("each integration test needs exactly one tier marker (pytestmark = pytest.mark.<tier>, "
                                f"one of {', '.join(tiers)}): {untiered}")
    using_pipeline = {item.module.__name__ for item in items if "pipeline" in item.fixturenames}
    items.sort(key=lambda item: (item.module.__name__ in using_pipeline, item.get_closest_marker(AFTER_THE_REST) is not None))


# Tests that wait on something slow to come (a silent disk's last windows) and whose wait
# the rest of their tier covers: they run after every other test of it.
AFTER_THE_REST = "after_the_rest"


def pytest_configure(config):
    config.addinivalue_line("markers", f"{AFTER_THE_REST}: runs after the rest of its tier, whose tests cover its wait")


@pytest.fixture(scope="session", autouse=True)
def starting_pipeline(request):
    """If any of the session's tests use the pipeline, it starts with the session, in the
    background: the tests that do not use it, which run first, run meanwhile. Once it is
    up, the bodies of the selected tests that take `running_beside` start on it, each in a
    thread of its own (see `running_beside`). A future of (pipeline, {body: future})."""
    items = request.session.items
    if not any("pipeline" in item.fixturenames for item in items):
        yield None
        return
    bodies = {beside_body(item) for item in items if "running_beside" in item.fixturenames}
    with ExitStack() as cleanup, ThreadPoolExecutor(1 + len(bodies), thread_name_prefix="pipeline") as pool:
        def start():
            pipeline = start_pipeline(cleanup)
            return pipeline, {body: pool.submit(body, pipeline) for body in bodies}
        yield pool.submit(start)
        # Leaving the pool waits for every body before the pipeline stops.


def start_pipeline(cleanup):
    ports, users, containers = cleanup.enter_context(services(SERVICES, flink=False))  # its slots, while migrating
    job_id = stack.migrate_and_submit(ports, users, job_args=("--health-recovery", HEALTH_RECOVERY, "--disk-idleness", DISK_IDLENESS),
                                      taskmanagers=stack.taskmanagers_of(SERVICES))
    return RunningPipeline(ports, job_id, users, users.client(ports, "writer"), users.client(ports, "reader"), containers)


def beside_body(item):
    """The body a test that takes `running_beside` awaits: its module's function named as the test without `test_`."""
    name = item.originalname.removeprefix("test_")
    if not callable(getattr(item.module, name, None)):
        raise pytest.UsageError(f"{item.nodeid} takes running_beside: its module needs a function {name}(pipeline)")
    return getattr(item.module, name)


@pytest.fixture(scope="session")
def pipeline(starting_pipeline):
    return starting_pipeline.result()[0]


@pytest.fixture(scope="session")
def running_beside(starting_pipeline):
    """Tests whose time is mostly waiting on clocks (a server's DDL, the job's idleness)
    take this: their bodies, functions of the pipeline named as the test without `test_`,
    start as soon as the pipeline is up and run beside the tier's other tests; the test
    takes the outcome, {body: future}[body].result()."""
    return starting_pipeline.result()[1]


@pytest.fixture(scope="session")
def tickets(pipeline):
    """Alertmanager with the shipped routes and templates, every receiver a webhook of the
    test's own (`receiver`), and the ticket bridge reading the pipeline's ClickHouse."""
    receiver = tickets_local.Receiver()
    try:
        with tickets_local.LocalTickets(pipeline.ports.clickhouse_url, pipeline.users.bridge, receiver.url) as local:
            local.receiver = receiver
            yield local
    finally:
        receiver.close()


@pytest.fixture(scope="session")
def cluster():
    """The cluster of `make cluster-up` (ZooKeeper, Kafka x3, Flink with a standby JobManager
    and 2 TaskManagers, ClickHouse x2) under a name of its own, the live job running at
    DISK_IDLENESS: the fault tests' first, then the job state tests'."""
    cluster = stack.Cluster.fresh(f"iopipe-cluster-{uuid.uuid4().hex[:8]}")
    try:
        yield stack.cluster_up(cluster, job_args=("--disk-idleness", DISK_IDLENESS))
    finally:
        stack.cluster_down(cluster)
