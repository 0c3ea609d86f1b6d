"""Migration files follow the runner's rules: numbered pairs, statements, known placeholders."""
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "clickhouse"))
import migrate  # noqa: E402

CREATED = re.compile(r"CREATE (?:TABLE|MATERIALIZED VIEW) IF NOT EXISTS (\S+)")
PARAMS = {"db": "db", "kafka_brokers": "b:1", "kafka_group": "g"}


def test_migrations_are_numbered_pairs_without_gaps():
    migrations = migrate.discover()
    assert [m.version for m in migrations] == list(range(1, len(migrations) + 1))


def test_statements_are_whole_and_only_known_placeholders_are_used():
    for m in migrate.discover():
        for direction in ("up", "down"):
            statements = m.statements(direction, PARAMS)
            assert statements, f"{m.name}.{direction} has no statement"
            for sql in statements:
                assert ";" not in sql, f"{m.name}.{direction}: a ';' inside a statement: {sql!r}"
                assert "{" not in sql, f"{m.name}.{direction}: unknown placeholder left in {sql!r}"


def test_every_create_has_its_drop_and_every_statement_can_run_twice():
    for m in migrate.discover():
        up, down = m.statements("up", PARAMS), m.statements("down", PARAMS)
        created = {CREATED.match(s)[1] for s in up if CREATED.match(s)}
        dropped = {s.split()[4] for s in down if s.startswith("DROP TABLE")}
        assert created == dropped, f"{m.name}: created {created}, dropped {dropped}"
        for sql in up + down:
            if sql.startswith(("CREATE", "DROP")):
                assert "IF NOT EXISTS" in sql or "IF EXISTS" in sql, f"{m.name}: {sql[:60]}"


def test_modern_only_migrations_declare_what_they_need():
    modern = [m for m in migrate.discover() if m.requires]
    assert {m.name for m in modern} == {"retention_ttl", "low_cardinality", "codecs"}
    assert all(not m.runs_on((18, 16)) and m.runs_on((23, 8)) for m in modern)


def test_every_kafka_table_reads_a_topic_of_its_own_with_a_group_of_its_own():
    made = migrate.kafka_table_definitions()
    tables, topics, groups = (set(column) for column in zip(*made))
    assert len(made) == len(tables) == len(topics) == len(groups) == 6, made
