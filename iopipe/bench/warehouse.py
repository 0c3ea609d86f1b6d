"""ClickHouse at fleet scale: a generated fleet's week of 1 min windows and latency
histograms in the shipped schema on the 18.16 server, then the insert rates, the bytes
on disk per disk-day and the latency of every cookbook query. Results: schema/bench/RESULTS.md.

    make bench-warehouse   (or: python3 -m iopipe.bench.warehouse [--disks 10000 --days 7 --runs 5])

The fleet: hosts of 12 disks (11 HDDs of one model and an NVMe drive), each disk with its
own latency distribution and load, 0.5% with a slow tail (retries), 0.1% failing. Rows
are generated inside the server (INSERT ... SELECT from numbers()) in time order, one day
per insert, as the pipeline would deliver them; the hourly and daily rollups are summed
from the minute rows, as the stream job sums them live.
"""
import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

from iopipe import cookbook, stack
from iopipe.migrate import Migrator, discover
from iopipe.paths import REPO
from iopipe.ports import Ports
from iopipe.readiness import clickhouse_answers, container_alive, run, say, wait_for

DISKS_PER_HOST = 12
DISK_NAMES = "['sda','sdb','sdc','sdd','sde','sdf','sdg','sdh','sdi','sdj','sdk','nvme0n1']"
HDD_MODEL, NVME_MODEL = "ST4000NM0035-1V4107", "SAMSUNG MZ1LB960HAJQ-00007"
SLOW_TAIL_EVERY, FAILING_EVERY = 200, 1000  # one disk in ...

# Columns every generator shares: disk d and minute index m from n (time-major order).
FLEET = """
    number % {disks} AS d,
    intDiv(number, {disks}) AS m,
    concat('host-', toString(intDiv(d, {per_host}))) AS host,
    {names}[d % {per_host} + 1] AS disk,
    toDateTime({start_s} + m * 60) AS minute,
    cityHash64(d, m) AS h
"""


def fleet_columns(args, start_s):
    return FLEET.format(disks=args.disks, per_host=DISKS_PER_HOST, names=DISK_NAMES, start_s=start_s)


def windows_insert(args, start_s, first_minute, minutes):
    return f"""
INSERT INTO iopipe.windows (host, disk, op, window_s, window_start, window_start_ns, window_end_ns, interval_s,
    samples, rotational, reads_completed, writes_completed, reads_per_s, writes_per_s, read_kib_per_s,
    write_kib_per_s, read_merges_per_s, write_merges_per_s, read_await_ms, write_await_ms, read_req_kib,
    write_req_kib, queue_size, util_pct)
SELECT host, disk, 'all', 60, minute, toUInt64(minute) * 1000000000, (toUInt64(minute) + 60) * 1000000000, 60.0,
    60, d % {DISKS_PER_HOST} != {DISKS_PER_HOST - 1}, reads, writes, reads / 60, writes / 60,
    reads / 60 * 64, writes / 60 * 16, (h % 7) / 10, (h % 13) / 10, 4 + (h % 90) / 10, 2 + (h % 50) / 10,
    64.0, 16.0, (h % 300) / 100, least(100.0, (reads + writes) / 120.0)
FROM (SELECT {fleet_columns(args, start_s)}, 600 + h % 6000 AS reads, 200 + intDiv(h, 7) % 3000 AS writes
      FROM numbers({first_minute * args.disks}, {minutes * args.disks}))
"""


def latency_insert(args, start_s, first_minute, minutes):
    """Per disk a main mode (1-16 ms on HDDs, 64 µs on NVMe) and its neighbours; the slow
    tail disks add 2% at 1-2 s, the others a few I/Os at 64x the mode."""
    return f"""
INSERT INTO iopipe.latency_minutes
SELECT host, disk, 'R', 'device', minute, 1, b, arraySum(b), toUInt64(d % {FAILING_EVERY} = 7) * (h % 3),
    toUInt64(arraySum(arrayMap((c, i) -> c * 3 * pow(2, i - 2), b, arrayEnumerate(b)))),
    toUInt64(pow(2, length(b)) - 1)
FROM (
    SELECT {fleet_columns(args, start_s)},
        if(d % {DISKS_PER_HOST} = {DISKS_PER_HOST - 1}, 6, 10 + d % 5) AS mode,
        600 + h % 6000 AS ios,
        d % {SLOW_TAIL_EVERY} = 7 AS slow_tail,
        arrayMap(i -> toUInt64(multiIf(
            i = mode, ios * 0.55, i = mode - 1, ios * 0.2, i = mode + 1, ios * 0.18, i = mode + 2, ios * 0.05,
            slow_tail AND i = 20, ios * 0.02, NOT slow_tail AND i = mode + 6, h % 4, 0)),
            range(if(slow_tail, 21, mode + 7))) AS b
    FROM numbers({first_minute * args.disks}, {minutes * args.disks}))
"""


def rollup_insert(target, source, period_expr, day_start_s):
    """The longer period's rows as the job sends them once closed: one revision, the sums."""
    return f"""
INSERT INTO iopipe.{target}
SELECT host, disk, op, latency, {period_expr} AS rolled, 1,
    sumForEach(buckets_log2_us), sum(count), sum(errors), sum(sum_us), max(max_us)
FROM iopipe.{source} FINAL
WHERE period >= toDateTime({day_start_s}) AND period < toDateTime({day_start_s + 86400})
GROUP BY host, disk, op, latency, rolled
"""


def small_tables(args, start_s, days):
    """Inventory, and for the slow-tail and failing disks their anomalies and health."""
    fleet = f"number AS d, concat('host-', toString(intDiv(d, {DISKS_PER_HOST}))) AS host, {DISK_NAMES}[d % {DISKS_PER_HOST} + 1] AS disk"
    end_s = start_s + days * 86400
    return [
        f"""INSERT INTO iopipe.disk_inventory
            SELECT host, disk, if(d % {DISKS_PER_HOST} = {DISKS_PER_HOST - 1}, '{NVME_MODEL}', '{HDD_MODEL}'),
                   concat('SN', toString(d)), d % {DISKS_PER_HOST} != {DISKS_PER_HOST - 1}, toDateTime({end_s})
            FROM (SELECT {fleet} FROM numbers({args.disks}))""",
        f"""INSERT INTO iopipe.anomalies
            SELECT concat('bimodal:', host, '/', disk, ':', toString(s)), host, disk, 'bimodal_retries', 'warning',
                   s * 1000000000, (s + 10) * 1000000000, toDateTime(s), 'a retry mode at 2.1x the main one',
                   '{{"device_p50_ms":2.1,"device_p99_ms":14.6,"gap_ms":8.33,"iostat":{{"aqu_sz":0.98,"util_pct":97.5}}}}',
                   toDateTime(s + 12), toUInt32(4294967295 - (s + 12))
            FROM (SELECT {fleet}, {start_s} + day * 86400 + d % 86400 AS s
                  FROM numbers({args.disks}) ARRAY JOIN range({days}) AS day WHERE d % {SLOW_TAIL_EVERY} = 7)""",
        f"""INSERT INTO iopipe.health
            SELECT concat(host, '/', disk, ':', toString(s), to_state), host, disk, s * 1000000000, toDateTime(s),
                   from_state, to_state, 'failing_disk for 3 consecutive windows', [], 'open', concat('iopipe-', host, '-', disk)
            FROM (SELECT {fleet}, {end_s} - 7200 + step * 1800 AS s,
                         ['healthy', 'suspect'][step + 1] AS from_state, ['suspect', 'failing'][step + 1] AS to_state
                  FROM numbers({args.disks}) ARRAY JOIN range(2) AS step WHERE d % {FAILING_EVERY} = 7)""",
    ]


def timed(client, sql):
    started = time.monotonic()
    client.query(sql, timeout=3600)
    return time.monotonic() - started


def generate(client, args, start_s):
    """Inserts the week; returns ({table: (rows, seconds)}, {rollup: seconds})."""
    inserts, rollups = {"windows": [0, 0.0], "latency_minutes": [0, 0.0]}, {"latency_hours": 0.0, "latency_days": 0.0}
    for day in range(args.days):
        for table, insert in (("windows", windows_insert), ("latency_minutes", latency_insert)):
            seconds = timed(client, insert(args, start_s, day * 1440, 1440))
            inserts[table][0] += 1440 * args.disks
            inserts[table][1] += seconds
            say(f"day {day + 1}/{args.days}: {table} {1440 * args.disks:,} rows in {seconds:.1f} s")
        day_start_s = start_s + day * 86400
        rollups["latency_hours"] += timed(client, rollup_insert(
            "latency_hours", "latency_minutes", "toStartOfHour(period)", day_start_s))
        rollups["latency_days"] += timed(client, rollup_insert(
            "latency_days", "latency_hours", "toStartOfDay(period)", day_start_s))
    for sql in small_tables(args, start_s, args.days):
        client.query(sql)
    return {t: tuple(v) for t, v in inserts.items()}, rollups


def wait_for_merges(client):
    wait_for("background merges to settle", lambda: client.rows(
        "SELECT count() FROM system.merges WHERE database = 'iopipe'")[0][0] == "0", timeout_s=1800, every_s=5)


def storage(client, disks, days):
    rows = client.rows("SELECT table, sum(rows), sum(bytes_on_disk), count() FROM system.parts "
                       "WHERE database = 'iopipe' AND active GROUP BY table ORDER BY table")
    return [(t, int(r), int(b), int(p), int(b) / (disks * days)) for t, r, b, p in rows if int(r)]


def query_params(args, start_s):
    last_full_day = time.strftime("%Y-%m-%d", time.gmtime(start_s + (args.days - 1) * 86400))
    return {
        "worst_disks_p99_last_hour": {"limit": 20},
        "disk_latency_heatmap_day": {"host": "host-0", "disk": "sdh", "day": last_full_day},
        "bimodal_retries_this_week": {},
        "suspect_to_failing": {"days": 7},
        "iostat_host": {"host": "host-0", "window_s": 60, "minutes": 60},
        "disk_vs_peers": {"host": "host-0", "disk": "sdh"},
        "time_to_detect": {"days": 7},
        "anomalies_of_disk": {"host": "host-0", "disk": "sdh", "hours": 7 * 24},
    }


def time_queries(client, params, runs):
    """{query: (rows, [seconds per run])}, after one unmeasured run (cold caches are not the question)."""
    results = {}
    for name in cookbook.names():
        sql = cookbook.render(name, params[name])
        rows = len(client.rows(sql))
        times = [timed(client, sql) for _ in range(runs)]
        results[name] = (rows, times)
        say(f"{name}: {rows} rows, median {statistics.median(times) * 1000:.0f} ms")
    return results


def report(args, rates, rollups, parts, queries, out):
    lines = [
        "# ClickHouse at fleet scale",
        "",
        f"`make bench-warehouse` on this machine ({args.cpus} cores), ClickHouse 18.16 server (the stack's image), "
        f"the shipped schema (migrations 0001-{max(m.version for m in discover()):04d}).",
        f"Fleet: {args.disks:,} disks × {args.days} days of 1 min rows: windows (iostat, 1 min) and latency_minutes "
        "(device latency histograms), plus the hourly and daily rollups summed from them.",
        "",
        "## Insert rate (rows generated inside the server by INSERT ... SELECT, one day per insert)",
        "",
        "| table | rows | seconds | rows/s |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {t} | {r:,} | {s:.1f} | {r / s:,.0f} |" for t, (r, s) in rates.items()]
    lines += ["", "Rollups merged from the minute rows, a day at a time: "
              + ", ".join(f"{t} {s:.1f} s for the {args.days} days" for t, s in rollups.items()) + "."]
    lines += ["", "## Bytes on disk (after merges settled)", "",
              "| table | rows | bytes | parts | bytes per disk-day |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {t} | {r:,} | {b:,} | {p} | {per:,.0f} |" for t, r, b, p, per in parts]
    lines += ["", f"## Cookbook query latency ({args.runs} runs after one warm-up; goal: under 1 s each)", "",
              "| query | rows | median ms | max ms |", "|---|---:|---:|---:|"]
    lines += [f"| {q} | {rows} | {statistics.median(t) * 1000:.0f} | {max(t) * 1000:.0f} |"
              for q, (rows, t) in queries.items()]
    out.write_text("\n".join(lines) + "\n")
    say(f"results in {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--disks", type=int, default=10_000)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "schema/bench/RESULTS.md")
    args = parser.parse_args()
    args.cpus = len(os.sched_getaffinity(0))
    ports, users = Ports.free(), stack.ClickHouseUsers.generate()
    container = stack.start_container("iopipe/clickhouse:dev", ports, users)
    try:
        wait_for("ClickHouse", lambda: container_alive(container) and clickhouse_answers(ports))
        # The Kafka tables point at a port nothing listens on: this measures storage and queries.
        Migrator(users.client(ports, "admin"), kafka_brokers=ports.brokers, log=say).up()
        now_s = int(time.time()) // 60 * 60
        start_s = now_s - args.days * 86400 + 60  # the last minute generated is this one
        rates, rollups = generate(users.client(ports, "writer"), args, start_s)
        wait_for_merges(users.client(ports, "admin"))
        parts = storage(users.client(ports, "admin"), args.disks, args.days)
        queries = time_queries(users.client(ports, "reader"), query_params(args, start_s), args.runs)
        report(args, rates, rollups, parts, queries, args.out)
    finally:
        run(["docker", "stop", container], stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
