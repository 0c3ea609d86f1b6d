"""The modern ClickHouse engine (chdb, in process) with the project's migrations applied,
answering queries as rows, as the dashboards' tests need it."""
import json

from iopipe import migrate
from testkit.chdb_engine import ChdbEngine


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
