#!/usr/bin/env python3
"""`make demo`: the stack up, this machine's disks through the whole pipeline.

Starts Kafka, Flink and ClickHouse, submits the live job, runs the agent on this
machine's /proc/diskstats while a short O_DIRECT write keeps a disk busy, and prints the
per-disk iostat windows as ClickHouse stores them. The stack keeps running afterwards
(`make down` stops it) so the SQL printed at the end can be tried by hand.
"""
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import stack

AGENT_BIN = Path(os.environ.get("IOPIPE_AGENT_BIN", stack.CACHE / "cargo-target" / "release" / "iopipe-agent"))
RUN_SECONDS = 45
COLUMNS = ("window_start", "host", "disk", "reads_per_s", "writes_per_s", "read_kib_per_s", "write_kib_per_s",
           "read_await_ms", "write_await_ms", "queue_size", "util_pct")
HEADER = f"{'window (UTC)':19} {'host':10} {'disk':10} {'r/s':>8} {'w/s':>8} {'rkB/s':>10} {'wkB/s':>10} " \
         f"{'r_await':>8} {'w_await':>8} {'aqu-sz':>7} {'%util':>6}"
QUERY_BY_HAND = """\
curl -s http://127.0.0.1:8123/ --data-binary "
  SELECT window_start, host, disk, round(reads_per_s, 1) AS r_s, round(writes_per_s, 1) AS w_s,
         round(write_await_ms, 2) AS w_await, round(queue_size, 2) AS aqu_sz, round(util_pct, 1) AS util
  FROM iopipe.windows FINAL WHERE window_s = 10 ORDER BY window_start DESC, disk LIMIT 20 FORMAT PrettyCompact"
"""


def print_new_windows(clickhouse, shown):
    """Prints the windows not printed yet; `shown` holds (host, disk, window_start_ns) keys."""
    sql = f"SELECT window_start_ns, {', '.join(COLUMNS)} FROM iopipe.windows FINAL WHERE window_s = 10 ORDER BY window_start_ns, host, disk"
    for start_ns, start, host, disk, *numbers in clickhouse.rows(sql):
        if (host, disk, start_ns) in shown:
            continue
        shown.add((host, disk, start_ns))
        r_s, w_s, rkb, wkb, r_await, w_await, aqu, util = (float(n) for n in numbers)
        print(f"{start:19} {host[:10]:10} {disk[:10]:10} {r_s:8.2f} {w_s:8.2f} {rkb:10.1f} {wkb:10.1f} "
              f"{r_await:8.2f} {w_await:8.2f} {aqu:7.2f} {util:6.1f}", flush=True)


def main():
    if not AGENT_BIN.exists():
        sys.exit(f"{AGENT_BIN} is missing: run `make agent` (make demo builds it)")
    ports = stack.Ports()
    clickhouse = stack.up(ports).client(ports, "reader")
    scratch = Path(tempfile.mkdtemp(prefix="iopipe-demo-", dir="/var/tmp")) / "busy.bin"
    stack.say(f"running the agent for {RUN_SECONDS} s on this machine's disks; "
              f"dd writes 16 MiB to {scratch} with O_DIRECT every few seconds so one disk has work")
    agent = subprocess.Popen([str(AGENT_BIN), "run", "--output", "kafka", "--brokers", ports.brokers,
                              "--count", str(RUN_SECONDS)], stderr=subprocess.PIPE, text=True)
    workload = subprocess.Popen(["bash", "-c", f"for i in $(seq {RUN_SECONDS // 3}); do "
                                 f"dd if=/dev/zero of={scratch} bs=1M count=16 oflag=direct status=none; sleep 3; done"])
    stack.say("iostat -x windows (10 s) as stored in ClickHouse appear below as each window closes:")
    print(HEADER, flush=True)
    shown = set()
    deadline = time.monotonic() + RUN_SECONDS + 20
    try:
        while time.monotonic() < deadline:
            time.sleep(5)
            print_new_windows(clickhouse, shown)
    finally:
        workload.wait()
        scratch.unlink(missing_ok=True)
        scratch.parent.rmdir()
        _, agent_log = agent.communicate()
    stack.say(agent_log.strip().splitlines()[-1] if agent_log.strip() else "agent exited")
    (count, disks), = clickhouse.rows("SELECT count(), uniqExact(host, disk) FROM iopipe.windows FINAL WHERE window_s = 10")
    stack.say(f"{count} 10 s windows of {disks} disks stored in ClickHouse table iopipe.windows (and 1 min ones)")
    print("\nSee them yourself:\n" + QUERY_BY_HAND)
    stack.say(f"Flink's UI: {ports.flink_url}. The stack keeps running: `make down` stops it.")


if __name__ == "__main__":
    main()
