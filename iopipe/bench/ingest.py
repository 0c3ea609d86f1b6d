"""ClickHouse ingestion from Kafka against the raw Kafka consume rate, side by side: a topic
of agent intervals (io.interval.v1, as agents send them by default, in the topic the stream
job passes those it accepted on to) read by a plain consumer, then by a freshly migrated
warehouse, where every Kafka table of the topic (diskstats, disk_inventory and histograms
each read it through one of their own) reads all of it. Results: schema/bench/RESULTS-ingest.md.

    make bench-ingest   (or: python3 -m iopipe.bench.ingest [--messages 500000 --runs 3
                         --steady-disks 2000 --steady-seconds 60])

Both clocks start before the reader joins its consumer group and stop when the last
message is read (the consumer) or stored (each table: see STORED); the ratio to the raw
rate is what the ClickHouse path costs. The messages are a fleet's intervals, one per disk
each second, each with its diskstats sample and its 2 ops × 3 kinds of histograms, as
agents send them.

Then a fleet sending steadily: a new database's Kafka tables read a fleet's intervals as
they are produced, in real time, and the inserts they made are counted from system.parts
(each insert makes one part of level 0; merged parts stay listed, inactive, for minutes):
how many inserts a second each table takes, and how many rows each holds.
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

from iopipe import migrate, readiness, record_batches, stack
from iopipe.kafka_access import CLICKHOUSE, CLICKHOUSE_GROUP
from iopipe.migrate import Migrator, tables_fed_by
from iopipe.paths import REPO
from iopipe.ports import Ports
from iopipe.stack_kafka import kafka_client
from iopipe.synthetic.agent_records import DISKSTATS, HIST

RECORD = record_batches.INTERVAL
# ClickHouse reads the intervals the stream job accepted, from the topic it passes them on to.
TOPIC = next(t["name"] for t in json.loads((REPO / "schema" / "topics.json").read_text())["accepted"] if t["record"] == RECORD)
NS = 1_000_000_000
DISKS = ("sda", "sdb", "sdc", "sdd", "nvme0n1")
OPS, KINDS = ("R", "W"), ("device", "queue", "total")


HISTOGRAMS_PER_DISK_SECOND = len(OPS) * len(KINDS)
INTERVALS_PER_HOST_SECOND = len(DISKS)
# What a table holds once it has stored a topic's `n` intervals, and how it is counted: a
# diskstats row an interval, a histograms row a histogram; disk_inventory keeps a row per
# disk for each block it takes, so it holds the topic once it has every disk (the messages
# come host by host, so the last host's disks come last).
STORED = {"diskstats": ("count()", lambda n: n),
          "histograms": ("count()", lambda n: n * HISTOGRAMS_PER_DISK_SECOND),
          "disk_inventory": ("uniqExact(host, disk)", lambda n: -(-n // (INTERVALS_PER_HOST_SECOND * 60)) * len(DISKS))}


def tables_fed():
    """The tables the topic's Kafka tables fill, each through its view."""
    return tables_fed_by(TOPIC)


def interval(i, start_s):
    """The i-th message of a fleet whose hosts each send an interval of each of their 5 disks
    a second, with its histograms of 2 ops × 3 kinds, a minute of each host after the other."""
    host, second, disk = i // (INTERVALS_PER_HOST_SECOND * 60), i // INTERVALS_PER_HOST_SECOND % 60, DISKS[i % len(DISKS)]
    start_ns = (start_s + second) * NS
    histograms = []
    for k, (op, kind) in enumerate((op, kind) for op in OPS for kind in KINDS):
        buckets = [0] * 21
        buckets[8 + (i + k) % 5], buckets[12] = 40 + (i + k) % 17, 3
        histograms.append({"schema": HIST, "host": f"bench-{host:05d}", "disk": disk, "op": op, "latency": kind,
                           "start_ns": start_ns, "end_ns": start_ns + NS, "buckets_log2_us": buckets,
                           "count": sum(buckets), "sum_us": sum(buckets) * 900, "max_us": 8191, "errors": 0})
    ios = (second + 1) * 100
    sample = {"schema": DISKSTATS, "host": f"bench-{host:05d}", "disk": disk, "ts_ns": start_ns + NS, "rotational": False,
              "reads_completed": ios, "reads_merged": 0, "sectors_read": ios * 8, "read_time_ms": ios // 2,
              "writes_completed": ios, "writes_merged": 0, "sectors_written": ios * 8, "write_time_ms": ios // 2,
              "in_flight": 1, "io_time_ms": ios // 2, "weighted_io_time_ms": ios}
    return record_batches.fold_interval(sample, histograms)


def interval_producer(brokers):
    return Producer({**kafka_client(brokers), "linger.ms": 50, "compression.type": "lz4"})


def send(producer, record):
    """Sends an interval keyed by its disk, waiting while the producer's buffer is full."""
    while True:
        try:
            producer.produce(TOPIC, key=f"{record['host']}/{record['disk']}", value=json.dumps(record))
            return
        except BufferError:
            producer.poll(0.1)


def produce(brokers, n):
    producer = interval_producer(brokers)
    start_s = int(time.time()) // 60 * 60
    for i in range(n):
        send(producer, interval(i, start_s))
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
    """{table: (seconds until its first row, until all of the topic)} for each table fed
    from the topic, counted from the moment a new database's migrations begin (its
    consumer groups are new)."""
    db = f"ingest_{uuid.uuid4().hex[:8]}"
    migrator = Migrator(client, db=db, kafka_brokers=brokers, kafka_group=f"{CLICKHOUSE_GROUP}-{db}", log=lambda _: None)
    started = time.monotonic()
    migrator.up()
    tables = tables_fed()
    first, done = {}, {}
    while len(done) < len(tables):
        for table in set(tables) - set(done):
            rows = held(client, db, table)
            if rows and table not in first:
                first[table] = time.monotonic() - started
            if rows >= STORED[table][1](n):
                done[table] = (first[table], time.monotonic() - started)
        if time.monotonic() - started > 900:
            raise SystemExit(f"not all of {n:,} messages stored after 900 s: {done}")
        time.sleep(0.25)
    migrator.down()
    return {table: done[table] for table in tables}


def steady_inserts(client, ports, disks, seconds, already):
    """{table: (inserts, rows per insert: mean and least, active parts in a partition at
    most)} for a new database's Kafka tables of the topic while `disks` disks send their
    intervals, each second's as that second comes, for `seconds` seconds. The tables first
    take the `already` messages the topic holds; the inserts counted are those made after
    (disk_inventory's, once the other tables hold every interval: its disks are the first
    ones again)."""
    db = f"steady_{uuid.uuid4().hex[:8]}"
    migrator = Migrator(client, db=db, kafka_brokers=ports.certificate_brokers, kafka_group=f"{CLICKHOUSE_GROUP}-{db}",
                        log=lambda _: None)
    migrator.up()
    tables = tables_fed()
    wait_until_held(client, db, tables, already)
    before = {table: set(part_names(client, db, table)) for table in tables}
    per_second = disks
    produce_in_real_time(ports.brokers, per_second, seconds)
    wait_until_held(client, db, [t for t in tables if t != "disk_inventory"], already + per_second * seconds)
    parts = {table: inserts_into(client, db, table, before[table]) for table in tables}
    migrator.down()
    return parts


def wait_until_held(client, db, tables, n):
    readiness.wait_for(f"{db}'s tables holding {n:,} messages", timeout_s=300,
                       check=lambda: all(held(client, db, table) >= STORED[table][1](n) for table in tables))


def part_names(client, db, table):
    return [name for (name,) in client.rows(
        f"SELECT name FROM system.parts WHERE database = '{db}' AND table = '{table}'")]


def first_second_of_minute(j):
    """interval()'s index of the fleet's j-th message of a second, as if the first of a minute."""
    return j // INTERVALS_PER_HOST_SECOND * INTERVALS_PER_HOST_SECOND * 60 + j % INTERVALS_PER_HOST_SECOND


def produce_in_real_time(brokers, per_second, seconds):
    """Each second's intervals of the fleet, sent within that second."""
    producer = interval_producer(brokers)
    start_s = int(time.time())
    began = time.monotonic()
    for second in range(seconds):
        for j in range(per_second):
            send(producer, interval(first_second_of_minute(j), start_s + second))
        producer.poll(0)
        behind = time.monotonic() - began - (second + 1)
        if behind < 0:
            time.sleep(-behind)
        elif behind > 1:
            readiness.say(f"the producer is {behind:.1f} s behind the fleet's clock at second {second + 1}")
        if (second + 1) % 10 == 0:
            readiness.say(f"steady fleet: {second + 1} of {seconds} s sent")
    assert producer.flush(120) == 0, "every message delivered"


def inserts_into(client, db, table, parts_before):
    """(inserts, mean rows per insert, fewest rows in one, most active parts in one
    partition): the parts of level 0 not among `parts_before`, one an insert."""
    rows = [int(r) for name, r in client.rows(
        f"SELECT name, rows FROM system.parts WHERE database = '{db}' AND table = '{table}' AND level = 0")
        if name not in parts_before]
    inserts, mean_rows, least_rows = len(rows), sum(rows) / max(1, len(rows)), min(rows, default=0)
    most_active = client.rows(f"SELECT max(c) FROM (SELECT partition, count() AS c FROM system.parts "
                              f"WHERE database = '{db}' AND table = '{table}' AND active GROUP BY partition)")[0][0]
    return inserts, mean_rows, least_rows, int(most_active or 0)


def held(client, db, table):
    """What a table holds, counted as STORED says."""
    return int(client.rows(f"SELECT {STORED[table][0]} FROM {db}.{table}")[0][0])


def steady_report(args, parts):
    per_second = args.steady_disks
    lines = ["", "## A fleet sending steadily", "",
             f"{args.steady_disks:,} disks, each sending an interval every second (its diskstats sample and "
             f"{HISTOGRAMS_PER_DISK_SECOND} histograms, {len(OPS)} ops × {len(KINDS)} kinds): "
             f"{per_second:,} messages/s for {args.steady_seconds} s, produced in real time, read by a "
             "new database's Kafka tables of the topic once they hold what it held before. Inserts: the table's parts "
             "of level 0 in system.parts made meanwhile (one an insert).", "",
             "| table | inserts | inserts/s | rows per insert, mean | fewest | active parts in a partition, at most |",
             "|---|---:|---:|---:|---:|---:|"]
    for table, (inserts, mean_rows, least_rows, most_active) in parts.items():
        lines.append(f"| `{table}` | {inserts:,} | {inserts / args.steady_seconds:.2f} | {mean_rows:,.0f} | "
                     f"{least_rows:,} | {most_active} |")
    return lines


FLEET_DISKS = 100_000  # the fleet a modern server's inserts are worked out for


def modern_server_report(steady_disks):
    """How a modern server's Kafka tables turn the steady fleet's intervals, and a fleet of
    FLEET_DISKS disks', into inserts: worked out from the server's rules, which this
    machine cannot measure (its modern ClickHouse, chdb, starts no Kafka consumers)."""
    old, new = migrate.kafka_blocks((18, 16)), migrate.kafka_blocks(migrate.KAFKA_BLOCKS_FLUSHED_ON_TIME)
    flush_s = migrate.KAFKA_FLUSH_INTERVAL_MS / 1000
    block, small = migrate.KAFKA_BLOCK_MESSAGES_MAX, migrate.KAFKA_BLOCK_MESSAGES_BEFORE

    def sized(per_second):
        if per_second * flush_s < block:
            return f"{1 / flush_s:.2f}/s (a block each {flush_s:g} s, {per_second * flush_s:,.0f} rows)"
        return f"{per_second / block:.2f}/s, {block:,} rows each"
    since = ".".join(map(str, migrate.KAFKA_BLOCKS_FLUSHED_ON_TIME))
    return [
        "", f"## Modern servers ({since} and newer)", "",
        "Not measured here: the only modern ClickHouse this machine runs is chdb, in process, which starts no Kafka "
        "consumers (a Kafka table's creation ends in \"Shutdown was called\", after its settings are checked). What "
        "follows is from the server's source (`StorageKafka::streamToViews`, `KafkaSource`, `KafkaSettings`), and the "
        "settings are checked against chdb by `test_a_modern_server_takes_the_kafka_block_settings_it_is_given`.", "",
        "A modern server writes each block a Kafka table reads as an insert of its own (its insert is built with "
        "`no_squash`), and a block ends when it holds `kafka_max_block_size` messages, when `kafka_flush_interval_ms` "
        "has passed, or once ten polls of 0.5 s found nothing. The 64-message blocks 18.16 needs would there be an "
        "insert of every 64 messages. Migration 0019 gives each server its own (`kafka_blocks` in iopipe/migrate.py):", "",
        f"| server | Kafka table settings | inserts per table, the fleet above ({steady_disks:,} intervals/s) "
        f"| at {FLEET_DISKS:,} disks ({FLEET_DISKS:,} intervals/s) |",
        "|---|---|---:|---:|",
        f"| 18.16 | `{old}` | measured above | one per read of about {flush_s:g} s, per replica |",
        f"| {since}+, before 0019 | `{old}` | {steady_disks / small:,.0f}/s, {small} rows each | {FLEET_DISKS / small:,.0f}/s |",
        f"| {since}+, from 0019 | `{new}` | {sized(steady_disks)} | {sized(FLEET_DISKS)}, per consumer |",
        "", "The last two rows are worked out from those rules, not measured. The `histograms` table takes the same "
        f"inserts, each with {HISTOGRAMS_PER_DISK_SECOND} rows an interval."]


def report(args, n, raw, ingest, out, steady=()):
    tables = list(ingest[0])
    lines = [
        "# ClickHouse ingestion from Kafka vs the raw consume rate",
        "",
        f"`make bench-ingest` on this machine ({args.cpus} cores), Kafka and the ClickHouse 18.16 server of the stack, "
        f"{n:,} {RECORD} messages (about {n // INTERVALS_PER_HOST_SECOND // 60:,} hosts × {len(DISKS)} disks × 60 s, "
        f"each with its diskstats sample and {HISTOGRAMS_PER_DISK_SECOND} histograms), "
        f"median of {args.runs} runs. Each run: a plain consumer (confluent-kafka, no parsing) reads the topic, "
        f"then a new database is migrated and its Kafka tables of the topic ({len(tables)}), each with its own "
        "consumer group, read it from the start. Seconds from joining to the last message read or stored (diskstats: a "
        "row a message; histograms: a row a histogram; disk_inventory: every disk); rate = messages / seconds.",
        "",
        "| reader | seconds | messages/s | vs raw consume | its first row stored after (s) |",
        "|---|---:|---:|---:|---:|",
        f"| raw Kafka consumer | {statistics.median(raw):.1f} | {n / statistics.median(raw):,.0f} | 1.00 | |",
    ]
    for table in tables:
        s = statistics.median(run[table][1] for run in ingest)
        first = statistics.median(run[table][0] for run in ingest)
        lines.append(f"| ClickHouse `{table}` | {s:.1f} | {n / s:,.0f} | {statistics.median(raw) / s:.2f} | {first:.1f} |")
    last = statistics.median(max(all_s for _, all_s in run.values()) for run in ingest)
    lines += ["", f"All {len(tables)} tables complete: {last:.1f} s, {n / last:,.0f} messages/s, "
              f"{statistics.median(raw) / last:.2f} of the raw consume rate. Each table parses the whole topic: "
              f"{len(tables)} × {n:,} messages parsed at {len(tables) * n / last:,.0f} messages/s together.", "",
              "Runs (seconds): raw " + ", ".join(f"{s:.1f}" for s in raw) + "; ClickHouse (all tables) "
              + ", ".join(f"{max(all_s for _, all_s in run.values()):.1f}" for run in ingest) + "."]
    lines += list(steady) + modern_server_report(args.steady_disks)
    out.write_text("\n".join(lines) + "\n")
    readiness.say(f"results in {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=500_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steady-disks", type=int, default=2_000, help="disks of the fleet sending steadily (0: none)")
    parser.add_argument("--steady-seconds", type=int, default=60)
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
                          + ", ".join(f"{t} {s:.1f} s (first row {first:.1f} s)" for t, (first, s) in ingest[-1].items()))
        steady = []
        if args.steady_disks:
            parts = steady_inserts(users.client(ports, "admin"), ports, args.steady_disks, args.steady_seconds,
                                   already=args.messages)
            steady = steady_report(args, parts)
        report(args, args.messages, raw, ingest, args.out, steady)
    finally:
        readiness.run(["docker", "stop", *containers.values()], stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
