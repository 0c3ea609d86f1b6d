"""A small fleet's records, as the agents and the stream job send them, and what every
cookbook query must answer about them.

The same records go through each engine's real ingestion views (Kafka on the 18.16
server, the Kafka tables' views on chdb), so the answers also check the views. Times are
relative to `now_s`, because the cookbook asks about "the last hour" and "this week".
Expected figures are derived here from the records with plain Python (`p99_ms` merges
histograms independently of the SQL), except where a comment gives them by hand.
"""
import json
import math
import statistics
import time
from dataclasses import dataclass, field

from iopipe import contract, cookbook, migrate, record_batches
from iopipe.paths import SCHEMA

TOPICS_JSON = json.loads((SCHEMA / "topics.json").read_text())
# The topic ClickHouse reads each record from: the stream job's records from their topics,
# the agent's from the topics the job passes those it accepted on to.
INGESTED_FROM = {t["record"]: t["name"] for t in TOPICS_JSON["topics"] + TOPICS_JSON["accepted"]}
WINDOW_TEMPLATE = json.loads((SCHEMA / "examples/io.window.v1.valid.ndjson").read_text().splitlines()[0])
ROLLUP = "io.latency.v1"
ROLLUP_PERIODS = sorted(json.loads((SCHEMA / f"records/{ROLLUP}.schema.json").read_text())["properties"]["period_s"]["enum"])

# host a: four disks of one model (sdb is failing: 1.5% of its I/Os take over a second)
# and an NVMe drive; host b: a disk of the same model (not a peer: another host).
HDD_MODEL = "ST4000NM0035-1V4107"
NVME_MODEL = "SAMSUNG MZ1LB960HAJQ-00007"
BUCKET_4MS, BUCKET_1S, BUCKET_64US = 12, 20, 6
# sdb's healthy peers, each a little slower than the one before in 1,000 I/Os a minute, so
# that every ranking by p99 has one right order.
PEERS_SLOWER_IOS = {"sda": 10, "sdc": 14, "sdd": 18}
NS = 1_000_000_000
# A failing disk's evidence as the job writes it; the event's comm has the characters
# that quoting gets wrong.
FAILING_EVIDENCE = {
    "window_start_ns": 1, "window_end_ns": 2, "op": "R",
    "device_histogram_us": {"131072-262143": 40, "1048576-2097151": 1},
    "device_p50_ms": 180.5, "device_p99_ms": 1100.0, "device_max_ms": 1203.4,
    "iostat": {"r_per_s": 4.1, "aqu_sz": 1.2, "util_pct": 99.5},
    "worst_events": [{"device_ms": 1203.4, "op": "R", "comm": 'say "hi" \\ é'}],
    "service_ms": 180.5, "reasons": ["service time 180.5 ms is beyond the 60 ms any healthy rotational disk needs"]}


def invalid_examples(record):
    """The contract's invalid examples of `record`, {"why", "field", "record"}: each a valid
    record but for one fault, in the field it names."""
    text = (SCHEMA / f"examples/{record}.invalid.ndjson").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def stored_table(record):
    """The table a record lands in: a topic's first Kafka table fills its record table
    (later ones, rollups). io.latency.v1 has a table per period, shortest first (0013)."""
    tables = migrate.tables_fed_by(INGESTED_FROM[record["schema"]])
    return tables[ROLLUP_PERIODS.index(record["period_s"])] if record["schema"] == ROLLUP else tables[0]


def batches(now_s):
    """The batched agent records a warehouse test sends: the contract's valid examples of
    io.interval.v1 and io.eventbatch.v1, and an interval of three histograms on a disk of
    its own (an example's interval holds one at most); moved in time so the latest is of
    `now_s` (the examples' own times are past every table's retention). A disk's second
    example of a record (web-17/sdb's sample again, with its model and a field no table
    has) is a disk of its own: disk_inventory keeps a model of the samples one block read
    (any()), so two samples of a disk that disagree would leave the model of whichever
    the blocks happened to put together."""
    examples, seen = [], set()
    for name in (record_batches.INTERVAL, record_batches.EVENT_BATCH):
        for line in (SCHEMA / f"examples/{name}.valid.ndjson").read_text().splitlines():
            record = json.loads(line)
            if (name, record["host"], record["disk"]) in seen:
                record["disk"] += "-again"
            seen.add((name, record["host"], record["disk"]))
            examples.append(record)
    sample, histogram = record_batches.unfold(next(r for r in examples if r["hist_op"]))[:2]
    disk = {"disk": "sdx"}

    def of(op, latency, counts, errors):
        b = buckets(counts)
        return {**histogram, **disk, "op": op, "latency": latency, "buckets_log2_us": b, "count": sum(b),
                "sum_us": sum(n * 2 ** i for i, n in counts.items()), "max_us": 2 ** (max(counts) + 1) - 1, "errors": errors}
    several = [{**histogram, **disk}, of("R", "queue", {0: 3, 1: 9, 2: 1}, 0), of("W", "total", {4: 5}, 2)]
    records = examples + [record_batches.fold_interval({**sample, **disk}, several)]
    # Moved together, the times keep what each says.
    shift_ns = now_s * NS - max(t for r in records for t in contract.clock_times(r)) // NS * NS
    return [contract.moved_in_time(r, shift_ns) for r in records]


def unfolded(records):
    """The io.diskstats.v1, io.hist.v1 and io.event.v1 records that batched records hold."""
    return [r for record in records for r in record_batches.unfold(record)]


def tables_filled_by(records):
    """The tables the records fill through their topics' Kafka tables and views."""
    return sorted({table for r in records for table in migrate.tables_fed_by(INGESTED_FROM[r["schema"]])})


def rows_of_hosts(client, db, table, hosts):
    """Every row of `table` read with FINAL whose host is a key of `hosts`, as a dict of its
    columns, the host written as `hosts` maps it; sorted, so that two sets of rows compare
    as lists. `client`: a server's or chdb."""
    names = ", ".join(f"'{h}'" for h in hosts)
    text = client.query(f"SELECT * FROM {db}.{table} FINAL WHERE host IN ({names}) FORMAT JSONEachRow")
    rows = [{**row, "host": hosts[row["host"]]} for row in map(json.loads, text.splitlines())]
    return sorted(rows, key=lambda row: json.dumps(row, sort_keys=True))


def assert_nothing_left(rows, db):
    """After a full `down`: neither `db` nor its ingest database, nor a table of either;
    `rows(sql)` runs a query on a server or chdb."""
    databases = f"('{db}', '{migrate.ingest_database(db)}')"
    assert rows(f"SELECT count() FROM system.databases WHERE name IN {databases}") == [("0",)]
    assert rows(f"SELECT count() FROM system.tables WHERE database IN {databases}") == [("0",)]


def rollup_key(record):
    return tuple(record[k] for k in ("host", "disk", "op", "latency", "period_s", "period_start_ns"))


def stored_once(records):
    """table -> (rows, I/Os, revisions) the records leave in it read with FINAL: each record
    once, but of a rollup period only its newest revision; the I/Os and the sum of those
    revisions are of the rollups only (0 for other tables)."""
    newest = {}
    for r in records:
        if r["schema"] == ROLLUP and (rollup_key(r) not in newest or r["revision"] > newest[rollup_key(r)]["revision"]):
            newest[rollup_key(r)] = r
    stored = {}
    for r in [r for r in records if r["schema"] != ROLLUP] + list(newest.values()):
        rows, ios, revisions = stored.get(stored_table(r), (0, 0, 0))
        rollup = r["schema"] == ROLLUP
        stored[stored_table(r)] = (rows + 1, ios + (r["count"] if rollup else 0), revisions + (r["revision"] if rollup else 0))
    return stored


def stored_final(rows, db, table, where="1"):
    """(rows, I/Os, revisions) `table` holds read with FINAL, as `stored_once` counts them;
    `rows(sql)` runs a query on a server or chdb."""
    rolled_up = table in migrate.tables_fed_by(INGESTED_FROM[ROLLUP])
    columns = "count(), sum(count), sum(revision)" if rolled_up else "count(), 0, 0"
    return tuple(int(n) for n in rows(f"SELECT {columns} FROM {db}.{table} FINAL WHERE {where}")[0])


def cookbook_runner(client, db="iopipe"):
    """`run(name, params)`: a cookbook query on `client` (server or chdb), rows as dicts."""
    def run(name, params):
        text = client.query(cookbook.render(name, params, db) + "\nFORMAT JSONEachRow")
        return [json.loads(line) for line in text.splitlines()]
    return run


def buckets(counts):
    """log2 µs buckets from {index: count}."""
    out = [0] * (max(counts) + 1)
    for i, n in counts.items():
        out[i] = n
    return out


def p99_ms(bucket_counts):
    """p99 of a merged log2 histogram, interpolated log-linearly inside its bucket."""
    total = sum(bucket_counts)
    rank, below = 0.99 * total, 0
    for i, n in enumerate(bucket_counts):
        if n and below + n >= rank:
            return 2 ** (i + (rank - below) / n) / 1000
        below += n
    raise ValueError("empty histogram")


def merged(histograms):
    out = [0] * max(len(h["buckets_log2_us"]) for h in histograms)
    for h in histograms:
        for i, n in enumerate(h["buckets_log2_us"]):
            out[i] += n
    return out


@dataclass
class Fleet:
    now_s: int
    host_a: str
    host_b: str
    records: list = field(default_factory=list)

    def by_schema(self, schema):
        return [r for r in self.records if r["schema"] == schema]

    def ndjson(self, schema):
        return "\n".join(json.dumps(r) for r in self.by_schema(schema))

    # ------------------------------------------------------------------ records
    def add_histograms(self, host, disk, minutes_ago, counts, op="R", per_second=10):
        """counts spread over `per_second` one-second records starting `minutes_ago`."""
        start_s = self.now_s - minutes_ago * 60
        start_s -= start_s % 60
        for second in range(per_second):
            part = {i: n // per_second + (1 if second < n % per_second else 0) for i, n in counts.items()}
            b = buckets(part)
            n = sum(b)
            mean_us = [2 ** i * 1.5 for i in range(len(b))]
            self.records.append({
                "schema": "io.hist.v1", "host": host, "disk": disk, "op": op,
                "start_ns": (start_s + second) * NS, "end_ns": (start_s + second + 1) * NS, "latency": "device",
                "buckets_log2_us": b, "count": n, "sum_us": int(sum(c * m for c, m in zip(b, mean_us))),
                "max_us": int(2 ** (len(b)) - 1), "errors": 0})

    def add_diskstats(self, host, disk, model, rotational=True):
        self.records.append({
            "schema": "io.diskstats.v1", "host": host, "disk": disk, "major": 8, "minor": 0,
            "ts_ns": (self.now_s - 30) * NS, "rotational": rotational, "model": model, "serial": f"SN-{disk}",
            **{k: 0 for k in ("reads_completed", "reads_merged", "sectors_read", "read_time_ms", "writes_completed",
                              "writes_merged", "sectors_written", "write_time_ms", "in_flight", "io_time_ms",
                              "weighted_io_time_ms")}})

    def add_window(self, host, disk, seconds_ago, reads_per_s, util_pct):
        start_s = self.now_s - seconds_ago
        start_s -= start_s % 10
        self.records.append({**WINDOW_TEMPLATE, "host": host, "disk": disk, "window_s": 10,
                             "window_start_ns": start_s * NS, "window_end_ns": (start_s + 10) * NS,
                             "reads_completed": int(reads_per_s * 10), "reads_per_s": reads_per_s,
                             "util_pct": util_pct})

    def add_anomaly(self, host, disk, kind, severity, hours_ago, evidence=None):
        start_ns = (self.now_s - int(hours_ago * 3600)) * NS
        evidence = evidence or {"windows": 1}
        self.records.append({
            "schema": "io.anomaly.v1", "id": f"{kind}:{host}/{disk}:{start_ns}:{severity}", "host": host, "disk": disk,
            "kind": kind, "severity": severity, "start_ns": start_ns, "end_ns": start_ns + 10 * NS,
            "summary": f"{kind} on {disk} ({severity})", "evidence": evidence,
            "evidence_json": json.dumps(evidence, separators=(",", ":"), ensure_ascii=False)})

    def add_rollups(self):
        """The stream job's latency rollups of the histograms: each period first with its
        first histogram only, then whole at a higher revision, as the job re-sends a
        period still open."""
        periods = {}
        for h in self.by_schema("io.hist.v1"):
            for period_s in ROLLUP_PERIODS:
                start_ns = h["start_ns"] - h["start_ns"] % (period_s * NS)
                periods.setdefault((h["host"], h["disk"], h["op"], h["latency"], period_s, start_ns), []).append(h)
        for (host, disk, op, latency, period_s, start_ns), hists in periods.items():
            for revision, part in enumerate((hists[:1], hists), start=1):
                self.records.append({
                    "schema": ROLLUP, "host": host, "disk": disk, "op": op, "latency": latency, "period_s": period_s,
                    "period_start_ns": start_ns, "revision": revision, "buckets_log2_us": merged(part),
                    "count": sum(h["count"] for h in part), "sum_us": sum(h["sum_us"] for h in part),
                    "max_us": max(h["max_us"] for h in part), "errors": sum(h["errors"] for h in part)})

    def add_health(self, host, disk, from_state, to_state, hours_ago, ticket=None, action="open", anomaly_ids=()):
        ts_ns = (self.now_s - int(hours_ago * 3600)) * NS
        record = {"schema": "io.health.v1", "id": f"{host}/{disk}:{ts_ns}", "host": host, "disk": disk,
                  "ts_ns": ts_ns, "from_state": from_state, "to_state": to_state, "reason": f"to {to_state}",
                  "anomaly_ids": list(anomaly_ids)}
        if ticket:
            record["ticket"] = {"action": action, "ticket_id": ticket}
        self.records.append(record)


def fleet(now_s, tag):
    """`tag` keeps this fleet's hosts apart from anything else in the tables."""
    f = Fleet(now_s, f"{tag}-a", f"{tag}-b")
    a, b = f.host_a, f.host_b
    for disk in ("sda", "sdb", "sdc", "sdd"):
        f.add_diskstats(a, disk, HDD_MODEL)
    f.add_diskstats(a, "nvme0n1", NVME_MODEL, rotational=False)
    f.add_diskstats(b, "sda", HDD_MODEL)

    # Last hour: 20 and 21 minutes ago, reads and writes, so merging crosses records,
    # minutes and ops. sdb: 985 I/Os near 4 ms and 15 over a second -> p99 about 1.3 s.
    for minutes_ago, op in ((20, "R"), (21, "W")):
        f.add_histograms(a, "sdb", minutes_ago, {BUCKET_4MS: 985, BUCKET_1S: 15}, op=op)
        for disk, slower in PEERS_SLOWER_IOS.items():
            f.add_histograms(a, disk, minutes_ago, {BUCKET_4MS: 1000 - slower, BUCKET_4MS + 1: slower}, op=op)
        f.add_histograms(a, "nvme0n1", minutes_ago, {BUCKET_64US: 5000}, op=op)
    f.add_histograms(b, "sda", 20, {BUCKET_4MS: 50})  # too few I/Os for a p99
    f.add_histograms(b, "sdz", 90, {BUCKET_1S: 500})  # terrible, but not in the last hour

    for disk, util in (("sda", 12.5), ("sdb", 99.0)):
        for seconds_ago in (60, 50, 40):
            f.add_window(a, disk, seconds_ago, reads_per_s=7.3, util_pct=util)
    f.add_window(a, "sda", 3 * 3600, reads_per_s=1.0, util_pct=1.0)  # older than the view asks for

    f.add_anomaly(a, "sdb", "bimodal_retries", "info", hours_ago=48)
    f.add_anomaly(a, "sdb", "bimodal_retries", "warning", hours_ago=48)  # same episode, escalated
    f.add_anomaly(a, "sdb", "bimodal_retries", "info", hours_ago=24)
    f.add_anomaly(a, "sdc", "failing_disk", "warning", hours_ago=1, evidence=FAILING_EVIDENCE)
    f.add_anomaly(b, "sda", "bimodal_retries", "info", hours_ago=10 * 24)  # last week's

    f.add_health(a, "sdb", "healthy", "suspect", hours_ago=3)
    f.add_health(a, "sdb", "suspect", "failing", hours_ago=2.5, ticket=f"iopipe-{a}-sdb")
    f.add_health(a, "sdc", "healthy", "suspect", hours_ago=1)
    f.add_health(b, "sda", "healthy", "suspect", hours_ago=41 * 24)
    f.add_health(b, "sda", "suspect", "failing", hours_ago=40 * 24, ticket=f"iopipe-{b}-sda")
    # A whole ticket: opened, updated with new evidence, stepped down, resolved 2 hours ago;
    # and an older one, resolved long ago.
    sdd_ticket = f"iopipe-{a}-sdd"
    f.add_health(a, "sdd", "healthy", "failing", hours_ago=6, ticket=sdd_ticket, anomaly_ids=["first"])
    f.add_health(a, "sdd", "failing", "failing", hours_ago=5, ticket=sdd_ticket, action="update", anomaly_ids=["second"])
    f.add_health(a, "sdd", "failing", "suspect", hours_ago=3)
    f.add_health(a, "sdd", "suspect", "healthy", hours_ago=2, ticket=sdd_ticket, action="resolve")
    f.add_health(a, "sda", "healthy", "failing", hours_ago=30, ticket=f"iopipe-{a}-sda")
    f.add_health(a, "sda", "failing", "healthy", hours_ago=29, ticket=f"iopipe-{a}-sda", action="resolve")
    f.add_rollups()
    return f


def expected_p99_ms(f, host, disk, since_s):
    hists = [r for r in f.by_schema("io.hist.v1")
             if r["host"] == host and r["disk"] == disk and r["start_ns"] >= since_s * NS]
    return p99_ms(merged(hists))


def close(a, b):
    return math.isclose(float(a), float(b), rel_tol=1e-3)


# ---------------------------------------------------------------------- answers
# `run(name, params)` runs a cookbook query and returns its rows as dicts. Each check
# asserts the rows of this fleet's hosts (other rows may share the tables).

def ours(f, rows):
    return [r for r in rows if r.get("host", f.host_a) in (f.host_a, f.host_b)]


def check_worst_disks(f, run):
    rows = ours(f, run("worst_disks_p99_last_hour", {"limit": 1000}))
    assert [(r["host"], r["disk"]) for r in rows] == [
        (f.host_a, "sdb"), (f.host_a, "sdd"), (f.host_a, "sdc"), (f.host_a, "sda"), (f.host_a, "nvme0n1")], rows
    since = f.now_s - 3600
    for r in rows:
        assert close(r["p99_ms"], expected_p99_ms(f, r["host"], r["disk"], since)), r
    assert close(rows[0]["p99_ms"], 2 ** (20 + 10 / 30) / 1000)  # by hand: rank 1980 of 2000, 10 of the 30 slow ones
    assert int(rows[0]["ios"]) == 2000


def check_heatmap(f, run):
    """The day of 20 minutes ago, in UTC (the servers' time zone here)."""
    day_start_s = (f.now_s - 20 * 60) // 86400 * 86400
    day = time.strftime("%Y-%m-%d", time.gmtime(day_start_s))
    rows = run("disk_latency_heatmap_day", {"host": f.host_a, "disk": "sdb", "day": day})
    cells = {(r["minute"], int(r["bucket_low_us"])): int(r["ios"]) for r in rows}
    hists = [h for h in f.by_schema("io.hist.v1") if h["host"] == f.host_a and h["disk"] == "sdb"
             and day_start_s <= h["start_ns"] // NS < day_start_s + 86400]
    expected = {}
    for h in hists:
        minute = time.strftime("%Y-%m-%d %H:%M:00", time.gmtime(h["start_ns"] // NS // 60 * 60))
        for i, n in enumerate(h["buckets_log2_us"]):
            if n:
                expected[(minute, 2 ** i)] = expected.get((minute, 2 ** i), 0) + n
    assert cells == expected
    assert len(cells) >= 2 and {b for _, b in cells} <= {2 ** BUCKET_4MS, 2 ** BUCKET_1S}


def check_bimodal(f, run):
    rows = ours(f, run("bimodal_retries_this_week", {}))
    assert [(r["host"], r["disk"], int(r["episodes"])) for r in rows] == [(f.host_a, "sdb", 2)]


def check_suspect_to_failing(f, run):
    rows = ours(f, run("suspect_to_failing", {"days": 30}))
    assert len(rows) == 1, rows
    row = rows[0]
    assert (row["host"], row["disk"], row["ticket_id"]) == (f.host_a, "sdb", f"iopipe-{f.host_a}-sdb")
    assert int(row["seconds_suspect"]) == 1800


def check_iostat(f, run):
    rows = run("iostat_host", {"host": f.host_a, "window_s": 10, "minutes": 5})
    assert [(r["disk"], float(r["%util"])) for r in rows] == [
        (disk, util) for _ in range(3) for disk, util in (("sda", 12.5), ("sdb", 99.0))]
    assert all(float(r["r/s"]) == 7.3 for r in rows)


def check_peers(f, run):
    rows = run("disk_vs_peers", {"host": f.host_a, "disk": "sdb"})
    assert [(r["disk"], int(r["this_disk"])) for r in rows] == [("sdb", 1), ("sdd", 0), ("sdc", 0), ("sda", 0)], rows
    p99 = {disk: expected_p99_ms(f, f.host_a, disk, 0) for disk in ("sdb", *PEERS_SLOWER_IOS)}
    peers = statistics.median(p99[disk] for disk in PEERS_SLOWER_IOS)
    for r in rows:
        assert close(r["p99_ms"], round(p99[r["disk"]], 3)), r
        assert close(r["p99_vs_peers"], round(p99[r["disk"]] / peers, 2)), r


def check_anomalies_of_disk(f, run):
    rows = run("anomalies_of_disk", {"host": f.host_a, "disk": "sdc", "hours": 2})
    assert [(r["kind"], r["severity"]) for r in rows] == [("failing_disk", "warning")], rows
    row = rows[0]
    assert [float(row[k]) for k in ("p50_ms", "p99_ms", "max_ms", "aqu_sz", "util_pct")] == [180.5, 1100.0, 1203.4, 1.2, 99.5]
    assert json.loads(row["evidence"]) == FAILING_EVIDENCE
    older = run("anomalies_of_disk", {"host": f.host_a, "disk": "sdb", "hours": 72})
    assert [(r["kind"], r["severity"]) for r in older] == [
        ("bimodal_retries", "info"), ("bimodal_retries", "info"), ("bimodal_retries", "warning")], older


def check_time_to_detect(f, run, ingested_by_s):
    rows = ours(f, run("time_to_detect", {"days": 7}))
    expected = sorted((r["id"] for r in f.by_schema("io.anomaly.v1") if r["start_ns"] >= (f.now_s - 7 * 86400) * NS))
    assert sorted(r["id"] for r in rows) == expected
    for r in rows:
        onset_s = next(a["start_ns"] for a in f.by_schema("io.anomaly.v1") if a["id"] == r["id"]) // NS
        assert 0 <= int(r["seconds_to_detect"]) - (f.now_s - onset_s) <= ingested_by_s - f.now_s + 1, r


def check_tickets(f, run):
    """Open tickets of any age and those resolved within the hours asked; each as its transitions tell."""
    rows = {(r["host"], r["disk"]): r for r in ours(f, run("tickets", {"resolved_hours": 3}))}
    assert sorted(rows) == sorted([(f.host_b, "sda"), (f.host_a, "sdb"), (f.host_a, "sdd")]), rows
    sdd = rows[(f.host_a, "sdd")]
    assert (sdd["ticket_id"], sdd["last_action"], sdd["opened_reason"]) == (f"iopipe-{f.host_a}-sdd", "resolve", "to failing")
    assert (int(sdd["opened_ns"]), int(sdd["last_ns"])) == ((f.now_s - 6 * 3600) * NS, (f.now_s - 2 * 3600) * NS)
    assert (sdd["opened_anomaly_ids"], sorted(sdd["cited_anomaly_ids"])) == (["first"], ["first", "second"])
    assert [rows[k]["last_action"] for k in ((f.host_b, "sda"), (f.host_a, "sdb"))] == ["open", "open"]
    recent = ours(f, run("tickets", {"resolved_hours": 1}))
    assert sorted(r["disk"] for r in recent) == ["sda", "sdb"], recent


CHECKS = {  # cookbook query -> the check of its answer
    "worst_disks_p99_last_hour": check_worst_disks,
    "disk_latency_heatmap_day": check_heatmap,
    "bimodal_retries_this_week": check_bimodal,
    "suspect_to_failing": check_suspect_to_failing,
    "iostat_host": check_iostat,
    "disk_vs_peers": check_peers,
    "anomalies_of_disk": check_anomalies_of_disk,
    "tickets": check_tickets,
}


def check_cookbook(f, run, ingested_by_s):
    """Every cookbook query's answer; `ingested_by_s`: when every record had been ingested."""
    for check in CHECKS.values():
        check(f, run)
    check_time_to_detect(f, run, ingested_by_s)


def checked_queries():
    return set(CHECKS) | {"time_to_detect"}
