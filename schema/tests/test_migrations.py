"""Migration files follow the runner's rules: numbered pairs, statements, known placeholders."""
import hashlib
import json
import re

from iopipe import migrate

CREATED = re.compile(r"CREATE (?:TABLE|MATERIALIZED VIEW) IF NOT EXISTS (\S+)")
PARAMS = {"db": "db", "kafka_brokers": "b:1", "kafka_group": "g", "kafka_blocks": migrate.kafka_blocks((18, 16))}
LANDED = migrate.MIGRATIONS_DIR.parent / "landed-migrations.sha256"


def landed():
    """File name -> sha256 of each migration as it landed (sha256sum's format)."""
    lines = [line.split() for line in LANDED.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return {name: digest for digest, name in lines}


def test_migrations_are_numbered_pairs_without_gaps():
    migrations = migrate.discover()
    assert [m.version for m in migrations] == list(range(1, len(migrations) + 1))


def test_a_migration_that_landed_is_never_edited():
    """A server that ran a migration never runs it again: an edit reaches new servers only,
    and the warehouses of one fleet drift apart. Changes are new migrations."""
    before = landed()
    for m in migrate.discover():
        for path in (m.up, m.down):
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            assert path.name in before, (
                f"{path.name} is new: add its line to {LANDED.name} (cd {path.parent} && sha256sum {path.name})")
            assert digest == before[path.name], (
                f"{path.name} changed after it landed: restore it (git checkout) and make the change a new migration")
    missing = set(before) - {p.name for m in migrate.discover() for p in (m.up, m.down)}
    assert not missing, f"landed migrations are gone: {sorted(missing)}"


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


def test_a_kafka_table_reads_blocks_sized_for_its_server():
    """18.16 ends a read only on a full block (small ones keep it timely, and a read's
    blocks make one insert); from 20.6 each block is an insert that ends on time, so a
    small one would be an insert of a few rows."""
    assert migrate.kafka_blocks((18, 16)) == "kafka_max_block_size = 64"
    assert migrate.kafka_blocks((20, 5)) == "kafka_max_block_size = 64"
    for modern in ((20, 6), (23, 8), (26, 9)):
        assert migrate.kafka_blocks(modern) == "kafka_max_block_size = 65536, kafka_flush_interval_ms = 7500"
    sized = {**PARAMS, "kafka_blocks": "kafka_max_block_size = 12345"}
    made = {}
    for sql in (sql for m in migrate.discover() for sql in m.statements("up", sized)):
        if KAFKA.match(sql):
            made[KAFKA.match(sql)[1]] = sql
    unsized = [table for table, _, _ in migrate.kafka_table_definitions()
               if "kafka_max_block_size = 12345" not in made[f"{migrate.ingest_database('db')}.{table}"]]
    assert not unsized, f"Kafka tables whose blocks are not sized for their server ({{kafka_blocks}}): {unsized}"


def test_every_kafka_table_has_a_consumer_group_of_its_own():
    made = migrate.kafka_table_definitions()
    tables, topics, groups = (set(column) for column in zip(*made))
    assert len(made) == len(tables) == len(groups), made
    # What ClickHouse stores: the agent records the job accepted, and what the job makes.
    contract = json.loads((migrate.MIGRATIONS_DIR.parents[1] / "topics.json").read_text())
    stored = {t["name"] for t in contract["accepted"]} | {t["name"] for t in contract["topics"] if t["producer"] == "stream-jobs"}
    assert topics == stored, topics ^ stored


VIEW = re.compile(r"CREATE MATERIALIZED VIEW IF NOT EXISTS (db\w*\.\w+) TO .*\sFROM (db\w*\.\w+)", re.S)
KAFKA = re.compile(r"CREATE TABLE IF NOT EXISTS (db\w*\.\w+)\s.*ENGINE = Kafka", re.S)


def test_every_kafka_table_feeds_exactly_one_view():
    """On 18.16 a Kafka table's read delivers only to the views that existed when it began
    (see 0009), so a second view would miss the messages of a read in flight. A table with
    no view does not read, so its one view may come in any later statement. The statements
    are replayed in order: a later migration may drop a Kafka table and its view and make
    them anew."""
    kafka_tables, views_of = set(), {}
    for sql in (sql for m in migrate.discover() for sql in m.statements("up", PARAMS)):
        if sql.startswith("DROP TABLE"):
            dropped = sql.split()[4]
            kafka_tables.discard(dropped)
            views_of.pop(dropped, None)
            views_of = {source: [v for v in views if v != dropped] for source, views in views_of.items()}
        elif KAFKA.match(sql):
            kafka_tables.add(KAFKA.match(sql)[1])
        elif VIEW.match(sql):
            view, source = VIEW.match(sql).groups()
            views_of.setdefault(source, []).append(view)
    assert kafka_tables == {f"{migrate.ingest_database('db')}.{table}" for table, _, _ in migrate.kafka_table_definitions()}
    for table in kafka_tables:
        assert len(views_of.get(table, [])) == 1, f"{table} is read by {views_of.get(table)}: one view per Kafka table"


def test_on_a_cluster_every_table_that_keeps_rows_is_replicated_and_nothing_else_changes():
    """Every *MergeTree engine of the migrations becomes its Replicated* twin, with its own
    arguments after the ZooKeeper path and replica; Kafka tables, views and ALTERs are the same."""
    replicated = 0
    for m in migrate.discover():
        for sql in m.statements("up", PARAMS):
            cluster_sql = migrate.replicated(sql)
            engine = re.search(r"ENGINE = (\w*MergeTree)\b(\([^)]*\))?", sql)
            if not engine:
                assert cluster_sql == sql
                continue
            replicated += 1
            table = CREATED.match(sql)[1].split(".")[1]
            arguments = f"('/clickhouse/tables/{{shard}}/db/{table}', '{{replica}}'{', ' + engine[2][1:-1] if engine[2] else ''})"
            assert cluster_sql == sql.replace(engine[0], f"ENGINE = Replicated{engine[1]}{arguments}"), cluster_sql
    assert replicated >= 10
    assert migrate.replicated("CREATE TABLE IF NOT EXISTS db.t (v UInt64, k String) ENGINE = ReplacingMergeTree(v) ORDER BY k") == (
        "CREATE TABLE IF NOT EXISTS db.t (v UInt64, k String) "
        "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/db/t', '{replica}', v) ORDER BY k")


# Names that landed migrations made anew after an earlier one had made them: history, kept
# as it landed. Every later change makes what it changes under a new name.
REMADE_WHEN_LANDED = {
    "db.diskstats_kafka", "db.diskstats_mv", "db.disk_inventory_kafka", "db.disk_inventory_mv",
    "db.histograms_kafka", "db.histograms_mv", "db.events_kafka", "db.events_mv",
}


def test_a_changed_table_or_view_takes_a_new_name():
    """A view made again under its old name cannot be told apart from the one before it in a
    server's tables, its logs or a migration's down step."""
    made_by = {}
    remade = set()
    for m in migrate.discover():
        for sql in m.statements("up", PARAMS):
            if created := CREATED.match(sql):
                name = created[1]
                if name in made_by and made_by[name] != m.name:
                    remade.add(name)
                made_by[name] = m.name
    assert remade == REMADE_WHEN_LANDED, f"made again under an earlier migration's name: {sorted(remade - REMADE_WHEN_LANDED)}"

