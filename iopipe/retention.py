"""Drops the partitions of the raw tables that lie wholly past their retention
(retention.json), what TTL does on a modern server. ClickHouse 18.16 has no TTL, so there
`python3 -m iopipe.migrate retention` runs on a schedule (docs/warehouse.md, "Retention"); on a modern server the
TTLs of 0010_retention_ttl remove the same rows as they expire, and running it as well
drops only what they have emptied.

A partition is dropped only when the whole period its id names (the day, month or year,
in the time zone its column is read in) ends at or before the day of the cut-off, now
minus the table's retention: a partition that may hold a row newer than the cut-off is
kept. A table whose partition key is not a day, month or year of the policy's column is
refused before anything is dropped, never guessed at.
"""
import json
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from iopipe.paths import SCHEMA

POLICY_FILE = SCHEMA / "clickhouse" / "retention.json"
DAY_S = 86400

# The partition keys the migrations use, and the digits of the partition ids each makes.
PARTITION_KEY = re.compile(r"^(toYYYYMMDD|toYYYYMM|toYear)\(`?(\w+)`?\)$")
ID_DIGITS = {"toYYYYMMDD": 8, "toYYYYMM": 6, "toYear": 4}
# Column types whose calendar the partition functions read: the server's time zone, or
# the column's own. Matched whole, as the type is written back into a query.
TIME_TYPE = re.compile(r"^(Date|DateTime|DateTime\('[\w/+-]+'\))$")


class RetentionRefused(ValueError):
    """The policy and a table disagree, or a partition cannot be dated: nothing was dropped."""


@dataclass(frozen=True)
class Retention:
    table: str
    days: int
    time_column: str


def load_policy(path=POLICY_FILE):
    tables = json.loads(Path(path).read_text())["tables"]
    return [Retention(table, spec["days"], spec["time_column"]) for table, spec in tables.items()]


def period_end(function, partition_id):
    """The first day after the day, month or year a partition id names (20240311, 202403, 2024)."""
    if not re.fullmatch(r"\d{%d}" % ID_DIGITS[function], partition_id):
        raise RetentionRefused(f"partition {partition_id!r} is not what {function} makes")
    year, month, day = int(partition_id[:4]), int(partition_id[4:6] or 1), int(partition_id[6:8] or 1)
    try:
        start = date(year, month, day)
        if function == "toYYYYMMDD":
            return start + timedelta(days=1)
        if function == "toYYYYMM":
            return (start + timedelta(days=31)).replace(day=1)
        return date(year + 1, 1, 1)
    except ValueError:  # no such day, or the year after 9999
        raise RetentionRefused(f"partition {partition_id!r} names no {function} period") from None


@dataclass(frozen=True)
class Partition:
    table: str
    partition_id: str
    rows: int
    bytes_on_disk: int
    ends: date  # the first day after its period, in its column's time zone

    @property
    def newest_possible_row(self):
        return datetime.combine(self.ends, datetime.min.time()) - timedelta(seconds=1)


@dataclass(frozen=True)
class TablePlan:
    rule: Retention
    cutoff_s: int
    cutoff_day: date  # the day of the cut-off in the column's time zone: earlier periods go
    expired: list
    kept: list


def partition_key(client, db, rule):
    """(function, column) of the table's partition key, checked against the policy."""
    found = client.rows(f"SELECT partition_key FROM system.tables WHERE database = '{db}' AND name = '{rule.table}'")
    if not found:
        raise RetentionRefused(f"{db}.{rule.table} does not exist (is the database migrated?)")
    key = found[0][0]
    match = PARTITION_KEY.match(key)
    if not match:
        raise RetentionRefused(f"{db}.{rule.table} is partitioned by {key!r}, not by toYYYYMMDD, toYYYYMM or toYear "
                               "of one column: cannot tell which of its partitions are old")
    if match[2] != rule.time_column:
        raise RetentionRefused(f"{db}.{rule.table} is partitioned by {key!r}, but the retention policy "
                               f"({POLICY_FILE.name}) ages its rows by {rule.time_column}")
    return match[1], match[2]


def cutoff_day(client, db, table, column, cutoff_s):
    """The cut-off's day where the column's values are read: the server computes it, in the
    column's time zone, as the partition key does."""
    found = client.rows(f"SELECT type FROM system.columns WHERE database = '{db}' AND table = '{table}' AND name = '{column}'")
    column_type = found[0][0].replace("\\'", "'") if found else ""  # TabSeparated escapes the quotes
    if not TIME_TYPE.match(column_type):
        raise RetentionRefused(f"{db}.{table}.{column} is {column_type or 'missing'}, not a Date or DateTime")
    day = client.rows(f"SELECT toString(toDate(CAST(toDateTime({int(cutoff_s)}) AS {column_type})))")[0][0]
    return date.fromisoformat(day)


def active_partitions(client, db, table, function):
    rows = client.rows(f"SELECT partition_id, sum(rows), sum(bytes_on_disk) FROM system.parts "
                       f"WHERE database = '{db}' AND table = '{table}' AND active "
                       "GROUP BY partition_id ORDER BY partition_id")
    return [Partition(table, pid, int(n), int(size), period_end(function, pid)) for pid, n, size in rows]


def plan(client, db, policy, now_s):
    """Every table's expired and kept partitions; refuses before anything is dropped."""
    plans = []
    for rule in policy:
        function, column = partition_key(client, db, rule)
        cutoff_s = now_s - rule.days * DAY_S
        day = cutoff_day(client, db, rule.table, column, cutoff_s)
        partitions = active_partitions(client, db, rule.table, function)
        plans.append(TablePlan(rule, cutoff_s, day, [p for p in partitions if p.ends <= day],
                               [p for p in partitions if p.ends > day]))
    return plans


def server_now_s(client):
    """The server's clock, which its TTLs go by."""
    return int(client.rows("SELECT toUInt32(now())")[0][0])


def parse_now(text):
    """An ISO 8601 time as Unix seconds; without an offset it is UTC."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return int((moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp())


def utc(seconds):
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def run(client, db="iopipe", policy=None, now_s=None, dry_run=False, log=print):
    """Drops (with dry_run: lists) every expired partition of the policy's tables; returns them."""
    now_s = server_now_s(client) if now_s is None else now_s
    plans = plan(client, db, load_policy() if policy is None else policy, now_s)
    verb = "would drop" if dry_run else "drop"
    expired = []
    for table_plan in plans:
        table = f"{db}.{table_plan.rule.table}"
        log(f"[retention] {table}: {table_plan.rule.days} days by {table_plan.rule.time_column}, "
            f"cut-off {utc(table_plan.cutoff_s)}: partitions ending by the start of {table_plan.cutoff_day} go, "
            f"{len(table_plan.kept)} kept")
        for partition in table_plan.expired:
            log(f"[retention] {verb} {table} {partition.partition_id}: {partition.rows} rows, "
                f"{partition.bytes_on_disk} bytes (newest possible row {partition.newest_possible_row})")
            if not dry_run:
                # The id of a day, month or year key is its value, which DROP PARTITION takes on every version.
                client.query(f"ALTER TABLE {table} DROP PARTITION {partition.partition_id}")
            expired.append(partition)
    log(f"[retention] {'dry run, would drop' if dry_run else 'dropped'} {len(expired)} partitions: "
        f"{sum(p.rows for p in expired)} rows, {sum(p.bytes_on_disk for p in expired)} bytes (now: {utc(now_s)})")
    return expired
