"""The ClickHouse schema and cookbook on the modern engine (chdb 26.x): migrations up and
down, ingestion through the Kafka tables' views, and every cookbook query's answer.
The same checks run against the 18.16 server through real Kafka in
integration-tests/test_warehouse.py."""
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
    databases = f"('{db}', '{migrate.ingest_database(db)}')"
    assert engine.rows(f"SELECT count() FROM system.databases WHERE name IN {databases}") == [("0",)]
    assert engine.rows(f"SELECT count() FROM system.tables WHERE database IN {databases}") == [("0",)]


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
        t.removesuffix("_kafka") for t in migrate.kafka_tables_of(warehouse_fixture.INGESTED_FROM[warehouse_fixture.ROLLUP]))


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
