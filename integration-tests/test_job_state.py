"""The live job's state outlives a run of the job: kept in RocksDB, checkpointed
incrementally to the directory the Flink processes share and retained when the job is
cancelled, it restores into a new run, so a disk already failing keeps its one ticket
and its anomaly's episode instead of being judged anew from its next records. On the
fault cluster, after the faults: each test runs a job of its own there."""
import os
import random
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from iopipe.contract import BASE_WINDOW_S
from iopipe.flink_rest import JOB_JAR, cancel_job, checkpoint_after, running_job, submit_live_job, upgrade_job
from iopipe.paths import REPO
from iopipe.readiness import http_json, say, wait_for
from iopipe.stack_kafka import kafka_topic_command
from iopipe.synthetic import scenarios

from kafka_records import TOPICS, consume_host, produce

pytestmark = pytest.mark.cluster

SECONDS = 150
# The dusty disk has its ticket well before this; the rest of its records reach the job
# only after it was cancelled and restored.
RESTORE_AFTER_S = 70
WINDOW_S = BASE_WINDOW_S
# The build whose savepoint the upgrade test restores into this one: the first that connects
# to a Kafka with TLS and SASL (--kafka-config), as the stack's now is; a site secures its
# Kafka only once it runs such a build. Move it on when a release ships, or when the state
# changes again.
PREVIOUS_BUILD = "0c4dc92"
CACHE = Path(os.environ.get("IOPIPE_CACHE", Path.home() / ".cache" / "iopipe"))


@pytest.fixture(scope="module")
def previous_build_jar():
    """The live job's jar as PREVIOUS_BUILD made it: built once from that commit (a git
    worktree, Maven), cached by commit."""
    jar = CACHE / "previous-builds" / f"iopipe-stream-jobs-{PREVIOUS_BUILD}.jar"
    if jar.exists():
        return jar
    say(f"building the live job as commit {PREVIOUS_BUILD} made it, for the upgrade test (about 2 minutes; "
        f"kept in {jar.parent})")
    if subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{PREVIOUS_BUILD}^{{commit}}"]).returncode:
        pytest.fail(f"commit {PREVIOUS_BUILD} is not in this clone: fetch the history (`git fetch --unshallow`)")
    with tempfile.TemporaryDirectory(prefix="iopipe-previous-") as scratch:
        tree = Path(scratch) / "tree"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), PREVIOUS_BUILD],
                       check=True, capture_output=True)
        try:
            subprocess.run(["mvn", "-B", "-q", "-Dstyle.color=never", "package", "-DskipTests"],
                           cwd=tree / "stream-jobs", check=True)
            jar.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(tree / "stream-jobs" / "target" / JOB_JAR.name, jar)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False)
    return jar


@pytest.fixture(scope="module")
def kafka_and_flink(cluster):
    """The cluster's Kafka and Flink, the job it was started with cancelled: a second job on
    the same topics would judge each test's disk again, with tickets of its own."""
    job = running_job(cluster.ports)
    if job:
        cancel_job(cluster.ports, job)
    yield cluster.ports, cluster.container("kafka-1")


def kafka_topics(container):
    return set(kafka_topic_command(container, "--list").split())


def delete_topic(container, topic):
    kafka_topic_command(container, "--delete", "--topic", topic)
    wait_for(f"{topic} deleted", lambda: topic not in kafka_topics(container))


def ticket_actions(brokers, host):
    """(action, ticket id, record id) of every health record of `host` that touches a ticket."""
    return [(r["ticket"]["action"], r["ticket"]["ticket_id"], r["id"])
            for r in consume_host(brokers, TOPICS["io.health.v1"], host) if "ticket" in r]


def test_checkpoints_go_to_rocksdb_and_the_shared_directory_and_outlive_a_cancel(kafka_and_flink):
    ports, _ = kafka_and_flink
    job = submit_live_job(ports)
    try:
        config = http_json(f"{ports.flink_url}/jobs/{job}/checkpoints/config")
        assert config["state_backend"] == "EmbeddedRocksDBStateBackend", config
        assert config["checkpoint_storage"] == "FileSystemCheckpointStorage", config
        assert config["externalization"] == {"enabled": True, "delete_on_cancellation": False}, config
        path = checkpoint_after(ports, job)
        assert path.startswith("file:/var/lib/iopipe/flink/checkpoints/"), path
    finally:
        cancel_job(ports, job)


@pytest.mark.parametrize("carried_by", ["checkpoint", "savepoint", "savepoint of the previous build"])
def test_a_job_restored_keeps_a_failing_disks_one_ticket(kafka_and_flink, carried_by, request):
    """By the checkpoint a cancelled job left, or by `make upgrade-job`: the topics the build
    writes to that Kafka lacks created (as on a Kafka started with an older topics.json), a
    savepoint, the jar uploaded anew and run from it; or by `make upgrade-job` from a job
    PREVIOUS_BUILD runs, whose state this build's must read."""
    ports, kafka = kafka_and_flink
    first_jar = request.getfixturevalue("previous_build_jar") if carried_by.endswith("previous build") else JOB_JAR
    host = f"restore-{carried_by.split()[-1]}-{uuid.uuid4().hex[:8]}"
    records = sorted(scenarios.dusty_disk(random.Random(3), host, "sdb", SECONDS), key=scenarios.time_of)
    restore_at_ns = scenarios.START_NS + RESTORE_AFTER_S * scenarios.SECOND_NS
    first_run = [r for r in records if scenarios.time_of(r) < restore_at_ns]
    second_run = [r for r in records if scenarios.time_of(r) >= restore_at_ns]

    job = submit_live_job(ports, jar=first_jar)
    produce(ports.brokers, first_run)
    opened = wait_for("the failing disk's ticket", timeout_s=120,
                      check=lambda: ticket_actions(ports.brokers, host))
    assert [action for action, _, _ in opened] == ["open"], opened
    if carried_by == "checkpoint":
        carrier = checkpoint_after(ports, job)
        cancel_job(ports, job)
        restored = submit_live_job(ports, restore_from=carrier)
    else:
        # A topic the job neither reads nor writes, so that the running job is not disturbed.
        missing = TOPICS["io.agent.v1"]
        delete_topic(kafka, missing)
        restored = upgrade_job(ports, kafka_container=kafka)
        assert missing in kafka_topics(kafka), "upgrade-job creates the topics Kafka lacks"
    try:
        counts = http_json(f"{ports.flink_url}/jobs/{restored}/checkpoints")
        restored_from = counts["latest"]["restored"]["external_path"]
        assert counts["counts"]["restored"] == 1, counts
        # (Flink's is_savepoint is true for any path a job is started from, so ask the path.)
        if carried_by == "checkpoint":
            assert restored_from == carrier, counts
        else:
            assert "/savepoint-" in restored_from, counts
        produce(ports.brokers, second_run)
        last_window_end = scenarios.START_NS + (SECONDS - WINDOW_S) * scenarios.SECOND_NS
        wait_for("the second run's windows", timeout_s=120, check=lambda: any(
            w["window_s"] == WINDOW_S and w["window_end_ns"] >= last_window_end
            for w in consume_host(ports.brokers, TOPICS["io.window.v1"], host)))
    finally:
        cancel_job(ports, restored)

    # A job that lost the disk's state would have judged the second run's failing windows
    # anew: a second anomaly episode and a second ticket opened.
    actions = ticket_actions(ports.brokers, host)
    opens = {record_id for action, _, record_id in actions if action == "open"}
    assert len(opens) == 1 and {ticket for _, ticket, _ in actions} == {opened[0][1]}, actions
    anomalies = {r["id"] for r in consume_host(ports.brokers, TOPICS["io.anomaly.v1"], host)}
    assert len(anomalies) == 1, anomalies
