"""The live job on the cluster at fleet scale, checkpoints on: for each fleet size, what it
sustains, its checkpoints, the latency from an agent record to its window's row in
ClickHouse, against a plain Kafka consumer in the same run. Results: stream-jobs/bench/RESULTS-fleet.md.

    make bench-fleet   (or: python3 -m iopipe.bench.scale [--disks 1000,10000,20000 --seconds 150 --records batched])

A cluster of its own (`make cluster-up`'s: Kafka x3, ZooKeeper, Flink HA with 2
TaskManagers, ClickHouse x2) on free ports. Each fleet size runs from cold: the agent topics
emptied, the TaskManagers restarted (after the first size), and a fresh live job (a
consumer group of its own, no state); then the fleet's records on
the wall clock, as iopipe/synthetic/fleet.py makes them: iopipe.bench.TEMPLATE_DISKS of its healthy
disks, each copied onto many hosts by io.iopipe.jobs.bench.FleetReplay, so every disk sends
what a fleet.py disk sends each second. Measured while it runs:
- records/s the job consumed: its consumer group's committed offsets (committed by each
  checkpoint) over the run after WARM_UP_S; its lag is the age of the oldest record past
  them;
- checkpoints: Flink's REST API (/jobs/:id/checkpoints): duration, size, failures;
- where the cores go: each container's threads by kind, on a CPU and waiting for one
  (/proc schedstat), the machine's cores (/proc/stat), and the TaskManagers' CPU per
  disk-second consumed;
- latency: for the disks of PROBE_HOSTS hosts, from when the producer had sent a window's
  last records (the second ending in it; windows of the job's first length, `window_s` in
  schema/pipeline.json) to when the window's row is first seen in either ClickHouse
  replica (polled every POLL_S). It includes the job's wait for a disk's clock to pass
  the window's end plus the out-of-orderness (`out_of_orderness_s`).
A size whose lag passes LAG_LIMIT_S, or whose producer falls that far behind the agents'
clock, cannot be held: it stops there. Then, with the job cancelled, a plain consumer
reads the same records (bytes only) for up to PLAIN_READ_S.
"""
import argparse
import json
import math
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import uuid
from datetime import datetime, timezone
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from iopipe import readiness, stack
from iopipe.bench import HOST_PREFIX, JOBS, MS_NS, TEMPLATE_DISKS, fleet_options, java_classpath, write_templates
from iopipe.contract import BASE_WINDOW_S, PIPELINE, RECORD_TOPICS
from iopipe.flink_rest import cancel_job, flink_config, submit_live_job
from iopipe.kafka_access import JOB_GROUP
from iopipe.readiness import http_json
from iopipe.stack_kafka import kafka_access, kafka_client, kafka_java_config
from iopipe.synthetic import fleet

OUT = JOBS / "bench" / "RESULTS-fleet.md"
# The sizing of a TARGET_DISKS fleet the results give, as infra/tests/test_k8s_manifests.py reads it.
SIZING = JOBS / "bench" / "fleet-sizing.json"
WARM_UP_S = 30
THREAD_SAMPLE_S = 10
POLL_S = 1
PROGRESS_EVERY_S = 10
PROBE_HOSTS = 16
LAG_LIMIT_S = 60
PRODUCER_SLACK_S = 5
HELD_LAG_CHECKPOINTS = 3  # committed offsets trail the log end by up to an interval plus a checkpoint's duration
MIN_CHECKPOINTS = 3
PLAIN_READ_S = 20
TARGET_DISKS = 100_000
# What fleet.py's disks send: the records one by one, or batched as the agent batches them.
AGENT_RECORDS = {"single": ("io.diskstats.v1", "io.event.v1", "io.hist.v1"),
                 "batched": ("io.eventbatch.v1", "io.interval.v1")}
CPUS = os.cpu_count()


def say(message):
    print(f"[bench-fleet] {message}", flush=True)


# ---------------------------------------------------------------- the fleet's records

def host_of(disk_index):
    return f"{HOST_PREFIX}{disk_index // fleet.DISKS_PER_HOST}"


class Replay:
    """FleetReplay sending `disks` disks' records; remembers when each second was sent."""

    def __init__(self, brokers, templates, disks):
        classpath = java_classpath()
        self.sent_ms = {}  # send_at_ms -> wall ms when all its records were handed to Kafka
        self.process = subprocess.Popen(
            ["java", f"-Dlog4j.configurationFile={JOBS / 'offline-log4j2.properties'}", "-cp", classpath,
             "io.iopipe.jobs.bench.FleetReplay", "--brokers", brokers, *fleet_options(templates, disks),
             "--kafka-config", str(kafka_java_config(brokers)),
             "--signing-secret", str(kafka_access(brokers).signing_secret_path())], stdout=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            if line.startswith("sent "):
                _, at_ms, done_ms, _ = line.split()
                self.sent_ms[int(at_ms)] = int(done_ms)

    def behind_s(self):
        """How far the last second sent was behind the agents' clock."""
        if not self.sent_ms:
            return 0.0
        at_ms = max(self.sent_ms)
        return (self.sent_ms[at_ms] - at_ms) / 1000

    def done(self):
        return self.process.poll() is not None

    def stop(self):
        if not self.done():
            self.process.terminate()
        self.process.wait()
        self.reader.join()


# ---------------------------------------------------------------- Kafka

def agent_topics(records):
    """The topics of these record schemas."""
    topic_of = {topic["record"]: topic["name"] for topic in RECORD_TOPICS}
    return [topic_of[schema] for schema in records]


class Offsets:
    """Log ends of the agent topics and a consumer group's committed offsets."""

    def __init__(self, brokers, topics, group):
        self.consumer = Consumer({**kafka_client(brokers), "group.id": group, "enable.auto.commit": False})
        metadata = self.consumer.list_topics(timeout=30)
        self.partitions = [TopicPartition(t, p) for t in topics for p in metadata.topics[t].partitions]
        self.start = self.ends()

    def ends(self):
        return {(tp.topic, tp.partition): self.consumer.get_watermark_offsets(tp, timeout=10)[1]
                for tp in self.partitions}

    def produced(self):
        return sum(self.ends().values()) - sum(self.start.values())

    def consumed(self):
        """Records the group has committed past since the start (none committed: none)."""
        committed = self.consumer.committed(self.partitions, timeout=10)
        return sum(max(tp.offset, self.start[(tp.topic, tp.partition)]) - self.start[(tp.topic, tp.partition)]
                   for tp in committed)

    def close(self):
        self.consumer.close()


def empty_topics(brokers, topics):
    """Deletes every record the agent topics hold, so the next job starts on its own fleet's."""
    admin = AdminClient(kafka_client(brokers))
    probe = Consumer({**kafka_client(brokers), "group.id": f"bench-fleet-ends-{uuid.uuid4().hex[:8]}"})
    metadata = probe.list_topics(timeout=30)
    ends = [TopicPartition(t, p, probe.get_watermark_offsets(TopicPartition(t, p), timeout=10)[1])
            for t in topics for p in metadata.topics[t].partitions]
    probe.close()
    holding = [tp for tp in ends if tp.offset > 0]
    if holding:
        for future in admin.delete_records(holding, operation_timeout=30).values():
            future.result()


def plain_read_rate(brokers, start, ends):
    """Records/s of a plain consumer reading [start, ends) of each partition, bytes only,
    for up to PLAIN_READ_S."""
    consumer = Consumer({**kafka_client(brokers), "group.id": f"bench-fleet-plain-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(t, p, offset) for (t, p), offset in start.items()])
    wanted = sum(ends.values()) - sum(start.values())
    read, first, called = 0, None, time.monotonic()
    while read < wanted and time.monotonic() - (first or called) < PLAIN_READ_S:
        batch = consumer.consume(num_messages=10_000, timeout=1.0)
        if batch and first is None:
            first = time.monotonic()
        read += sum(1 for m in batch if not m.error())
    took = time.monotonic() - first if first else 0
    consumer.close()
    return read / took if took else 0.0


# ---------------------------------------------------------------- Flink and ClickHouse

class Checkpoints:
    """Every checkpoint of a job, gathered from the REST API's recent history."""

    def __init__(self, ports, job_id):
        self.url = f"{ports.flink_url}/jobs/{job_id}/checkpoints"
        self.by_id = {}
        self.counts = {}
        # A checkpoint declined as it was triggered is counted but never listed: the count
        # before the first record tells those the fleet's load had no part in.
        self.failed_before_records = 0

    def poll(self):
        answer = http_json(self.url)
        self.counts = answer["counts"]
        for checkpoint in answer.get("history", []):
            if checkpoint["status"] != "IN_PROGRESS":
                self.by_id[checkpoint["id"]] = checkpoint

    def completed(self):
        return [c for _, c in sorted(self.by_id.items()) if c["status"] == "COMPLETED"]

    def failed(self):
        return [c for _, c in sorted(self.by_id.items()) if c["status"] == "FAILED"]


class WindowRows:
    """When each of the job's first windows of the probe hosts' disks was first seen in ClickHouse."""

    def __init__(self, cluster, hosts, since_ns):
        self.clients = [cluster.users.client(cluster.ports.of_clickhouse_replica(r), "reader")
                        for r in stack.CLICKHOUSE_REPLICAS]
        names = ", ".join(f"'{h}'" for h in hosts)
        self.sql = (f"SELECT DISTINCT host, disk, window_end_ns FROM iopipe.windows WHERE window_s = {BASE_WINDOW_S} "
                    f"AND host IN ({names}) AND window_end_ns > {since_ns}")
        self.first_seen_ms = {}

    def poll(self):
        for client in self.clients:
            now_ms = time.time() * 1000
            for row in client.json_rows(self.sql):
                self.first_seen_ms.setdefault((row["host"], row["disk"], int(row["window_end_ns"])), now_ms)

    def latencies_s(self, sent_ms):
        """Per window seen: from when its last second was sent to when its row was seen."""
        out = []
        for (_, _, end_ns), seen_ms in self.first_seen_ms.items():
            last = [at_ms for at_ms in sent_ms if at_ms <= end_ns // MS_NS]
            if last:
                out.append((seen_ms - sent_ms[max(last)]) / 1000)
        return out


class Inserts:
    """What ClickHouse's tables took in while a size ran, from one replica's system.parts.
    Each insert into a partition of a replicated table takes that partition's next block
    number, so the growth of its largest block number counts its inserts (merges keep the
    numbers they merge); the active parts are what merges have left of them. A replicated
    table numbers a partition's blocks from 0, so a partition new since the start took its
    largest block number plus one."""
    SQL = ("SELECT table, partition_id, max(max_block_number) AS block, countIf(active) AS parts, "
           "sumIf(rows, active) AS rows FROM system.parts WHERE database = 'iopipe' GROUP BY table, partition_id")

    def __init__(self, cluster):
        self.client = cluster.users.client(cluster.ports.of_clickhouse_replica(stack.CLICKHOUSE_REPLICAS[0]), "admin")
        self.before = self.read()
        self.started = time.monotonic()

    def read(self):
        return {(row["table"], row["partition_id"]): row for row in self.client.json_rows(self.SQL)}

    def since_start(self):
        """Per table that took rows: inserts/s, rows per insert and the most active parts of one partition."""
        seconds, now, tables = time.monotonic() - self.started, self.read(), {}
        for (table, partition), row in now.items():
            was = self.before.get((table, partition), {"block": -1, "rows": 0})
            t = tables.setdefault(table, {"inserts": 0, "rows": 0, "most_parts": 0})
            t["inserts"] += int(row["block"]) - int(was["block"])
            t["rows"] += int(row["rows"]) - int(was["rows"])
            t["most_parts"] = max(t["most_parts"], int(row["parts"]))
        return {table: {**t, "per_s": t["inserts"] / seconds, "rows_per_insert": t["rows"] / t["inserts"]}
                for table, t in sorted(tables.items()) if t["inserts"] > 0}


def busiest_tasks(ports, job_id, count=3):
    """The job's tasks (chains of operators) by the share of time their busiest subtask
    worked, with the share it was back-pressured: where the job spends its cores."""
    url = f"{ports.flink_url}/jobs/{job_id}"
    tasks = []
    for vertex in http_json(url)["vertices"]:
        metrics = {m["id"]: m["max"] for m in http_json(
            f"{url}/vertices/{vertex['id']}/subtasks/metrics?get=busyTimeMsPerSecond,backPressuredTimeMsPerSecond")}
        tasks.append((per_mille(metrics, "busyTimeMsPerSecond") / 10, per_mille(metrics, "backPressuredTimeMsPerSecond") / 10,
                      vertex["name"]))
    return sorted(tasks, reverse=True)[:count]


def bottleneck(busiest):
    """The task the others wait for: the busiest one that is not itself mostly waiting on
    a task after it (back-pressured for less than half its busy time)."""
    return next((name for busy, pressed, name in busiest if pressed < busy / 2), busiest[0][2])


def per_mille(metrics, name):
    """A ms-per-second metric; Flink says "NaN" for a subtask that has not measured it yet."""
    value = float(metrics.get(name, 0))
    return 0.0 if math.isnan(value) else value


def hot_frames(ports, job_id, vertex_name, top=6, timeout_s=90):
    """Where a task's threads spend their time on CPU, from Flink's flame graph of it
    (stack samples of its subtasks): the share of the samples each method is on top of the
    stack (self), and the share each of iopipe's methods is anywhere on it (inclusive)."""
    vertex = next(v["id"] for v in http_json(f"{ports.flink_url}/jobs/{job_id}")["vertices"] if v["name"] == vertex_name)
    # Only the leading JobManager's REST samples: a standby's asks the leader's
    # ResourceManager for the TaskManagers' gateways, which cannot cross processes (its log:
    # NotSerializableException, PekkoInvocationHandler), and its answer stays "waiting".
    graph_urls = [f"{url}/jobs/{job_id}/vertices/{vertex}/flamegraph?type=ON_CPU" for url in rest_urls(ports)]
    deadline = time.monotonic() + timeout_s
    answer, root = {}, {}
    while not root.get("value") and time.monotonic() < deadline:
        # No data while the samples are taken (endTimestamp -3) or while a subtask is not running (-1).
        for graph_url in graph_urls:
            answer = http_json(graph_url)
            root = answer.get("data") or {}
            if root.get("value"):
                break
        else:
            time.sleep(2)
    if not root.get("value"):
        say(f"no flame graph of {vertex_name} within {timeout_s} s; its endpoint last said {str(answer)[:200]}")
        return None
    own, within, callers = {}, {}, {}

    def walk(node, path):
        method = node["name"].rsplit(":", 1)[0]  # frames name a line: count the method
        below = sum(child["value"] for child in node.get("children", []))
        if node["value"] > below:
            own[method] = own.get(method, 0) + node["value"] - below
            # Who it was doing it for: its nearest caller outside the JDK (a JDK lock's unpark, for Flink's mailbox).
            caller = next((m for m in reversed(path) if not m.startswith(("java.", "jdk.", "sun."))), None)
            by_caller = callers.setdefault(method, {})
            by_caller[caller] = by_caller.get(caller, 0) + node["value"] - below
        if method.startswith("io.iopipe.") and method not in path:
            within[method] = within.get(method, 0) + node["value"]
        for child in node.get("children", []):
            walk(child, path + (method,))
    walk(root, ())

    def shares(counts):
        return [(method, n / root["value"]) for method, n in sorted(counts.items(), key=lambda kv: -kv[1])[:top]]
    return {"samples": root["value"], "self": shares(own), "iopipe": shares(within),
            "callers": {method: max(by, key=by.get) for method, by in callers.items() if method.startswith(("java.", "jdk.", "sun."))}}


def rest_urls(ports):
    """The REST endpoints of the cluster's JobManagers, the one flink_url names first."""
    standby = getattr(ports, "flink_2_rest", None)
    return [ports.flink_url] + ([f"http://127.0.0.1:{standby}"] if standby else [])


def profile_task(ports, job_id, vertex_name, into):
    try:
        frames = hot_frames(ports, job_id, vertex_name)
        if frames:
            into.update(frames, task=vertex_name)
    except urllib.error.URLError as error:  # the figures still stand without it
        say(f"no flame graph of {vertex_name}: {error}")


def checkpoint_phases(ports, job_id, vertex_name, checkpoints):
    """Where the task's subtasks spent the last completed checkpoints, in ms, the mean over
    those checkpoints of their slowest subtask: the barrier's wait to reach them (start
    delay), aligning their inputs, and the synchronous part (the task stops processing:
    RocksDB flushes its memtables and links its files) and the asynchronous one."""
    vertex = next(v["id"] for v in http_json(f"{ports.flink_url}/jobs/{job_id}")["vertices"] if v["name"] == vertex_name)
    phases = {"start delay": [], "alignment": [], "sync": [], "async": []}
    for checkpoint in checkpoints:
        summary = http_json(f"{ports.flink_url}/jobs/{job_id}/checkpoints/details/{checkpoint['id']}/subtasks/{vertex}")["summary"]
        for name, stats in (("start delay", summary["start_delay"]), ("alignment", summary["alignment"]["duration"]),
                            ("sync", summary["checkpoint_duration"]["sync"]), ("async", summary["checkpoint_duration"]["async"])):
            phases[name].append(stats["max"])
    return {name: statistics.mean(values) for name, values in phases.items() if values}


def checkpoint_failures_logged(cluster, job_id, most=2):
    """The JobManagers' log lines on the job's failed checkpoints, each with its cause (the
    next line): where the reason of a checkpoint declined at its trigger is written."""
    found = []
    for jobmanager in ("flink-jobmanager-1", "flink-jobmanager-2"):
        logs = subprocess.run(["docker", "logs", cluster.container(jobmanager)], capture_output=True, text=True)
        lines = (logs.stdout + logs.stderr).splitlines()
        for line, cause in zip(lines, lines[1:] + [""]):
            if job_id in line and "Failed to trigger" in line:
                found.append(f"{line.split(' - ', 1)[-1].strip()} {cause.strip()}"[:300])
    return found[:most]


def cluster_shape(ports, records):
    """What the estimate for a larger fleet builds on: the job's parallelism, the TaskManagers,
    their slots and each slot's managed memory (RocksDB's, bytes), the agent topics' partitions."""
    taskmanagers = http_json(f"{ports.flink_url}/taskmanagers")["taskmanagers"]
    slots = taskmanagers[0]["slotsNumber"]
    return {"parallelism": int(flink_config(ports)["parallelism.default"]), "taskmanagers": len(taskmanagers),
            "slots_per_taskmanager": slots,
            "managed_per_slot": taskmanagers[0]["memoryConfiguration"]["managedMemory"] / slots,
            "partitions": min(t["partitions"] for t in RECORD_TOPICS if t["record"] in AGENT_RECORDS[records])}


def memory_gib():
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    kib = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal:"))
    return kib / 2**20


def cpu_by_container(project):
    """The CPU share of each of the cluster's containers now, as `docker stats` sees it."""
    lines = subprocess.run(["docker", "stats", "--no-stream", "--format", "{{.Name}} {{.CPUPerc}}"],
                           capture_output=True, text=True).stdout.splitlines()
    shares = (line.split() for line in lines if line.startswith(project))
    return {name.removeprefix(f"{project}_").removesuffix("_1"): share for name, share in shares}


def cluster_containers(project):
    return subprocess.run(["docker", "ps", "--filter", f"name={project}_", "--format", "{{.Names}}"],
                          capture_output=True, text=True).stdout.split()


def thread_times(container):
    """The time each of a container's threads has spent so far on a CPU and waiting for
    one (runnable, not running), in ns, by (thread name, thread id): the kernel's
    /proc/<pid>/task/<tid>/schedstat, named by its stat. A Java thread's name is its Flink
    task's, cut to 15 characters ("diskstats delta", "Source: agent t"), or the JVM's ("C2
    CompilerThre", "GC Thread#0")."""
    out = subprocess.run(["docker", "exec", container, "sh", "-c",
                          "cat /proc/[0-9]*/task/[0-9]*/stat 2>/dev/null; echo ==; "
                          "grep -H '' /proc/[0-9]*/task/[0-9]*/schedstat 2>/dev/null"],
                         capture_output=True, text=True).stdout
    stats, _, schedstats = out.partition("\n==\n")
    names = dict(parse_thread_stat(line) for line in stats.splitlines() if ")" in line)
    times = dict(parse_schedstat(line) for line in schedstats.splitlines() if ":" in line)
    return {(names[tid], tid): times[tid] for tid in names.keys() & times.keys()}


def parse_thread_stat(line):
    """(tid, name) of a line of /proc/<pid>/task/<tid>/stat. The name may hold spaces and
    parentheses: it runs from the first "(" to the last ")"."""
    tid, rest = line.split(" (", 1)
    return int(tid), rest.rsplit(") ", 1)[0]


def parse_schedstat(line):
    """(tid, (ns on a CPU, ns waiting for one)) of `grep -H` of /proc/<pid>/task/<tid>/schedstat."""
    path, fields = line.split(":", 1)
    on_cpu_ns, waiting_ns, _ = fields.split()
    return int(path.split("/")[4]), (int(on_cpu_ns), int(waiting_ns))


def machine_ticks():
    """The machine's CPU time so far, in clock ticks: (busy, waiting on I/O with nothing to
    run, idle), from /proc/stat (the containers share its kernel)."""
    user, nice, system, idle, iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
    return user + nice + system + irq + softirq + steal, iowait, idle


def cpu_by_thread(containers, seconds=THREAD_SAMPLE_S):
    """Where the machine's cores go: for each kind of thread (its name, digits dropped) of
    each container, its share of a core on a CPU and waiting for one, over `seconds`, the
    most on a CPU first; and the machine's cores busy, waiting on I/O and idle."""
    before, machine_before = {c: thread_times(c) for c in containers}, machine_ticks()
    started = time.monotonic()
    time.sleep(seconds)
    after, machine_after = {c: thread_times(c) for c in containers}, machine_ticks()
    elapsed_s = time.monotonic() - started
    shares = {}
    for c in containers:
        for (name, tid), (on_cpu, waiting) in after[c].items():
            was_on_cpu, was_waiting = before[c].get((name, tid), (0, 0))
            kind = (c, re.sub(r"\d+", "#", name))
            share = shares.get(kind, (0.0, 0.0))
            shares[kind] = (share[0] + (on_cpu - was_on_cpu) / 1e9 / elapsed_s, share[1] + (waiting - was_waiting) / 1e9 / elapsed_s)
    ticks = os.sysconf("SC_CLK_TCK") * elapsed_s
    cores = tuple((a - b) / ticks for a, b in zip(machine_after, machine_before))
    return sorted(shares.items(), key=lambda kv: -kv[1][0]), cores


# ---------------------------------------------------------------- one fleet size

def fresh_taskmanagers(cluster, shape):
    """Restarts the TaskManagers: each size's job runs on JVMs that ran nothing before and
    compiles all it runs, as a fleet's job does after it starts or fails over."""
    say("restarting the TaskManagers, so that the next size starts from cold")
    url = f"{cluster.ports.flink_url}/taskmanagers"
    before = {tm["id"] for tm in http_json(url)["taskmanagers"]}
    readiness.run(["docker", "restart", *(cluster.container(f"flink-taskmanager-{i}")
                                          for i in range(1, shape["taskmanagers"] + 1))], stdout=subprocess.DEVNULL)

    def only_new_ones_with_every_slot_free():
        now = http_json(url)["taskmanagers"]
        return (len(now) == shape["taskmanagers"] and not {tm["id"] for tm in now} & before
                and all(tm["freeSlots"] == tm["slotsNumber"] == shape["slots_per_taskmanager"] for tm in now))
    readiness.wait_for("the restarted TaskManagers, every slot free", only_new_ones_with_every_slot_free, timeout_s=180)


def run_size(cluster, disks, seconds, records):
    ports = cluster.ports
    topics = agent_topics(AGENT_RECORDS[records])
    say(f"{disks:,} disks: emptying the agent topics, starting a fresh live job")
    empty_topics(ports.brokers, topics)
    group = f"{JOB_GROUP}-bench-fleet-{disks}-{uuid.uuid4().hex[:8]}"  # the job may read as its groups only
    offsets = Offsets(ports.brokers, topics, group)
    job_id = submit_live_job(ports, group_id=group)
    with tempfile.TemporaryDirectory() as scratch:
        templates = Path(scratch) / "templates.tsv"
        # One to two windows ahead, on a window's boundary: time to write the templates.
        start_ms = (int(time.time()) // BASE_WINDOW_S + 2) * BASE_WINDOW_S * 1000
        sent = write_templates(templates, seconds, start_ms, batched=records == "batched")
        per_disk_s, by_schema = sent.per_disk_s, sent.by_schema
        if set(by_schema) != set(AGENT_RECORDS[records]):
            sys.exit(f"fleet.py sends {sorted(by_schema)}, the benchmark measures the topics of {AGENT_RECORDS[records]}")
        say(f"{disks:,} disks: {per_disk_s:.2f} records per disk-second, {disks * per_disk_s:,.0f} records/s, "
            f"from {time.strftime('%H:%M:%S', time.localtime(start_ms / 1000))}")
        cpu_before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        inserts = Inserts(cluster)
        replay = Replay(ports.brokers, templates, disks)
        try:
            run = watch(cluster, job_id, replay, offsets, disks, start_ms)
        finally:
            replay.stop()
        run["inserts"] = inserts.since_start()
        cpu_after, took = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic() - started
    run["producer_cores"] = (cpu_after.ru_utime + cpu_after.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime) / took
    config = http_json(f"{ports.flink_url}/jobs/{job_id}/checkpoints/config")
    run["checkpoint_interval_s"] = config["interval"] / 1000
    cancel_job(ports, job_id)
    say(f"{disks:,} disks: a plain consumer reads the same records")
    run["plain_rate"] = plain_read_rate(ports.brokers, offsets.start, offsets.ends())
    offsets.close()
    say(f"{disks:,} disks: plain consumer {run['plain_rate']:,.0f} records/s")
    run.update(disks=disks, seconds=seconds, per_disk_s=per_disk_s, offered_rate=disks * per_disk_s,
               by_schema=by_schema, bytes_per_disk_s=sent.bytes_per_disk_s, events_per_disk_s=sent.events_per_disk_s)
    return run


def watch(cluster, job_id, replay, offsets, disks, start_ms):
    """Polls everything until the producer is done (and the last windows had time to land)
    or the fleet cannot be held; returns what was measured. Rates and lag are sampled while
    the producer sends."""
    checkpoints = Checkpoints(cluster.ports, job_id)
    probes = sorted({host_of(k * disks // PROBE_HOSTS) for k in range(PROBE_HOSTS)})
    windows = WindowRows(cluster, probes, start_ms * MS_NS)
    samples, cpu, busiest, stopped, limited_by, last_progress, done_at = [], {}, [], None, None, time.monotonic(), None
    profile = {}  # filled by a thread of its own: sampling takes a while, the loop must not wait
    profiler = None
    threads, sampler = [], None  # as the profile
    while True:
        time.sleep(POLL_S)
        now = time.monotonic()
        running_s = time.time() - start_ms / 1000
        checkpoints.poll()
        windows.poll()
        if running_s < 0:
            checkpoints.failed_before_records = checkpoints.counts.get("failed", 0)
        if replay.done():
            if replay.process.returncode:
                sys.exit(f"FleetReplay ended with code {replay.process.returncode}: see its output above")
            done_at = done_at or now
            if now - done_at > 2 * PROGRESS_EVERY_S:  # for the last closed windows to reach ClickHouse
                break
            continue
        produced, consumed = offsets.produced(), offsets.consumed()
        lag_s = age_of_oldest_unconsumed(samples, running_s, produced, consumed)
        samples.append((running_s, produced, consumed, lag_s))
        if not cpu and running_s > WARM_UP_S:
            cpu = cpu_by_container(cluster.project)
            sampler = threading.Thread(target=lambda: threads.append(cpu_by_thread(cluster_containers(cluster.project))),
                                       daemon=True)
            sampler.start()
        if now - last_progress >= PROGRESS_EVERY_S:
            last_progress = now
            if running_s > WARM_UP_S:
                # Flink publishes task metrics some seconds late: the latest snapshot that has them.
                busiest = [t for t in busiest_tasks(cluster.ports, job_id) if t[0] or t[1]] or busiest
                if busiest and profiler is None:
                    profiler = threading.Thread(target=profile_task, args=(cluster.ports, job_id, bottleneck(busiest), profile),
                                                daemon=True)
                    profiler.start()
            say(f"{disks:,} disks, {running_s:.0f} s: {samples[-1][1]:,} produced, {samples[-1][2]:,} checkpointed "
                f"(lag {lag_s:.0f} s), producer {replay.behind_s():.1f} s behind; checkpoints "
                f"{checkpoints.counts.get('completed', 0)} completed, {checkpoints.counts.get('failed', 0)} failed; "
                f"{len(windows.first_seen_ms)} probe windows in ClickHouse")
        if running_s > WARM_UP_S and max(lag_s, replay.behind_s()) > LAG_LIMIT_S:
            limited_by = "producer" if replay.behind_s() > LAG_LIMIT_S else "job"
            stopped = f"stopped after {running_s:.0f} s: " + (
                f"the producer fell {replay.behind_s():.0f} s behind the agents' clock" if limited_by == "producer"
                else f"the job's checkpointed offsets fell {LAG_LIMIT_S} s behind the records sent")
            say(f"{disks:,} disks: {stopped}")
            break
    for helper in (sampler, profiler):  # a short run may end while they still read
        if helper:
            helper.join(timeout=120)
    run = summarize(samples, checkpoints, windows, replay, start_ms)
    thread_shares, machine_cores = threads[0] if threads else ([], None)
    phases = {}
    if busiest:
        try:
            phases = checkpoint_phases(cluster.ports, job_id, profile.get("task") or bottleneck(busiest),
                                       completed_under_load(checkpoints, samples, start_ms)[-3:])
        except (KeyError, StopIteration, OSError, ValueError) as error:  # the figures still stand without them
            say(f"no checkpoint phases: {error!r}")
    run.update(stopped=stopped, limited_by=limited_by, cpu=cpu, threads=thread_shares, machine_cores=machine_cores,
               busiest=busiest, profile=dict(profile), checkpoint_phases=phases,
               logged_failures=checkpoint_failures_logged(cluster, job_id))
    return run


def age_of_oldest_unconsumed(samples, now_s, produced, consumed):
    """The job's lag in time: how long ago the oldest record it has not checkpointed was
    produced (to the resolution of the samples), 0 when it has checkpointed everything."""
    if consumed >= produced:
        return 0.0
    return now_s - next((t for t, then_produced, *_ in samples if then_produced > consumed), now_s)


def rate_after_warm_up(samples, column):
    """Records/s of a sample column between the first sample after WARM_UP_S and the last."""
    warm = [sample for sample in samples if sample[0] >= WARM_UP_S] or samples
    first, last = warm[0], warm[-1]
    return (last[column] - first[column]) / (last[0] - first[0]) if last[0] > first[0] else 0.0


def completed_under_load(checkpoints, samples, start_ms):
    """The completed checkpoints triggered while records were sent, not those after the records ended."""
    sending_until_ms = start_ms + (samples[-1][0] * 1000 if samples else 0)
    return [c for c in checkpoints.completed() if c["trigger_timestamp"] <= sending_until_ms]


def summarize(samples, checkpoints, windows, replay, start_ms):
    # Durations and sizes of the checkpoints taken under load.
    completed = completed_under_load(checkpoints, samples, start_ms)
    warm_sends = {at: done for at, done in replay.sent_ms.items() if done >= start_ms + WARM_UP_S * 1000}
    durations_s = [c["end_to_end_duration"] / 1000 for c in completed]
    latencies = sorted(windows.latencies_s(replay.sent_ms))
    warm = [sample for sample in samples if sample[0] >= WARM_UP_S] or samples
    return {
        "seconds_run": samples[-1][0] if samples else 0.0,
        "produced_rate": rate_after_warm_up(samples, 1),
        "consumed_rate": rate_after_warm_up(samples, 2),
        "max_lag_s": max((lag_s for *_, lag_s in warm), default=0.0),
        "producer_behind_s": max(((done - at) / 1000 for at, done in warm_sends.items()), default=0.0),
        "producer_behind_at_start_s": max(((done - at) / 1000 for at, done in replay.sent_ms.items()), default=0.0),
        "checkpoints_completed": checkpoints.counts.get("completed", 0),
        "checkpoints_under_load": len(completed),
        "checkpoints_failed": checkpoints.counts.get("failed", 0),
        # A checkpoint the job declined before the first record was sent did not meet the fleet.
        "failed_before_records": checkpoints.failed_before_records,
        "failed_under_load": checkpoints.counts.get("failed", 0) - checkpoints.failed_before_records,
        "failure_messages": [f"#{c['id']}: {c.get('failure_message', '?')}" for c in checkpoints.failed()],
        "checkpoints_in_progress": checkpoints.counts.get("in_progress", 0),
        "checkpoint_s_median": statistics.median(durations_s) if durations_s else None,
        "checkpoint_s_max": max(durations_s, default=None),
        "checkpointed_bytes_median": statistics.median([c["checkpointed_size"] for c in completed] or [None]),
        "state_bytes": completed[-1]["state_size"] if completed else None,
        "latency_p50_s": latencies[len(latencies) // 2] if latencies else None,
        "latency_p99_s": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] if latencies else None,
        "windows_measured": len(latencies),
    }


def held(run):
    """Held: the producer kept the agents' clock, the job's checkpointed offsets stayed within
    HELD_LAG_CHECKPOINTS intervals of the log end, and every checkpoint triggered once records
    flowed completed."""
    return (run["stopped"] is None and run["producer_behind_s"] <= PRODUCER_SLACK_S
            and run["max_lag_s"] <= HELD_LAG_CHECKPOINTS * run["checkpoint_interval_s"]
            and not run["failed_under_load"]
            and run["checkpoints_completed"] >= MIN_CHECKPOINTS)


# ---------------------------------------------------------------- the report

def figure(value, unit="", digits=0):
    return "-" if value is None else f"{value:,.{digits}f}{unit}"


def threads_listed(threads, top=14):
    """`kafka-2 data-plane-kafk 22% (+9%)`: a container (its service), a kind of thread, its
    share of a core on a CPU (and waiting for one); the `top` most on a CPU."""
    if not threads:
        return "-"
    return ", ".join(f"{service(container)} {name} {on_cpu:.0%} (+{waiting:.0%})"
                     for (container, name), (on_cpu, waiting) in threads[:top])


def taskmanager_cpu_us(run):
    """µs of the TaskManagers' CPU (all their threads, on a CPU, in the thread sample) per
    disk-second the job consumed (at the run's rate): all of it, the JIT compilers' and
    the garbage collector's."""
    disk_seconds = run["consumed_rate"] / run["per_disk_s"] if run.get("threads") else 0
    if not disk_seconds:
        return None
    parts = {"all": 0.0, "jit": 0.0, "gc": 0.0}
    for (container, name), (on_cpu, _) in run["threads"]:
        if service(container).startswith("flink-taskmanager"):
            parts["all"] += on_cpu
            parts["jit"] += on_cpu if "CompilerThre" in name else 0
            parts["gc"] += on_cpu if name.startswith(("GC Thread", "G# ")) else 0
    return {part: cores / disk_seconds * 1e6 for part, cores in parts.items()}


def taskmanager_cpu_listed(run):
    us = taskmanager_cpu_us(run)
    if not us:
        return "-"
    return (f"{us['all']:,.0f} µs, of which JIT compilers {us['jit']:,.0f}, garbage collection "
            f"{us['gc']:,.0f}, the rest {us['all'] - us['jit'] - us['gc']:,.0f}")


def phases_listed(phases):
    return " / ".join(f"{phases[name]:,.0f} ms" for name in ("start delay", "alignment", "sync", "async")) if phases else "-"


def machine_listed(cores):
    if not cores:
        return "-"
    busy, iowait, idle = cores
    return f"{busy:.2f} busy / {iowait:.2f} waiting on I/O / {idle:.2f} idle"


def service(container):
    """A compose container's service: kafka-2 of iopipe-bench-fleet-ab12_kafka-2_1."""
    return container.split("_")[-2] if container.count("_") >= 2 else container


def size_table(run):
    ratio = run["consumed_rate"] / run["plain_rate"] if run["plain_rate"] else None
    cpu = ", ".join(f"{name} {share}" for name, share in sorted(run["cpu"].items()))
    busiest = "; ".join(f"{name}: {busy:.0f}% / {pressured:.0f}%" for busy, pressured, name in run["busiest"])
    checkpoints = (f"{run['checkpoints_completed']} / {run['checkpoints_failed']} / {run['checkpoints_in_progress']} "
                   f"(every {figure(run['checkpoint_interval_s'], ' s')})")
    return "\n".join([
        f"### {run['disks']:,} disks: {'held' if held(run) else 'not held'}",
        "",
        "| measure | value |",
        "|---|---|",
        f"| agent records offered (fleet.py's rate) | {figure(run['offered_rate'])}/s |",
        f"| records/s produced (after the first {WARM_UP_S} s) | {figure(run['produced_rate'])} |",
        f"| producer behind the agents' clock, at most: after the first {WARM_UP_S} s / at its start | "
        f"{figure(run['producer_behind_s'], ' s', 1)} / {figure(run['producer_behind_at_start_s'], ' s', 1)} "
        f"(it used {figure(run['producer_cores'], ' cores', 2)}) |",
        f"| records/s the job consumed (checkpointed offsets) | {figure(run['consumed_rate'])} |",
        f"| job lag, at most (after the first {WARM_UP_S} s): age of the oldest record not checkpointed | "
        f"{figure(run['max_lag_s'], ' s', 1)} |",
        f"| plain KafkaConsumer (librdkafka), same records, job stopped | {figure(run['plain_rate'])} records/s |",
        f"| job / plain consumer | {figure(ratio, '', 2)} |",
        f"| checkpoints completed / failed / in progress at the end | {checkpoints} |",
        f"| failed checkpoints, once records flowed / before the first record | {run['failed_under_load']} / "
        f"{run['failed_before_records']} {failures(run)} |",
        f"| checkpoint duration while records were sent ({run['checkpoints_under_load']}), median / max | "
        f"{figure(run['checkpoint_s_median'], ' s', 1)} / {figure(run['checkpoint_s_max'], ' s', 1)} |",
        f"| checkpoint size, incremental (median) / full state (last) | "
        f"{figure(mib(run['checkpointed_bytes_median']), ' MiB', 1)} / {figure(mib(run['state_bytes']), ' MiB', 1)} |",
        f"| latency record → ClickHouse row, p50 / p99 ({run['windows_measured']} windows) | "
        f"{figure(run['latency_p50_s'], ' s', 1)} / {figure(run['latency_p99_s'], ' s', 1)} |",
        f"| run | {run['stopped'] or 'to the end of the records'} ({run['seconds_run']:.0f} s of sending measured) |",
        f"| CPU by container after {WARM_UP_S} s (docker stats) | {cpu or '-'} |",
        f"| CPU by thread then, over {THREAD_SAMPLE_S} s (/proc of each container): the container's threads of a "
        f"name, share of a core on a CPU (+ waiting for one) | {threads_listed(run.get('threads'))} |",
        f"| the machine's {os.cpu_count()} cores then (/proc/stat), in cores | {machine_listed(run.get('machine_cores'))} |",
        f"| TaskManager CPU per disk-second consumed (their threads on a CPU then, at the run's rate) | "
        f"{taskmanager_cpu_listed(run)} |",
        f"| the job's busiest tasks then: busy / back-pressured, of the busiest subtask | {busiest or '-'} |",
        *profile_rows(run.get("profile")),
        f"| its checkpoints (the last 3 completed while records were sent, their slowest subtask): barrier's wait / "
        "alignment / sync / async | "
        f"{phases_listed(run.get('checkpoint_phases'))} |",
        *insert_rows(run.get("inserts")),
        ""])


def insert_rows(inserts):
    if not inserts:
        return []
    busiest = max(inserts.items(), key=lambda item: item[1]["per_s"])
    fewest_rows = min(inserts.items(), key=lambda item: item[1]["rows_per_insert"])
    return ["| ClickHouse inserts (system.parts: block numbers taken), per table: inserts/s, rows per insert | "
            + ", ".join(f"{table} {t['per_s']:.2f}/s × {t['rows_per_insert']:,.0f}" for table, t in inserts.items())
            + " |",
            f"| ClickHouse: the table inserted most often / fewest rows per insert / most active parts in a "
            f"partition | {busiest[0]} {busiest[1]['per_s']:.2f}/s / {fewest_rows[0]} "
            f"{fewest_rows[1]['rows_per_insert']:,.0f} / {max(t['most_parts'] for t in inserts.values())} |"]


def profile_rows(profile):
    if not profile:
        return ["| the task the others wait for, on CPU (Flink's flame graph) | - |"]

    def short(method):
        # Class.method of a frame; a native or unknown frame ("[unknown]", "libc.so") as it is named.
        return '.'.join(method.rsplit('.', 2)[-2:])

    def listed(shares, callers=None):
        # A JDK method named with the caller it worked for most: Unsafe.unpark (from TaskMailboxImpl.put).
        return "; ".join(f"{short(method)} {share:.0%}"
                         + (f" (from {short(callers[method])})" if callers and callers.get(method) else "")
                         for method, share in shares)
    return [f"| the task the others wait for (the busiest not back-pressured for half its busy time), on CPU: "
            f"{profile['task']}, {profile['samples']:,} stack samples: methods on top (self) | "
            f"{listed(profile['self'], profile.get('callers'))} |",
            f"| the same samples: iopipe's methods anywhere on the stack (inclusive) | {listed(profile['iopipe'])} |"]


def failures(run):
    """Why checkpoints failed: the REST history's messages, else the JobManager's log."""
    reasons = run["failure_messages"] or run["logged_failures"]
    return f"({'; '.join(reasons)})" if reasons else ""


def mib(value):
    return None if value is None else value / 2**20


def sizing(runs, shape):
    """What a TARGET_DISKS fleet needs, from the measured per-slot rate and state: the figures
    RESULTS-fleet.md states and infra/k8s/flink.yaml is tested against (SIZING)."""
    fastest = max(runs, key=lambda r: r["consumed_rate"])
    per_slot = fastest["consumed_rate"] / shape["parallelism"]
    if not per_slot:
        return None
    needed = TARGET_DISKS * fastest["per_disk_s"]
    out = {"target_disks": TARGET_DISKS, "records_per_disk_s": round(fastest["per_disk_s"], 3),
           "records_s": round(needed), "best_records_s": round(fastest["consumed_rate"]),
           "best_at_disks": fastest["disks"], "measured_slots": shape["parallelism"],
           "per_slot_records_s": round(per_slot), "job_limited": fastest["limited_by"] == "job",
           "slots_by_rate": math.ceil(needed / per_slot), "slots_by_state": 0,
           "slots_per_taskmanager": shape["slots_per_taskmanager"], "partitions": shape["partitions"]}
    # A size the job fell far behind on had not read every disk by its checkpoints: per-disk state from
    # the largest size it read to the end, else the smallest.
    with_state = [r for r in runs if r["state_bytes"]]
    to_the_end = [r for r in with_state if not r["stopped"]]
    if with_state:
        largest = max(to_the_end, key=lambda r: r["disks"]) if to_the_end else min(with_state, key=lambda r: r["disks"])
        out.update(state_bytes_per_disk=round(largest["state_bytes"] / largest["disks"]), state_at_disks=largest["disks"],
                   managed_bytes_per_slot=round(shape["managed_per_slot"]))
        out["slots_by_state"] = math.ceil(TARGET_DISKS * out["state_bytes_per_disk"] / shape["managed_per_slot"])
    out["slots"] = max(out["slots_by_rate"], out["slots_by_state"])
    return out


def slots_for_target(size):
    """RESULTS-fleet.md's section on the slots a TARGET_DISKS fleet needs."""
    lines = [f"## TaskManager slots for {TARGET_DISKS:,} disks", ""]
    if size is None:
        return "\n".join(lines + ["No size consumed records: no estimate.", ""])
    bound = "" if size["job_limited"] else " (the job did not limit that size: a slot does at least this)"
    lines.append(
        f"- Records: {TARGET_DISKS:,} disks × {size['records_per_disk_s']:.2f} records per disk-second = "
        f"{size['records_s']:,} records/s. The job's best rate was {size['best_records_s']:,} records/s, at "
        f"{size['best_at_disks']:,} disks on {size['measured_slots']} slots: {size['per_slot_records_s']:,} per slot"
        f"{bound}. {size['slots_by_rate']} slots.")
    if "state_bytes_per_disk" in size:
        total = TARGET_DISKS * size["state_bytes_per_disk"]
        lines.append(
            f"- State: {size['state_bytes_per_disk']:,} bytes per disk (the last full checkpoint at "
            f"{size['state_at_disks']:,} disks), {mib(total):,.0f} MiB for {TARGET_DISKS:,} disks; for each slot's "
            f"share to fit its RocksDB managed memory ({mib(size['managed_bytes_per_slot']):,.0f} MiB per slot here), "
            f"{size['slots_by_state']} slots.")
    slots = size["slots"]
    lines += [
        f"- So {slots} slots ({math.ceil(slots / size['slots_per_taskmanager'])} TaskManagers of "
        f"{size['slots_per_taskmanager']}), the job at parallelism {slots}; each agent topic needs at least as many "
        f"partitions to feed them (it has {size['partitions']} now). A slot here shared {CPUS} cores with Kafka, "
        "ClickHouse and the producer: slots with a core of their own do more, so this is an upper bound. "
        f"These figures are in {SIZING.name}, which infra/k8s/flink.yaml's slots are tested against.",
        ""]
    return "\n".join(lines)


BATCHED_NOTE = ("; the agent's records batched a disk and interval at a time, its diskstats sample with its "
                "histograms and its events together: iopipe/record_batches.py")


EVENTS_NOTE = ("the events the agent's default sampling (schema/sampling.json) sends of these disks' I/O: every outlier "
               "fleet.py draws, about 1 in uniform_every of the other I/Os and every I/O of a quiet disk; left out, the "
               "common I/Os past a disk's outlier quantile, at most as many again as the uniform sample.")


def report(runs, shape, command):
    held_runs = [r for r in runs if held(r)]
    first = runs[0]
    mix = ", ".join(f"{schema} {count / (TEMPLATE_DISKS * first['seconds']):.2f}"
                    for schema, count in sorted(first["by_schema"].items()))
    lines = [
        "# Stream jobs at fleet scale: the live job on the cluster, checkpoints on",
        "",
        f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC by `{command}` on {CPUS} CPUs, "
        f"{memory_gib():.0f} GiB: the cluster of `make cluster-up` (Kafka 3 nodes, every partition on all 3, "
        f"`acks=all`; ZooKeeper; Flink 2.3 with a standby JobManager and {shape['taskmanagers']} TaskManagers of "
        f"{shape['slots_per_taskmanager']} slots, the live job at parallelism {shape['parallelism']}, RocksDB, "
        "incremental checkpoints; ClickHouse 2 replicas reading every topic), the producer on the same machine.",
        "",
        f"Each size from cold: the agent topics emptied, fresh TaskManagers (restarted) and a fresh live job, then {first['seconds']} s of a fleet's records on the "
        f"wall clock as `iopipe/synthetic/fleet.py` makes them: {TEMPLATE_DISKS} of its healthy disks (every kind, each "
        "one drive model, in every place on a host), each copied onto many hosts by `FleetReplay`; per disk-second "
        f"{first['per_disk_s']:.2f} records ({mix}{BATCHED_NOTE if 'io.interval.v1' in first['by_schema'] else ''}), "
        f"{first['bytes_per_disk_s']:,.0f} bytes of JSON before signing, {first['events_per_disk_s']:.1f} events: "
        f"{EVENTS_NOTE} "
        "Records/s consumed: the job's consumer group's offsets, committed "
        f"by each checkpoint. Latency: for the disks of {PROBE_HOSTS} hosts, from when a {BASE_WINDOW_S} s "
        "window's last second was sent to Kafka to when its row is first seen in either ClickHouse replica (polled "
        f"every {POLL_S} s); it includes the job's wait for each disk's clock to pass the window's end by the "
        f"{PIPELINE['out_of_orderness_s']} s out-of-orderness. The plain consumer reads the same records after "
        f"the job is stopped, for up to {PLAIN_READ_S} s. A size stops once its lag (the age of the oldest record not checkpointed) passes "
        f"{LAG_LIMIT_S} s or the producer falls that far behind; it is held when the producer kept the clock (within "
        f"{PRODUCER_SLACK_S} s, after its first {WARM_UP_S} s), the lag stayed within {HELD_LAG_CHECKPOINTS} "
        "checkpoint intervals and every checkpoint triggered once records flowed completed. A job that keeps up "
        "consumes what the fleet sends, so its ratio to the plain consumer is headroom; where it cannot, the ratio "
        "is the job's own ceiling.",
        "",
        *(size_table(r) for r in runs),
        "## Result",
        "",
        (f"Largest fleet held with every checkpoint completing: {max(r['disks'] for r in held_runs):,} disks."
         if held_runs else "No fleet size was held."),
        *(f"{r['disks']:,} disks were not: {why_not_held(r)}" for r in runs if not held(r)),
        *job_ceiling(runs),
        "",
        slots_for_target(sizing(runs, shape)),
        f"Rerun: `make bench-fleet` (`python3 -m iopipe.bench.scale --disks {SIZES} --seconds {SECONDS}`).",
        ""]
    return "\n".join(lines)


def job_ceiling(runs):
    """The job's best rate where it could not keep up, in disks: the fleet it could hold here."""
    saturated = [r for r in runs if r["limited_by"] == "job"]
    if not saturated:
        return []
    best = max(saturated, key=lambda r: r["consumed_rate"])
    lines = [f"Where the job could not keep up, at {best['disks']:,} disks, it consumed {best['consumed_rate']:,.0f} "
             f"records/s, the records of {best['consumed_rate'] / best['per_disk_s']:,.0f} disks, while Kafka and "
             "ClickHouse took in that fleet's records on the same cores."]
    on_cpu, waiting = (sum(times[i] for _, times in best.get("threads", [])) for i in (0, 1))
    if best.get("machine_cores") and best["machine_cores"][2] < 0.05 * CPUS and waiting > on_cpu:
        lines.append(f"The machine's {CPUS} cores were busy then ({machine_listed(best['machine_cores'])}), and its "
                     f"threads waited for a CPU longer than they ran ({waiting:.1f} cores' worth waiting, {on_cpu:.1f} "
                     "running): the limit here is the machine's CPU, and what moves it is CPU saved anywhere on it, "
                     "the job's or not.")
    return lines


def why_not_held(run):
    reasons = []
    if run["stopped"]:
        reasons.append(run["stopped"])
    if run["producer_behind_s"] > PRODUCER_SLACK_S:
        reasons.append(f"the producer could not send the fleet's {run['offered_rate']:,.0f} records/s on time "
                       f"(at most {run['producer_behind_s']:.0f} s behind, {run['produced_rate']:,.0f} records/s sent)")
    if run["max_lag_s"] > HELD_LAG_CHECKPOINTS * run["checkpoint_interval_s"]:
        reasons.append(f"the job fell {run['max_lag_s']:.0f} s behind, consuming "
                       f"{run['consumed_rate']:,.0f} of {run['produced_rate']:,.0f} records/s sent")
    if run["failed_under_load"]:
        reasons.append(f"{run['failed_under_load']} checkpoints failed once records flowed {failures(run)}")
    if run["checkpoints_completed"] < MIN_CHECKPOINTS:
        reasons.append(f"only {run['checkpoints_completed']} checkpoints completed")
    return "; ".join(reasons) + "."


# ---------------------------------------------------------------- main

# What `make bench-fleet` runs: the largest size held is the result, so the smallest is one the
# job keeps up with on this 2-core machine (RESULTS-fleet.md says at what rate).
SIZES = "1000,10000,20000"
SECONDS = 150


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--disks", default=SIZES, help="fleet sizes, in the order run")
    parser.add_argument("--seconds", type=int, default=SECONDS, help="seconds of agent records per size")
    parser.add_argument("--records", choices=sorted(AGENT_RECORDS), default="batched",
                        help="the agent records one by one, or batched (io.interval.v1, io.eventbatch.v1)")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    java_classpath()  # exits naming what to build when a jar is missing
    command = "make bench-fleet" if (args.disks, args.seconds, args.records) == (SIZES, SECONDS, "batched") else \
        f"python3 -m iopipe.bench.scale --disks {args.disks} --seconds {args.seconds} --records {args.records}"
    cluster = stack.Cluster.fresh(f"iopipe-bench-fleet-{uuid.uuid4().hex[:8]}")
    try:
        stack.cluster_up(cluster, submit=False)
        stack.migrate_clickhouse(cluster.ports, cluster.users, stack.CLICKHOUSE_CLUSTER)
        shape = cluster_shape(cluster.ports, args.records)
        runs = []
        for disks in args.disks.split(","):
            if runs:
                fresh_taskmanagers(cluster, shape)
            runs.append(run_size(cluster, int(disks), args.seconds, args.records))
    finally:
        say("removing the cluster")
        stack.cluster_down(cluster)
    text = report(runs, shape, command)
    print(text)
    Path(args.out).write_text(text)
    say(f"wrote {args.out}")
    size = sizing(runs, shape)
    if size and args.out == str(OUT):
        SIZING.write_text(json.dumps({"measured": f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC", "command": command,
                                      **size}, indent=2) + "\n")
        say(f"wrote {SIZING}")


if __name__ == "__main__":
    main()
