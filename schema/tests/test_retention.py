"""Retention without TTL (`python3 -m iopipe.migrate retention`, iopipe/retention.py) on the
modern engine (chdb), over the schema as 18.16 has it: partitions wholly older than a
table's retention are dropped, any partition that may hold a newer row is kept, and a
table it cannot date is refused. The 18.16 server runs it in
integration-tests/test_warehouse.py."""
import re
import uuid
from datetime import date, datetime, timezone

import pytest

from iopipe import migrate, retention
from testkit.chdb_engine import ChdbEngine

from test_warehouse_chdb import INGESTION_SETTINGS

NS = 1_000_000_000
NOW = "2024-03-15T12:00:00Z"
NOW_S = retention.parse_now(NOW)
TTL = re.compile(r"ALTER TABLE \{db\}\.(\w+) MODIFY TTL (\w+) \+ INTERVAL (\d+) DAY")
# The field of each table's records that its view turns into the partitioned time column.
TIME_FIELD = {"events": "issue_ns", "histograms": "start_ns", "diskstats": "ts_ns",
              "latency_1h": "start_ns", "latency_1d": "start_ns"}


def utc_s(text):
    return int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp())


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    engine = ChdbEngine(tmp_path_factory.mktemp("chdb"))
    yield engine
    engine.close()


@pytest.fixture
def db(engine):
    """A database migrated as on 18.16: everything before 0010's TTLs (which would remove
    the old rows themselves on a modern engine)."""
    name = f"retention_{uuid.uuid4().hex[:8]}"
    ttl = next(m.version for m in migrate.discover() if m.name == "retention_ttl")
    migrate.Migrator(engine, db=name, log=lambda _: None).up(to_version=ttl - 1)
    return name


def ingest(engine, db, table, *times):
    """One record per UTC time through the table's Kafka table and view."""
    field = TIME_FIELD[table]
    rows = "\n".join(f'{{"host": "ret", "disk": "sda", "{field}": {utc_s(t) * NS}, "buckets_log2_us": [1], "count": 1}}'
                     for t in times)
    engine.query(f"INSERT INTO {db}.{table}_kafka SETTINGS {INGESTION_SETTINGS} FORMAT JSONEachRow\n{rows}")


def stored(engine, db, table, column):
    return [r[0] for r in engine.rows(f"SELECT toString({column}) FROM {db}.{table} ORDER BY {column}")]


def quiet(*_):
    pass


def test_the_policy_is_what_the_retention_ttl_migration_states():
    ttl = next(m for m in migrate.discover() if m.name == "retention_ttl").up.read_text()
    stated = {table: (column, int(days)) for table, column, days in TTL.findall(ttl)}
    assert len(stated) == ttl.count("MODIFY TTL"), "every TTL of 0010 is in the form this test reads"
    assert stated == {r.table: (r.time_column, r.days) for r in retention.load_policy()}


def test_a_partition_id_ends_after_its_day_month_or_year():
    assert retention.period_end("toYYYYMMDD", "20240229") == date(2024, 3, 1)
    assert retention.period_end("toYYYYMMDD", "20231231") == date(2024, 1, 1)
    assert retention.period_end("toYYYYMM", "202312") == date(2024, 1, 1)
    assert retention.period_end("toYYYYMM", "202402") == date(2024, 3, 1)
    assert retention.period_end("toYear", "2023") == date(2024, 1, 1)
    for function, partition_id in (("toYYYYMMDD", "20230229"), ("toYYYYMM", "202413"), ("toYYYYMM", "2024"),
                                   ("toYear", "2024-1")):
        with pytest.raises(retention.RetentionRefused):
            retention.period_end(function, partition_id)


def test_only_day_partitions_wholly_past_retention_are_dropped(engine, db):
    # Cut-offs from NOW: events 3 days (2024-03-12 12:00), histograms 14 (03-01 12:00),
    # diskstats 30 (02-14 12:00). The cut-off's own day holds rows on both sides of it: kept.
    ingest(engine, db, "events", "2024-03-01 08:00:00", "2024-03-11 23:59:59", "2024-03-12 06:00:00",
           "2024-03-12 18:00:00", "2024-03-14 10:00:00")
    ingest(engine, db, "histograms", "2024-02-28 10:00:00", "2024-02-29 23:00:00", "2024-03-01 01:00:00",
           "2024-03-10 10:00:00")
    ingest(engine, db, "diskstats", "2023-12-31 10:00:00", "2024-02-13 23:59:59", "2024-02-14 00:00:00",
           "2024-03-15 11:00:00")

    dropped = retention.run(engine, db, now_s=NOW_S, log=quiet)

    assert {(p.table, p.partition_id, p.rows) for p in dropped} == {
        ("events", "20240301", 1), ("events", "20240311", 1),
        ("histograms", "20240228", 1), ("histograms", "20240229", 1),
        ("diskstats", "20231231", 1), ("diskstats", "20240213", 1)}
    assert stored(engine, db, "events", "issue_time") == [
        "2024-03-12 06:00:00", "2024-03-12 18:00:00", "2024-03-14 10:00:00"]
    assert stored(engine, db, "histograms", "start") == ["2024-03-01 01:00:00", "2024-03-10 10:00:00"]
    assert stored(engine, db, "diskstats", "ts") == ["2024-02-14 00:00:00", "2024-03-15 11:00:00"]
    assert retention.run(engine, db, now_s=NOW_S, log=quiet) == [], "a second run finds nothing left to drop"


def test_month_and_year_partitions_go_only_once_their_whole_period_has_passed(engine, db):
    # 45 days before NOW is 2024-01-30 12:00: January still holds newer rows than that, and
    # 400 days before is 2023-02-10 12:00: 2023 does.
    policy = [retention.Retention("latency_1h", 45, "period"), retention.Retention("latency_1d", 400, "period")]
    ingest(engine, db, "latency_1h", "2023-11-20 10:00:00", "2023-12-31 23:00:00", "2024-01-02 10:00:00",
           "2024-03-01 10:00:00")
    ingest(engine, db, "latency_1d", "2021-06-01 10:00:00", "2022-12-31 10:00:00", "2023-01-01 10:00:00")

    dropped = retention.run(engine, db, policy, now_s=NOW_S, log=quiet)

    assert [(p.table, p.partition_id) for p in dropped] == [
        ("latency_1h", "202311"), ("latency_1h", "202312"), ("latency_1d", "2021"), ("latency_1d", "2022")]
    assert stored(engine, db, "latency_1h", "period") == ["2024-01-02 10:00:00", "2024-03-01 10:00:00"]
    assert stored(engine, db, "latency_1d", "period") == ["2023-01-01 00:00:00"]


def test_a_dry_run_lists_what_it_would_drop_and_drops_nothing(engine, db):
    ingest(engine, db, "events", "2024-03-01 08:00:00", "2024-03-14 10:00:00")
    printed = []

    listed = retention.run(engine, db, now_s=NOW_S, dry_run=True, log=printed.append)

    assert [(p.table, p.partition_id) for p in listed] == [("events", "20240301")]
    assert stored(engine, db, "events", "issue_time") == ["2024-03-01 08:00:00", "2024-03-14 10:00:00"]
    assert any(line.startswith(f"[retention] would drop {db}.events 20240301: 1 rows") for line in printed), printed
    assert printed[-1].startswith("[retention] dry run, would drop 1 partitions: 1 rows"), printed


def test_an_unknown_partition_key_is_refused_before_anything_is_dropped(engine, db):
    ingest(engine, db, "events", "2024-03-01 08:00:00")
    engine.query(f"CREATE TABLE {db}.weekly (t DateTime) ENGINE = MergeTree PARTITION BY toMonday(t) ORDER BY t")
    policy = retention.load_policy() + [retention.Retention("weekly", 7, "t")]

    with pytest.raises(retention.RetentionRefused, match=r"partitioned by 'toMonday\(t\)'"):
        retention.run(engine, db, policy, now_s=NOW_S, log=quiet)

    assert stored(engine, db, "events", "issue_time") == ["2024-03-01 08:00:00"]


def test_a_table_partitioned_by_another_column_than_the_policy_ages_by_is_refused(engine, db):
    ingest(engine, db, "events", "2024-03-01 08:00:00")
    with pytest.raises(retention.RetentionRefused, match="ages its rows by complete_time"):
        retention.run(engine, db, [retention.Retention("events", 3, "complete_time")], now_s=NOW_S, log=quiet)
    assert stored(engine, db, "events", "issue_time") == ["2024-03-01 08:00:00"]


def test_a_partition_is_dated_in_its_columns_time_zone(engine, db):
    """New York's days end hours after UTC's: its partition of 2024-03-13 holds rows up to
    03:59 UTC on the 14th, newer than a cut-off at 02:00 UTC that day, so it stays."""
    engine.query(f"CREATE TABLE {db}.new_york (t DateTime('America/New_York')) ENGINE = MergeTree "
                 "PARTITION BY toYYYYMMDD(t) ORDER BY t")
    engine.query(f"INSERT INTO {db}.new_york VALUES ({utc_s('2024-03-13 03:00:00')}), ({utc_s('2024-03-14 03:00:00')})")

    dropped = retention.run(engine, db, [retention.Retention("new_york", 1, "t")],
                            now_s=utc_s("2024-03-15 02:00:00"), log=quiet)

    assert [p.partition_id for p in dropped] == ["20240312"]
    assert engine.rows(f"SELECT toString(t) FROM {db}.new_york") == [("2024-03-13 23:00:00",)]


def test_the_policy_fits_the_fully_migrated_modern_schema(engine):
    name = f"modern_{uuid.uuid4().hex[:8]}"
    migrate.Migrator(engine, db=name, log=lambda _: None).up()
    assert retention.run(engine, name, dry_run=True, log=quiet) == []
    migrate.Migrator(engine, db=name, log=lambda _: None).down()


def test_now_is_read_as_utc_unless_it_names_its_offset():
    assert retention.parse_now("2024-03-15T12:00:00") == utc_s("2024-03-15 12:00:00")
    assert retention.parse_now("2024-03-15T12:00:00Z") == utc_s("2024-03-15 12:00:00")
    assert retention.parse_now("2024-03-15T14:00:00+02:00") == utc_s("2024-03-15 12:00:00")
