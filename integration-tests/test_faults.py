"""Faults on the cluster (`make cluster-up`: Kafka x3, ZooKeeper, Flink with a standby
JobManager and 2 TaskManagers, ClickHouse x2), each while S1's dusty disk (a fault disk
whose dd reads turn to 60-560 ms) is read and traced by the real agent into the
cluster's Kafka: a TaskManager or the leading JobManager killed mid-window, one or all
Kafka nodes away, one or both ClickHouse replicas stopped.

After each, the I/Os are accounted for exactly: the kernel's diskstats = the agent's
histograms + what it reported missing; every read of the histograms is in exactly one
10 s window (its last copy, which holds the most: a window closed on silence is sent
again with what came late) and stored once in ClickHouse, in the raw table and each
latency rollup, on each replica and through the Distributed tables; the disk was judged as S1 is, once (one anomaly per severity, one
ticket). The accounting of every fault is printed and written to $IOPIPE_CACHE/faults.md
(figures: FAULTS.md).

Each fault has a disk and a host of its own: the accounting is per host, and every host's
must hold whatever else the cluster goes through meanwhile, so the faults strike at once
but for those that wait for another's recovery (WAITS_FOR)."""
import dataclasses
import json
import os
import re
import subprocess
import threading
import time
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

from iopipe import stack
from iopipe.contract import BASE_WINDOW_S, LATENCY_ROLLUPS
from iopipe.faultdisk.seeds import SCENARIOS, Run, scenario_disk
from iopipe.flink_rest import _job_running, running_job
from iopipe.readiness import clickhouse_answers, http_json, say, wait_for

from kafka_records import (ACCEPTED_TOPICS, TOPICS, consume_agent_records, consume_host, dead_letters_naming,
                           partitions_short_of_copies)
from tracing_agent import RECONCILED_OPS, KafkaTracingAgent

pytestmark = pytest.mark.cluster

SECONDS = 80
WINDOW_S = BASE_WINDOW_S
# S1 for as long as a fault test runs: healthy 4 ms reads, failing from 15 s in.
DUSTY = dataclasses.replace(SCENARIOS["S1"], seconds=SECONDS)
# A fault that holds the disk's records up for longer than the job's DISK_IDLENESS (every
# Kafka node away; the standby JobManager taking the job, about 45 s here) has the job
# close windows on silence, and revise them with the records that come after.
FIGURES = Path(os.environ.get("IOPIPE_CACHE", Path.home() / ".cache" / "iopipe")) / "faults.md"
COLUMNS = ("I/Os: kernel diskstats = agent histograms (+ reported missing)",
           "reads: histograms = in 10 s windows = stored on each replica and in iopipe_all (raw, 1 min, 1 h, 1 d)",
           "verdicts", "s from the last I/O to all stored")
ACCOUNTED = {}  # fault -> its accounting, for the figures


@contextmanager
def traced_dusty_disk(cluster, agent_bin, fault, directory, seconds=SECONDS):
    """S1's fault disk, its workload started (`seconds` long) and traced by an agent of its
    own, which keeps a state file as the DaemonSet's agents do."""
    host = f"faults-{uuid.uuid4().hex[:8]}"
    scenario = dataclasses.replace(DUSTY, seconds=seconds)
    with scenario_disk(scenario) as fault_disk:
        agent_of = AgentOf(agent_bin, cluster.ports.brokers, host, fault_disk.name, directory)
        disk = TracedDustyDisk(cluster, fault, host, fault_disk, agent_of, scenario)
        try:
            yield disk
        finally:
            disk.workload.join()
            disk.agent.stop(check=False)


class Faults:
    """Each fault in a thread of its own, its disk started once the faults it waits for
    have recovered (WAITS_FOR), and its strike once those of STRIKES_AFTER have. A test
    asks for its fault's outcome."""

    def __init__(self, cluster, agent_bin, directories):
        """`directories`: a directory of its own for each fault (pytest's temporary
        directories are made in this thread: their factory is not safe across threads)."""
        self.cluster, self.agent_bin, self.directories = cluster, agent_bin, directories
        self.recovered = {strike: threading.Event() for strike in WAITS_FOR}
        self.pool = ThreadPoolExecutor(len(WAITS_FOR), thread_name_prefix="fault")
        self.outcomes = {strike: self.pool.submit(self.strike_when_ready, strike) for strike in WAITS_FOR}

    def strike_when_ready(self, strike):
        try:
            for earlier in WAITS_FOR[strike]:
                self.recovered[earlier].wait()
            self.strike_and_account(strike)
        finally:
            self.recovered[strike].set()  # a fault that failed before it struck holds none back

    def strike_and_account(self, strike):
        with traced_dusty_disk(self.cluster, self.agent_bin, strike.__name__, self.directories[strike],
                               READ_S.get(strike, SECONDS)) as disk:
            try:
                for earlier in STRIKES_AFTER.get(strike, ()):
                    self.recovered[earlier].wait()
                strike(self.cluster, disk)
            finally:
                self.recovered[strike].set()
            disk.assert_judged_once_and_counted_exactly()

    def outcome(self, strike):
        """The fault's outcome: its failure raised here."""
        self.outcomes[strike].result()

    def wait_for_all(self):
        self.pool.shutdown(wait=True)


@pytest.fixture(scope="module")
def faults(cluster, agent_bin, tmp_path_factory):
    directories = {strike: tmp_path_factory.mktemp(strike.__name__) for strike in WAITS_FOR}
    running = Faults(cluster, agent_bin, directories)
    try:
        yield running
    finally:
        running.wait_for_all()
        write_figures()


class AgentOf:
    """Starts the agent of one host, each time with the same state file. It reports its
    fault's disk only: the other faults' disks, on the same machine, are other hosts'."""

    def __init__(self, agent_bin, brokers, host, disk, directory):
        self.agent_bin, self.brokers, self.host, self.disk = agent_bin, brokers, host, disk
        self.state_file = directory / "agent.state"

    def start(self):
        return KafkaTracingAgent(self.agent_bin, self.brokers, self.host, "--disk", self.disk,
                                 "--state-file", str(self.state_file))

    def accounted(self, disk):
        """The disk's completions that the records the agent delivered account for, as its
        state file says (where an agent started again resumes)."""
        disks = json.loads(self.state_file.read_text())["disks"]
        return next(d["accounted_completions"] for d in disks if d["name"] == disk)


class TracedDustyDisk:
    def __init__(self, cluster, fault, host, fault_disk, agent_of, scenario):
        self.cluster = cluster
        self.fault = fault
        self.host = host
        self.disk = fault_disk.name
        self.fault_disk = fault_disk
        self.agent_of = agent_of
        self.agent = agent_of.start()
        self.killed = None  # (wall-clock ns, the state file's position, the kernel's count) of an agent killed
        self.run = Run(scenario, fault_disk)
        self.started = time.monotonic()
        self.started_ns = time.time_ns()
        self.workload = threading.Thread(target=self.run.play, name=f"S1 on {self.disk}")
        self.workload.start()
        say(f"{fault}: S1 on {fault_disk.device} ({self.disk}) for {scenario.seconds:.0f} s, traced as {host}")

    def kill_agent_and_start_it_again(self, down_s):
        """SIGKILLs the agent (whatever it held unsent is gone) and, `down_s` later, starts
        it again with its state file."""
        self.agent.process.kill()
        self.agent.process.wait(timeout=30)
        self.killed = (time.time_ns(), self.agent_of.accounted(self.disk), self.kernel_completions())
        time.sleep(down_s)  # the reads go on with no agent
        self.agent = self.agent_of.start()
        assert re.search(rf"lost to the restart: .*\b{self.disk} \d+", self.agent.said()), self.agent.said()

    def seconds_in(self):
        return time.monotonic() - self.started

    def play_until(self, seconds):
        """Waits until the workload has run `seconds` (it goes on meanwhile)."""
        time.sleep(max(0.0, self.started + seconds - time.monotonic()))

    def finish(self):
        """Waits for the workload's end, then stops the agent: it sends its last interval
        and, as long as the brokers keep taking them, what it still holds (after Kafka was
        away, a backlog delivered as its connections come back)."""
        self.workload.join()
        if self.run.error:
            raise AssertionError(f"S1's workload failed: {self.run.error}") from self.run.error
        said = self.agent.stop()
        assert "kafka_failed 0, kafka_shed 0" in said, said
        self.completions_at_end = self.kernel_completions()

    def kernel_completions(self):
        stats = self.fault_disk.diskstats()
        return stats["reads_completed"] + stats["writes_completed"] + stats["discards_completed"]

    def read(self, record):
        return consume_host(self.cluster.ports.brokers, TOPICS[record], self.host)

    def read_agent(self, record, topics=TOPICS):
        return consume_agent_records(self.cluster.ports.brokers, record, self.host, topics)

    def wait_for_ticket(self):
        return wait_for(f"{self.host}'s ticket", timeout_s=180, check=lambda: [
            r for r in self.read("io.health.v1") if r.get("ticket", {}).get("action") == "open"])

    def histograms(self, ops):
        return sum(h["count"] for h in self.read_agent("io.hist.v1")
                   if h["disk"] == self.disk and h["latency"] == "device" and h["op"] in ops)

    def reported_missing(self, since_ns=0):
        """What each run of the agent (started after `since_ns`) reported missing, summed:
        its last report says all it found missing."""
        last_of_run = {r["started_ns"]: r for r in self.read("io.agent.v1") if r["started_ns"] > since_ns}
        return sum(r.get("untraced_by_disk", {}).get(self.disk, 0) for r in last_of_run.values())

    def assert_restart_accounted(self, completed, ios, missing):
        """After the agent was killed and started again: the second run accounts exactly for
        every completion after the position the first had written; the first run's records
        may count again (reported missing by the second) what their acknowledgements had
        not yet moved that position over when it was killed, never more than the kernel had
        completed past that position then. (How much that is depends on how long the brokers
        take to acknowledge: a second or two on a quiet machine, more under load.)"""
        killed_ns, accounted_at_kill, completed_at_kill = self.killed
        device = [h for h in self.read_agent("io.hist.v1") if h["disk"] == self.disk and h["latency"] == "device"]
        second_traced = sum(h["count"] for h in device if h["op"] in RECONCILED_OPS and h["start_ns"] > killed_ns)
        second_missing = self.reported_missing(since_ns=killed_ns)
        assert self.completions_at_end - accounted_at_kill == second_traced + second_missing, \
            (self.completions_at_end, accounted_at_kill, second_traced, second_missing)
        twice = ios + missing - completed
        past_the_position = completed_at_kill - accounted_at_kill
        assert 0 <= twice <= past_the_position, (completed, ios, missing, past_the_position)
        lost = self.read("io.agent.v1")[-1]["lost_restart_by_disk"][self.disk]
        assert 0 < lost <= second_missing, (lost, second_missing)
        return f"{completed} = {ios} (+ {missing}, {lost} of them lost to the restart) - {twice} counted twice"

    def closed_windows(self):
        """window start -> the kernel-counted reads of the copies of its 10 s window, in the
        order they were sent (a window closed on the disk's silence is sent again whole when
        the records still on their way come; the last copy is the window). A window whose
        reads came as events alone (a killed agent's last interval: its events went out,
        its histograms never did) counts the events' weighted estimate, no kernel count: none
        of its reads is in the histograms, and it holds 0 of them here."""
        copies = defaultdict(list)
        for w in self.read("io.window.v1"):
            if w["disk"] == self.disk and w["window_s"] == WINDOW_S and "R" in w.get("latency", {}):
                reads = w["latency"]["R"]
                copies[w["window_start_ns"]].append(reads["count"] if reads["source"] == "kernel" else 0)
        return copies

    def short_windows(self, windows):
        """window start (s after the workload started) -> (reads in its histograms, what each
        of its copies held), for each window whose last copy holds fewer reads than the
        histograms of its time."""
        in_histograms = self.reads_by_window(self.read_agent("io.hist.v1"))
        short = {start: reads for start, reads in sorted(in_histograms.items()) if windows.get(start, [0])[-1] != reads}
        copies = self.copies_of(short)
        accepted = self.accepted_reads(short)
        return {round((start - self.started_ns) / 1e9): (reads, f"{accepted[start]} accepted by the job", copies[start])
                for start, reads in short.items()}

    def reads_by_window(self, histograms):
        """window start -> the disk's reads in these histograms (their device latency) of its time."""
        reads = defaultdict(int)
        for h in histograms:
            if h["disk"] == self.disk and h["latency"] == "device" and h["op"] == "R":
                reads[h["end_ns"] // 10**6 // (WINDOW_S * 1000) * WINDOW_S * 10**9] += h["count"]
        return reads

    def accepted_reads(self, starts_ns):
        """window start -> the reads of the disk's histograms of its time that the job accepted
        (passed on to ClickHouse): what reached its windows operator."""
        accepted = self.reads_by_window(self.read_agent("io.hist.v1", ACCEPTED_TOPICS))
        return {start: accepted[start] for start in starts_ns}

    def copies_of(self, starts_ns):
        """window start -> what each copy of the disk's 10 s window starting then held, in the
        order sent: its reads and where their count came from, and the reads its diskstats show."""
        copies = {start: [] for start in starts_ns}
        for w in self.read("io.window.v1"):
            if w["disk"] == self.disk and w["window_s"] == WINDOW_S and w["window_start_ns"] in copies:
                reads = w.get("latency", {}).get("R", {})
                copies[w["window_start_ns"]].append((reads.get("count"), reads.get("source"), w.get("reads_completed")))
        return copies

    def dead_letter_reasons(self):
        """How many dead letters name the host, by their reason up to what they name."""
        reasons = defaultdict(int)
        for letter in dead_letters_naming(self.cluster.ports.brokers, self.host):
            reasons[letter["reason"].split(" of ")[0]] += 1
        return dict(reasons)

    def windows_holding(self, reads):
        """The windows once they hold `reads` reads, else None. They close DISK_IDLENESS after
        the disk fell silent."""
        closed = self.closed_windows()
        return closed if sum(counts[-1] for counts in closed.values()) >= reads else None

    def revised(self, windows):
        """ " (n revised: s from the start: its copies' reads, ...)", or "": the windows whose
        copies differ (closed on silence, or partial from a restored job, then sent again whole)."""
        revised = {round((start - self.started_ns) / 1e9): counts
                   for start, counts in sorted(windows.items()) if len(set(counts)) > 1}
        if not revised:
            return ""
        return f" ({len(revised)} revised: " + ", ".join(
            f"{s} s: {' then '.join(map(str, counts))}" for s, counts in revised.items()) + ")"

    def windows_settled(self):
        """The windows once each one's last copy holds the most of its copies, else None."""
        closed = self.closed_windows()
        return closed if all(counts[-1] == max(counts) for counts in closed.values()) else None

    def assert_judged_once_and_counted_exactly(self):
        self.finish()
        finished = time.monotonic()
        ios, reads, missing = self.histograms(("R", "W")), self.histograms(("R",)), self.reported_missing()
        row = ACCOUNTED.setdefault(self.fault, {})
        if self.killed:
            row[COLUMNS[0]] = self.assert_restart_accounted(self.run.completed, ios, missing)
        else:
            row[COLUMNS[0]] = f"{self.run.completed} = {ios} (+ {missing})"
            assert ios + missing == self.run.completed > 0, row

        try:
            wait_for(f"{self.host}'s windows", timeout_s=180, check=lambda: self.windows_holding(reads))
        except TimeoutError:
            windows = self.closed_windows()
            raise AssertionError(f"{sum(c[-1] for c in windows.values())} of {reads} reads in the disk's 10 s windows; "
                                 f"short (s from the start: reads, in each copy): {self.short_windows(windows)}; "
                                 f"dead letters naming the host: {self.dead_letter_reasons()}") from None
        row[COLUMNS[2]] = self.assert_judged_once()
        self.assert_stored_once(reads)  # the rollups come after the disk's last window
        row[COLUMNS[3]] = round(time.monotonic() - finished)
        # The sink is at-least-once: a job restored after a crash sends again what it had sent
        # since its checkpoint, so a copy from before the crash may come before a partial one
        # closed on silence (its records read again after it), and the revision after that,
        # once the disk has been silent again for DISK_IDLENESS. A crash late in the disk's
        # life (the JobManager's) may send the partial copy after the windows held every read.
        try:
            windows = wait_for(f"{self.host}'s windows revised", timeout_s=180, check=self.windows_settled)
        except TimeoutError:
            windows = self.closed_windows()
            raise AssertionError(f"a window's last copy holds fewer reads than one sent before it: {windows}") from None
        windowed = sum(counts[-1] for counts in windows.values())
        row[COLUMNS[1]] = f"{reads} = {windowed}{self.revised(windows)} = {reads}"
        assert windowed == reads, (row, f"short windows (s from the start: reads, in each copy): {self.short_windows(windows)}")

    def assert_judged_once(self):
        tickets = {(r["ticket"]["action"], r["ticket"]["ticket_id"], r["id"])
                   for r in self.read("io.health.v1") if "ticket" in r and r["disk"] == self.disk}
        assert len({record_id for action, _, record_id in tickets if action == "open"}) == 1, tickets
        assert len({ticket for _, ticket, _ in tickets}) == 1, tickets
        ids = defaultdict(set)  # (kind, severity) -> anomaly ids
        for anomaly in self.read("io.anomaly.v1"):
            if anomaly["disk"] == self.disk:
                ids[anomaly["kind"], anomaly["severity"]].add(anomaly["id"])
        assert set(DUSTY.expect) <= set(ids) and {kind for kind, _ in ids} == {kind for kind, _ in DUSTY.expect}, ids
        assert all(len(found) == 1 for found in ids.values()), f"a verdict reached twice: {ids}"
        return ", ".join(f"{kind} {severity}" for kind, severity in sorted(ids)) + ", one ticket"

    def assert_stored_once(self, reads):
        """Each ClickHouse replica holds every read of the disk's histograms once, in the raw
        table and in the job's rollups of a minute, an hour and a day, and so do the
        Distributed tables over them."""
        where = f"host = '{self.host}' AND disk = '{self.disk}' AND op = 'R' AND latency = 'device'"
        tables = ("histograms", *LATENCY_ROLLUPS)
        observed = {}

        def stored():
            for replica in stack.CLICKHOUSE_REPLICAS:
                reader = self.cluster.users.client(self.cluster.ports.of_clickhouse_replica(replica), "reader")
                for db in ("iopipe", "iopipe_all"):
                    observed[replica, db] = tuple(
                        int(reader.rows(f"SELECT sum(count) FROM {db}.{table} FINAL WHERE {where}")[0][0]) for table in tables)
            return observed
        try:
            wait_for(f"{self.host}'s reads in ClickHouse", timeout_s=240,
                     check=lambda: all(counts == (reads,) * len(tables) for counts in stored().values()))
        except TimeoutError:
            raise AssertionError(f"read {reads}; {tables} by (replica, database): {observed}") from None


def write_figures():
    if not ACCOUNTED:
        return
    lines = ["| fault | " + " | ".join(COLUMNS) + " |", "|---|" + "---|" * len(COLUMNS)]
    lines += [f"| {fault.replace('_', ' ')} | " + " | ".join(str(row.get(c, "failed")) for c in COLUMNS) + " |"
              for fault, row in ACCOUNTED.items()]
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    FIGURES.write_text("\n".join(lines) + "\n")
    say("fault figures (also in " + str(FIGURES) + "):\n" + "\n".join(lines))


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


def wait_until_every_partition_takes_writes(cluster, kafka_container):
    """Nodes back say their topics are ready before their copies have caught up; until
    min.insync.replicas of them have, an acks=all write waits (the agent's backlog), and an
    agent stopped meanwhile gives up on what it holds after its stall timeout."""
    min_in_sync = int(subprocess.run(["docker", "exec", kafka_container, "sh", "-c", "echo ${KAFKA_MIN_INSYNC:-1}"],
                                     capture_output=True, text=True, check=True).stdout)
    wait_for(f"every partition with {min_in_sync} copies in sync",
             lambda: not partitions_short_of_copies(cluster.ports.brokers, min_in_sync))


def logs_since_start(container):
    started = subprocess.run(["docker", "inspect", "-f", "{{.State.StartedAt}}", container],
                             capture_output=True, text=True, check=True).stdout.strip()
    logs = subprocess.run(["docker", "logs", "--since", started, container], capture_output=True, text=True)
    return logs.stdout + logs.stderr


def job_running_on(ports):
    job_id = running_job(ports)
    return job_id and _job_running(ports, job_id) and job_id


def taskmanager_running(cluster, job_id):
    """The container of a TaskManager that runs tasks of the job (the job may use one only)."""
    url = cluster.ports.flink_url
    vertex = http_json(f"{url}/jobs/{job_id}")["vertices"][0]["id"]
    ids = {tm["taskmanager-id"] for tm in http_json(f"{url}/jobs/{job_id}/vertices/{vertex}/taskmanagers")["taskmanagers"]}
    for taskmanager in ("flink-taskmanager-1", "flink-taskmanager-2"):
        container = cluster.container(taskmanager)
        if any(f"Starting TaskManager with ResourceID: {tm_id}" in logs_since_start(container) for tm_id in ids):
            return container
    raise AssertionError(f"no TaskManager container says it is {ids}")


def failures(ports, job_id):
    """How many failures of the job its JobManager has recorded."""
    return len(http_json(f"{ports.flink_url}/jobs/{job_id}/exceptions")["exceptionHistory"]["entries"])


def a_taskmanager_killed_mid_window_loses_nothing(cluster, dusty_disk):
    dusty_disk.wait_for_ticket()
    time.sleep(8)  # the disk's open windows now hold reads not yet checkpointed
    job_id = running_job(cluster.ports)
    # (The other faults may have the job restarting at this moment: its tasks are on no TaskManager.)
    taskmanager = wait_for("a TaskManager running the job", lambda: taskmanager_running(cluster, job_id))
    restarted_before, failed_before = restarts(taskmanager), failures(cluster.ports, job_id)
    crash(taskmanager)
    wait_for("the TaskManager restarted", lambda: restarts(taskmanager) > restarted_before)
    wait_for("the job failed over and running again", timeout_s=240, check=lambda: (
        failures(cluster.ports, job_id) > failed_before and job_running_on(cluster.ports) == job_id))


def the_leading_jobmanager_killed_hands_the_job_to_the_standby(cluster, dusty_disk):
    dusty_disk.wait_for_ticket()
    leader = leading_jobmanager(cluster)
    job_id = running_job(cluster.ports.with_flink_rest_of(leader))
    time.sleep(8)
    crash(cluster.container(f"flink-jobmanager-{leader}"))
    standby = cluster.ports.with_flink_rest_of(3 - leader)
    wait_for("the standby running the job", lambda: job_running_on(standby) == job_id, timeout_s=240)


def a_kafka_node_away_for_a_minute_loses_nothing(cluster, dusty_disk):
    dusty_disk.play_until(20)
    broker = cluster.container("kafka-2")
    subprocess.run(["docker", "stop", broker], check=True, capture_output=True)
    try:
        away_since = time.monotonic()
        dusty_disk.wait_for_ticket()  # acks=all: two of three copies are enough for min.insync.replicas 2
        time.sleep(max(0.0, 60 - (time.monotonic() - away_since)))
    finally:
        subprocess.run(["docker", "start", broker], check=True, capture_output=True)
    wait_for("kafka-2 back", lambda: "iopipe: topics ready" in logs_since_start(broker))


def every_kafka_node_away_for_a_minute_loses_nothing(cluster, dusty_disk):
    """The agent holds what it reads meanwhile (up to 64 MiB) and retries; when the nodes
    are back the job reads the backlog of three topics, each at its own pace, and still
    windows every I/O once: a disk heard again after a silence waits for each kind of its
    records, and the window it was filling when the nodes went away, closed on the
    disk's silence (longer than DISK_IDLENESS), takes its backlog and is sent again whole."""
    dusty_disk.wait_for_ticket()
    brokers = [cluster.container(f"kafka-{node}") for node in (1, 2, 3)]
    subprocess.run(["docker", "stop", *brokers], check=True, capture_output=True)
    say(f"every Kafka node stopped {dusty_disk.seconds_in():.0f} s into the workload")
    try:
        time.sleep(60)
    finally:
        subprocess.run(["docker", "start", *brokers], check=True, capture_output=True)
        say(f"every Kafka node started again {dusty_disk.seconds_in():.0f} s into the workload")
    for broker in brokers:
        wait_for(f"{broker} back", lambda b=broker: "iopipe: topics ready" in logs_since_start(b))
    wait_until_every_partition_takes_writes(cluster, brokers[0])


# One replica away for longer than its Kafka consumers' session (librdkafka's default is
# 45 s; a replica stopped cleanly leaves its group at once), so the other's take over its
# partitions; then both away for several of the Kafka tables' flush intervals (7.5 s).
ONE_REPLICA_AWAY_S = 60
BOTH_REPLICAS_AWAY_S = 30


def clickhouse_replicas_stopped_lose_nothing(cluster, dusty_disk):
    """One replica stopped: the other's Kafka tables take over its share of the topics'
    partitions, and it fetches what it missed when it is back. Then both: the records wait
    in Kafka, read from the offsets the replicas committed."""
    dusty_disk.play_until(20)
    replicas = [cluster.container(f"clickhouse-{replica}") for replica in stack.CLICKHOUSE_REPLICAS]
    for stopped, away_s in ((replicas[:1], ONE_REPLICA_AWAY_S), (replicas, BOTH_REPLICAS_AWAY_S)):
        subprocess.run(["docker", "stop", *stopped], check=True, capture_output=True)
        try:
            time.sleep(away_s)
        finally:
            subprocess.run(["docker", "start", *stopped], check=True, capture_output=True)
        for replica in stack.CLICKHOUSE_REPLICAS:
            wait_for(f"ClickHouse replica {replica}", lambda r=replica: clickhouse_answers(
                cluster.ports.of_clickhouse_replica(r)))


def the_agent_killed_and_started_again_loses_nothing_silently(cluster, dusty_disk):
    """SIGKILL, 5 s with no agent, then the agent again with its state file: the second run
    reports missing what the first had not delivered and all that completed meanwhile,
    counted apart as lost to the restart; the disk's records resume under the same host."""
    dusty_disk.play_until(25)
    dusty_disk.kill_agent_and_start_it_again(down_s=5)


# Each fault strikes and waits until the cluster has recovered; then its disk's accounting,
# which goes on while later faults strike. WAITS_FOR: fault -> the faults whose recovery it
# waits for before its disk starts. Every Kafka node away holds up every host's records, and
# an agent stopped meanwhile gives up on what it holds after its stall timeout: it strikes
# first, and the others start once the nodes are back (its own agent stops only then).
# (Before each agent reported its own disk only, five agents each sent all five failing
# disks' records, and the job fell minutes behind.)
FIRST = every_kafka_node_away_for_a_minute_loses_nothing
WAITS_FOR = {
    FIRST: (),
    a_taskmanager_killed_mid_window_loses_nothing: (FIRST,),
    a_kafka_node_away_for_a_minute_loses_nothing: (FIRST,),
    clickhouse_replicas_stopped_lose_nothing: (FIRST,),
    the_agent_killed_and_started_again_loses_nothing_silently: (FIRST,),
    the_leading_jobmanager_killed_hands_the_job_to_the_standby: (FIRST,),
}
# STRIKES_AFTER: fault -> the faults whose recovery it waits for before it strikes, its disk
# read meanwhile. The JobManager waits for the TaskManager's: a job failing over twice at
# once would be neither fault's recovery. READ_S: its disk is read for longer than the
# others', so that the reads go on when it strikes (the TaskManager's recovery comes 70-110 s
# after its disk started).
STRIKES_AFTER = {the_leading_jobmanager_killed_hands_the_job_to_the_standby: (a_taskmanager_killed_mid_window_loses_nothing,)}
READ_S = {the_leading_jobmanager_killed_hands_the_job_to_the_standby: 140}


def test_a_taskmanager_killed_mid_window_loses_nothing(faults):
    faults.outcome(a_taskmanager_killed_mid_window_loses_nothing)


def test_the_leading_jobmanager_killed_hands_the_job_to_the_standby(faults):
    faults.outcome(the_leading_jobmanager_killed_hands_the_job_to_the_standby)


def test_a_kafka_node_away_for_a_minute_loses_nothing(faults):
    faults.outcome(a_kafka_node_away_for_a_minute_loses_nothing)


def test_every_kafka_node_away_for_a_minute_loses_nothing(faults):
    faults.outcome(every_kafka_node_away_for_a_minute_loses_nothing)


def test_clickhouse_replicas_stopped_lose_nothing(faults):
    faults.outcome(clickhouse_replicas_stopped_lose_nothing)


def test_the_agent_killed_and_started_again_loses_nothing_silently(faults):
    faults.outcome(the_agent_killed_and_started_again_loses_nothing_silently)
