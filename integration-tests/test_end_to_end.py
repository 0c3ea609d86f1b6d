"""The mission end to end: fault disks shaped as the seeds' S1-S6, driven by the seeds'
workloads, traced by the real agent (eBPF) into Kafka, judged by the live Flink job,
stored by ClickHouse. Each misbehaving disk gets its verdict and health, the healthy one
(S4) and the machine's own disks get nothing, every I/O the agent counted is stored
once, and the time from the fault to its row in ClickHouse is measured.

S1-S5 share the machine at once (their workloads are light); S6 pushes a thousand I/Os a
second through its fault disk and plays alone once theirs end, while they are judged. Figures: `make test-e2e` prints them and
writes them to $IOPIPE_CACHE/end-to-end.md."""
import json
import os
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import pytest

from iopipe import cookbook
from iopipe.contract import BASE_WINDOW_S, LATENCY_ROLLUPS
from iopipe.faultdisk.seeds import SCENARIOS, Run, play_together, scenario_disk
from iopipe.readiness import say, wait_for

import tracing_agent
from kafka_records import consume_agent_records, consume_host, dead_letters_naming

pytestmark = pytest.mark.stack

GROUPS = (("S1", "S2", "S3", "S4", "S5"), ("S6",))
FIGURES = Path(os.environ.get("IOPIPE_CACHE", Path.home() / ".cache" / "iopipe")) / "end-to-end.md"


def sql_string(value):
    return cookbook.literal(value, "String")


class Fleet:
    """The scenarios played on this machine under one agent host name, and what the
    pipeline made of them."""

    def __init__(self, pipeline, tickets, host):
        self.pipeline = pipeline
        self.tickets = tickets
        self.host = host
        self.runs = {}

    def rows(self, sql):
        return self.pipeline.reader.rows(sql.replace("{host}", sql_string(self.host)))

    def anomalies(self):
        """(disk, kind, severity) -> first arrival (unix s), and the summaries."""
        first, summaries = {}, {}
        for disk, kind, severity, received, summary in self.rows(
                "SELECT disk, kind, severity, toUnixTimestamp(received_at), summary "
                "FROM iopipe.anomalies FINAL WHERE host = {host}"):
            key = (disk, kind, severity)
            first[key] = min(first.get(key, float("inf")), int(received))
            summaries.setdefault(key, summary)
        return first, summaries

    def health(self, disk, with_ticket_id=False):
        ticket = "`ticket.ticket_id`" if with_ticket_id else "`ticket.action`"
        return self.rows(f"SELECT to_state, {ticket} FROM iopipe.health FINAL "
                         f"WHERE host = {{host}} AND disk = {sql_string(disk)} ORDER BY ts_ns")

    def tickets_resolved(self):
        """Every ticket opened for a disk of the fleet resolved, in ClickHouse and at the receiver."""
        # Each disk's last ticket action: the rows come in time order, so the last one wins.
        last = dict(self.rows("SELECT disk, `ticket.action` FROM iopipe.health FINAL "
                              "WHERE host = {host} AND `ticket.ticket_id` != '' ORDER BY ts_ns"))
        resolved_notified = {disk for disk, notes in self.notifications().items()
                             if any(n["status"] == "resolved" for _, n in notes)}
        return bool(last) and all(a == "resolve" for a in last.values()) and set(last) <= resolved_notified

    def notifications(self):
        """disk -> [(receiver, notification)] the tickets receiver got for this fleet's host."""
        by_disk = {}
        for receiver, n in self.tickets.receiver.received():
            if n["commonLabels"].get("host") == self.host:
                by_disk.setdefault(n["commonLabels"].get("disk"), []).append((receiver, n))
        return by_disk

    def windows_closed_until(self, disk):
        (end_ns,), = self.rows(f"SELECT max(window_end_ns) FROM iopipe.windows "
                               f"WHERE host = {{host}} AND disk = {sql_string(disk)} AND window_s = {BASE_WINDOW_S}")
        return int(end_ns) / 1e9

    def judged(self, runs, ended):
        """Every expected verdict stored, and every disk's windows closed past its workload."""
        found, _ = self.anomalies()
        for run in runs:
            disk = run.disk.name
            if any((disk, *verdict) not in found for verdict in run.scenario.expect):
                return False
            if self.windows_closed_until(disk) < ended:
                return False
        return True

    def rollups_complete(self, sent):
        """Once every disk is silent, the job closes its last minutes and sends their rollups."""
        stored = {table: sum(self.stored_ios(f"{table} FINAL", "sum(count)").values()) for table in LATENCY_ROLLUPS}
        if any(n != sent for n in stored.values()):
            raise AssertionError(f"the agent sent {sent} I/Os, the rollups hold {stored}")  # named if it times out
        return True

    def rollups_by_disk(self):
        """Per disk, the I/Os in the histograms and in each rollup table: where a shortfall is."""
        tables = {"histograms": self.stored_ios("histograms", "sum(count)")}
        tables.update({t: self.stored_ios(f"{t} FINAL", "sum(count)") for t in LATENCY_ROLLUPS})
        return {disk: {t: n.get(disk, 0) for t, n in tables.items()} for disk in tables["histograms"]}

    def stored_ios(self, table, count):
        return {disk: int(n) for disk, n in self.rows(
            f"SELECT disk, {count} FROM iopipe.{table} WHERE host = {{host}} AND latency = 'device' "
            f"AND op IN ('R', 'W') GROUP BY disk")}


@pytest.fixture(scope="session")
def fleet(pipeline, tickets, agent_bin):
    """The scenarios played and judged. The job's rollups of their last minutes come once
    the disks have been silent for its DISK_IDLENESS: `fleet.rollups_stored()` waits for
    them, in the tests that run after the rest of the tier (conftest), which cover that time."""
    fleet = Fleet(pipeline, tickets, f"e2e-{uuid.uuid4().hex[:6]}")
    with ExitStack() as cleanup:
        disks = {name: cleanup.enter_context(scenario_disk(SCENARIOS[name])) for group in GROUPS for name in group}
        pool = cleanup.enter_context(ThreadPoolExecutor(1, thread_name_prefix="e2e"))
        agent = tracing_agent.KafkaTracingAgent(agent_bin, pipeline.ports.brokers, fleet.host)
        try:
            play_and_judge(fleet, pool, [[Run(SCENARIOS[name], disks[name]) for name in group] for group in GROUPS])
            # The agent goes on sampling the idle disks: their quiet windows step a failing
            # disk's health down to healthy, which resolves its ticket.
            wait_for("every ticket resolved and notified so", fleet.tickets_resolved, timeout_s=300)
        finally:
            log = agent.stop()
        assert "kafka_failed 0, kafka_shed 0" in log, log
        fleet.agent_summary = log.strip().splitlines()[-1]
        fleet.agent_hists = [h for h in consume_agent_records(pipeline.ports.brokers, "io.hist.v1", fleet.host)
                             if h["latency"] == "device" and h["op"] in ("R", "W")]
        fleet.untraced = consume_host(pipeline.ports.brokers, "io.agent.v1", fleet.host)[-1].get("untraced_by_disk", {})
        sent = sum(h["count"] for h in fleet.agent_hists)
        wait_for("every histogram stored", lambda: sum(fleet.stored_ios("histograms", "sum(count)").values()) == sent,
                 timeout_s=60)
        fleet.rollups = pool.submit(rollups_then_figures, fleet, sent)
        yield fleet


def play_and_judge(fleet, pool, groups):
    """Plays each group of runs at once, the next group while the one before is judged."""
    judging = None
    for runs in groups:
        say(f"playing {', '.join(r.scenario.name for r in runs)} on {', '.join(r.disk.device for r in runs)} "
            f"for {max(r.scenario.seconds for r in runs):.0f} s")
        playing = pool.submit(play_together, runs)
        if judging:
            judge(fleet, *judging)
        playing.result()
        judging = (runs, time.time())
        fleet.runs.update({run.scenario.name: run for run in runs})
    judge(fleet, *judging)


def judge(fleet, runs, ended):
    wait_for(f"{', '.join(r.scenario.name for r in runs)} judged in ClickHouse", lambda: fleet.judged(runs, ended),
             timeout_s=120)
    # A ticket is open now: a bridge killed and started again posts it as it was.
    fleet.tickets.restart_bridge()


def rollups_then_figures(fleet, sent):
    # The disks fell silent with the agent: the job closes their last windows once they
    # have been silent for its DISK_IDLENESS (conftest), and sends their rollups.
    try:
        wait_for("the job's latency rollups counting every I/O", lambda: fleet.rollups_complete(sent),
                 timeout_s=240)
    except TimeoutError as e:
        raise AssertionError(f"{e}\n{fleet.rollups_by_disk()}\ndead letters naming the host: "
                             f"{dead_letters_naming(fleet.pipeline.ports.brokers, fleet.host)[:20]}") from None
    write_figures(fleet)


def times_to_detect(fleet, run):
    found, _ = fleet.anomalies()
    return {verdict: found[(run.disk.name, *verdict)] - run.marks[mark]
            for verdict, mark in run.scenario.expect.items() if (run.disk.name, *verdict) in found}


def accounting(fleet, run):
    disk = run.disk.name
    return {
        "workload issued": run.issued,
        "kernel diskstats": run.completed,
        "agent histograms": sum(h["count"] for h in fleet.agent_hists if h["disk"] == disk),
        "agent reported missing": fleet.untraced.get(disk, 0),
        "ClickHouse histograms": fleet.stored_ios("histograms", "sum(count)").get(disk, 0),
        "ClickHouse rollups": tuple(fleet.stored_ios(f"{table} FINAL", "sum(count)").get(disk, 0)
                                    for table in LATENCY_ROLLUPS),
    }


def write_figures(fleet):
    lines = ["| scenario | disk | verdicts (time to detect, s) | I/Os: workload = diskstats = agent (+ reported missing) = stored "
             "= rollups of a minute / an hour / a day |",
             "|---|---|---|---|"]
    for name, run in sorted(fleet.runs.items()):
        ttd = ", ".join(f"{kind} {severity} ({seconds:.0f})" for (kind, severity), seconds in times_to_detect(fleet, run).items())
        n = accounting(fleet, run)
        counts = (f"{n['workload issued']} = {n['kernel diskstats']} = {n['agent histograms']} "
                  f"(+ {n['agent reported missing']}) = {n['ClickHouse histograms']} "
                  f"= {' / '.join(map(str, n['ClickHouse rollups']))}")
        lines.append(f"| {name} {run.scenario.story} | {run.disk.name} | {ttd or 'none'} | {counts} |")
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    lines.append(f"\nagent: {fleet.agent_summary}")
    FIGURES.write_text("\n".join(lines) + "\n")
    say("end to end figures (also in " + str(FIGURES) + "):\n" + "\n".join(lines))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_disk_gets_its_verdict_and_health(fleet, name):
    run = fleet.runs[name]
    found, summaries = fleet.anomalies()
    mine = {(kind, severity) for disk, kind, severity in found if disk == run.disk.name}
    expected = set(run.scenario.expect)
    assert expected <= mine and {k for k, _ in mine} == {k for k, _ in expected}, \
        {v: summaries[(run.disk.name, *v)] for v in mine}
    states = [state for state, _ in fleet.health(run.disk.name)]
    assert tuple(s for s in until_it_recovers(states) if s != "healthy") == run.scenario.health, fleet.health(run.disk.name)
    if "failing" in run.scenario.health:
        assert ("failing", "open") in fleet.health(run.disk.name), "a failing disk opens one ticket"


def until_it_recovers(states):
    """The states a disk's health climbed through, before its first step down."""
    order = ("healthy", "suspect", "failing")
    climbed = []
    for state in states:
        if climbed and order.index(state) < order.index(climbed[-1]):
            break
        climbed.append(state)
    return climbed


def test_a_failing_disk_gets_one_ticket_updated_while_it_fails_and_resolved_when_healthy(fleet):
    """Through the bridge (killed and restarted meanwhile) and Alertmanager's shipped
    routes, to the tickets receiver: one group and one alert for the disk throughout, its
    evidence and links, repeated while it fails, resolved once it is healthy; one Jira
    issue, updated, then resolved; nothing for any other disk."""
    failing = [run.disk.name for run in fleet.runs.values() if "failing" in run.scenario.health]
    assert failing, "a scenario turns a disk failing"
    notified = fleet.notifications()
    assert set(notified) == set(failing), {disk: len(n) for disk, n in notified.items()}
    for disk in failing:
        (ticket_id,) = {t for _, t in fleet.health(disk, with_ticket_id=True) if t}
        notes = notified[disk]
        assert {receiver for receiver, _ in notes} == {"disk-tickets"}, notes
        assert len({n["groupKey"] for _, n in notes}) == 1, "one group, so one Jira issue"
        alerts = [alert for _, n in notes for alert in n["alerts"]]
        assert len({(a["fingerprint"], a["startsAt"]) for a in alerts}) == 1, "one alert: one ticket, never a second"
        statuses = [n["status"] for _, n in notes]
        assert statuses[0] == "firing" and statuses[-1] == "resolved" and statuses.count("resolved") == 1, statuses
        assert statuses.count("firing") >= 2, f"repeated while the disk fails: {statuses}"
        first = alerts[0]
        assert first["labels"]["kind"] == "failing_disk" and first["labels"]["disk"] == disk, first["labels"]
        assert first["annotations"]["ticket_id"] == ticket_id, first["annotations"]
        assert "failing_disk critical" in first["annotations"]["evidence"], first["annotations"]["evidence"]
        assert "iopipe.anomalies" in first["annotations"]["cookbook_sql"]
        for picture, drawn in (("heatmap_url", b'class="cell"'), ("histogram_url", b'class="bar"')):
            with urllib.request.urlopen(first["annotations"][picture], timeout=30) as response:
                assert response.headers["Content-Type"] == "image/svg+xml"
                assert drawn in response.read(), f"{picture} draws nothing"
        (issue,) = [i for i in fleet.tickets.receiver.jira_issues().values()
                    if f"{fleet.host}/{disk}" in i["fields"]["summary"]]
        assert issue["updates"] >= 1 and issue["transitions"] == ["Done"], issue
        assert ticket_id in issue["fields"]["description"], issue["fields"]["description"]
    issues = [i["fields"]["summary"] for i in fleet.tickets.receiver.jira_issues().values()]
    assert len([s for s in issues if fleet.host + "/" in s]) == len(failing), issues


def test_nothing_is_flagged_on_the_machines_own_disks(fleet):
    found, summaries = fleet.anomalies()
    fault_disks = {run.disk.name for run in fleet.runs.values()}
    assert not {key: summaries[key] for key in found if key[0] not in fault_disks}


def test_every_anomaly_is_stored_with_the_evidence_of_its_window(fleet):
    """Each anomaly names its window and shows its latency; its iostat line is there
    exactly when the window had diskstats to compute one from, which is when the window's
    iostat row is stored. A window may have none: a disk's first diskstats sample makes no
    interval, so a burst in the window where the agent first saw the disk has no iostat."""
    host = sql_string(fleet.host)
    rows = fleet.pipeline.reader.json_rows(f"SELECT kind, disk, start_ns, evidence_json FROM iopipe.anomalies FINAL "
                                           f"WHERE host = {host}")
    assert rows
    anomalies = []
    for row in rows:
        kind, evidence = row["kind"], json.loads(row["evidence_json"])
        assert evidence["window_end_ns"] > evidence["window_start_ns"] >= int(row["start_ns"]), (kind, evidence)
        assert evidence["device_histogram_us"], (kind, evidence)
        anomalies.append((kind, row["disk"], int(evidence["window_start_ns"]), int(evidence["window_end_ns"]),
                          "iostat" in evidence))
    assert any(with_iostat for *_, with_iostat in anomalies), anomalies

    def iostat_windows_once_all_with_iostat_are_stored():
        stored = {(r["disk"], int(r["window_start_ns"]), int(r["window_end_ns"])) for r in fleet.pipeline.reader.json_rows(
            f"SELECT disk, window_start_ns, window_end_ns FROM iopipe.windows FINAL WHERE host = {host} AND op = 'all'")}
        return stored if all((disk, s, e) in stored for _, disk, s, e, with_iostat in anomalies if with_iostat) else None

    stored = wait_for("the iostat rows of the anomalies' windows", iostat_windows_once_all_with_iostat_are_stored,
                      timeout_s=60)
    for kind, disk, start_ns, end_ns, with_iostat in anomalies:
        assert with_iostat == ((disk, start_ns, end_ns) in stored), (kind, disk, start_ns, with_iostat)


@pytest.mark.after_the_rest
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_io_the_agent_counted_is_stored_once(fleet, name):
    fleet.rollups.result()
    counts = accounting(fleet, fleet.runs[name])
    assert counts["workload issued"] == counts["kernel diskstats"] > 0, counts
    assert counts["agent histograms"] == counts["ClickHouse histograms"], counts
    assert counts["ClickHouse rollups"] == (counts["agent histograms"],) * len(LATENCY_ROLLUPS), counts
    assert counts["agent histograms"] <= counts["kernel diskstats"], counts


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_io_the_kernel_completed_is_in_the_histograms_or_reported_missing(fleet, name):
    counts = accounting(fleet, fleet.runs[name])
    assert counts["agent histograms"] + counts["agent reported missing"] == counts["kernel diskstats"], counts


@pytest.mark.xfail(strict=False, reason="open: with several fault disks busy at once the kernel does not run the agent's "
                   "completion program for some completions (ftrace sees them; see END_TO_END.md); the agent reports "
                   "them per disk, and the test above holds it to that")
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_agent_counts_every_io_the_kernel_completed(fleet, name):
    counts = accounting(fleet, fleet.runs[name])
    assert counts["agent histograms"] == counts["kernel diskstats"], counts
