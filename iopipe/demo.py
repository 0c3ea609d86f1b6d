"""`make demo`: a tour of iopipe on a disk that goes bad while you watch.

Starts Kafka, Flink and ClickHouse and submits the live job. Then it makes a fault disk
(a real loop device whose latency a FUSE server shapes) that looks like a 7200 rpm disk,
runs 16 KiB random reads on it one at a time, and turns it from healthy to retrying (15%
of reads cost extra revolutions) to failing (every read takes 60 ms to half a second).
The agent traces every I/O of the machine with eBPF into Kafka; the job windows and
judges each disk; everything printed below is read back from ClickHouse as it lands:
each window's iostat line and biolatency histogram, every anomaly with its
evidence, every change of the disk's health. It ends with what was found, the SQL that
shows the same, and the ticket Alertmanager sent for the failing disk (the ticket bridge
posts it) with its latency heatmap saved as a picture. The stack keeps running
afterwards; `make down` stops it.

Needs root (eBPF, loop devices, FUSE).
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from iopipe import cookbook, stack
from iopipe import tickets as tickets_local
from iopipe.contract import BASE_WINDOW_S
from iopipe.faultdisk import FaultDisk
from iopipe.faultdisk.seeds import DISK_MIB, SCENARIOS, fio
from iopipe.paths import CACHE
from iopipe.ports import Ports
from iopipe.readiness import say, wait_for
from iopipe.stack_kafka import agent_access

AGENT_BIN = Path(os.environ.get("IOPIPE_AGENT_BIN", CACHE / "cargo-target" / "release" / "iopipe-agent"))
POLL_S = 2
VERDICT_WAIT_S = 90  # after the workload: room for the last window to close and be judged
BAR_WIDTH = 40


@dataclass(frozen=True)
class Phase:
    name: str
    seconds: int  # how long the disk stays so, at most when `until` is given
    profile: str  # the fault disk's latency profile (iopipe/faultdisk/faultdisk.c)
    story: str
    until: tuple = ()  # (anomaly kind, health state): the phase ends once both are shown


# The seeds' own disks: S2's before and after its head is disturbed (at 15 s, as in its
# seed), then S1's failure. A fault lasts until iopipe has told it, or its seconds.
PHASES = (
    Phase("healthy", 15, SCENARIOS["S2"].profile,
          "reads are served in about 2 ms"),
    Phase("retrying", 45, SCENARIOS["S2"].fault_profile,
          "15% of reads miss and are retried one to three 8.33 ms revolutions later, as a 7200 rpm "
          "disk does when its head is disturbed", until=("bimodal_retries", "suspect")),
    Phase("failing", 45, SCENARIOS["S1"].fault_profile,
          "every read takes 60 ms to over half a second: the disk is dying", until=("failing_disk", "failing")),
)
FIO_SEGMENT_S = 5  # the reads go on in fio runs this long until the tour stops them


def sql_string(value):
    return cookbook.literal(value, "String")


class Watch:
    """What ClickHouse holds for this host since the tour began; prints each thing once."""

    def __init__(self, clickhouse, host, disk, since_s):
        self.clickhouse = clickhouse
        self.host, self.disk, self.since_s = host, disk, since_s
        self.shown = set()
        self.fault_at = {}  # phase name -> when the disk turned so
        self.found = []  # anomalies shown, as read
        self.states = set()  # health states of the fault disk shown

    def ours(self, time_column):
        """This host's rows since the tour began."""
        return f"host = {sql_string(self.host)} AND {time_column} >= toDateTime({int(self.since_s)})"

    def poll(self):
        self.print_new_windows()
        self.print_new_anomalies()
        self.print_new_health()

    def print_new_windows(self):
        """Each closed window once the agent's histograms covering it are stored too."""
        (covered_ns,), = self.clickhouse.rows(
            f"SELECT max(end_ns) FROM iopipe.histograms WHERE {self.ours('start')} AND disk = {sql_string(self.disk)}")
        for w in self.clickhouse.json_rows(
                f"SELECT window_start_ns, window_end_ns, reads_per_s, read_kib_per_s, read_await_ms, queue_size, util_pct "
                f"FROM iopipe.windows FINAL WHERE {self.ours('window_start')} "
                f"AND disk = {sql_string(self.disk)} AND op = 'all' AND window_s = {BASE_WINDOW_S} ORDER BY window_start_ns"):
            key = ("window", w["window_start_ns"])
            if key in self.shown or int(w["window_end_ns"]) > int(covered_ns):
                continue
            self.shown.add(key)
            start_s, end_s = int(w["window_start_ns"]) / 1e9, int(w["window_end_ns"]) / 1e9
            print(f"\n{clock(start_s)}-{clock(end_s)} {self.disk} ({BASE_WINDOW_S} s window)  r/s {w['reads_per_s']:.1f}  "
                  f"rkB/s {w['read_kib_per_s']:.0f}  r_await {w['read_await_ms']:.2f} ms  "
                  f"aqu-sz {w['queue_size']:.2f}  %util {w['util_pct']:.1f}")
            print("\n".join(biolatency(self.device_reads_histogram(w["window_start_ns"], w["window_end_ns"]))), flush=True)

    def device_reads_histogram(self, start_ns, end_ns):
        rows = self.clickhouse.json_rows(
            f"SELECT sumForEach(buckets_log2_us) AS buckets FROM iopipe.histograms FINAL "
            f"WHERE host = {sql_string(self.host)} AND disk = {sql_string(self.disk)} AND op = 'R' "
            f"AND latency = 'device' AND start_ns >= {int(start_ns)} AND start_ns < {int(end_ns)}")
        return [int(n) for n in rows[0]["buckets"]] if rows else []

    def print_new_anomalies(self):
        for a in self.clickhouse.json_rows(
                f"SELECT id, disk, kind, severity, start_ns, end_ns, toUnixTimestamp(received_at) AS received_s, "
                f"summary, evidence_json FROM iopipe.anomalies FINAL WHERE {self.ours('start')} ORDER BY received_at, start_ns"):
            if ("anomaly", a["id"]) in self.shown:
                continue
            self.shown.add(("anomaly", a["id"]))
            self.found.append(a)
            print(f"\n>>> ANOMALY {a['kind']} ({a['severity']}) on {a['disk']}, window from {clock(int(a['start_ns']) / 1e9)}, "
                  f"in ClickHouse at {clock(int(a['received_s']))}{self.since_fault(int(a['received_s']))}")
            print(f"    {a['summary']}")
            for line in evidence_lines(json.loads(a["evidence_json"] or "{}")):
                print(f"    {line}")
            sys.stdout.flush()

    def since_fault(self, at_s):
        turned = [(t, name) for name, t in self.fault_at.items() if name != "healthy" and t <= at_s]
        if not turned:
            return ""
        t, name = max(turned)
        return f", {at_s - t:.0f} s after the disk turned {name}"

    def print_new_health(self):
        for h in self.clickhouse.json_rows(
                f"SELECT id, disk, ts_ns, from_state, to_state, reason, `ticket.action` AS action, "
                f"`ticket.ticket_id` AS ticket FROM iopipe.health FINAL "
                f"WHERE {self.ours('ts')} ORDER BY ts_ns"):
            if ("health", h["id"]) in self.shown:
                continue
            self.shown.add(("health", h["id"]))
            if h["disk"] == self.disk:
                self.states.add(h["to_state"])
            ticket = f"; ticket {h['ticket']} ({h['action']})" if h["ticket"] else ""
            print(f"\n>>> HEALTH of {h['disk']}: {h['from_state']} -> {h['to_state']} at {clock(int(h['ts_ns']) / 1e9)}"
                  f"{ticket}\n    {h['reason']}", flush=True)

    def has(self, kind, state):
        """True once an anomaly of `kind` and the health `state` of the disk have been shown."""
        return state in self.states and kind in {a["kind"] for a in self.found if a["disk"] == self.disk}


def clock(unix_s):
    return time.strftime("%H:%M:%S", time.localtime(unix_s))


def biolatency(buckets):
    """Lines in the layout of biolatency: bucket i holds [2^i, 2^(i+1)) µs, 0 also below 1 µs."""
    used = [i for i, n in enumerate(buckets) if n]
    if not used:
        return ["     (no reads)"]
    peak = max(buckets)
    lines = ["     usecs               : count     distribution"]
    for i in range(used[0], used[-1] + 1):
        low, high = (0 if i == 0 else 2 ** i), 2 ** (i + 1) - 1
        bar = "*" * round(BAR_WIDTH * buckets[i] / peak)
        lines.append(f"{low:>10} -> {high:<10} : {buckets[i]:<8} |{bar:<{BAR_WIDTH}}|")
    return lines


def evidence_lines(e):
    """The evidence a person reads first, then what only this kind of finding carries."""
    lines = []
    if "device_p50_ms" in e:
        lines.append(f"evidence: device time p50 {e['device_p50_ms']} ms, p99 {e['device_p99_ms']} ms, "
                     f"max {e['device_max_ms']} ms ({e.get('op', '?')})")
    if "iostat" in e:
        io = e["iostat"]
        lines.append(f"iostat: r/s {io['r_per_s']}  w/s {io['w_per_s']}  r_await {io['r_await_ms']} ms  "
                     f"aqu-sz {io['aqu_sz']}  svctm {io['svctm_ms']} ms  %util {io['util_pct']}")
    if e.get("modes"):
        lines.append("modes: " + ", ".join(f"{m['median_ms']} ms × {m['ios']} ({m['share']:.0%})" for m in e["modes"])
                     + f"; gap {e['gap_ms']} ms, read from {e['resolution']}")
    for match in e.get("whole_revolutions", []):
        lines.append(f"the gap is {match['revolutions']} revolution(s) of a {match['rpm']} rpm disk "
                     f"({match['revolution_ms']} ms each): the drive retried")
    for reason in e.get("reasons", []):
        lines.append(f"because: {reason}")
    shown = {"window_start_ns", "window_end_ns", "op", "device_histogram_us", "device_p50_ms", "device_p99_ms",
             "device_max_ms", "iostat", "modes", "gap_ms", "resolution", "whole_revolutions", "reasons",
             "worst_events", "burst"}
    rest = {k: v for k, v in e.items() if k not in shown}
    if rest:
        lines.append("figures: " + ", ".join(f"{k} {v}" for k, v in rest.items()))
    for ev in e.get("worst_events", [])[:3]:
        lines.append(f"slow I/O: {ev['device_ms']} ms {ev['op']} {ev['bytes']} B at sector {ev['sector']} "
                     f"({ev['comm']}, {ev['inflight']} in flight)")
    return lines


def reads_until(device, stop):
    """16 KiB random reads, one at a time, until `stop` is set; the reads fio completed."""
    completed = 0
    while not stop.is_set():
        completed += fio(device, FIO_SEGMENT_S)
    return completed


def play(disk, watch, stop_workload, workload):
    """Turns the disk phase by phase while the workload runs, printing what lands; a fault
    phase ends once what it shows has been told."""
    try:
        for phase in PHASES:
            if phase.name != "healthy":
                disk.set_profile(phase.profile)
            watch.fault_at[phase.name] = time.time()
            until = f" or until iopipe tells {' and '.join(phase.until)}" if phase.until else ""
            say(f"{clock(time.time())} the disk is {phase.name.upper()} for {phase.seconds} s{until}: {phase.story}")
            deadline = time.monotonic() + phase.seconds
            while time.monotonic() < deadline and not (phase.until and watch.has(*phase.until)):
                time.sleep(POLL_S)
                watch.poll()
    finally:
        stop_workload.set()
        workload.join()
    say(f"{clock(time.time())} workload done; waiting up to {VERDICT_WAIT_S} s for the last windows to be judged")
    deadline = time.monotonic() + VERDICT_WAIT_S
    while time.monotonic() < deadline and not watch.has("failing_disk", "failing"):
        time.sleep(POLL_S)
        watch.poll()
    time.sleep(POLL_S)
    watch.poll()


def print_summary(watch, counts, clickhouse):
    ours = [a for a in watch.found if a["disk"] == watch.disk]
    others = [a for a in watch.found if a["disk"] != watch.disk]
    (stored,), = clickhouse.rows(
        f"SELECT sum(count) FROM iopipe.histograms FINAL WHERE {watch.ours('start')} "
        f"AND disk = {sql_string(watch.disk)} AND op = 'R' AND latency = 'device'")
    print("\n" + "=" * 100)
    say(f"what iopipe found on {watch.disk}:")
    for a in ours:
        print(f"  {a['kind']} ({a['severity']}): {a['summary']}")
    if not ours:
        print("  nothing: see the Flink UI for the job's state")
    print(f"  on this machine's own disks: {', '.join(a['disk'] + ' ' + a['kind'] for a in others) or 'nothing'}")
    print(f"  reads: fio completed {counts.get('fio', '?')}, the kernel counted {counts.get('kernel', '?')} "
          f"(/sys/block/{watch.disk}/stat), the agent's histograms in ClickHouse hold {stored}")
    print_queries(watch)


def print_queries(watch):
    users_file = CACHE / "clickhouse-users.json"
    anomalies = {"host": watch.host, "disk": watch.disk, "hours": 1}
    print(f"\nThe same in SQL. This is what found it (schema/queries/anomalies_of_disk.sql):\n\n"
          f"{cookbook.render('anomalies_of_disk', anomalies)}\n")
    print(f"Run it, and the other cookbook queries, as the read-only user (password in {users_file}):\n"
          f"  PW=$(python3 -c 'import json; print(json.load(open(\"{users_file}\"))[\"reader\"])')")
    for what, name, params in (
            ("its anomalies with their evidence", "anomalies_of_disk", anomalies),
            ("its health: suspect, then failing, and the ticket", "suspect_to_failing", {"days": 1}),
            ("how long each detection took", "time_to_detect", {"days": 1}),
            ("iostat -x of this host", "iostat_host", {"host": watch.host, "window_s": BASE_WINDOW_S, "minutes": 10})):
        arguments = " ".join(f"{k}={v}" for k, v in params.items())
        print(f"  # {what}\n  {{ python3 -m iopipe.cookbook {name} {arguments}; echo FORMAT Vertical; }} "
              f"| curl -s -u iopipe_reader:$PW http://127.0.0.1:8123/ --data-binary @-")


def first_ticket(receiver, watch):
    for name, note in receiver.received():
        labels = note["commonLabels"]
        if (labels.get("host"), labels.get("disk")) == (watch.host, watch.disk) and note["status"] == "firing":
            return name, note
    return None


def show_ticket(tickets, watch):
    """The ticket the failing disk became, as Alertmanager sent it, and its heatmap saved."""
    receiver, note = wait_for("the ticket Alertmanager sends for the failing disk",
                              lambda: first_ticket(tickets.receiver, watch), timeout_s=120)
    alert = note["alerts"][0]
    labels, annotations = alert["labels"], alert["annotations"]
    print("\n" + "=" * 100)
    say(f"the ticket: Alertmanager ({tickets.alertmanager_url}) sent receiver {receiver!r} (the Jira and "
        f"webhook receiver of infra/alertmanager/alertmanager.yml) this for {watch.disk}:")
    print(f"  {labels['alertname']} {alert['status']} since {alert['startsAt']}, labels "
          + ", ".join(f"{k}={labels[k]}" for k in ("host", "disk", "model", "serial", "kind") if labels.get(k)))
    print(f"  {annotations['summary']}\n  {annotations['description']}")
    print("  evidence:\n" + "\n".join("    " + line for line in annotations["evidence"].splitlines()[:6]))
    print(f"  dashboard: {annotations['dashboard_url']}")
    key, issue = wait_for("the Jira issue", lambda: next(
        ((k, i) for k, i in tickets.receiver.jira_issues().items() if f"{watch.host}/{watch.disk}" in i["fields"]["summary"]),
        None), timeout_s=60)
    print(f"  Jira issue {key} (the receiver's jira_configs, against a local stand-in for Jira's API): "
          f"{issue['fields']['summary']!r}, {issue['fields']['priority']['name']} {issue['fields']['issuetype']['name']}, "
          f"labels {', '.join(issue['fields']['labels'])}")
    for name, what in (("heatmap", "latency heatmap (linked from the ticket, drawn from the disk dashboard's SQL)"),
                       ("histogram", "latency histogram of the window of the verdict (linked from the ticket)")):
        picture = CACHE / "demo" / f"{name}-{watch.host}-{watch.disk}.svg"
        picture.parent.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(annotations[f"{name}_url"], timeout=30) as response:
            picture.write_bytes(response.read())
        print(f"  {what}: {picture}")


def tour(ports, clickhouse, host, agent_bin=AGENT_BIN, tickets=None):
    """The disk's story under the agent, printed as ClickHouse stores it, and the ticket
    `tickets` (Alertmanager and the bridge) sent, if given; returns what was watched."""
    counts = {}
    with FaultDisk(PHASES[0].profile, size_mib=DISK_MIB, rotational=True) as disk, \
            tempfile.TemporaryFile("w+") as agent_log:
        say(f"fault disk {disk.device}: rotational, {DISK_MIB} MiB, served by a FUSE process shaping each request")
        agent = subprocess.Popen([str(agent_bin), "run", "--output", "kafka", "--brokers", ports.brokers,
                                  *agent_access(ports.brokers, host).args(),
                                  "--host", host], stderr=agent_log, text=True)
        try:
            watch = Watch(clickhouse, host, disk.name, time.time())
            reads_before = disk.diskstats()["reads_completed"]
            stop_workload = threading.Event()
            workload = threading.Thread(target=lambda: counts.setdefault("fio", reads_until(disk.device, stop_workload)))
            say(f"agent tracing every disk as host {host}; fio reads 16 KiB at random from {disk.device}, "
                f"one at a time, until the disk has failed. Windows show here some 15 s after they close.")
            workload.start()
            play(disk, watch, stop_workload, workload)
            counts["kernel"] = disk.diskstats()["reads_completed"] - reads_before
        finally:
            agent.terminate()
            agent.wait(timeout=30)
            agent_log.seek(0)
            say("agent: " + (agent_log.read().strip().splitlines() or ["exited"])[-1])
    print_summary(watch, counts, clickhouse)
    if tickets:
        show_ticket(tickets, watch)
    return watch


def main():
    if os.geteuid() != 0:
        sys.exit("make demo needs root: the agent loads eBPF programs and the fault disk is a loop device over FUSE; "
                 "run `sudo make demo`")
    if not AGENT_BIN.exists():
        sys.exit(f"{AGENT_BIN} is missing: run `make agent` (make demo builds it)")
    print(__doc__.split("\n\n")[1] + "\n")
    ports = Ports()
    users = stack.up(ports)
    receiver = tickets_local.Receiver()
    with tickets_local.LocalTickets(ports.clickhouse_url, users.bridge, receiver.url) as tickets:
        tickets.receiver = receiver
        tour(ports, users.client(ports, "reader"), socket.gethostname(), tickets=tickets)
    say(f"Flink's UI: {ports.flink_url}. The stack keeps running: `make down` stops it.")


if __name__ == "__main__":
    main()
