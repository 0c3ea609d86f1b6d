"""Applies schema/clickhouse/migrations to a ClickHouse server over HTTP.

Migrations are numbered `NNNN_name.up.sql` / `NNNN_name.down.sql`: statements ended by
`;` at the end of a line, with placeholders {db}, {kafka_brokers}, {kafka_group} and
{kafka_blocks} (a Kafka table's block settings for the server met: `kafka_blocks`).
Every statement is idempotent (IF [NOT] EXISTS), so a migration interrupted halfway is
finished by running `up` again. 18.16 parses no IF [NOT] EXISTS in `ALTER TABLE ... ADD
COLUMN` / `DROP COLUMN`: the runner looks the column up and runs the change without the
clause, or not at all where the column already is as wanted (a rerun; a replica that
took the change from its peers). Applied versions are recorded in `{db}.schema_migrations`
as an append-only log (up/down events), which works on every server version; a full
`down` drops the log too, leaving nothing.

One `up` of several migrations leaves out the Kafka tables and views that one of them
creates and a later one drops, when nothing between uses them (`rowless_detours`): they
hold no rows, and on 18.16 each Kafka table's drop takes about 3 s. A new warehouse is
made without the 32 Kafka tables earlier migrations made and later ones replaced, and a
`down` leaves out those one migration's down makes again and an older one's drops. What
a detour would have read in the seconds it stood is not read: the Kafka tables that stay
read the topics from their start. The tables are those the migrations make one at a
time (test_warehouse_chdb compares the two).

A migration that needs a newer server than the one it meets says so on its first line,
`-- requires: ClickHouse >= 21.8 (why)`, and is skipped there, loudly: it is applied by a
later `up` once the server is upgraded. Such migrations only add features (retention,
encodings) that nothing else depends on.

    python3 -m iopipe.migrate up   [--to VERSION] [--url http://127.0.0.1:8123 ...] [--user iopipe_admin] [--db iopipe] [--kafka-brokers 127.0.0.1:9092] [--cluster iopipe]
    python3 -m iopipe.migrate down [--to VERSION]
    python3 -m iopipe.migrate status
    python3 -m iopipe.migrate retention [--dry-run] [--now 2024-03-15T12:00:00Z]

`retention` drops the partitions of the raw tables wholly older than their retention
(retention.json): what TTL does on a modern server, for 18.16 which has none (retention.py).

On a replicated deployment, `up --cluster iopipe` is run against every replica of the
cluster at once (a <remote_servers> name; the server's macros give {shard} and
{replica}; one --url per replica), each migration on all of them before the next: 18.16
refuses to create a replica of a table whose structure an ALTER has changed since (it
assumes the ALTER only for a table it attaches), so a migration that alters a table must
find it on every replica. The
migrations are the same files: the runner turns each *MergeTree engine they name into
its Replicated* twin, coordinated under /clickhouse/tables/{shard}/<db>/<table>, and
keeps a Distributed table over the cluster for each, of the same name in <db>_all, for
reads that any replica can answer. Each replica keeps its own Kafka tables in the same
consumer groups, so the topics' partitions are shared out between the replicas and
their rows reach both through replication.
"""
import argparse
import functools
import http.client
import json
import os
import re
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from iopipe import retention
from iopipe.paths import SCHEMA

MIGRATIONS_DIR = SCHEMA / "clickhouse" / "migrations"
FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.(up|down)\.sql$")
# The prefix of every Kafka table's consumer group, which ClickHouse's Kafka ACLs allow.
KAFKA_GROUP = json.loads((SCHEMA / "topics.json").read_text())["consumer_groups"]["clickhouse"]
PLACEHOLDER = re.compile(r"\{(db|kafka_brokers|kafka_group|kafka_blocks)\}")
REQUIRES = re.compile(r"^-- requires: ClickHouse >= (\d+)\.(\d+)(.*)$")
STATEMENT_END = re.compile(r";[ \t]*$", re.MULTILINE)
ALTER = re.compile(r"^ALTER TABLE\b", re.M)  # a statement's start (a comment line starts with --)
COLUMN_CHANGE = re.compile(r"^ALTER TABLE (\w+)\.(\w+) (ADD|DROP) COLUMN (IF (?:NOT )?EXISTS )(\w+)\b")


class ClickHouseError(RuntimeError):
    pass


class ClickHouseHttp:
    def __init__(self, url, user="default", password=""):
        self.url = url.rstrip("/")
        self.user = user
        self.password = password

    def query(self, sql, timeout=60):
        request = urllib.request.Request(self.url + "/", data=sql.encode(), method="POST")
        request.add_header("X-ClickHouse-User", self.user)
        request.add_header("X-ClickHouse-Key", self.password)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.read().decode()
        except urllib.error.HTTPError as e:
            raise ClickHouseError(f"{e.read().decode().strip()}\n-- in:\n{sql}") from None
        except urllib.error.URLError as e:
            raise ClickHouseError(f"cannot reach ClickHouse at {self.url}: {e.reason}; is the server up?") from None
        except (http.client.HTTPException, OSError) as e:  # closed, reset, cut short or timed out mid-reply
            raise ClickHouseError(f"ClickHouse at {self.url} did not answer whole: {type(e).__name__}: {e}; "
                                  "is the server up and not overloaded?") from None

    def json_rows(self, sql):
        """Rows of a SELECT as dicts (JSONEachRow): strings with any characters arrive intact."""
        text = self.query(sql.rstrip().rstrip(";") + " FORMAT JSONEachRow")
        return [json.loads(line) for line in text.splitlines()]

    def rows(self, sql):
        """Rows of a SELECT as tuples of strings (TabSeparated, unescaped enough for numbers and names)."""
        text = self.query(sql.rstrip().rstrip(";") + " FORMAT TabSeparated")
        return [tuple(line.split("\t")) for line in text.splitlines()]


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    up: Path
    down: Path

    def sql(self, direction, params):
        path = self.up if direction == "up" else self.down
        return PLACEHOLDER.sub(lambda m: params[m.group(1)], path.read_text())

    def statements(self, direction, params):
        """The file's statements in order, without comment lines (which may hold a ';')."""
        code = "\n".join(line for line in self.sql(direction, params).splitlines()
                         if not line.lstrip().startswith("--"))
        return [s.strip() for s in STATEMENT_END.split(code) if s.strip()]

    @property
    def alters_tables(self):
        return bool(ALTER.search(self.up.read_text()))

    @property
    def requires(self):
        """(major, minor, why) of the oldest server it runs on, or None for every server."""
        match = REQUIRES.match(self.up.read_text().splitlines()[0])
        return (int(match[1]), int(match[2]), match[3].strip()) if match else None

    def runs_on(self, server_version):
        return self.requires is None or server_version >= self.requires[:2]


def discover(directory=MIGRATIONS_DIR):
    found = {}
    for path in sorted(directory.iterdir()):
        match = FILE_NAME.match(path.name)
        if not match:
            raise ValueError(f"{path.name}: migration files are named NNNN_name.up.sql / NNNN_name.down.sql")
        version, name, direction = int(match[1]), match[2], match[3]
        found.setdefault((version, name), {})[direction] = path
    migrations = []
    for (version, name), paths in sorted(found.items()):
        if set(paths) != {"up", "down"}:
            raise ValueError(f"migration {version:04d}_{name} needs both an up and a down file")
        migrations.append(Migration(version, name, paths["up"], paths["down"]))
    versions = [m.version for m in migrations]
    if len(set(versions)) != len(versions):
        raise ValueError(f"two migrations share a version number: {versions}")
    return migrations


# The Kafka tables live in a database of their own beside {db} (0017): a SELECT on one
# consumes its messages, so no reader may reach them.
INGEST_SUFFIX = "_ingest"
KAFKA_TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS \{db\}(?:" + INGEST_SUFFIX + r")?\.(\w+)[^;]*?ENGINE = Kafka SETTINGS[^;]*?"
                         r"kafka_topic_list = '([\w.]+)',\s+kafka_group_name = '\{kafka_group\}-([\w-]+)'", re.S)


DROPPED_TABLE = re.compile(r"^DROP TABLE IF EXISTS \{db\}(?:" + INGEST_SUFFIX + r")?\.(\w+);?$", re.M)


def ingest_database(db):
    """Where the migrations keep `db`'s Kafka tables and the views that read them."""
    return db + INGEST_SUFFIX


@functools.lru_cache(maxsize=1)
def kafka_table_definitions():
    """[(table, topic, consumer group suffix)] of every Kafka table the migrations leave
    in place (a later migration may drop one), in migration order."""
    found = []
    for m in discover():
        text = m.up.read_text()
        dropped = set(DROPPED_TABLE.findall(text))
        found = [table for table in found if table[0] not in dropped] + KAFKA_TABLE.findall(text)
    return tuple(found)


def kafka_tables_of(topic):
    """The Kafka tables reading `topic`, in migration order: the first fills the topic's
    record table, later ones fill rollups of it."""
    tables = [table for table, read, _ in kafka_table_definitions() if read == topic]
    if not tables:
        known = sorted({read for _, read, _ in kafka_table_definitions()})
        raise KeyError(f"no migration creates a Kafka table for {topic}; these topics have one: {known}")
    return tables


VIEW_OF_KAFKA_TABLE = re.compile(r"^CREATE MATERIALIZED VIEW IF NOT EXISTS \{db\}(?:" + INGEST_SUFFIX + r")?\.\w+ TO \{db\}\.(\w+) AS\b"
                                 r"[^;]*?\bFROM \{db\}(?:" + INGEST_SUFFIX + r")?\.(\w+)", re.S | re.M)


@functools.lru_cache(maxsize=1)
def table_fed_through():
    """{Kafka table: the table its view fills}, of every view the migrations make."""
    return {source: table for m in discover() for table, source in VIEW_OF_KAFKA_TABLE.findall(m.up.read_text())}


def tables_fed_by(topic):
    """The tables the Kafka tables of `topic` fill, one each, in the order of `kafka_tables_of`."""
    return [table_fed_through()[kafka_table] for kafka_table in kafka_tables_of(topic)]


MERGE_TREE_TABLE = re.compile(r"^CREATE TABLE IF NOT EXISTS (\w+)\.(\w+)\b.*?\bENGINE = (\w*)MergeTree\b(\(([^)]*)\))?", re.S)


def replicated(statement):
    """The statement with its *MergeTree engine, if it creates one, made Replicated*: the
    table's copies on the replicas of one shard share one ZooKeeper path."""
    match = MERGE_TREE_TABLE.match(statement)
    if not match:
        return statement
    db, table, kind, _, args = match.groups()
    path = f"'/clickhouse/tables/{{shard}}/{db}/{table}', '{{replica}}'"
    engine = f"Replicated{kind}MergeTree({path}{', ' + args if args else ''})"
    return statement[:match.start(3)] + engine + statement[match.end():]


# Objects that hold no rows: a Kafka table (its rows are the topic's) and a view writing
# TO a table of its own. One a migration creates and a later one drops in the same `up`
# leaves nothing behind, and 18.16 makes its drop costly: a Kafka table's shutdown waits
# out rd_kafka_wait_destroyed, about 3 s while other Kafka tables exist (32 times for a
# new warehouse).
ROWLESS_CREATE = re.compile(r"^CREATE (?:TABLE IF NOT EXISTS (\w+\.\w+)\b.*\bENGINE = Kafka\b"
                            r"|MATERIALIZED VIEW IF NOT EXISTS (\w+\.\w+) TO )", re.S)
DROP = re.compile(r"^DROP TABLE IF EXISTS (\w+\.\w+)$")
VIEW_SOURCE = re.compile(r"\b(?:FROM|JOIN)\s+(\w+\.\w+)")


def rowless_detours(steps, existing):
    """[((version, index) of a CREATE, (version, index) of its DROP)] of the rowless objects
    that `steps`, [(version, [statement])] in order, create and then drop, that did not
    exist before (`existing`: "db.table" names) and that no statement left in between
    names. A view moves rows while it exists: one is left out only with every table it
    reads. Leaving these statements out changes neither a table the migrations leave nor
    the offsets of a consumer group that one of their Kafka tables reads with."""
    flat = [((version, index), statement) for version, statements in steps for index, statement in enumerate(statements)]
    created, detours = {}, []
    for position, (_, statement) in enumerate(flat):
        creation, drop = ROWLESS_CREATE.match(statement), DROP.match(statement)
        if creation and (creation[1] or creation[2]) not in existing:
            created.setdefault(creation[1] or creation[2], position)  # a second CREATE IF NOT EXISTS names it: kept
        elif drop and drop[1] in created:
            detours.append((created.pop(drop[1]), position, drop[1]))
    left_out = {position for start, end, _ in detours for position in (start, end)}

    def kept(start, end, name):
        left_out_at_start = {n for s, e, n in detours if s in left_out and s < start < e}
        return (any(position not in left_out and names(flat[position][1], name) for position in range(start + 1, end))
                or not set(VIEW_SOURCE.findall(flat[start][1])) <= left_out_at_start)
    while True:
        keeping = [(start, end) for start, end, name in detours if start in left_out and kept(start, end, name)]
        if not keeping:
            return [(flat[start][0], flat[end][0]) for start, end, _ in detours if start in left_out]
        left_out -= {position for detour in keeping for position in detour}


def names(statement, table):
    return re.search(r"(?<![\w.])" + re.escape(table) + r"(?!\w)", statement) is not None


# From 20.6 a Kafka table writes each block it reads as an insert of its own and ends a block
# on time (kafka_flush_interval_ms); 18.16 writes a read's blocks as one insert but ends a
# read only when a block is full (0002, 0019).
KAFKA_BLOCKS_FLUSHED_ON_TIME = (20, 6)
KAFKA_BLOCK_MESSAGES_MAX = 65536
KAFKA_BLOCK_MESSAGES_BEFORE = 64  # before 20.6: small, so a read ends within the flush interval
KAFKA_FLUSH_INTERVAL_MS = 7500


def kafka_blocks(version):
    """The SETTINGS of a Kafka table that make its inserts few and large yet timely on a
    server of `version`, (major, minor): one every 5 to 7.5 s while the topic is slow,
    blocks of 65,536 messages when it is fast."""
    if version >= KAFKA_BLOCKS_FLUSHED_ON_TIME:
        return f"kafka_max_block_size = {KAFKA_BLOCK_MESSAGES_MAX}, kafka_flush_interval_ms = {KAFKA_FLUSH_INTERVAL_MS}"
    return f"kafka_max_block_size = {KAFKA_BLOCK_MESSAGES_BEFORE}"


def server_version(client):
    """(major, minor) of the server, from e.g. 18.16.1 or 26.9.2.1."""
    major, minor = client.rows("SELECT version()")[0][0].strip('"').split(".")[:2]
    return int(major), int(minor)


class Migrator:
    def __init__(self, client, db="iopipe", kafka_brokers="127.0.0.1:9092", kafka_group=KAFKA_GROUP, log=print,
                 cluster=None):
        """`cluster`: the name of the replicated cluster this server is a replica of, or None."""
        self.client = client
        self.db = db
        self.cluster = cluster
        self.names = {"db": db, "kafka_brokers": kafka_brokers, "kafka_group": kafka_group}
        self.log = log
        self.skipped = []

    @functools.cached_property
    def params(self):
        """The placeholders' values: the names given, and what the server's version asks."""
        return {**self.names, "kafka_blocks": kafka_blocks(server_version(self.client))}

    def _ensure_log(self):
        self.client.query(f"CREATE DATABASE IF NOT EXISTS {self.db}")
        self.client.query(
            f"CREATE TABLE IF NOT EXISTS {self.db}.schema_migrations "
            "(version UInt32, name String, direction String, at DateTime DEFAULT now(), seq UInt64) "
            "ENGINE = MergeTree ORDER BY seq")

    def applied(self):
        exists = self.client.rows(f"SELECT count() FROM system.tables WHERE database = '{self.db}' AND name = 'schema_migrations'")
        if exists[0][0] == "0":
            return set()
        events = self.client.rows(f"SELECT version, direction FROM {self.db}.schema_migrations ORDER BY seq")
        state = {}
        for version, direction in events:
            state[int(version)] = direction == "up"
        return {v for v, is_up in state.items() if is_up}

    def _record(self, migration, direction):
        seq = self.client.rows(f"SELECT count() FROM {self.db}.schema_migrations")[0][0]
        self.client.query(
            f"INSERT INTO {self.db}.schema_migrations (version, name, direction, seq) "
            f"VALUES ({migration.version}, '{migration.name}', '{direction}', {int(seq) + 1})")

    def up(self, to_version=None, passing_over=None):
        """Applies every pending migration (up to `to_version` if given) this server supports.
        `passing_over`: the statements to leave out, as `passed_over` plans them; by default
        those of the migrations this call applies."""
        pending = self.pending(to_version)
        if passing_over is None:
            passing_over = self.passed_over(pending)
        for migration in pending:
            self.log(f"[migrate] up   {migration.version:04d}_{migration.name}")
            self._run(migration, "up", passing_over)
            self._record(migration, "up")
        self._sync_distributed()

    def pending(self, to_version=None):
        """The migrations `up` would apply, in order; says once which this server is too old for."""
        self._ensure_log()
        done = self.applied()
        version = server_version(self.client)
        told, self.skipped = set(self.skipped), []
        runnable = []
        for migration in discover():
            if migration.version in done or (to_version is not None and migration.version > to_version):
                continue
            if not migration.runs_on(version):
                major, minor, why = migration.requires
                if migration.version not in told:  # said once, however many steps `up` is taken in
                    self.log(f"[migrate] skip {migration.version:04d}_{migration.name}: needs ClickHouse >= {major}.{minor} "
                             f"{why}, this server is {version[0]}.{version[1]}; `up` applies it after an upgrade")
                self.skipped.append(migration.version)
                continue
            runnable.append(migration)
        return runnable

    def passed_over(self, pending, direction="up"):
        """{(version, statement index)} of the statements of `pending` (as `pending()` gives
        them, or the migrations `down` reverts, newest first) that `direction` leaves out
        (`rowless_detours`), said in one line."""
        existing = {f"{db}.{name}" for db, name in self.client.rows(
            f"SELECT database, name FROM system.tables WHERE database IN ('{self.db}', '{ingest_database(self.db)}')")}
        steps = [(m.version, m.statements(direction, self.params)) for m in pending]
        detours = rowless_detours(steps, existing)
        if detours:
            self.log(f"[migrate] {len(detours)} Kafka tables and views a later step drops are neither "
                     "created nor dropped")
        return {place for detour in detours for place in detour}

    def _run(self, migration, direction, passing_over=()):
        for index, statement in enumerate(migration.statements(direction, self.params)):
            if (migration.version, index) in passing_over:
                continue
            statement = self._column_change(statement)
            if statement:
                self.client.query(replicated(statement) if self.cluster else statement)

    def _column_change(self, statement):
        """An ADD/DROP COLUMN IF [NOT] EXISTS as every server parses it: without the clause,
        or None where the column already is as the statement wants it."""
        change = COLUMN_CHANGE.match(statement)
        if not change:
            return statement
        db, table, verb, _, column = change.groups()
        exists = self.client.rows(f"SELECT count() FROM system.columns WHERE database = '{db}' AND table = '{table}' "
                                  f"AND name = '{column}'")[0][0] != "0"
        if exists == (verb == "ADD"):
            return None
        return statement[:change.start(4)] + statement[change.end(4):]

    @property
    def distributed_db(self):
        return f"{self.db}_all"

    def _sync_distributed(self):
        """On a cluster: a Distributed table in <db>_all for each Replicated table of <db>,
        with its columns as they are now, and none for a table that is gone."""
        if not self.cluster:
            return
        self.client.query(f"CREATE DATABASE IF NOT EXISTS {self.distributed_db}")
        local, distributed = (self._columns_by_table(db, engine) for db, engine in
                              ((self.db, "Replicated%MergeTree"), (self.distributed_db, "Distributed")))
        for table, columns in distributed.items():
            if local.get(table) != columns:
                self.client.query(f"DROP TABLE {self.distributed_db}.{table}")
        for table, columns in local.items():
            if distributed.get(table) != columns:
                self.client.query(f"CREATE TABLE {self.distributed_db}.{table} AS {self.db}.{table} "
                                  f"ENGINE = Distributed({self.cluster}, {self.db}, {table})")

    def _columns_by_table(self, db, engine_like):
        """table -> [(column, type)] in the table's order, of the tables of `db` whose engine is LIKE `engine_like`."""
        tables = {name for (name,) in self.client.rows(
            f"SELECT name FROM system.tables WHERE database = '{db}' AND engine LIKE '{engine_like}'")}
        columns = {table: [] for table in tables}
        for table, name, column_type in self.client.rows(
                f"SELECT table, name, type FROM system.columns WHERE database = '{db}'"):
            if table in columns:
                columns[table].append((name, column_type))
        return columns

    def down(self, to_version=0):
        """Reverts the applied migrations newer than `to_version`, newest first, leaving out
        the Kafka tables and views one of them makes again and an older one drops."""
        done = self.applied()
        reverting = [m for m in reversed(discover()) if m.version > to_version and m.version in done]
        passing_over = self.passed_over(reverting, "down")
        for migration in reverting:
            self.log(f"[migrate] down {migration.version:04d}_{migration.name}")
            self._run(migration, "down", passing_over)
            self._record(migration, "down")
        self._sync_distributed()
        if to_version == 0:
            self.client.query(f"DROP TABLE IF EXISTS {self.db}.schema_migrations")
            self.client.query(f"DROP DATABASE IF EXISTS {self.db}")
            if self.cluster:
                self.client.query(f"DROP DATABASE IF EXISTS {self.distributed_db}")


def up_in_lockstep(migrators, to_version=None):
    """Replicas of one cluster migrated together: each migration on every replica before
    the next (see the module's doc). A migration that alters a table goes to one replica
    after another: a replica's ALTER reaches its peers through ZooKeeper, and the runner
    looks the column up on the next replica before changing it there. The others go to
    every replica at once, as ON CLUSTER DDL does: creating a replicated table on two
    replicas at once is how they are made, and a Kafka table's DROP, which waits about
    3 s on 18.16 (for librdkafka's handles), waits once for all of them."""
    passing_over = [migrator.passed_over(migrator.pending(to_version)) for migrator in migrators]
    with ThreadPoolExecutor(len(migrators)) as pool:
        for migration in discover():
            if to_version is not None and migration.version > to_version:
                break
            if migration.alters_tables:
                for migrator, passed in zip(migrators, passing_over):
                    migrator.up(migration.version, passed)
            else:
                for migrated in [pool.submit(migrator.up, migration.version, passed)
                                 for migrator, passed in zip(migrators, passing_over)]:
                    migrated.result()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["up", "down", "status", "retention"],
                        help="up, down, status: the migrations; retention: drop the partitions "
                        "wholly older than retention.json keeps them")
    parser.add_argument("--url", action="append", help="the server (default http://127.0.0.1:8123); with --cluster, "
                        "once per replica: `up` moves them in lockstep")
    parser.add_argument("--user", default=os.environ.get("IOPIPE_CLICKHOUSE_ADMIN_USER", "iopipe_admin"))
    parser.add_argument("--password-env", default="IOPIPE_CLICKHOUSE_ADMIN_PASSWORD",
                        help="environment variable holding the password (never on the command line)")
    parser.add_argument("--db", default="iopipe")
    parser.add_argument("--kafka-brokers", default="127.0.0.1:9092")
    parser.add_argument("--cluster", help="the replicated cluster (remote_servers) this server is a replica of: "
                        "Replicated* engines and Distributed tables in <db>_all; run it on every replica")
    parser.add_argument("--to", type=int, help="with up: apply migrations up to this version; "
                        "with down: keep migrations up to this version (default: all of them / none)")
    parser.add_argument("--dry-run", action="store_true", help="with retention: list what would be dropped, drop nothing")
    parser.add_argument("--now", type=retention.parse_now, help="with retention: the time to age rows from, "
                        "ISO 8601, UTC without an offset (default: the server's clock)")
    args = parser.parse_args(argv)
    urls = args.url or ["http://127.0.0.1:8123"]
    if len(urls) > 1 and not args.cluster:
        parser.error("several --url are the replicas of a cluster: name it with --cluster")
    clients = [ClickHouseHttp(url, args.user, os.environ.get(args.password_env, "")) for url in urls]
    if args.command == "retention":
        for client in clients:
            run_retention(client, args)
        return None
    migrators = [Migrator(client, args.db, args.kafka_brokers, cluster=args.cluster) for client in clients]
    try:
        if args.command == "up":
            up_in_lockstep(migrators, args.to)
        for url, migrator in zip(urls, migrators):
            if args.command == "down":
                migrator.down(args.to or 0)
            print_status(migrator, url if len(urls) > 1 else "")
    except ClickHouseError as e:
        sys.exit(f"migrate: {e}")
    return None


def print_status(migrator, server):
    applied = sorted(migrator.applied())
    where = f" on {server}" if server else ""
    print(f"[migrate] applied{where}: {', '.join(f'{v:04d}' for v in applied) or 'none'}")
    pending = [m for m in discover() if m.version not in applied]
    if applied and pending:
        print(f"[migrate] not applied{where}: {', '.join(f'{m.version:04d}_{m.name}' for m in pending)}")


def run_retention(client, args):
    try:
        retention.run(client, args.db, now_s=args.now, dry_run=args.dry_run)
    except retention.RetentionRefused as e:
        sys.exit(f"migrate retention: refused, nothing dropped: {e}")
    except ClickHouseError as e:
        sys.exit(f"migrate retention: {e}")


if __name__ == "__main__":
    main()
