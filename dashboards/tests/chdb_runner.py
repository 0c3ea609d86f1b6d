"""The modern ClickHouse engine (chdb, in process) with the project's migrations applied,
answering queries as rows, as the dashboards' tests need it."""
import json
import sys
from pathlib import Path

SCHEMA = Path(__file__).resolve().parents[2] / "schema"
sys.path[:0] = [str(SCHEMA / "clickhouse"), str(SCHEMA / "tests")]
import migrate  # noqa: E402
from chdb_engine import ChdbEngine  # noqa: E402


class MigratedChdb:
    def __init__(self, path):
        self.engine = ChdbEngine(path)
        migrate.Migrator(self.engine, db="iopipe", log=lambda _: None).up()

    def execute(self, sql):
        self.engine.query(sql)

    def rows(self, sql):
        text = self.engine.session.query(sql, "JSONEachRow").bytes().decode()
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def close(self):
        self.engine.close()
