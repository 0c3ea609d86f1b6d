"""Throughput of the stream jobs against a plain Kafka consumer, and state bytes per disk:
starts Kafka (the stack's image) on free ports, runs io.iopipe.jobs.bench.StreamBenchmark
against it, stops Kafka. Results: stream-jobs/bench/RESULTS.md.

    make bench-jobs      (or: python3 -m iopipe.bench.jobs [--disks N --seconds S --rounds R])"""
import argparse
import subprocess

from iopipe import stack
from iopipe.bench import JOBS, java_classpath


def start_kafka(ports):
    name = stack.start_container("iopipe/kafka:dev", ports)
    stack.wait_for("Kafka topics", lambda: stack.container_alive(name)
                   and stack.container_log_contains(name, "iopipe: topics ready"))
    return name


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--disks", default="3000")
    parser.add_argument("--seconds", default="60")
    parser.add_argument("--rounds", default="5")
    parser.add_argument("--out", default=str(JOBS / "bench/RESULTS.md"))
    args = parser.parse_args()
    classpath = java_classpath()
    ports = stack.Ports.free()
    kafka = start_kafka(ports)
    try:
        subprocess.run(["java", f"-Dlog4j.configurationFile={JOBS / 'offline-log4j2.properties'}",
                        "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.util=ALL-UNNAMED",
                        "-cp", classpath, "io.iopipe.jobs.bench.StreamBenchmark",
                        "--brokers", ports.brokers, "--disks", args.disks, "--seconds", args.seconds,
                        "--rounds", args.rounds, "--out", args.out,
                        "--kafka-config", str(stack.kafka_java_config(ports.brokers))], check=True)
    finally:
        subprocess.run(["docker", "stop", kafka], check=False, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
