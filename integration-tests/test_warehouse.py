"""ClickHouse 18.16 as shipped: migrations up and down, users and what each may do,
ingestion from real Kafka (bad messages skipped, replays stored once), every cookbook
query's answer (the same checks as on chdb, schema/tests/test_warehouse_chdb.py), and
the live pipeline's records landing in the tables once each. All on the session's stack:
a database of its own where a test migrates one, hosts of its own everywhere."""
import json
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from contextlib import contextmanager

import pytest
from confluent_kafka import Producer

from iopipe import cookbook, migrate, retention
from iopipe.contract import BASE_WINDOW_S, LATENCY_ROLLUPS
from iopipe.kafka_access import CLICKHOUSE, CLICKHOUSE_GROUP
from iopipe.readiness import say, wait_for
from iopipe.stack_kafka import kafka_access, kafka_client
from iopipe.synthetic import scenarios
from testkit import warehouse_fixture

from kafka_records import ACCEPTED_TOPICS, TOPICS, dead_letters_naming, produce

pytestmark = pytest.mark.stack

NS = 1_000_000_000
# A test passes agent records on itself, to the topics the job writes what it accepted to
# (which the job only writes: the session's live job never sees them).
INGESTED_FROM = warehouse_fixture.INGESTED_FROM
DAY_S = 86400


def count(client, table, where):
    return int(client.rows(f"SELECT count() FROM {table} WHERE {where}")[0][0])


def wait_until_stored(client, db, records, what):
    """Waits until every record's table holds exactly as many rows of these hosts as were
    sent: without FINAL for the record tables (a duplicate would show), and for the
    rollups with FINAL, their newest revisions, the I/Os those count and the sum of the
    revisions (a record sent again at a lower revision may be merged away any time).
    Returns the seconds it took."""
    hosts = sorted({r["host"] for r in records})
    where = "host IN (" + ", ".join(f"'{h}'" for h in hosts) + ")"
    want = warehouse_fixture.stored_once([r for r in records if r["schema"] == warehouse_fixture.ROLLUP])
    want.update(Counter(warehouse_fixture.stored_table(r) for r in records if r["schema"] != warehouse_fixture.ROLLUP))

    def stored():
        return {t: warehouse_fixture.stored_final(client.rows, db, t, where) if isinstance(n, tuple)
                else count(client, f"{db}.{t}", where) for t, n in want.items()}

    def reached(n, wanted):
        return all(a >= b for a, b in zip(n, wanted)) if isinstance(n, tuple) else n >= wanted
    started = time.monotonic()
    try:
        wait_for(what, lambda: all(reached(n, want[t]) for t, n in stored().items()), timeout_s=120)
    except TimeoutError:
        pytest.fail(f"{what}: rows per table {stored()}, sent {want}")
    took = time.monotonic() - started
    time.sleep(2)  # a duplicate arriving just behind would be caught here
    assert stored() == want
    return took


@pytest.fixture(scope="module")
def migrated(pipeline):
    """The session's warehouse: its `iopipe` database, migrated as every stack is
    (stack.migrate_clickhouse), and its Kafka. Each test's hosts are its own, and every
    check asks about them alone; what the tests send goes to topics the live job does not
    read (INGESTED_FROM)."""
    return pipeline.ports, pipeline.users


@contextmanager
def clickhouse_reading_agent_topics(ports):
    """A warehouse older than raw_tables_read_accepted reads the agent topics: the
    deployment it belonged to let ClickHouse's principal read them."""
    kafka_admin = kafka_access(ports.brokers).admin()
    acl = ("--operation", "Read", "--operation", "Describe",
           *(arg for record in ACCEPTED_TOPICS for arg in ("--topic", TOPICS[record])))
    kafka_admin.grant(CLICKHOUSE, *acl)
    try:
        yield
    finally:
        kafka_admin.revoke(CLICKHOUSE, *acl)


def unsigned(_host, _value):
    """No signature: the live job refuses such a record from an agent topic (a dead letter),
    where a warehouse older than raw_tables_read_accepted, which read those topics without
    asking who wrote them, stores it."""
    return None


# The two tests below migrate databases of their own on the session's server, each in a
# thread beside the tier's other tests. Once, with both migrating at once, 18.16 held a
# Kafka table's DROP past the client's minute (an operator runs one migration at a time on
# a server): the up and down waits until the upgrade has migrated. Not the other way
# round: the upgrade lets ClickHouse's principal read the agent topics meanwhile, which
# test_stack_boundaries checks it cannot, so it keeps its place early in the tier.
UPGRADE_MIGRATED = threading.Event()
UPGRADE_MIGRATES_WITHIN_S = 300


def up_then_down_leaves_an_empty_server(pipeline):
    ports, users = pipeline.ports, pipeline.users
    admin = users.client(ports, "admin")
    db = f"updown_{uuid.uuid4().hex[:8]}"
    migrator = migrate.Migrator(admin, db=db, kafka_brokers=ports.certificate_brokers,
                                kafka_group=f"{CLICKHOUSE_GROUP}-{db}", log=say)
    UPGRADE_MIGRATED.wait(UPGRADE_MIGRATES_WITHIN_S)  # if it failed first, it says so itself
    migrator.up()
    modern_only = {m.version for m in migrate.discover() if m.requires}
    assert modern_only and set(migrator.skipped) == modern_only, "18.16 skips exactly the modern-only migrations"
    assert migrator.applied() == {m.version for m in migrate.discover()} - modern_only
    migrator.up()  # again: nothing left to do, nothing breaks
    migrator.down()
    warehouse_fixture.assert_nothing_left(admin.rows, db)


def an_upgrade_keeps_the_history_and_its_new_tables_read_what_kafka_holds(pipeline):
    """A warehouse of 0012 (its raw tables read the agent topics, its rollups summed
    io.hist.v1 as 0009 made them), upgraded to the newest:
    - the job's rollups (0013): the sums so far move into the new tables as revision 0,
      and the new Kafka tables read io.latency.v1 from its start with consumer groups of
      their own, so the rollups the job sent before the upgrade are there too, each
      replacing its sum;
    - raw tables reading what the job accepted (0015): what they held stays, the new
      Kafka tables read the accepted topics from their start (a record read before from
      the agent topic replacing its twin), and a record only on an agent topic (no job
      here accepts it) is no longer stored.
    The session's live job reads the agent topics too: what this test sends there goes
    unsigned, so the job accepts none of it (`unsigned`)."""
    ports, users = pipeline.ports, pipeline.users
    admin = users.client(ports, "admin")
    fleet = warehouse_fixture.fleet(int(time.time()), f"up{uuid.uuid4().hex[:6]}")
    rollups = fleet.by_schema(warehouse_fixture.ROLLUP)
    raw = [r for r in fleet.records if r["schema"] in ACCEPTED_TOPICS]
    sent_before = [r for r in rollups if r["host"] == fleet.host_a]  # host b's come after the upgrade
    produce(ports.brokers, [r for r in fleet.records if r["schema"] != warehouse_fixture.ROLLUP] + sent_before,
            headers=unsigned)
    db = f"upgrade_{uuid.uuid4().hex[:8]}"
    migrator = migrate.Migrator(admin, db=db, kafka_brokers=ports.certificate_brokers,
                                kafka_group=f"{CLICKHOUSE_GROUP}-{db}", log=say)
    from_job = next(m.version for m in migrate.discover() if m.name == "latency_from_job")
    reads_accepted = next(m.version for m in migrate.discover() if m.name == "raw_tables_read_accepted")
    assert from_job < reads_accepted
    with clickhouse_reading_agent_topics(ports):
        migrator.up(to_version=from_job - 1)
        wait_until_stored(admin, db, raw, "the raw records, read from the agent topics before the upgrade")
        ios_of = {host: sum(h["count"] for h in fleet.by_schema("io.hist.v1") if h["host"] == host)
                  for host in (fleet.host_a, fleet.host_b)}

        def summed(table, host):
            return int(admin.rows(f"SELECT sumMerge(count) FROM {db}.{table} WHERE host = '{host}'")[0][0])
        wait_for("0009's rollups summing the history", lambda: all(
            summed(table, host) == ios for table in ("latency_1m", "latency_1h", "latency_1d") for host, ios in ios_of.items()),
            timeout_s=120)
        migrator.up()
        UPGRADE_MIGRATED.set()
        for table in LATENCY_ROLLUPS:
            moved = admin.rows(f"SELECT sum(count), max(revision) FROM {db}.{table} FINAL WHERE host = '{fleet.host_b}'")
            assert moved == [(str(ios_of[fleet.host_b]), "0")], f"{table}: host b's history {moved}"
        produce(ports.brokers, [r for r in rollups if r["host"] == fleet.host_b])
        # On the agent topics only, and unsigned: the live job accepts none of them either.
        produce(ports.brokers, [{**r, "host": r["host"] + "-x"} for r in raw], headers=unsigned)
        accepted_after = [{**r, "host": r["host"] + "-c"} for r in raw]  # on the accepted topics only
        produce(ports.brokers, raw + accepted_after, topics=ACCEPTED_TOPICS)
        wait_until_stored(admin, db, [r for r in fleet.records if r["schema"] not in ACCEPTED_TOPICS],
                          "the history in every table after the upgrade")
        for table in LATENCY_ROLLUPS:
            sums = admin.rows(f"SELECT host, disk, op, period, revision, count FROM {db}.{table} FINAL "
                              f"WHERE host LIKE '{fleet.host_a[:-2]}%' AND revision != 2")
            assert not sums, f"{table}: sums the job's rollups did not replace: {sums}"
        want = Counter(warehouse_fixture.stored_table(r) for r in raw + accepted_after)
        hosts = "host IN (" + ", ".join(f"'{h}'" for h in sorted({r["host"] for r in raw + accepted_after})) + ")"

        def stored_final():
            return {table: warehouse_fixture.stored_final(admin.rows, db, table, hosts)[0] for table in want}
        wait_for("the raw records read before the upgrade and those only on the accepted topics, once each",
                 lambda: stored_final() == want, timeout_s=120)
        time.sleep(10)  # longer than the Kafka engine's flush interval (7.5 s): the agent topics' records had their chance
        assert stored_final() == want
        for table in want:
            assert count(admin, f"{db}.{table}", "host LIKE '%-x'") == 0, f"{table} stored a record no job accepted"
    # No `down` after: up_then_down_leaves_an_empty_server is what runs it, and here it
    # would only tidy a database that goes with the session's ClickHouse, at 18.16's price of
    # about 3 s a Kafka table (its shutdown waits out rd_kafka_wait_destroyed while other
    # Kafka tables exist): 32 of them, over a minute. Its tables read on meanwhile what the
    # tests after it send, under their own hosts.


def test_retention_drops_only_the_partitions_past_it_on_the_18_16_server(migrated, monkeypatch, capsys):
    """18.16 has no TTL: `python3 -m iopipe.migrate retention` drops the day partitions of the raw tables
    older than retention.json keeps them, by the server's clock; a dry run first drops
    nothing. Each table gets a row two days past its retention (dropped), one just inside it
    and one of today (kept). Every other test's records on the session's stack are of today
    (or of 2096: the dashboards' known rows): past retention there is nothing else to drop."""
    ports, users = migrated
    admin = users.client(ports, "admin")
    db = migrate.Migrator(admin).db  # the session's: the default database
    now_s = retention.server_now_s(admin)
    host = f"ret-{uuid.uuid4().hex[:6]}"
    policy = retention.load_policy()
    time_ns_field = {"events": "issue_ns", "histograms": "start_ns", "diskstats": "ts_ns"}
    for rule in policy:
        ages_s = [(rule.days + 2) * DAY_S, (rule.days - 1) * DAY_S, 0]
        times = ", ".join(str(now_s - age) for age in ages_s)
        admin.query(f"INSERT INTO {db}.{rule.table} (host, disk, {time_ns_field[rule.table]}, {rule.time_column}) "
                    f"SELECT '{host}', 'sda', s * {NS}, toDateTime(s) FROM (SELECT arrayJoin([{times}]) AS s)")

    def rows_of_host():
        return {rule.table: count(admin, f"{db}.{rule.table}", f"host = '{host}'") for rule in policy}
    monkeypatch.setenv("IOPIPE_TEST_ADMIN_PASSWORD", users.admin)
    cli = ["retention", "--url", ports.clickhouse_url, "--db", db, "--password-env", "IOPIPE_TEST_ADMIN_PASSWORD"]

    migrate.main(cli + ["--dry-run"])
    assert rows_of_host() == {rule.table: 3 for rule in policy}
    migrate.main(cli)
    assert rows_of_host() == {rule.table: 2 for rule in policy}
    oldest_kept = {rule.table: int(admin.rows(f"SELECT min(toUInt32({rule.time_column})) FROM {db}.{rule.table} "
                                              f"WHERE host = '{host}'")[0][0]) for rule in policy}
    assert oldest_kept == {rule.table: now_s - (rule.days - 1) * DAY_S for rule in policy}
    printed = capsys.readouterr().out
    assert f"dry run, would drop {len(policy)} partitions: {len(policy)} rows" in printed, printed
    assert f"dropped {len(policy)} partitions: {len(policy)} rows" in printed, printed


def test_users_can_do_only_their_part(migrated):
    ports, users = migrated
    reader, writer = users.client(ports, "reader"), users.client(ports, "writer")
    insert = "INSERT INTO iopipe.windows (host, disk) VALUES ('roles', 'sda')"
    assert reader.rows("SELECT count() FROM iopipe.windows")  # reading is what it is for
    with pytest.raises(migrate.ClickHouseError, match="readonly"):
        reader.query(insert)
    # The passwordless user sees the server's own tables and nothing of iopipe's.
    default = migrate.ClickHouseHttp(ports.clickhouse_url)
    assert default.rows("SELECT count() FROM system.tables WHERE database = 'system'")
    with pytest.raises(migrate.ClickHouseError, match="Access denied to database iopipe"):
        default.query("SELECT count() FROM iopipe.windows")
    with pytest.raises(migrate.ClickHouseError, match="readonly"):
        default.query(insert)
    writer.query(insert)
    with pytest.raises(migrate.ClickHouseError, match="DDL"):
        writer.query("DROP TABLE iopipe.windows")
    with pytest.raises(migrate.ClickHouseError, match="readonly|DDL"):
        reader.query("DROP TABLE iopipe.windows")
    with pytest.raises(migrate.ClickHouseError, match="password"):
        migrate.ClickHouseHttp(ports.clickhouse_url, "iopipe_writer", "wrong").query("SELECT 1")


def test_the_reader_cannot_lift_its_limits(migrated):
    ports, users = migrated
    reader = users.client(ports, "reader")
    assert reader.rows("SELECT name, value FROM system.settings WHERE name IN ('max_result_rows', 'readonly') "
                       "ORDER BY name") == [("max_result_rows", "1000000"), ("readonly", "1")]
    for lift in ("SELECT 1 SETTINGS max_result_rows = 0", "SET max_memory_usage = 0", "SET readonly = 0"):
        with pytest.raises(migrate.ClickHouseError, match="readonly"):
            reader.query(lift)
    request = urllib.request.Request(f"{ports.clickhouse_url}/?max_execution_time=100000", data=b"SELECT 1",
                                     headers={"X-ClickHouse-User": "iopipe_reader", "X-ClickHouse-Key": users.reader})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert b"readonly" in refused.value.read()


def test_every_cookbook_query_answers_on_the_18_16_server(migrated):
    ports, users = migrated
    assert warehouse_fixture.checked_queries() == set(cookbook.names()), "every cookbook query has a check"
    fleet = warehouse_fixture.fleet(int(time.time()), f"ck{uuid.uuid4().hex[:6]}")
    produce(ports.brokers, fleet.records, topics=INGESTED_FROM)
    reader = users.client(ports, "reader")
    wait_until_stored(reader, "iopipe", fleet.records, "the fleet's records in ClickHouse")

    warehouse_fixture.check_cookbook(fleet, warehouse_fixture.cookbook_runner(reader), ingested_by_s=int(time.time()))


def test_a_malformed_message_is_skipped_and_its_neighbours_kept(migrated):
    ports, users = migrated
    host = f"bad-{uuid.uuid4().hex[:6]}"
    fleet = warehouse_fixture.fleet(int(time.time()), host)
    before, after = fleet.by_schema("io.hist.v1")[:3], fleet.by_schema("io.hist.v1")[3:6]
    producer = Producer(kafka_client(ports.brokers))
    for value in ([json.dumps(r) for r in before] + ["{not json", json.dumps({**before[0], "count": "many"})]
                  + [json.dumps(r) for r in after]):
        producer.produce(INGESTED_FROM["io.hist.v1"], key=f"{host}-a/sdb", value=value)
    producer.flush(30)
    wait_until_stored(users.client(ports, "reader"), "iopipe", before + after, "good histograms around bad ones")


def test_a_steady_stream_is_stored_while_it_flows(migrated):
    """One host's histograms, a few a second and never pausing, as a running agent sends
    them: they must reach the table while the stream goes on, not when it stops."""
    ports, users = migrated
    reader = users.client(ports, "reader")
    host = f"steady-{uuid.uuid4().hex[:6]}"
    template = warehouse_fixture.fleet(int(time.time()), host).by_schema("io.hist.v1")[0]
    producer = Producer({**kafka_client(ports.brokers), "linger.ms": 0})
    flow_s, every_s, sent, stored = 60, 0.2, 0, 0
    deadline = time.monotonic() + flow_s
    while time.monotonic() < deadline and not stored:
        record = {**template, "host": host, "start_ns": time.time_ns(), "end_ns": time.time_ns() + NS}
        producer.produce(INGESTED_FROM["io.hist.v1"], key=f"{host}/{record['disk']}", value=json.dumps(record))
        producer.flush(10)
        sent += 1
        time.sleep(every_s)
        if sent % 10 == 0:
            stored = count(reader, "iopipe.histograms", f"host = '{host}'")
    assert stored, f"none of {sent} histograms sent over {flow_s} s without a pause was stored while they flowed"
    say(f"a steady stream's first rows stored after {sent * every_s:.0f} s of it ({stored} of {sent})")


def test_a_replayed_topic_is_stored_once(migrated):
    """Every record delivered twice, the histograms and the rollups too: each table keeps
    each record once, the rollups the newest revision of each period."""
    ports, users = migrated
    fleet = warehouse_fixture.fleet(int(time.time()), f"re{uuid.uuid4().hex[:6]}")
    reader = users.client(ports, "reader")
    produce(ports.brokers, fleet.records, topics=INGESTED_FROM)
    wait_until_stored(reader, "iopipe", fleet.records, "first delivery")
    produce(ports.brokers, fleet.records, topics=INGESTED_FROM)
    time.sleep(10)  # longer than the Kafka engine's flush interval (7.5 s)
    expected = warehouse_fixture.stored_once(fleet.records)
    assert set(expected) == {"windows", "diskstats", "histograms", "anomalies", "health", *LATENCY_ROLLUPS}
    ios = sum(h["count"] for h in fleet.by_schema("io.hist.v1"))
    for table, (rows, rolled_up, revisions) in expected.items():
        stored = warehouse_fixture.stored_final(reader.rows, "iopipe", table, f"host LIKE '{fleet.host_a[:-2]}%'")
        assert stored == (rows, rolled_up, revisions), table
        assert rolled_up in (0, ios), table


def test_a_batch_is_stored_as_the_rows_of_the_records_it_holds(migrated):
    """The batched records on the topics the job passes them on to, under hosts of their own,
    and the records they hold on theirs under others: every table holds the same rows of
    both, every column (the same check as on chdb)."""
    ports, users = migrated
    reader = users.client(ports, "reader")
    tag = f"bt{uuid.uuid4().hex[:6]}"
    batches = warehouse_fixture.batches(int(time.time()))
    records = warehouse_fixture.unfolded(batches)
    as_batches = {f"{tag}-b-{r['host']}": r["host"] for r in records}
    as_records = {f"{tag}-r-{r['host']}": r["host"] for r in records}
    produce(ports.brokers, [{**b, "host": f"{tag}-b-{b['host']}"} for b in batches], topics=INGESTED_FROM)
    produce(ports.brokers, [{**r, "host": f"{tag}-r-{r['host']}"} for r in records], topics=INGESTED_FROM)
    tables = warehouse_fixture.tables_filled_by(records)
    disks_of = {table: {(r["host"], r["disk"]) for r in records if table in warehouse_fixture.tables_filled_by([r])}
                for table in tables}

    def stored(hosts):
        return {table: warehouse_fixture.rows_of_hosts(reader, "iopipe", table, hosts) for table in tables}

    def the_same_and_every_disk_in():
        of_records = stored(as_records)
        return of_records == stored(as_batches) and all(
            {(row["host"], row["disk"]) for row in of_records[table]} == disks_of[table] for table in tables)
    try:
        wait_for("the batches' rows and their records' rows", the_same_and_every_disk_in, timeout_s=120)
    except TimeoutError:
        pytest.fail(f"rows of the records {stored(as_records)}, of the batches {stored(as_batches)}")
    time.sleep(10)  # longer than the Kafka engine's flush interval (7.5 s): a row late on either side would show
    assert stored(as_batches) == stored(as_records)


def latency_rollups_of(client, host):
    """Per rollup table, per disk, the device-time I/Os its newest revisions count."""
    return {table: {disk: int(n) for disk, n in client.rows(
        f"SELECT disk, sum(count) FROM iopipe.{table} FINAL WHERE host = '{host}' AND latency = 'device' GROUP BY disk")}
        for table in LATENCY_ROLLUPS}


def histograms_read_after_their_windows_closed_still_count_once_in_the_rollups(pipeline):
    """A disk's histograms that arrive after its diskstats closed their windows (a loaded
    machine reads the histogram topic seconds behind) are late for the detectors, but
    the job's latency rollups count every I/O of them, and a resend of them once."""
    host = f"late-{uuid.uuid4().hex[:6]}"
    records = scenarios.shifted_to_now([{**r, "host": host} for r in scenarios.generate("S4") if r["schema"] != "io.event.v1"])
    histograms = [r for r in records if r["schema"] == "io.hist.v1"]
    produce(pipeline.ports.brokers, [r for r in records if r["schema"] == "io.diskstats.v1"])
    # Histograms not heard within 10 s are not waited for: the diskstats close the windows.
    first_windows = (f"SELECT uniqExact(window_start_ns) FROM iopipe.windows "
                     f"WHERE host = '{host}' AND window_s = {BASE_WINDOW_S}")
    wait_for("S4's first windows closed on its diskstats alone",
             lambda: int(pipeline.reader.rows(first_windows)[0][0]) >= 5, timeout_s=120)
    produce(pipeline.ports.brokers, histograms + histograms)
    sent = {"sdb": sum(r["count"] for r in histograms if r["latency"] == "device")}
    try:
        wait_for("S4's latency rollups", lambda: all(n == sent for n in latency_rollups_of(pipeline.reader, host).values()),
                 timeout_s=240)
    except TimeoutError:
        pytest.fail(f"S4's rollups {latency_rollups_of(pipeline.reader, host)}, its histograms {sent}")
    # The job's dead letters are committed with its checkpoints, as the rollups' amendments are.
    wait_for("dead letters of the histograms that came after their windows closed", timeout_s=60, check=lambda: [
        letter for letter in dead_letters_naming(pipeline.ports.brokers, host) if "histogram of" in letter["reason"]])


def refused_by_the_contract(host):
    """The shared invalid examples of the agent records, each breaking one rule of the
    contract, sent as `host` (those whose fault is the host, the disk or the schema, which
    would not reach the topic as `host`'s, are left out)."""
    refused = []
    for schema in ACCEPTED_TOPICS:
        for case in warehouse_fixture.invalid_examples(schema):
            if case["field"] not in ("host", "disk", "schema"):
                refused.append({**case["record"], "host": host})
    return refused


def test_records_the_contract_refuses_are_dead_letters_never_stored_and_their_neighbours_are(pipeline):
    """ClickHouse's raw tables read only what the live job accepted: the shared invalid
    examples, sent between S3's records, each come back as a dead letter and none is
    stored; every good record is, once."""
    host = f"refused-{uuid.uuid4().hex[:6]}"
    good = scenarios.shifted_to_now([{**r, "host": host} for r in scenarios.generate("S3")])
    refused = refused_by_the_contract(host)
    half = len(good) // 2
    produce(pipeline.ports.brokers, good[:half] + refused + good[half:])
    wait_for("a dead letter for every refused record", timeout_s=120, check=lambda: len([
        letter for letter in dead_letters_naming(pipeline.ports.brokers, host)
        if letter["stage"] == "stream-jobs/decode"]) == len(refused))
    wait_until_stored(pipeline.reader, "iopipe", good, "S3's good records")


def live_pipeline_records_land_once_each_within_seconds(pipeline):
    """S1 (a dusty disk) through Kafka, the live job and ClickHouse: every raw record
    stored once, the job's latency rollups counting every I/O, its anomaly arriving."""
    host = f"live-{uuid.uuid4().hex[:6]}"
    records = scenarios.shifted_to_now([{**r, "host": host} for r in scenarios.generate("S1")])
    produce(pipeline.ports.brokers, records)
    took = wait_until_stored(pipeline.reader, "iopipe", records, "S1's raw records in ClickHouse")
    say(f"S1's {len(records)} raw records stored within {took:.1f} s of being sent")

    device = [r for r in records if r["schema"] == "io.hist.v1" and r["latency"] == "device"]
    sent = {disk: sum(r["count"] for r in device if r["disk"] == disk) for disk in {r["disk"] for r in device}}

    # The job closes the disk's last windows once the disk has been silent for its DISK_IDLENESS.
    try:
        wait_for("S1's latency rollups", lambda: all(n == sent for n in latency_rollups_of(pipeline.reader, host).values()),
                 timeout_s=240)
    except TimeoutError:
        pytest.fail(f"S1's rollups {latency_rollups_of(pipeline.reader, host)}, its histograms {sent}")

    anomalies = wait_for("S1's failing disk in ClickHouse", lambda: pipeline.reader.rows(
        f"SELECT kind, severity FROM iopipe.anomalies FINAL WHERE host = '{host}' AND disk = 'sdb'"), timeout_s=120)
    assert ("failing_disk", "critical") in anomalies or ("failing_disk", "warning") in anomalies, anomalies


# Tests whose time is mostly waiting on clocks: ClickHouse 18.16's DDL sleeps about 3 s
# for each Kafka table it drops (its shutdown waits out rd_kafka_wait_destroyed while other
# Kafka tables exist), 32 in a `down` of every migration and 10 in the upgrade; the
# live job closes a silent disk's last windows after its DISK_IDLENESS. Their bodies run
# beside the tier's other tests from the pipeline's start (conftest's running_beside),
# each with hosts (or a database) of their own; their tests take the outcome.
def test_up_then_down_leaves_an_empty_server(running_beside):
    running_beside[up_then_down_leaves_an_empty_server].result()


def test_an_upgrade_keeps_the_history_and_its_new_tables_read_what_kafka_holds(running_beside):
    running_beside[an_upgrade_keeps_the_history_and_its_new_tables_read_what_kafka_holds].result()


def test_histograms_read_after_their_windows_closed_still_count_once_in_the_rollups(running_beside):
    running_beside[histograms_read_after_their_windows_closed_still_count_once_in_the_rollups].result()


def test_live_pipeline_records_land_once_each_within_seconds(running_beside):
    running_beside[live_pipeline_records_land_once_each_within_seconds].result()
