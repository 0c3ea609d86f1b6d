"""Migration files follow the runner's rules: numbered, paired, one statement each."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "clickhouse"))
import migrate  # noqa: E402


def test_migrations_are_numbered_pairs_without_gaps():
    migrations = migrate.discover()
    assert [m.version for m in migrations] == list(range(1, len(migrations) + 1))


def test_each_file_holds_one_statement_and_only_known_placeholders():
    params = {"db": "db", "kafka_brokers": "b:1", "kafka_group": "g"}
    for m in migrate.discover():
        for direction in ("up", "down"):
            sql = m.sql(direction, params)
            code = "\n".join(line for line in sql.splitlines() if not line.strip().startswith("--"))
            assert code.strip().count(";") == 0, f"{m.name}.{direction}: one statement, no ';'"
            assert "{" not in code, f"{m.name}.{direction}: unknown placeholder left in {code!r}"
