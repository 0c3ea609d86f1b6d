"""Throughput of the stream jobs against a plain Kafka consumer, and state bytes per disk:
writes the template disks' records (iopipe.bench.write_templates, iopipe/synthetic/fleet.py's
healthy disks), starts Kafka (the stack's image) on free ports, runs
io.iopipe.jobs.bench.StreamBenchmark against it on a fleet made of those disks, stops Kafka.
Results: stream-jobs/bench/RESULTS.md, and where the job's CPU goes in stream-jobs/bench/PROFILE.md.

    make bench-jobs      (or: python3 -m iopipe.bench.jobs [--disks N --seconds S --rounds R] [--profile-only | --state-only])"""
import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from iopipe import stack
from iopipe.bench import JOBS, TEMPLATE_DISKS, fleet_options, java_classpath, taskmanager_java_options, write_templates
from iopipe.ports import Ports
from iopipe.readiness import container_alive, container_log_contains, wait_for
from iopipe.stack_kafka import kafka_java_config

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
    parser.add_argument("--disks", type=int, default=3000, help=f"disks in the fleet: its {TEMPLATE_DISKS} template disks copied in turn")
    parser.add_argument("--seconds", type=int, default=60, help="seconds of the fleet's records the readers read")
    parser.add_argument("--rounds", default="5", help="rounds of every reader; the first runs on a cold JIT")
    parser.add_argument("--out", default=str(JOBS / "bench/RESULTS.md"))
    parser.add_argument("--profile-out", default=str(JOBS / "bench/PROFILE.md"), help="where the CPU profile goes")
    parser.add_argument("--profile-only", action="store_true", help="only profile the job as it runs (after a warm-up)")
    parser.add_argument("--state-only", action="store_true",
                        help="only the keyed state per disk, as the job's serializers write it (no Kafka, no run)")
    parser.add_argument("--records", choices=("single", "batched"), default="single",
                        help="the agent records one by one, or batched as the agent sends them by default (--profile-only: "
                             "the flight-recording disk is made of single events)")
    args = parser.parse_args()
    if args.records == "batched" and not args.profile_only:
        sys.exit("--records batched profiles only (add --profile-only): the flight-recording disk sends single events")
    classpath = java_classpath()
    with tempfile.TemporaryDirectory() as scratch:
        templates = Path(scratch) / "templates.tsv"
        seconds = max(args.seconds, STATE_S)
        print(f"[bench] writing {TEMPLATE_DISKS} template disks' records over {seconds} s", flush=True)
        write_templates(templates, seconds, batched=args.records == "batched")
        benchmark = ["java", *taskmanager_java_options(), f"-Dlog4j.configurationFile={JOBS / 'offline-log4j2.properties'}",
                     "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.util=ALL-UNNAMED",
                     "-cp", classpath, "io.iopipe.jobs.bench.StreamBenchmark", *fleet_options(templates, args.disks),
                     "--seconds", str(args.seconds)]
        if args.state_only:
            subprocess.run([*benchmark, "--state-only", "yes"], check=True)
            return
        ports = Ports.free()
        kafka = start_kafka(ports)
        try:
            subprocess.run([*benchmark, "--brokers", ports.brokers, "--rounds", args.rounds, "--out", args.out,
                            "--profile-out", args.profile_out, *(["--profile-only", "yes"] if args.profile_only else []),
                            "--kafka-config", str(kafka_java_config(ports.brokers))], check=True)
        finally:
            subprocess.run(["docker", "stop", kafka], check=False, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
