"""The ClickHouse schema and cookbook on the modern engine (chdb 26.x): migrations up and
down, ingestion through the Kafka tables' views, and every cookbook query's answer.
The same checks run against the 18.16 server through real Kafka in
integration-tests/test_warehouse.py."""
import json
import time
import uuid

import jsonschema
import pytest

from iopipe import cookbook, migrate
from testkit import warehouse_fixture
from testkit.chdb_engine import ChdbEngine

from test_contract import load_schema

# What the server's ingestion profile sets (infra/clickhouse/users.xml), for direct inserts.
INGESTION_SETTINGS = "input_format_skip_unknown_fields = 1, input_format_import_nested_json = 1"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    engine = ChdbEngine(tmp_path_factory.mktemp("chdb"))
    yield engine
    engine.close()


def ingest(engine, db, fleet):
    """Each record kind into every Kafka table of its topic, as each consumes the whole
    topic: Null tables here, whose views fill the tables."""
    for record, topic in warehouse_fixture.INGESTED_FROM.items():
        rows = fleet.ndjson(record)
        for table in migrate.kafka_tables_of(topic) if rows else ():
            engine.query(f"INSERT INTO {migrate.ingest_database(db)}.{table} SETTINGS {INGESTION_SETTINGS} FORMAT JSONEachRow\n{rows}")


def test_up_then_down_leaves_nothing(engine):
    db = f"updown_{uuid.uuid4().hex[:8]}"
    migrator = migrate.Migrator(engine, db=db, log=lambda _: None)
    migrator.up()
    assert migrator.skipped == [], "chdb is a modern engine: nothing may be skipped"
    assert {m.version for m in migrate.discover()} == migrator.applied()
    migrator.down()
    warehouse_fixture.assert_nothing_left(engine.rows, db)


def structure(engine, db):
    """What the migrations left in `db` and its ingest database, with the names of the two
    put back to placeholders: each table's engine and columns, and the statement that
    would make it again."""
    databases = (db, migrate.ingest_database(db))
    rows = engine.rows(f"SELECT database, name, engine, create_table_query FROM system.tables "
                       f"WHERE database IN {databases} AND name != 'schema_migrations' ORDER BY database, name")
    columns = engine.rows(f"SELECT database, table, name, type FROM system.columns WHERE database IN {databases} "
                          "AND table != 'schema_migrations' ORDER BY database, table, position")
    placeholders = [(migrate.ingest_database(db), "{db}_ingest"), (db, "{db}")]

    def generic(value):
        for name, placeholder in placeholders:
            value = value.replace(name, placeholder)
        return value
    return [tuple(map(generic, row)) for row in rows], [tuple(map(generic, row)) for row in columns]


def test_a_new_warehouse_made_in_one_up_is_the_one_made_a_migration_at_a_time(engine):
    """One `up` of every migration leaves out the Kafka tables and views a later one drops
    (18.16 takes about 3 s for each such drop); what it leaves must be what the migrations
    leave applied one at a time, as each landed on a running warehouse."""
    at_once, one_by_one = (f"{how}_{uuid.uuid4().hex[:8]}" for how in ("at_once", "one_by_one"))
    said = []
    migrate.Migrator(engine, db=at_once, log=said.append).up()
    assert any("neither created nor dropped" in line for line in said), said
    stepwise = migrate.Migrator(engine, db=one_by_one, log=lambda _: None)
    for migration in migrate.discover():
        one_migration = stepwise.pending(migration.version)
        assert stepwise.passed_over(one_migration) == set(), "nothing is left out of one migration alone"
        stepwise.up(to_version=migration.version)
    assert structure(engine, at_once) == structure(engine, one_by_one)


def test_a_down_of_many_migrations_leaves_what_they_leave_reverted_one_at_a_time(engine):
    """A `down` leaves out the Kafka tables and views one migration's down makes again and
    an older one's drops; what it leaves must be what the migrations leave reverted one at
    a time."""
    newest = migrate.discover()[-1].version
    for to_version in (newest - 3, 0):
        at_once, one_by_one = (f"{how}_{uuid.uuid4().hex[:8]}" for how in ("at_once", "one_by_one"))
        said = []
        reverted = migrate.Migrator(engine, db=at_once, log=said.append)
        reverted.up()
        reverted.down(to_version=to_version)
        assert any("neither created nor dropped" in line for line in said), said
        stepwise = migrate.Migrator(engine, db=one_by_one, log=lambda _: None)
        stepwise.up()
        for version in range(newest, to_version, -1):
            stepwise.down(to_version=version - 1)
        assert structure(engine, at_once) == structure(engine, one_by_one)
    warehouse_fixture.assert_nothing_left(engine.rows, at_once)


def test_a_rowless_object_is_left_out_only_if_nothing_between_its_create_and_drop_names_it():
    kafka = "CREATE TABLE IF NOT EXISTS d.t_kafka (x UInt8) ENGINE = Kafka SETTINGS kafka_topic_list = 't'"
    view = "CREATE MATERIALIZED VIEW IF NOT EXISTS d.t_mv TO d.t AS SELECT x FROM d.t_kafka"
    merge_tree = "CREATE TABLE IF NOT EXISTS d.t (x UInt8) ENGINE = MergeTree ORDER BY x"
    drops = ["DROP TABLE IF EXISTS d.t_mv", "DROP TABLE IF EXISTS d.t_kafka"]
    steps = [(1, [merge_tree, kafka, view]), (2, drops + ["DROP TABLE IF EXISTS d.t"])]
    assert migrate.rowless_detours(steps, existing=set()) == [((1, 2), (2, 0)), ((1, 1), (2, 1))]
    assert migrate.rowless_detours(steps, existing={"d.t_kafka"}) == [], "a view reading a Kafka table kept is kept"
    kept_view = [(1, [merge_tree, kafka, view]), (2, drops[1:])]
    assert migrate.rowless_detours(kept_view, existing=set()) == [], "a view named between keeps the table it reads"
    copied = [(1, [kafka, "CREATE TABLE IF NOT EXISTS d.u AS d.t_kafka ENGINE = MergeTree ORDER BY x"]), (2, drops[1:])]
    assert migrate.rowless_detours(copied, existing=set()) == []
    made_twice = [(1, [kafka]), (2, [kafka]), (3, drops[1:])]
    assert migrate.rowless_detours(made_twice, existing=set()) == [], "its second CREATE names it"


def test_every_cookbook_query_answers_on_the_modern_engine(engine):
    assert warehouse_fixture.checked_queries() == set(cookbook.names()), "every cookbook query has a check"
    db = f"cookbook_{uuid.uuid4().hex[:8]}"
    migrate.Migrator(engine, db=db, log=lambda _: None).up()
    fleet = warehouse_fixture.fleet(int(time.time()), "chdb")
    ingest(engine, db, fleet)
    warehouse_fixture.check_cookbook(fleet, warehouse_fixture.cookbook_runner(engine, db), ingested_by_s=int(time.time()))


def test_a_replayed_record_is_stored_once(engine):
    """Every table keeps each record once however often it is delivered, and the rollups
    the newest revision of each period: the I/Os they count are those of the histograms."""
    db = f"replay_{uuid.uuid4().hex[:8]}"
    migrate.Migrator(engine, db=db, log=lambda _: None).up()
    fleet = warehouse_fixture.fleet(int(time.time()), "replay")
    ingest(engine, db, fleet)
    ingest(engine, db, fleet)
    expected = warehouse_fixture.stored_once(fleet.records)
    ios = sum(h["count"] for h in fleet.by_schema("io.hist.v1"))
    for table, (rows, rolled_up, revisions) in expected.items():
        assert warehouse_fixture.stored_final(engine.rows, db, table) == (rows, rolled_up, revisions), table
        assert rolled_up in (0, ios), f"{table}: the rollups count {rolled_up} of the histograms' {ios} I/Os"
    assert {table for table, (_, rolled_up, _) in expected.items() if rolled_up} == set(
        migrate.tables_fed_by(warehouse_fixture.INGESTED_FROM[warehouse_fixture.ROLLUP]))


def test_the_fleets_records_keep_the_record_contract():
    for record in warehouse_fixture.fleet(int(time.time()), "contract").records:
        jsonschema.Draft202012Validator(load_schema(record["schema"])).validate(record)


def test_a_migration_run_again_after_an_interruption_finishes(engine):
    db = f"rerun_{uuid.uuid4().hex[:8]}"
    migrator = migrate.Migrator(engine, db=db, log=lambda _: None)
    migrator.up()
    for migration in migrate.discover():
        migrator._run(migration, "up")  # as if its version had not been recorded
    migrator.down()
    assert engine.rows(f"SELECT count() FROM system.tables WHERE database = '{db}'") == [("0",)]


def test_a_batch_is_stored_as_the_rows_of_the_records_it_holds(engine):
    """Each batched record through its topic's Kafka tables and views leaves in every table
    the rows, every column of them, that the records it holds (iopipe.record_batches.unfold)
    leave through theirs: an interval its sample's diskstats and disk_inventory rows and a
    histograms row per histogram, an event batch an events row per event."""
    batches = warehouse_fixture.batches(int(time.time()))
    records = warehouse_fixture.unfolded(batches)
    batched, one_by_one = (f"{how}_{uuid.uuid4().hex[:8]}" for how in ("batched", "unbatched"))
    for db, sent in ((batched, batches), (one_by_one, records)):
        migrate.Migrator(engine, db=db, log=lambda _: None).up()
        for schema in sorted({r["schema"] for r in sent}):
            rows = "\n".join(json.dumps(r) for r in sent if r["schema"] == schema)
            for table in migrate.kafka_tables_of(warehouse_fixture.INGESTED_FROM[schema]):
                engine.query(f"INSERT INTO {migrate.ingest_database(db)}.{table} SETTINGS {INGESTION_SETTINGS} "
                             f"FORMAT JSONEachRow\n{rows}")
    hosts = {r["host"]: r["host"] for r in records}
    tables = warehouse_fixture.tables_filled_by(records)
    assert tables == ["disk_inventory", "diskstats", "events", "histograms"]
    for table in tables:
        stored = warehouse_fixture.rows_of_hosts(engine, one_by_one, table, hosts)
        assert stored, f"{table}: the records left no row"
        assert warehouse_fixture.rows_of_hosts(engine, batched, table, hosts) == stored, table
    histograms = warehouse_fixture.rows_of_hosts(engine, batched, "histograms", hosts)
    assert len([h for h in histograms if h["disk"] == "sdx"]) == 3, "an interval of three histograms gives three rows"


def test_the_batches_sent_keep_the_record_contract():
    for record in warehouse_fixture.batches(int(time.time())):
        jsonschema.Draft202012Validator(load_schema(record["schema"])).validate(record)


def test_a_modern_server_takes_the_kafka_block_settings_it_is_given(engine):
    """chdb reads a Kafka table's settings, refusing one it does not know or cannot parse,
    before it refuses to start the table's consumers (it runs none: "Shutdown was called").
    The settings a modern server is given get that far; a setting it does not know does not."""
    modern = migrate.kafka_blocks(migrate.server_version(engine))
    assert "kafka_flush_interval_ms" in modern, f"chdb {migrate.server_version(engine)} is a modern engine: {modern}"

    def refusal(settings):
        try:
            engine.session.query(
                f"CREATE TABLE kafka_{uuid.uuid4().hex[:8]} (a String) ENGINE = Kafka SETTINGS "
                "kafka_broker_list = '127.0.0.1:9', kafka_topic_list = 't', kafka_group_name = 'g', "
                f"kafka_format = 'JSONEachRow', kafka_row_delimiter = '\\n', {settings}")
        except Exception as e:  # chdb raises a bare RuntimeError carrying the server's message
            return str(e)
        return ""
    assert "UNKNOWN_SETTING" in refusal("kafka_flush_every_ms = 7500"), "chdb checks a Kafka table's settings"
    assert "Shutdown was called" in refusal(modern)
