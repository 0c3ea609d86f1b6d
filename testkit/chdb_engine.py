"""The modern ClickHouse engine (chdb, in process) behind the same interface as the server's HTTP client.

An in-process engine runs no background consumers: chdb refuses to create a Kafka table
("Shutdown was called"). Here Kafka tables become Null tables with the same columns, so
their column lists and the views reading them are still checked; the Kafka engine's
arguments are checked by the 18.16 server against a real broker (integration tests).
"""
import re

from iopipe.migrate import ClickHouseError

KAFKA_ENGINE = re.compile(r"ENGINE = Kafka SETTINGS.*", re.S)


class ChdbEngine:
    def __init__(self, path):
        from chdb import session  # imported here: only the tests need the engine
        self.session = session.Session(str(path))

    def query(self, sql, timeout=None):
        sql = KAFKA_ENGINE.sub("ENGINE = Null", sql)
        try:
            return self.session.query(sql, "TabSeparated").bytes().decode()
        except Exception as e:  # chdb raises a bare RuntimeError carrying the server's message
            raise ClickHouseError(f"{e}\n-- in:\n{sql}") from None

    def rows(self, sql):
        return [tuple(line.split("\t")) for line in self.query(sql.rstrip().rstrip(";")).splitlines()]

    def close(self):
        self.session.close()
