"""The stack's own boundaries: who may talk to Kafka and what each principal may do there,
who may start code in Flink, as whom every service runs, where ClickHouse's users may come
from and what passwords it takes."""
import json
import subprocess
import time
import urllib.error
import urllib.request
import uuid
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from iopipe import host_signing, migrate, stack
from iopipe.flink_rest import flink_config
from iopipe.kafka_access import (AGENT_PRODUCER_BYTE_RATE, CLICKHOUSE, CLICKHOUSE_GROUP, JOB_GROUP, KafkaAccess,
                                 agent_principal, read_properties)
from iopipe.migrate import ClickHouseError
from iopipe.paths import REPO, SCHEMA
from iopipe.ports import Ports
from iopipe.readiness import http_json, wait_for
from iopipe.stack_kafka import agent_access, kafka_access, kafka_client
from iopipe.synthetic import scenarios

from conftest import services
from kafka_records import ACCEPTED_TOPICS, TOPICS, consume_agent_records, consume_host, dead_letters_naming, produce

pytestmark = pytest.mark.stack

# A consumer refused a topic, or a group its principal may not join.
DENIED = (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED)

EMPTY_JAR = b"PK\x05\x06" + bytes(18)  # a zip's end-of-directory record alone


def _post_jar(flink_url, jar_bytes):
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"jarfile\"; filename=\"job.jar\"\r\n"
            "Content-Type: application/x-java-archive\r\n\r\n").encode() + jar_bytes + f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(f"{flink_url}/jars/upload", data=body, method="POST")
    request.add_header("Content-Type", f"multipart/form-data; boundary={boundary}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read()


def test_flink_takes_no_jar_uploads(pipeline):
    """Anyone who reaches the REST API could run code in the cluster through an uploaded
    jar; the job itself went in through the CLI."""
    # An empty zip: small enough that a refusing server answers before the body is sent.
    status, answer = _post_jar(pipeline.ports.flink_url, EMPTY_JAR)
    assert 400 <= status < 500, f"a jar upload answered {status}: {answer[:300]!r}"
    assert b"not allowed" in answer or status == 404, answer[:300]
    config = flink_config(pipeline.ports)
    assert config["web.submit.enable"] == "false"
    assert config["rest.bind-address"] == "127.0.0.1"
    jobs = http_json(f"{pipeline.ports.flink_url}/jobs")["jobs"]
    assert {"id": pipeline.job_id, "status": "RUNNING"} in jobs, "the live job runs, submitted by the CLI"


def _processes(container):
    """(uid, command line) of every process in `container`, as the host's ps sees them."""
    # docker top needs the pid column to find the container's processes in the host's ps.
    listing = subprocess.run(["docker", "top", container, "-eo", "pid,uid,args"], capture_output=True, text=True, check=True)
    rows = [line.split(None, 2) for line in listing.stdout.splitlines()[1:] if line.strip()]
    return [(int(uid), args) for _, uid, args in rows]


def test_no_service_runs_as_root_or_privileged(pipeline):
    for service, container in pipeline.containers.items():
        processes = _processes(container)
        assert processes, f"{service} runs something"
        as_root = [args for uid, args in processes if uid == 0]
        assert not as_root, f"{service} runs as root: {as_root}"
        host_config = json.loads(subprocess.run(["docker", "inspect", "-f", "{{json .HostConfig}}", container],
                                                capture_output=True, text=True, check=True).stdout)
        assert not host_config["Privileged"], f"{service} is privileged"
        assert not host_config["CapAdd"], f"{service} was given capabilities {host_config['CapAdd']}"
        assert host_config["CapDrop"] == list(stack.CAP_DROP), f"{service} keeps capabilities: it drops {host_config['CapDrop']}"
        assert host_config["SecurityOpt"] == list(stack.SECURITY_OPT), f"{service} may gain privileges"


def test_clickhouse_users_come_only_from_their_networks():
    """The reader accepted from a network that is not this machine's, the writer from one
    that is: from here the writer gets in, the reader is refused. (18.16 applied an IPv4
    network's prefix to the IPv6 form of the address, which let every IPv4 client in.)"""
    networks = {"IOPIPE_CLICKHOUSE_READER_NETWORKS": "192.0.2.0/24", "IOPIPE_CLICKHOUSE_WRITER_NETWORKS": "127.0.0.0/8"}
    with services(("clickhouse",), env=networks) as (ports, users, _):
        assert users.client(ports, "writer").rows("SELECT 1") == [("1",)]
        with pytest.raises(ClickHouseError, match="not allowed|Authentication failed|password"):
            users.client(ports, "reader").query("SELECT 1")


def test_no_user_but_the_admin_reaches_the_kafka_tables(pipeline):
    """On 18.16 a SELECT on a Kafka table consumes its messages and commits their offsets:
    they never reach the table behind it. The Kafka tables live where only the admin goes."""
    ports, users = pipeline.ports, pipeline.users
    admin = users.client(ports, "admin")
    session = ("iopipe", migrate.ingest_database("iopipe"))  # other tests make databases of their own
    kafka_tables = admin.rows(f"SELECT database, name FROM system.tables WHERE engine = 'Kafka' AND database IN {session}")
    assert kafka_tables and {db for db, _ in kafka_tables} == {session[1]}, kafka_tables
    for role in ("reader", "writer", "bridge"):
        client = users.client(ports, role)
        for db, table in kafka_tables:
            with pytest.raises(ClickHouseError, match="Access denied|not allowed"):
                client.query(f"SELECT * FROM {db}.{table} LIMIT 1")
        assert client.rows("SELECT count() FROM iopipe.health WHERE 0") == [("0",)]  # what it may read, it reads


# users.xml: how many queries every Grafana viewer together (iopipe_reader) may run at once.
READER_CONCURRENT_QUERIES = int(ET.parse(REPO / "infra" / "clickhouse" / "users.xml").getroot().findtext(
    "profiles/iopipe_reader/max_concurrent_queries_for_user"))


def test_a_storm_of_dashboard_queries_does_not_hold_tickets_back():
    """The readers' queries at once are capped, and the ticket bridge reads as a user of its
    own, with room left. (On a server of its own: the storm would hold back the session's
    other readers.)"""
    with services(("clickhouse",)) as (ports, users, _):
        reader, admin = users.client(ports, "reader"), users.client(ports, "admin")
        # Each level sleeps 3 s (18.16's longest) after the one inside it: 12 s of no work.
        nap = "SELECT sleep(3) FROM (SELECT sleep(3) FROM (SELECT sleep(3) FROM (SELECT sleep(3))))"

        def held():
            return int(admin.rows("SELECT count() FROM system.processes WHERE user = 'iopipe_reader'")[0][0])
        with ThreadPoolExecutor(READER_CONCURRENT_QUERIES) as pool:
            naps = [pool.submit(reader.query, nap) for _ in range(READER_CONCURRENT_QUERIES)]
            wait_for("the readers' queries all running", lambda: held() == READER_CONCURRENT_QUERIES, timeout_s=10)
            with pytest.raises(ClickHouseError, match="Too many simultaneous queries for user"):
                reader.query("SELECT 1")
            assert users.client(ports, "bridge").rows("SELECT 1") == [("1",)]
            for finished in naps:
                finished.result()
        assert reader.rows("SELECT 1") == [("1",)]


def test_clickhouse_takes_only_random_passwords():
    """An unsalted SHA-256 of a word is found in a dictionary: the server refuses to start."""
    ports = Ports.free()
    weak = replace(stack.ClickHouseUsers.generate(), reader="grafana")
    container = f"iopipe-test-weak-clickhouse-{uuid.uuid4().hex[:8]}"
    environment = [arg for key, value in {**ports.env(), **weak.env()}.items() for arg in ("-e", f"{key}={value}")]
    subprocess.run(["docker", "run", "-d", "--name", container, "--network", "host", *environment,
                    "iopipe/clickhouse:dev"], capture_output=True, check=True)
    try:
        wait_for("ClickHouse refusing to start", lambda: _exit_code(container) is not None, timeout_s=60)
        assert _exit_code(container) == 2
        logs = subprocess.run(["docker", "logs", container], capture_output=True, text=True).stderr
        assert "IOPIPE_CLICKHOUSE_READER_PASSWORD is shorter than 32 characters" in logs, logs
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)


def _exit_code(container):
    state = json.loads(subprocess.run(["docker", "inspect", "-f", "{{json .State}}", container],
                                      capture_output=True, text=True, check=True).stdout)
    return None if state["Running"] else state["ExitCode"]


def _delivery(config, topic, timeout_s=20):
    """What became of one record sent to `topic` with the client settings `config`: None
    once delivered, else the error; and the client's own errors (authentication) on the way."""
    outcome, client_errors = [], []
    producer = Producer({**config, "message.timeout.ms": timeout_s * 1000, "error_cb": client_errors.append})
    probe = json.dumps({"schema": "io.probe.v1", "host": f"probe-{uuid.uuid4().hex[:8]}"}).encode()
    producer.produce(topic, probe, on_delivery=lambda error, _: outcome.append(error))
    producer.flush(timeout_s + 10)
    return (outcome or ["undelivered"])[0], [e.code() for e in client_errors]


def _read_error(config, topic, group_prefix):
    """The error a consumer with `config`, in a group its principal may join, meets reading
    `topic` from its start; None once it was given the topic's partitions and read from
    them without one; "unassigned" if neither came within 20 s."""
    client_errors, assigned = [], []
    consumer = Consumer({**config, "group.id": f"{group_prefix}-probe-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "error_cb": client_errors.append})
    try:
        consumer.subscribe([topic], on_assign=lambda _, partitions: assigned.extend(partitions))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is not None and message.error():
                return message.error().code()
            if client_errors:
                return client_errors[0].code()
            if assigned and (message is not None or time.monotonic() > deadline - 10):
                return None
        return "unassigned"
    finally:
        consumer.close()


def test_kafka_takes_only_who_it_knows(pipeline, tmp_path):
    brokers = pipeline.ports.brokers
    admin = kafka_client(brokers)
    impostor = KafkaAccess(tmp_path).create()  # a CA of the same making, not the stack's
    refused_senders = {
        "wrong password": {**admin, "sasl.password": "not-the-password"},
        "plaintext": {"bootstrap.servers": brokers},
        "trusting another CA": {**admin, "ssl.ca.location": str(impostor.broker_dir / "ca.pem")},
    }
    # Each refusal takes its whole delivery timeout: the three wait side by side.
    with ThreadPoolExecutor(len(refused_senders)) as pool:
        sent = dict(zip(refused_senders, pool.map(
            lambda config: _delivery(config, TOPICS["io.window.v1"], timeout_s=10), refused_senders.values())))
    error, client_errors = sent["wrong password"]
    assert error is not None and KafkaError._AUTHENTICATION in client_errors, (error, client_errors)
    assert sent["plaintext"][0] is not None, "a client without TLS and SASL gets nothing in"
    assert sent["trusting another CA"][0] is not None, "a client that does not trust the stack's CA does not talk to it"

    clickhouse = kafka_client(brokers, CLICKHOUSE)
    assert _read_error(clickhouse, ACCEPTED_TOPICS["io.diskstats.v1"], CLICKHOUSE_GROUP) is None
    refused_readers = {
        "a certificate of the same name from another CA is refused": {
            **clickhouse, **{key: str(impostor.client_dir(CLICKHOUSE) / Path(path).name) for key, path in
                             clickhouse.items() if key in ("ssl.certificate.location", "ssl.key.location")}},
        "the certificates' listener takes no client without one": {
            key: value for key, value in clickhouse.items() if key not in ("ssl.certificate.location", "ssl.key.location")},
    }
    with ThreadPoolExecutor(len(refused_readers)) as pool:
        errors = dict(zip(refused_readers, pool.map(
            lambda config: _read_error(config, ACCEPTED_TOPICS["io.diskstats.v1"], CLICKHOUSE_GROUP),
            refused_readers.values())))
    for why, error in errors.items():
        assert error is not None, why


def test_each_principal_does_only_its_part(pipeline):
    """An agent produces its records, no faster than its quota, and nothing else, and reads
    nothing; ClickHouse reads only what it stores, and writes nothing."""
    brokers = pipeline.ports.brokers
    host = f"boundary-{uuid.uuid4().hex[:6]}"
    agent = {"bootstrap.servers": brokers, **read_properties(agent_access(brokers, host).kafka_config)}
    assert kafka_access(brokers).admin().user_quotas(agent_principal(host)) == {
        "producer_byte_rate": AGENT_PRODUCER_BYTE_RATE}
    assert _delivery(agent, TOPICS["io.diskstats.v1"])[0] is None
    for topic in (TOPICS["io.window.v1"], TOPICS["io.health.v1"], ACCEPTED_TOPICS["io.diskstats.v1"]):
        assert _delivery(agent, topic)[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, topic
    assert _read_error(agent, TOPICS["io.diskstats.v1"], JOB_GROUP) in DENIED
    clickhouse = kafka_client(brokers, CLICKHOUSE)
    for topic in (TOPICS["io.window.v1"], TOPICS["io.diskstats.v1"]):
        assert _delivery(clickhouse, topic)[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, topic
    assert _read_error(clickhouse, TOPICS["io.diskstats.v1"], CLICKHOUSE_GROUP) == KafkaError.TOPIC_AUTHORIZATION_FAILED, \
        "raw agent records are the job's to judge"


def test_an_agent_speaks_only_for_its_own_host(pipeline, agent_bin):
    """The real agent with host A's principal and key, run as itself and then claiming to
    be host B; a failing disk's records (S1) written for B with A's key, and A's own
    records each followed in its message by B's (the whole signed by A), beside the same
    records of an honest host signed with its own, and A's own records replayed onto another
    agent topic: B's and the replays are each a dead letter saying why, counted, and
    nothing of them reaches the accepted topics or any table (windows, anomalies, health:
    no ticket), while the honest host's failing disk is found."""
    brokers, reader = pipeline.ports.brokers, pipeline.reader
    suffix = uuid.uuid4().hex[:6]
    speaker, victim, honest = f"speaker-{suffix}", f"victim-{suffix}", f"honest-{suffix}"
    access = agent_access(brokers, speaker)
    for host in (speaker, victim):
        run = subprocess.run([str(agent_bin), "run", "--no-trace", "--output", "kafka", "--brokers", brokers,
                              *access.args(), "--host", host, "--count", "3", "--interval-ms", "200"],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
    speakers_key = host_signing.read_key(access.signing_key)

    def signed_by_speaker(_host, value):
        return [(host_signing.HEADER, host_signing.signature(speakers_key, value).encode())]
    s1 = scenarios.generate("S1")
    forged = scenarios.shifted_to_now([{**r, "host": victim} for r in s1])
    produce(brokers, forged, headers=signed_by_speaker)
    smuggling = scenarios.shifted_to_now([{**r, "host": speaker} for r in s1])[:20]
    produce(brokers, smuggling, headers=signed_by_speaker,
            value_of=lambda own: (json.dumps(own) + json.dumps({**own, "host": victim})).encode())
    produce(brokers, scenarios.shifted_to_now([{**r, "host": honest} for r in s1]))
    # The speaker's own records, signed by it, replayed onto another agent topic: a
    # signature covers the record's schema, and a schema is taken from its topic only.
    replayed = scenarios.shifted_to_now([{**r, "host": speaker, "disk": "sdr"} for r in s1])[:20]
    elsewhere = {schema: TOPICS["io.hist.v1" if schema == "io.event.v1" else "io.event.v1"] for schema in TOPICS}
    produce(brokers, replayed, headers=signed_by_speaker, topics=elsewhere)

    wait_for("the speaker's own samples accepted", timeout_s=120,
             check=lambda: consume_agent_records(brokers, "io.diskstats.v1", speaker, ACCEPTED_TOPICS))
    letters = wait_for("a dead letter for every forged or smuggling record and the agent's claims", timeout_s=180,
                       check=lambda: (letters if len(letters := dead_letters_naming(brokers, victim))
                                      > len(forged) + len(smuggling) else None))
    refused = [letter for letter in letters if not letter["reason"].startswith("more than one JSON value")]
    assert all(letter["reason"].startswith(f"unverified host: the signature is not host {victim}'s")
               for letter in refused), refused[:3]
    assert len(letters) - len(refused) == len(smuggling), letters[:3]
    replays = wait_for("a dead letter for every record replayed onto another topic", timeout_s=120, check=lambda: (
        found if len(found := [letter for letter in dead_letters_naming(brokers, speaker)
                               if " record on topic " in letter["reason"]]) >= len(replayed) else None))
    assert len(replays) == len(replayed), replays[:3]
    anomalies = wait_for("the honest host's failing disk", timeout_s=300, check=lambda: reader.rows(
        f"SELECT kind FROM iopipe.anomalies FINAL WHERE host = '{honest}' AND disk = 'sdb'"))
    assert ("failing_disk",) in anomalies
    for topic in ACCEPTED_TOPICS.values():
        assert not consume_host(brokers, topic, victim), topic
    for table in ("windows", "anomalies", "health", "diskstats", "histograms", "events"):
        assert reader.rows(f"SELECT count() FROM iopipe.{table} WHERE host = '{victim}'") == [("0",)], table
        assert reader.rows(f"SELECT count() FROM iopipe.{table} WHERE host = '{speaker}' AND disk = 'sdr'") == [("0",)], table
    # Flink's REST API serves metrics as its fetcher last read them, every 10 s.
    wait_for("the refused records counted", timeout_s=60,
             check=lambda: _job_counter(pipeline, "records_unverified_host_total") >= len(refused))
    # The job given the master secret says, in its metrics, that no record is taken unsigned.
    assert _job_metric_sums(pipeline, "unsigned_ingestion") == [0]


def test_one_huge_record_stops_nothing(pipeline):
    """One unsigned record naming a host of 5 MB, which lz4 brings under the brokers' message
    size: its dead letter (the reason quotes the host) is a few kilobytes, the job goes on
    without a restart, and the records after it are read. (Its dead letter was once larger
    than the sink may send: the job restarted on it for ever, every host held up.)"""
    brokers = pipeline.ports.brokers
    restarts = _job_metric(pipeline, "numRestarts")
    marker = f"huge-{uuid.uuid4().hex[:6]}"
    record = {**json.loads((SCHEMA / "examples/io.hist.v1.valid.ndjson").read_text().splitlines()[0]),
              "host": marker + "h" * 5_000_000}
    producer = Producer({**kafka_client(brokers), "compression.type": "lz4", "message.max.bytes": 16_000_000})
    producer.produce(TOPICS["io.hist.v1"], key=f"{marker}/sdb".encode(), value=json.dumps(record).encode())
    assert producer.flush(60) == 0, "the brokers take it compressed"
    after = f"after-{marker}"
    produce(brokers, scenarios.shifted_to_now([{**r, "host": after} for r in scenarios.generate("S1")[:20]]))

    letters = wait_for("the huge record's dead letter", timeout_s=180, check=lambda: dead_letters_naming(brokers, marker))
    assert len(json.dumps(letters[0])) < 8 * 1024, len(json.dumps(letters[0]))
    wait_for("the records after it read", timeout_s=120,
             check=lambda: consume_host(brokers, ACCEPTED_TOPICS["io.diskstats.v1"], after))
    assert _job_metric(pipeline, "numRestarts") == restarts


def _job_metric(pipeline, name):
    """A job-level metric of the live job (Flink's REST API)."""
    metrics = http_json(f"{pipeline.ports.flink_url}/jobs/{pipeline.job_id}/metrics?get={name}")
    return int(float(metrics[0]["value"]))


def _job_counter(pipeline, name):
    """A counter of the live job, summed over every operator and subtask that has it."""
    return sum(_job_metric_sums(pipeline, name))


def _job_metric_sums(pipeline, name):
    """A metric of the live job's operators, per operator that has it, summed over its subtasks."""
    job = http_json(f"{pipeline.ports.flink_url}/jobs/{pipeline.job_id}")
    sums = []
    for vertex in job["vertices"]:
        url = f"{pipeline.ports.flink_url}/jobs/{pipeline.job_id}/vertices/{vertex['id']}/subtasks/metrics"
        ids = [m["id"] for m in http_json(url) if m["id"].endswith(name)]
        if ids:
            sums.append(sum(int(float(m["sum"])) for m in http_json(f"{url}?get={','.join(ids)}")))
    return sums
