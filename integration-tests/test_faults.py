"""Faults on the cluster (`make cluster-up`: Kafka x3, ZooKeeper, Flink with a standby
JobManager and 2 TaskManagers, ClickHouse x2), each while a dusty disk's records flow: a
TaskManager or the leading JobManager killed mid-window, one or all Kafka nodes away, one
or both ClickHouse replicas stopped. After each, the disk was judged once (one anomaly,
one ticket) and every I/O its histograms counted is in exactly one of its windows, each
window the same however often it was emitted, and stored once in ClickHouse, on each
replica and through the Distributed tables."""
import os
import random
import subprocess
import time
import uuid
from collections import defaultdict

import pytest

import scenarios
import stack
from kafka_records import TOPICS, consume_host, produce

SECONDS = 150
WINDOW_S = 10
# Windows ending by then have closed once the last records are in: the disk's clock
# reaches its newest record less the job's allowed disorder.
COMPARED_UNTIL_S = SECONDS - WINDOW_S


@pytest.fixture(scope="module")
def cluster():
    cluster = stack.Cluster.fresh(f"iopipe-faults-{uuid.uuid4().hex[:8]}")
    try:
        yield stack.cluster_up(cluster)
    finally:
        stack.cluster_down(cluster)


class DustyDisk:
    """A failing disk's agent records, sent to the cluster part by part."""

    def __init__(self, cluster, name):
        self.cluster = cluster
        self.host = f"{name}-{uuid.uuid4().hex[:8]}"
        self.records = sorted(scenarios.dusty_disk(random.Random(11), self.host, "sdb", SECONDS), key=scenarios.time_of)
        self.sent = 0

    def send_until(self, seconds, wait=True):
        """Produces the records up to `seconds` into the scenario; without `wait`, returns
        the producer still holding them."""
        until_ns = scenarios.START_NS + seconds * scenarios.SECOND_NS
        upto = next((i for i, r in enumerate(self.records) if scenarios.time_of(r) >= until_ns), len(self.records))
        producer = produce(self.cluster.ports.brokers, self.records[self.sent:upto], wait=wait)
        self.sent = upto
        return producer

    def read(self, record):
        return consume_host(self.cluster.ports.brokers, TOPICS[record], self.host)

    def wait_for_ticket(self):
        return stack.wait_for(f"{self.host}'s ticket", timeout_s=180, check=lambda: [
            r for r in self.read("io.health.v1") if r.get("ticket", {}).get("action") == "open"])

    def closed_windows(self, until_ns):
        """window start -> the read counts of every copy emitted of each 10 s window ending by `until_ns`."""
        copies = defaultdict(set)
        for w in self.read("io.window.v1"):
            if w["window_s"] == WINDOW_S and "R" in w.get("latency", {}) and w["window_end_ns"] <= until_ns:
                copies[w["window_start_ns"]].add(w["latency"]["R"]["count"])
        return copies

    def windows_holding(self, reads, until_ns):
        """The closed windows once they hold at least `reads` reads, else None."""
        closed = self.closed_windows(until_ns)
        return closed if sum(min(counts) for counts in closed.values()) >= reads else None

    def reads_sent_until(self, seconds):
        until_ns = scenarios.START_NS + seconds * scenarios.SECOND_NS
        return sum(r["count"] for r in self.records if r["schema"] == "io.hist.v1" and r["op"] == "R"
                   and r["latency"] == "device" and r["end_ns"] <= until_ns)

    def assert_judged_once_and_counted_exactly(self):
        self.send_until(SECONDS)
        until_ns = scenarios.START_NS + COMPARED_UNTIL_S * scenarios.SECOND_NS
        expected = self.reads_sent_until(COMPARED_UNTIL_S)
        compared = stack.wait_for(f"{self.host}'s windows", timeout_s=180,
                                  check=lambda: self.windows_holding(expected, until_ns))
        assert all(len(counts) == 1 for counts in compared.values()), f"a window emitted twice differs: {compared}"
        counted = sum(next(iter(counts)) for counts in compared.values())
        print(f"\n{self.host}: reads in histograms {expected}, in its {len(compared)} windows {counted}")
        assert counted == expected
        tickets = {(r["ticket"]["action"], r["ticket"]["ticket_id"], r["id"])
                   for r in self.read("io.health.v1") if "ticket" in r}
        assert len({record_id for action, _, record_id in tickets if action == "open"}) == 1, tickets
        assert len({ticket for _, ticket, _ in tickets}) == 1, tickets
        anomalies = {r["id"] for r in self.read("io.anomaly.v1")}
        assert len(anomalies) == 1, anomalies
        self.assert_stored_once()

    def assert_stored_once(self):
        """Each ClickHouse replica holds every read of the disk's histograms once, in the raw
        table and in the job's rollups of a minute, an hour and a day, and so do the
        Distributed tables over them. The rollups come once the job has closed the disk's
        last windows, a minute after the disk fell silent."""
        sent = self.reads_sent_until(SECONDS + 1)
        where = f"host = '{self.host}' AND op = 'R' AND latency = 'device'"
        tables = ("histograms", *stack.LATENCY_ROLLUPS)
        observed = {}

        def stored():
            for replica in stack.CLICKHOUSE_REPLICAS:
                reader = self.cluster.users.client(self.cluster.ports.of_clickhouse_replica(replica), "reader")
                for db in ("iopipe", "iopipe_all"):
                    observed[replica, db] = tuple(
                        int(reader.rows(f"SELECT sum(count) FROM {db}.{table} FINAL WHERE {where}")[0][0]) for table in tables)
            return observed
        try:
            stack.wait_for(f"{self.host}'s reads in ClickHouse", timeout_s=240,
                           check=lambda: all(counts == (sent,) * len(tables) for counts in stored().values()))
        except TimeoutError:
            raise AssertionError(f"sent {sent}; {tables} by (replica, database): {observed}") from None


def crash(container):
    """SIGKILL to the container's process, as a crash: its restart policy brings it back."""
    pid = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", container],
                         capture_output=True, text=True, check=True).stdout.strip()
    os.kill(int(pid), 9)


def restarts(container):
    return int(subprocess.run(["docker", "inspect", "-f", "{{.RestartCount}}", container],
                              capture_output=True, text=True, check=True).stdout)


def leading_jobmanager(cluster):
    """1 or 2: the JobManager whose dispatcher was granted leadership since it last started
    (either one's REST endpoint answers for the leader, so ask their logs)."""
    leaders = [jobmanager for jobmanager in (1, 2)
               if "DefaultDispatcherRunner was granted leadership" in logs_since_start(cluster.container(f"flink-jobmanager-{jobmanager}"))]
    assert len(leaders) == 1, f"JobManagers that say they lead: {leaders}"
    return leaders[0]


def logs_since_start(container):
    started = subprocess.run(["docker", "inspect", "-f", "{{.State.StartedAt}}", container],
                             capture_output=True, text=True, check=True).stdout.strip()
    logs = subprocess.run(["docker", "logs", "--since", started, container], capture_output=True, text=True)
    return logs.stdout + logs.stderr


def job_running_on(ports):
    job_id = stack.running_job(ports)
    return job_id and stack._job_running(ports, job_id) and job_id


def taskmanager_running(cluster, job_id):
    """The container of a TaskManager that runs tasks of the job (the job may use one only)."""
    url = cluster.ports.flink_url
    vertex = stack.http_json(f"{url}/jobs/{job_id}")["vertices"][0]["id"]
    ids = {tm["taskmanager-id"] for tm in stack.http_json(f"{url}/jobs/{job_id}/vertices/{vertex}/taskmanagers")["taskmanagers"]}
    for taskmanager in ("flink-taskmanager-1", "flink-taskmanager-2"):
        container = cluster.container(taskmanager)
        if any(f"Starting TaskManager with ResourceID: {tm_id}" in logs_since_start(container) for tm_id in ids):
            return container
    raise AssertionError(f"no TaskManager container says it is {ids}")


def failures(ports, job_id):
    """How many failures of the job its JobManager has recorded."""
    return len(stack.http_json(f"{ports.flink_url}/jobs/{job_id}/exceptions")["exceptionHistory"]["entries"])


def test_a_taskmanager_killed_mid_window_loses_nothing(cluster):
    disk = DustyDisk(cluster, "tm-killed")
    disk.send_until(70)
    disk.wait_for_ticket()
    disk.send_until(95)  # the disk's open windows now hold records not yet checkpointed
    job_id = stack.running_job(cluster.ports)
    taskmanager = taskmanager_running(cluster, job_id)
    restarted_before, failed_before = restarts(taskmanager), failures(cluster.ports, job_id)
    crash(taskmanager)
    stack.wait_for("the TaskManager restarted", lambda: restarts(taskmanager) > restarted_before)
    stack.wait_for("the job failed over and running again", timeout_s=240, check=lambda: (
        failures(cluster.ports, job_id) > failed_before and job_running_on(cluster.ports) == job_id))
    disk.assert_judged_once_and_counted_exactly()


def test_the_leading_jobmanager_killed_hands_the_job_to_the_standby(cluster):
    disk = DustyDisk(cluster, "jm-killed")
    disk.send_until(70)
    disk.wait_for_ticket()
    leader = leading_jobmanager(cluster)
    job_id = stack.running_job(cluster.ports.with_flink_rest_of(leader))
    disk.send_until(95)
    crash(cluster.container(f"flink-jobmanager-{leader}"))
    standby = cluster.ports.with_flink_rest_of(3 - leader)
    stack.wait_for("the standby running the job", lambda: job_running_on(standby) == job_id, timeout_s=240)
    disk.assert_judged_once_and_counted_exactly()


def test_a_kafka_node_away_for_a_minute_loses_nothing(cluster):
    disk = DustyDisk(cluster, "kafka-away")
    disk.send_until(60)
    broker = cluster.container("kafka-2")
    subprocess.run(["docker", "stop", broker], check=True, capture_output=True)
    try:
        away_since = time.monotonic()
        disk.send_until(100)  # acks=all: two of three copies are enough for min.insync.replicas 2
        disk.wait_for_ticket()
        time.sleep(max(0.0, 60 - (time.monotonic() - away_since)))
    finally:
        subprocess.run(["docker", "start", broker], check=True, capture_output=True)
    stack.wait_for("kafka-2 back", lambda: "iopipe: topics ready" in logs_since_start(broker))
    disk.assert_judged_once_and_counted_exactly()


def test_every_kafka_node_away_for_a_minute_loses_nothing(cluster):
    """The records produced meanwhile wait in their producer; when the nodes are back the
    job reads the backlog of three topics, each at its own pace, and still windows every
    I/O once (a disk heard again after a silence waits for each kind of its records)."""
    disk = DustyDisk(cluster, "kafka-down")
    disk.send_until(60)
    disk.wait_for_ticket()
    brokers = [cluster.container(f"kafka-{node}") for node in (1, 2, 3)]
    subprocess.run(["docker", "stop", *brokers], check=True, capture_output=True)
    try:
        waiting = disk.send_until(100, wait=False)
        time.sleep(60)
    finally:
        subprocess.run(["docker", "start", *brokers], check=True, capture_output=True)
    for broker in brokers:
        stack.wait_for(f"{broker} back", lambda b=broker: "iopipe: topics ready" in logs_since_start(b))
    assert waiting.flush(120) == 0, "every record produced while Kafka was away is delivered once it is back"
    disk.assert_judged_once_and_counted_exactly()


def test_clickhouse_replicas_stopped_lose_nothing(cluster):
    """One replica stopped for 2 minutes: the other's Kafka tables take over its share of
    the topics' partitions, and it fetches what it missed when it is back. Then both for 2
    minutes: the records wait in Kafka, read from the offsets the replicas committed."""
    disk = DustyDisk(cluster, "clickhouse-away")
    disk.send_until(40)
    replicas = [cluster.container(f"clickhouse-{replica}") for replica in stack.CLICKHOUSE_REPLICAS]
    for stopped, sent_until in ((replicas[:1], 80), (replicas, 120)):
        subprocess.run(["docker", "stop", *stopped], check=True, capture_output=True)
        try:
            away_since = time.monotonic()
            disk.send_until(sent_until)
            time.sleep(max(0.0, 120 - (time.monotonic() - away_since)))
        finally:
            subprocess.run(["docker", "start", *stopped], check=True, capture_output=True)
        for replica in stack.CLICKHOUSE_REPLICAS:
            stack.wait_for(f"ClickHouse replica {replica}", lambda r=replica: stack.clickhouse_answers(
                cluster.ports.of_clickhouse_replica(r)))
    disk.assert_judged_once_and_counted_exactly()
