"""Who may use a stack's Kafka, and how: a private CA made when the stack starts, the
nodes' certificate, SCRAM-SHA-512 principals, certificate principals and each client's
settings, kept outside the repo under $IOPIPE_CACHE/kafka-access/<client port>/ (nothing
secret is ever committed).

    broker/                     mounted in every Kafka node at /etc/iopipe/kafka
      ca.pem node.pem           the CA, the nodes' key and certificate (TLS on every listener)
      users/NAME.scram          each principal's SCRAM credential (ConfigCommand --add-config-file)
    clients/NAME/               one per principal; a container mounts its own at /etc/iopipe/kafka
      ca.pem client.properties  librdkafka settings (the agent, ClickHouse, Python), or
                                Java client settings for the job (iopipe-job)
      client.pem client.key     a certificate principal's certificate and key
      signing.secret            the job's: the fleet's master secret (schema/signing.json)
      agent.properties signing.key  an agent's, for its host: settings and host key (0600)

Principals authenticate with SCRAM-SHA-512 on the clients' listener, or with a client
certificate on the certificates' listener (CERTIFICATE_PRINCIPALS: ClickHouse, whose
librdkafka 2.0.2 sends a SCRAM proof Kafka 4 refuses, confluentinc/librdkafka#4895).

The directory of a stack is 0700: the files in it are readable by the containers' users,
so nobody else on the host may reach them.
"""
import json
import re
import secrets
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from iopipe.host_signing import FleetSigner, host_key, read_key
from iopipe.paths import SCHEMA

ADMIN = "iopipe-admin"  # a super user: tests and operators
JOB = "iopipe-job"
CLICKHOUSE = "iopipe-clickhouse"
SCRAM_PRINCIPALS = (ADMIN, JOB)
CERTIFICATE_PRINCIPALS = (CLICKHOUSE,)  # each a certificate with CN=<name>, signed with the nodes'
NODE_NAME = "iopipe-kafka-node"  # the nodes' certificate's CN
MOUNT = "/etc/iopipe/kafka"  # where a container finds its directory
SIGNING_SECRET = "signing.secret"  # the fleet's master secret, in the job's directory
SCRAM_ITERATIONS = 8192
QUOTA = re.compile(r"\b(\w+_byte_rate)=([0-9.E+]+)")  # in ConfigCommand's description of a user
CERT_DAYS = 30  # a stack's CA outlives any test or demo; make down and up again for a new one


def super_users():
    """Kafka's super.users: the nodes (their certificate) and the admin; every other principal
    has only its ACLs. The Kafka image holds it as super-users.txt."""
    return f"User:CN={NODE_NAME};{kafka_principal(ADMIN)}"


def kafka_principal(name):
    """How Kafka's ACLs name the principal `name`: a certificate's by its distinguished name."""
    return f"User:CN={name}" if name in CERTIFICATE_PRINCIPALS else f"User:{name}"


def agent_principal(host):
    """The principal of the agent of `host`: its name names the host."""
    return f"agent-{host}"


class KafkaAccess:
    """The certificates and credentials of a stack, kept under `root` (`of`: its place for a stack's brokers)."""

    def __init__(self, root):
        self.root = Path(root)

    @classmethod
    def of(cls, cache, brokers):
        """The stack's whose bootstrap servers are `brokers` (its first node's port names it)."""
        first_port = brokers.split(",")[0].rsplit(":", 1)[1]
        return cls(Path(cache) / "kafka-access" / first_port)

    @property
    def broker_dir(self):
        return self.root / "broker"

    def client_dir(self, principal):
        return self.root / "clients" / principal

    def client_properties(self, principal):
        return self.client_dir(principal) / "client.properties"

    def exists(self):
        """Whether all of it was made and its certificates hold for another day (an older
        stack's may lack what came later, or have expired: it is made anew)."""
        certificates = [self.broker_dir / "node.pem", *(self.client_dir(name) / "client.pem" for name in CERTIFICATE_PRINCIPALS)]
        return self.signing_secret_path().exists() and all(
            path.exists() and subprocess.run(["openssl", "x509", "-checkend", "86400", "-noout", "-in", str(path)],
                                             capture_output=True).returncode == 0
            for path in certificates)

    def mounts(self):
        """Each service's directory, mounted at MOUNT in its containers, by service kind."""
        return {"kafka": self.broker_dir, "flink": self.client_dir(JOB), "clickhouse": self.client_dir(CLICKHOUSE)}

    def compose_env(self):
        """The directories as compose.yaml and compose.cluster.yaml read them."""
        return {f"IOPIPE_KAFKA_{kind.upper()}_DIR": str(path) for kind, path in self.mounts().items()}

    def remember_node(self, container, internal_port, certificate_brokers):
        """Where the tools of `admin()` run (the first node's container and its internal
        port), and the certificates' listeners."""
        (self.root / "node.json").write_text(json.dumps({
            "container": container, "internal_port": internal_port, "certificate_brokers": certificate_brokers}))

    def _node(self):
        return json.loads((self.root / "node.json").read_text())

    def admin(self):
        node = self._node()
        return KafkaAdmin(self, node["container"], node["internal_port"])

    def create(self):
        """A new CA, node certificate and service principals, replacing any before."""
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True)
        self.root.chmod(0o700)
        (self.broker_dir / "users").mkdir(parents=True)
        _make_certificates(self.broker_dir, {name: self.client_dir(name) for name in CERTIFICATE_PRINCIPALS})
        for principal in CERTIFICATE_PRINCIPALS:
            directory = self.client_dir(principal)
            shutil.copy2(self.broker_dir / "ca.pem", directory / "ca.pem")
            _write(directory / "client.properties",
                   "".join(f"{key}={value}\n" for key, value in certificate_settings().items()))
        for principal in SCRAM_PRINCIPALS:
            self.add_principal(principal)
        _write(self.signing_secret_path(), secrets.token_hex(32) + "\n")
        return self

    def signing_secret_path(self):
        """The fleet's master secret, which only the job holds (in its directory)."""
        return self.client_dir(JOB) / SIGNING_SECRET

    def fleet_signer(self):
        """Signs as any host: for tests and replays that stand in for a fleet's agents."""
        return FleetSigner(read_key(self.signing_secret_path()))

    def add_principal(self, principal):
        """A new password for `principal`: its SCRAM credential for the brokers, and its
        client settings. The brokers learn it at start (start-kafka.sh) or from
        `KafkaAdmin.add_agent`."""
        password = secrets.token_hex(24)
        _write(self.broker_dir / "users" / f"{principal}.scram",
               f"SCRAM-SHA-512=iterations={SCRAM_ITERATIONS},password={password}\n")  # no brackets in a file
        directory = self.client_dir(principal)
        directory.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self.broker_dir / "ca.pem", directory / "ca.pem")
        settings = java_settings(principal, password) if principal == JOB else librdkafka_settings(principal, password)
        _write(directory / "client.properties", "".join(f"{key}={value}\n" for key, value in settings.items()))
        return directory

    def host_java_properties(self, principal=ADMIN):
        """Java client settings of `principal` for a program on this host (the benchmarks)."""
        settings = read_properties(self.client_properties(principal))
        path = self.client_dir(principal) / "host-java.properties"
        path.write_text("".join(f"{key}={value}\n" for key, value in java_settings(
            principal, settings["sasl.password"], ca=self.client_dir(principal) / "ca.pem").items()))
        path.chmod(0o600)
        return path

    def client_config(self, brokers, principal=ADMIN):
        """librdkafka settings of `principal` for a client on this host (confluent-kafka); a
        certificate principal's go to the certificates' listeners."""
        settings = self.host_settings(principal)
        if principal in CERTIFICATE_PRINCIPALS:
            settings.update(certificate_settings(self.client_dir(principal)))
            brokers = self._node()["certificate_brokers"]
        return {"bootstrap.servers": brokers, **settings}

    def host_settings(self, principal):
        """`principal`'s librdkafka settings with the CA's path on this host, not in a container."""
        directory = self.client_dir(principal)
        settings = read_properties(directory / "client.properties")
        settings["ssl.ca.location"] = str(directory / "ca.pem")
        return settings


def librdkafka_settings(principal, password, ca=f"{MOUNT}/ca.pem"):
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": principal, "sasl.password": password, "ssl.ca.location": ca}


def certificate_settings(directory=MOUNT):
    return {"security.protocol": "SSL", "ssl.ca.location": f"{directory}/ca.pem",
            "ssl.certificate.location": f"{directory}/client.pem", "ssl.key.location": f"{directory}/client.key"}


def java_settings(principal, password, ca=f"{MOUNT}/ca.pem"):
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                f'username="{principal}" password="{password}";',
            "ssl.truststore.type": "PEM", "ssl.truststore.location": ca}


def read_properties(path):
    settings = {}
    for line in Path(path).read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            settings[key.strip()] = value.strip()
    return settings


def _write(path, text):
    """A file the containers' unprivileged users can read; the stack's 0700 directory keeps
    everyone else on the host out."""
    path.write_text(text)
    path.chmod(0o644)


def _make_certificates(directory, clients):
    """A CA and the nodes' certificate (127.0.0.1 and localhost: every node listens on the
    host's loopback), all P-256; ca.pem and node.pem (key then certificate, as Kafka's PEM
    keystore reads it); and for each of `clients` (name: directory) a client certificate
    with CN=name, as client.pem and client.key. The CA's key is thrown away: nothing else
    is ever signed."""
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        _openssl("req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", work / "ca.key", "-out", directory / "ca.pem", "-days", str(CERT_DAYS),
                 "-subj", "/CN=iopipe stack CA", "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        (directory / "ca.pem").chmod(0o644)

        def sign(name, extensions):
            _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                     "-keyout", work / f"{name}.key", "-out", work / f"{name}.csr", "-subj", f"/CN={name}")
            (work / f"{name}.ext").write_text(extensions)
            _openssl("x509", "-req", "-in", work / f"{name}.csr", "-CA", directory / "ca.pem",
                     "-CAkey", work / "ca.key", "-set_serial", str(secrets.randbits(63)), "-days", str(CERT_DAYS),
                     "-extfile", work / f"{name}.ext", "-out", work / f"{name}.crt")
            return (work / f"{name}.key").read_text(), (work / f"{name}.crt").read_text()

        key, certificate = sign(NODE_NAME, "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                           "extendedKeyUsage=serverAuth,clientAuth\n")
        _write(directory / "node.pem", key + certificate)
        for name, client_dir in clients.items():
            client_dir.mkdir(parents=True, exist_ok=True)
            key, certificate = sign(name, "extendedKeyUsage=clientAuth\n")
            _write(client_dir / "client.key", key)
            _write(client_dir / "client.pem", certificate)


def _openssl(*args):
    made = subprocess.run(["openssl", *map(str, args)], capture_output=True, text=True)
    if made.returncode != 0:
        raise SystemExit(f"openssl {args[0]} failed (is openssl installed? bash infra/bootstrap.sh installs it):\n"
                         f"{made.stderr}")


@dataclass(frozen=True)
class AgentAccess:
    """What a host's agent needs to produce its records: its principal's librdkafka settings
    and its host's signing key."""
    kafka_config: Path
    signing_key: Path

    def args(self):
        """As `iopipe-agent run` takes them."""
        return ["--kafka-config", str(self.kafka_config), "--signing-key", str(self.signing_key)]


class KafkaAdmin:
    """Changes to a running stack's principals, made by the node's own tools in its
    container (they connect as the node, a super user)."""

    def __init__(self, access, container, internal_port):
        self.access, self.container, self.internal_port = access, container, internal_port

    def add_agent(self, host, agent_topics):
        """The principal of `host`'s agent, allowed to produce to `agent_topics` only, and
        the key that signs its host's records; returns the paths of both."""
        principal = agent_principal(host)
        directory = self.access.add_principal(principal)
        user = ("kafka.admin.ConfigCommand", "--alter", "--entity-type", "users", "--entity-name", principal)
        # Independent changes, each a tool's JVM, side by side (Kafka takes a user's SCRAM
        # credential and its quota in separate requests).
        with ThreadPoolExecutor(3) as pool:
            changes = [pool.submit(self._tool, *user, "--add-config-file", f"{MOUNT}/users/{principal}.scram"),
                       pool.submit(self._tool, *user, "--add-config", f"producer_byte_rate={AGENT_PRODUCER_BYTE_RATE}"),
                       pool.submit(self.grant, principal, "--operation", "Write", "--operation", "Describe",
                                   *(arg for topic in agent_topics for arg in ("--topic", topic)))]
            for change in changes:
                change.result()
        path = directory / "agent.properties"
        path.write_text("".join(f"{key}={value}\n" for key, value in self.access.host_settings(principal).items()))
        path.chmod(0o600)
        signing_key = directory / "signing.key"
        signing_key.write_text(host_key(read_key(self.access.signing_secret_path()), host).hex() + "\n")
        signing_key.chmod(0o600)
        return AgentAccess(path, signing_key)

    def user_quotas(self, principal):
        """The quotas the brokers hold for `principal`: {name: bytes per second}."""
        described = self._tool("kafka.admin.ConfigCommand", "--describe", "--entity-type", "users",
                               "--entity-name", principal)
        return {name: float(value) for name, value in QUOTA.findall(described)}

    def grant(self, principal, *acl):
        """Allows `principal` (by name) what AclCommand's arguments `acl` say."""
        self._tool("org.apache.kafka.tools.AclCommand", "--add", "--allow-principal", kafka_principal(principal), *acl)

    def revoke(self, principal, *acl):
        """Takes back what `grant` allowed."""
        self._tool("org.apache.kafka.tools.AclCommand", "--remove", "--force",
                   "--allow-principal", kafka_principal(principal), *acl)

    def _tool(self, main_class, *args):
        """What the Kafka tool `main_class` printed, run in the node's container as the node."""
        return subprocess.run(["docker", "exec", self.container, "java", "-Xmx256m", "-XX:TieredStopAtLevel=1",
                               "-XX:+UseSerialGC", "-cp", "/opt/kafka/libs/*", main_class,
                               "--bootstrap-server", f"127.0.0.1:{self.internal_port}",
                               "--command-config", "/etc/kafka/tools.properties", *args],
                              capture_output=True, text=True, check=True).stdout


CONSUMER_GROUPS = json.loads((SCHEMA / "topics.json").read_text())["consumer_groups"]
JOB_GROUP = CONSUMER_GROUPS["stream-jobs"]  # LiveJob's --group-id default, and the prefix of any other
CLICKHOUSE_GROUP = CONSUMER_GROUPS["clickhouse"]  # the prefix of every ClickHouse Kafka table's group


def topics_of(topics, producer):
    return [t["name"] for t in topics if t.get("producer") == producer]


def acl_lines(record_topics, accepted_topics):
    """start-kafka.sh's acls.txt: per line, one AclCommand's arguments after --add. What each
    service principal may do, from schema/topics.json's producers (an agent's own ACL is
    added with its principal: KafkaAdmin.add_agent)."""
    def topic_args(names):
        return " ".join(f"--topic {name}" for name in names)
    agents = topics_of(record_topics, "agent")
    job_writes = topics_of(record_topics, "stream-jobs") + [t["name"] for t in accepted_topics]
    stored = job_writes  # ClickHouse stores what the job writes and the agent records it accepted
    shared = topics_of(record_topics, "any")  # dead letters: whoever refuses a record writes one
    return [f"--allow-principal User:{JOB} --operation Read --operation Describe {topic_args(agents)}",
            f"--allow-principal User:{JOB} --operation Write --operation Describe {topic_args(job_writes + shared)}",
            f"--allow-principal User:{JOB} --operation Read --resource-pattern-type prefixed --group {JOB_GROUP}",
            f"--allow-principal {kafka_principal(CLICKHOUSE)} --operation Read --operation Describe {topic_args(stored)}",
            f"--allow-principal {kafka_principal(CLICKHOUSE)} --operation Read --resource-pattern-type prefixed "
            f"--group {CLICKHOUSE_GROUP}"]


def agent_topics(record_topics):
    """What an agent may produce to: its records' topics and the dead letters."""
    return topics_of(record_topics, "agent") + topics_of(record_topics, "any")


# Each agent principal's producer quota, bytes a second on each broker (Kafka counts quotas
# per broker, and a host's records may all go to one broker's partitions): room for the
# most an agent sends by design, so that a host taken over cannot crowd out the others. An
# agent sends at most its --event-budget of events per disk a second (1000 by default,
# schema/sampling.json; the rest are dropped on the host and counted), each an event record of
# 300-400 bytes of JSON with its key and iopipe-sig header: AGENT_EVENT_BYTES at most. Its
# histograms, diskstats and own records add about 1 kB per disk a second. For a host of
# AGENT_QUOTA_DISKS disks that is 12 MB/s; the quota is 16 MiB/s, so that an agent at its
# full budget still drains the 64 MiB it holds while Kafka is away within 15 s. Kafka counts
# the bytes as sent, lz4-compressed: a host's real traffic stays well below it.
AGENT_QUOTA_DISKS = 24  # a dense storage node's disks
AGENT_EVENT_BYTES = 500
AGENT_PRODUCER_BYTE_RATE = 16 * 1024 * 1024
