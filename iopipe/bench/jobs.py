"""Throughput of the stream jobs against a plain Kafka consumer, and state bytes per disk:
writes the template disks' records (iopipe.bench.write_templates, iopipe/synthetic/fleet.py's
healthy disks), starts Kafka (the stack's image) on free ports, runs
io.iopipe.jobs.bench.StreamBenchmark against it on a fleet made of those disks, stops Kafka.
Results: stream-jobs/bench/RESULTS.md, and where the job's CPU goes in stream-jobs/bench/PROFILE.md.
With --models-only, what a model of many flash drives costs the one subtask that judges
it (io.iopipe.jobs.bench.ModelPeersBenchmark, no Kafka): stream-jobs/bench/RESULTS-models.md.

    make bench-jobs      (or: python3 -m iopipe.bench.jobs [--disks N --seconds S --rounds R]
                          [--records batched|single] [--profile-only | --state-only | --models-only])"""
import argparse
import datetime
import os
import subprocess
import tempfile
from pathlib import Path

from iopipe import stack
from iopipe.bench import (JOBS, TEMPLATE_DISKS, fleet_options, java_classpath, taskmanager_java_options, taskmanager_memory_options,
                          write_templates)
from iopipe.ports import Ports
from iopipe.readiness import container_alive, container_log_contains, wait_for
from iopipe.stack_kafka import kafka_java_config

MODELS_OUT = JOBS / "bench" / "RESULTS-models.md"
# What Flink's serializers reach into on this JDK.
JAVA_OPENS = ("--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.util=ALL-UNNAMED")

# How long a template disk's records run for its state per disk: its detectors' baselines
# learnt, its longer windows and latency rollups filled many times over.
STATE_S = 600


def start_kafka(ports):
    name = stack.start_container("iopipe/kafka:dev", ports)
    wait_for("Kafka topics", lambda: container_alive(name)
             and container_log_contains(name, "iopipe: topics ready"))
    return name


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--disks", type=int, default=10000, help=f"disks in the fleet: its {TEMPLATE_DISKS} template disks copied in turn")
    parser.add_argument("--seconds", type=int, default=30, help="seconds of the fleet's records the readers read")
    parser.add_argument("--rounds", default="3", help="rounds of every reader, after the job has warmed the JIT up")
    parser.add_argument("--out", default=str(JOBS / "bench/RESULTS.md"))
    parser.add_argument("--profile-out", default=str(JOBS / "bench/PROFILE.md"), help="where the CPU profile goes")
    parser.add_argument("--profile-only", action="store_true", help="only profile the job as it runs (after a warm-up)")
    parser.add_argument("--profile-recording", help="where to keep the profile's Flight Recorder recording (for `jfr print` "
                                                    "or JDK Mission Control); else it is deleted")
    parser.add_argument("--state-only", action="store_true",
                        help="only the keyed state per disk, as the job's serializers write it (no Kafka, no run)")
    parser.add_argument("--records", choices=("single", "batched"), default="batched",
                        help="the agent records batched, as the agent sends them by default, or one by one (either way "
                             "the flight-recording disk sends each of its reads as an event of its own)")
    parser.add_argument("--models-only", action="store_true",
                        help="only what a model of 100, 1,000 and 10,000 flash drives costs its subtask (no Kafka)")
    args = parser.parse_args()
    if args.models_only:
        return models_only(java_classpath(), args.rounds)
    classpath = java_classpath()
    with tempfile.TemporaryDirectory() as scratch:
        templates = Path(scratch) / "templates.tsv"
        seconds = max(args.seconds, STATE_S)
        print(f"[bench] writing {TEMPLATE_DISKS} template disks' records over {seconds} s", flush=True)
        write_templates(templates, seconds, batched=args.records == "batched")
        # The flight-recording comparison's fleet sends one by one, batched or not: its recording
        # disk's reads are single events, and the quiet fleet's records are the most a disk's I/O makes.
        recording_templates = Path(scratch) / "recording-templates.tsv"
        write_templates(recording_templates, args.seconds)
        benchmark = [*java_command(classpath, "io.iopipe.jobs.bench.StreamBenchmark"), *fleet_options(templates, args.disks),
                     "--seconds", str(args.seconds), *taskmanager_memory_options()]
        if args.state_only:
            subprocess.run([*benchmark, "--state-only", "yes"], check=True)
            return
        ports = Ports.free()
        kafka = start_kafka(ports)
        try:
            subprocess.run([*benchmark, "--brokers", ports.brokers, "--rounds", args.rounds, "--out", args.out,
                            "--recording-templates", str(recording_templates),
                            "--profile-out", args.profile_out, *(["--profile-only", "yes"] if args.profile_only else []),
                            *(["--profile-recording", str(Path(args.profile_recording).resolve())] if args.profile_recording else []),
                            *broker_cpu_option(kafka),
                            "--kafka-config", str(kafka_java_config(ports.brokers))], check=True)
        finally:
            subprocess.run(["docker", "stop", kafka], check=False, stdout=subprocess.DEVNULL)


def broker_cpu_option(container):
    """The broker container's CPU account for the profile (--broker-cpu): cgroup v1's
    cpuacct.usage or v2's cpu.stat, wherever this Docker keeps it; none if not found."""
    full_id = subprocess.run(["docker", "inspect", "-f", "{{.Id}}", container],
                             capture_output=True, text=True).stdout.strip()
    # Without an id the paths below would name Docker's own cgroup: every container's CPU.
    for account in container_cpu_accounts(full_id) if full_id else []:
        if account.exists():
            return ["--broker-cpu", str(account)]
    print("[bench] the broker container's CPU account was not found: the profile leaves the broker out", flush=True)
    return []


def container_cpu_accounts(full_id, root=Path("/sys/fs/cgroup")):
    """Where a container's CPU account may be: under the cgroupfs or the systemd driver, cgroup v1 or v2."""
    return [root / "cpuacct" / "docker" / full_id / "cpuacct.usage",
            root / "cpuacct" / "system.slice" / f"docker-{full_id}.scope" / "cpuacct.usage",
            root / "docker" / full_id / "cpu.stat",
            root / "system.slice" / f"docker-{full_id}.scope" / "cpu.stat"]


def java_command(classpath, main_class):
    """A benchmark's JVM, run as the TaskManagers run theirs."""
    return ["java", *taskmanager_java_options(), f"-Dlog4j.configurationFile={JOBS / 'offline-log4j2.properties'}",
            *JAVA_OPENS, "-cp", classpath, main_class]


def models_only(classpath, rounds):
    """Runs ModelPeersBenchmark and writes its table, with when, where and how, to RESULTS-models.md."""
    table = subprocess.run([*java_command(classpath, "io.iopipe.jobs.bench.ModelPeersBenchmark"), "--rounds", rounds,
                            *taskmanager_memory_options()],
                           check=True, stdout=subprocess.PIPE, text=True).stdout
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    MODELS_OUT.write_text(
        "# A model of many flash drives on the one subtask that judges it\n\n"
        f"Measured {when} on {os.cpu_count()} CPUs by `python3 -m iopipe.bench.jobs --models-only --rounds {rounds}` "
        "(io.iopipe.jobs.bench.ModelPeersBenchmark). \"flash vs its model\" is keyed by model, so all of a model's "
        "drives are judged on one subtask: each run below judges the same windows of one model on one subtask, "
        "with the managed memory of a slot of the stack's TaskManagers (infra/flink/start-flink.sh), "
        "RocksDB state and incremental checkpoints as the live job has them, beside a keyed step that only counts "
        "each drive's windows in the same kind of state.\n\n" + table)
    print(f"[bench] wrote {MODELS_OUT}", flush=True)


if __name__ == "__main__":
    main()
