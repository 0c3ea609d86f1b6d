"""ClickHouse ingestion from Kafka against the raw Kafka consume rate, side by side: a topic
of agent histograms (io.hist.v1, in the topic the stream job passes those it accepted on
to) read by a plain consumer, then by a freshly migrated warehouse, where every Kafka
table of the topic (the histograms table's) reads all of it. Results: schema/bench/RESULTS-ingest.md.

    make bench-ingest   (or: python3 -m iopipe.bench.ingest [--messages 500000 --runs 3])

Both clocks start before the reader joins its consumer group and stop when the last
message is read (the consumer) or stored (each table); the ratio to the raw rate is what
the ClickHouse path costs. The messages are a fleet's histograms, one per disk, op and
latency kind each second, as agents send them.
"""
import argparse
import json
import os
import statistics
import subprocess
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer

from iopipe import readiness, stack
from iopipe.kafka_access import CLICKHOUSE, CLICKHOUSE_GROUP
from iopipe.migrate import Migrator, kafka_tables_of
from iopipe.paths import REPO
from iopipe.ports import Ports
from iopipe.stack_kafka import kafka_client

RECORD = "io.hist.v1"
# ClickHouse reads the histograms the stream job accepted, from the topic it passes them on to.
TOPIC = next(t["name"] for t in json.loads((REPO / "schema" / "topics.json").read_text())["accepted"] if t["record"] == RECORD)
NS = 1_000_000_000
DISKS = ("sda", "sdb", "sdc", "sdd", "nvme0n1")
OPS, KINDS = ("R", "W"), ("device", "queue", "total")


def histogram(i, start_s):
    """The i-th message of a fleet whose hosts each send 5 disks × 2 ops × 3 kinds a second."""
    per_second = len(DISKS) * len(OPS) * len(KINDS)
    host, second, k = i // (per_second * 60), (i // per_second) % 60, i % per_second
    disk, op, kind = DISKS[k // 6], OPS[k // 3 % 2], KINDS[k % 3]
    buckets = [0] * 21
    buckets[8 + i % 5], buckets[12] = 40 + i % 17, 3
    start_ns = (start_s + second) * NS
    return {"schema": RECORD, "host": f"bench-{host:05d}", "disk": disk, "op": op, "latency": kind,
            "start_ns": start_ns, "end_ns": start_ns + NS, "buckets_log2_us": buckets,
            "count": sum(buckets), "sum_us": sum(buckets) * 900, "max_us": 8191, "errors": 0}


def produce(brokers, n):
    producer = Producer({**kafka_client(brokers), "linger.ms": 50, "compression.type": "lz4"})
    start_s = int(time.time()) // 60 * 60
    for i in range(n):
        record = histogram(i, start_s)
        while True:
            try:
                producer.produce(TOPIC, key=f"{record['host']}/{record['disk']}", value=json.dumps(record))
                break
            except BufferError:
                producer.poll(0.1)
        if i % 100_000 == 0:
            readiness.say(f"produced {i:,} of {n:,}")
    assert producer.flush(120) == 0, "every message delivered"


def raw_consume_s(brokers, n):
    """Seconds for a plain consumer in a new group to read all n messages from the start, as
    ClickHouse's principal, over the same listener (TLS with its certificate)."""
    consumer = Consumer({**kafka_client(brokers, CLICKHOUSE),
                         "group.id": f"{CLICKHOUSE_GROUP}-bench-raw-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    started, read = time.monotonic(), 0
    consumer.subscribe([TOPIC])
    while read < n:
        read += sum(1 for m in consumer.consume(num_messages=10_000, timeout=1.0) if not m.error())
    took = time.monotonic() - started
    consumer.close()
    return took


def warehouse_ingest_s(client, brokers, n):
    """{table: seconds} until each table fed from the topic holds all of it, counted from
    the moment a new database's migrations begin (its consumer groups are new)."""
    db = f"ingest_{uuid.uuid4().hex[:8]}"
    migrator = Migrator(client, db=db, kafka_brokers=brokers, kafka_group=f"{CLICKHOUSE_GROUP}-{db}", log=lambda _: None)
    started = time.monotonic()
    migrator.up()
    tables = [t.removesuffix("_kafka") for t in kafka_tables_of(TOPIC)]
    done = {}
    while len(done) < len(tables):
        for table in set(tables) - set(done):
            if held(client, db, table) >= n:
                done[table] = time.monotonic() - started
        if time.monotonic() - started > 900:
            raise SystemExit(f"not all of {n:,} messages stored after 900 s: {done}")
        time.sleep(0.25)
    migrator.down()
    return {table: done[table] for table in tables}


def held(client, db, table):
    """Messages (histograms) a table holds."""
    return int(client.rows(f"SELECT count() FROM {db}.{table}")[0][0])


def report(args, n, raw, ingest, out):
    tables = list(ingest[0])
    lines = [
        "# ClickHouse ingestion from Kafka vs the raw consume rate",
        "",
        f"`make bench-ingest` on this machine ({args.cpus} cores), Kafka and the ClickHouse 18.16 server of the stack, "
        f"{n:,} io.hist.v1 messages (about {n // 30 // 60:,} hosts × 5 disks × 2 ops × 3 kinds × 60 s), "
        f"median of {args.runs} runs. Each run: a plain consumer (confluent-kafka, no parsing) reads the topic, "
        f"then a new database is migrated and its Kafka tables of the topic ({len(tables)}), each with its own "
        "consumer group, read it from the start. Seconds from joining to the last message read or stored; rate = messages / seconds.",
        "",
        "| reader | seconds | messages/s | vs raw consume |",
        "|---|---:|---:|---:|",
        f"| raw Kafka consumer | {statistics.median(raw):.1f} | {n / statistics.median(raw):,.0f} | 1.00 |",
    ]
    for table in tables:
        s = statistics.median(run[table] for run in ingest)
        lines.append(f"| ClickHouse `{table}` | {s:.1f} | {n / s:,.0f} | {statistics.median(raw) / s:.2f} |")
    last = statistics.median(max(run.values()) for run in ingest)
    lines += ["", f"All {len(tables)} tables complete: {last:.1f} s, {n / last:,.0f} messages/s, "
              f"{statistics.median(raw) / last:.2f} of the raw consume rate. Each table parses the whole topic: "
              f"{len(tables)} × {n:,} messages parsed at {len(tables) * n / last:,.0f} messages/s together.", "",
              "Runs (seconds): raw " + ", ".join(f"{s:.1f}" for s in raw) + "; ClickHouse (all tables) "
              + ", ".join(f"{max(run.values()):.1f}" for run in ingest) + "."]
    out.write_text("\n".join(lines) + "\n")
    readiness.say(f"results in {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=500_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "schema/bench/RESULTS-ingest.md")
    args = parser.parse_args()
    args.cpus = len(os.sched_getaffinity(0))
    ports, users = Ports.free(), stack.ClickHouseUsers.generate()
    containers = {"kafka": stack.start_container("iopipe/kafka:dev", ports),
                  "clickhouse": stack.start_container("iopipe/clickhouse:dev", ports, users)}
    try:
        stack.wait_until_ready(ports, containers)
        produce(ports.brokers, args.messages)
        raw, ingest = [], []
        for run in range(1, args.runs + 1):
            raw.append(raw_consume_s(ports.brokers, args.messages))
            ingest.append(warehouse_ingest_s(users.client(ports, "admin"), ports.certificate_brokers, args.messages))
            readiness.say(f"run {run}/{args.runs}: raw consumer {raw[-1]:.1f} s; ClickHouse "
                          + ", ".join(f"{t} {s:.1f} s" for t, s in ingest[-1].items()))
        report(args, args.messages, raw, ingest, args.out)
    finally:
        readiness.run(["docker", "stop", *containers.values()], stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
