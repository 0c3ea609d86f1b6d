"""Benchmarks that need the stack: each writes its RESULTS file beside the component it measures.

The stream jobs' benchmarks send a fleet made of template disks: write_templates writes
TEMPLATE_DISKS of iopipe/synthetic/fleet.py's healthy disks' records to a file, and the
Java benchmark given fleet_options copies them onto as many hosts as it is asked for
(io.iopipe.jobs.bench.TemplateFleet)."""
import json
import math
import random
import re
import sys
from collections import namedtuple

from iopipe import record_batches
from iopipe.contract import moved_in_time
from iopipe.flink_rest import JOB_JAR
from iopipe.paths import REPO
from iopipe.synthetic import fleet
from iopipe.synthetic.agent_records import EVENT
from iopipe.synthetic.scenarios import START_NS, time_of

JOBS = REPO / "stream-jobs"
BENCH_JAR = JOBS / "target" / "iopipe-stream-bench.jar"  # the benchmarks' classes, kept out of the job jar
OFFLINE_CLASSPATH = JOBS / "target" / "offline-classpath.txt"
MS_NS = 1_000_000
# Every kind of fleet.py disk in every place on a host, so hosts' disks keep distinct names.
TEMPLATE_DISKS = math.lcm(len(fleet.kinds(random.Random(0))), fleet.DISKS_PER_HOST)
HOST_PREFIX = "bench-"
START_FLINK = REPO / "infra" / "flink" / "start-flink.sh"
HOST_PLACEHOLDER = "{host}"  # in the template records, where TemplateFleet puts each copy's host


def taskmanager_java_options():
    """The JVM options the stack's TaskManagers run with (env.java.opts.taskmanager in
    infra/flink/start-flink.sh): a benchmark's cluster in its own JVM runs as they do."""
    found = re.search(r"^ +taskmanager: (.+)$", START_FLINK.read_text(), re.M)
    if not found:
        sys.exit(f"{START_FLINK} sets no env.java.opts.taskmanager")
    return found[1].split()


def taskmanager_memory_options():
    """What the stack's TaskManagers have (infra/flink/start-flink.sh), as a benchmark's
    options: their process size as Flink writes it (2048m) and their slots, for its cluster to
    give each slot the managed memory (RocksDB's) a TaskManager's slot has."""
    text = START_FLINK.read_text()
    size = re.search(r"^taskmanager:\n(?:  .*\n)*?  memory:\n    process:\n      size: (\S+)$", text, re.M)
    slots = re.search(r"^  numberOfTaskSlots: \$\{FLINK_TASK_SLOTS:-(\d+)\}$", text, re.M)
    if not size or not slots:
        sys.exit(f"{START_FLINK} sets no taskmanager.memory.process.size or taskmanager.numberOfTaskSlots")
    return ["--taskmanager-process-size", size[1], "--taskmanager-slots", slots[1]]


def java_classpath():
    """What `java -cp` runs a benchmark class of stream-jobs/src/bench with: the job jar, the
    benchmarks' jar and their dependencies, all built by `make jobs`."""
    missing = [str(path) for path in (JOB_JAR, BENCH_JAR, OFFLINE_CLASSPATH) if not path.exists()]
    if missing:
        sys.exit(f"{', '.join(missing)} missing: run `make jobs` first")
    return f"{JOB_JAR}:{BENCH_JAR}:{OFFLINE_CLASSPATH.read_text().strip()}"


# What the template disks send, per disk-second: records, their bytes (unsigned, as JSON),
# the agent's events (alone or in batches), and records by schema over the whole template.
Templates = namedtuple("Templates", "per_disk_s bytes_per_disk_s events_per_disk_s by_schema")


def write_templates(path, seconds, start_ms=START_NS // MS_NS, batched=False):
    """The template disks' records over `seconds`, fleet.py's clock moved to start at
    `start_ms` (by default its own), as TemplateFleet reads them: each disk's second is sent
    when it ends (its latest time); `batched`: as the batched records (iopipe.record_batches).
    Their disks send the events the agent's default sampling would (schema/sampling.json).
    Returns what they send (Templates)."""
    shift_ns = start_ms * MS_NS - START_NS
    disks = fleet.healthy_disks(TEMPLATE_DISKS, as_the_agent_samples=True)
    by_schema, events, size = {}, 0, 0
    with open(path, "w") as out:
        for second in range(seconds):
            for j, disk in enumerate(disks):
                records = disk.second(second)
                events += sum(record["schema"] == EVENT for record in records)
                send_at_ms = (max(time_of(record) for record in records) + shift_ns) // MS_NS
                if batched:
                    records = record_batches.batched(records)
                records = [{**moved_in_time(record, shift_ns), "host": HOST_PLACEHOLDER} for record in records]
                for record in records:
                    by_schema[record["schema"]] = by_schema.get(record["schema"], 0) + 1
                for record in records:
                    line = json.dumps(record, separators=(',', ':'))
                    size += len(line)
                    out.write(f"{send_at_ms}\t{j}\t{line}\n")
    disk_seconds = TEMPLATE_DISKS * seconds
    return Templates(sum(by_schema.values()) / disk_seconds, size / disk_seconds, events / disk_seconds, by_schema)


def fleet_options(templates, disks):
    """The options that tell a Java benchmark to send `disks` disks made of the template
    disks written to `templates`, DISKS_PER_HOST of them to a host named HOST_PREFIX<n>."""
    return ["--templates", str(templates), "--template-disks", str(TEMPLATE_DISKS), "--disks", str(disks),
            "--host-placeholder", HOST_PLACEHOLDER, "--host-prefix", HOST_PREFIX,
            "--disks-per-host", str(fleet.DISKS_PER_HOST)]
