"""The iopipe stack on one machine: images, services, the live job, ClickHouse schema.

    python3 -m iopipe.stack COMMAND   (from the repository root), where COMMAND is one of

    images          build iopipe/kafka, iopipe/flink, iopipe/clickhouse, iopipe/zookeeper
    up              start them (docker-compose), migrate ClickHouse, submit the job
    down            stop and remove everything `up` started
    cluster-up      the cluster instead: Kafka x3, ZooKeeper, Flink HA x2 + 2 TaskManagers, ClickHouse x2
    cluster-down    stop and remove everything `cluster-up` started
    submit-job      submit the live Flink job afresh
    upgrade-job     replace the running job by the jar built now, keeping its state
    kafka-agent HOST  a Kafka principal and signing key for HOST's agent on the demo's
                      stack: prints the options `iopipe-agent run` takes them by

Every service shares the host's network and listens on 127.0.0.1 only; ports come from
`Ports` so a test stack can run beside the demo's. Used by the Makefile, the demo and the
integration tests alike: one way to build and start the stack.
"""
import base64
import hashlib
import json
import os
import random
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from iopipe.kafka_access import (ADMIN, MOUNT as KAFKA_MOUNT, SIGNING_SECRET, KafkaAccess, acl_lines, agent_topics,
                                 super_users)
from iopipe.migrate import ClickHouseHttp, Migrator, kafka_tables_of, up_in_lockstep
from iopipe.paths import CACHE, REPO

INFRA = REPO / "infra"
COMPOSE_FILE = INFRA / "compose.yaml"
COMPOSE_PROJECT = "iopipe"
CLUSTER_COMPOSE_FILE = INFRA / "compose.cluster.yaml"
CLUSTER_PROJECT = "iopipe-cluster"
CLUSTER_SERVICES = ("zookeeper", "kafka-1", "kafka-2", "kafka-3",  # the coordination the rest need: started first
                    "flink-jobmanager-1", "flink-jobmanager-2", "flink-taskmanager-1", "flink-taskmanager-2",
                    "clickhouse-1", "clickhouse-2")
CLICKHOUSE_CLUSTER = "iopipe"  # the replicas' <remote_servers> name (infra/clickhouse/start-clickhouse.sh)
CLICKHOUSE_REPLICAS = (1, 2)  # compose.cluster.yaml's clickhouse-1 and clickhouse-2
JOB_JAR = REPO / "stream-jobs" / "target" / "iopipe-stream-jobs.jar"
# Every topic Kafka must have: the agents', the stream job's and those the job passes accepted agent records on to.
_TOPICS_JSON = json.loads((REPO / "schema" / "topics.json").read_text())
# The topic of each record schema; then the topics the job passes accepted agent records on
# to (the same schemas: never map a schema through both).
RECORD_TOPICS = _TOPICS_JSON["topics"]
TOPICS = RECORD_TOPICS + _TOPICS_JSON["accepted"]
# How the job keeps time (window lengths, allowed disorder, idleness, ...): the demo, the
# benchmarks and the tests read it here.
PIPELINE = json.loads((REPO / "schema" / "pipeline.json").read_text())
# The job's first windows: the detectors judge these, and the longer ones are summed from them.
BASE_WINDOW_S = PIPELINE["window_s"][0]
LIVE_JOB_CLASS = "io.iopipe.jobs.LiveJob"
FLINK_IMAGE = "iopipe/flink:dev"
JOB_LEVEL_SETTINGS = ("state.", "execution.checkpointing.", "restart-strategy.", "parallelism.")
FLINK_VERSION = "2.3.0"
FLINK_WHEELS = {  # pip requirement -> what it brings
    f"apache-flink-libraries=={FLINK_VERSION}": "lib/ (flink-dist and friends)",
    f"apache-flink=={FLINK_VERSION}": "bin/ and conf/",
}
SERVICES = ("kafka", "flink-jobmanager", "flink-taskmanager", "clickhouse")

# The job's latency rollups in ClickHouse, a minute, an hour and a day: the tables the
# Kafka tables of io.latency.v1 fill, each named after its table.
LATENCY_ROLLUPS = tuple(table.removesuffix("_kafka") for table in kafka_tables_of("io.latency.v1"))


def say(message):
    print(f"[iopipe] {message}", flush=True)


def run(cmd, **kwargs):
    return subprocess.run(cmd, check=True, **kwargs)


def _bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_ports(n):
    """`n` unused ports. They are drawn below the kernel's ephemeral range: that is where
    every process's outgoing connections and port-0 listeners (Flink's blob and RPC servers
    among them) get theirs, and one could take a port between its choice here and its
    service's bind."""
    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    draw = random.SystemRandom()
    ports = []
    while len(ports) < n:
        port = draw.randrange(10_000, ephemeral_low)
        if port not in ports and _bindable(port):
            ports.append(port)
    return ports


@dataclass(frozen=True)
class Ports:
    kafka: int = 9092
    kafka_controller: int = 9093
    kafka_internal: int = 9094
    kafka_certificates: int = 9095
    flink_rest: int = 8081
    flink_rpc: int = 6123
    clickhouse_http: int = 8123
    clickhouse_tcp: int = 9000
    clickhouse_interserver: int = 9009

    @classmethod
    def free(cls):
        """Unused ports, for a stack that must not collide with another one."""
        return cls(*free_ports(len(cls.__dataclass_fields__)))

    @property
    def brokers(self):
        return f"127.0.0.1:{self.kafka}"

    @property
    def certificate_brokers(self):
        """Kafka's listeners for clients with a certificate (ClickHouse's Kafka tables)."""
        return f"127.0.0.1:{self.kafka_certificates}"

    @property
    def clickhouse_url(self):
        return f"http://127.0.0.1:{self.clickhouse_http}"

    @property
    def flink_url(self):
        return f"http://127.0.0.1:{self.flink_rest}"

    def env(self):
        """Each port as the services read it: `kafka_2` is KAFKA_2_PORT."""
        return {f"{name.upper()}_PORT": str(getattr(self, name)) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class ClusterPorts(Ports):
    """The cluster's ports: by default clear of the demo stack's, so both can run."""
    kafka: int = 19092
    kafka_controller: int = 19093
    kafka_internal: int = 19098
    kafka_certificates: int = 19101
    flink_rest: int = 18081
    flink_rpc: int = 16123
    clickhouse_http: int = 18123
    clickhouse_tcp: int = 19000
    clickhouse_interserver: int = 19009
    kafka_2: int = 19094
    kafka_2_controller: int = 19095
    kafka_3: int = 19096
    kafka_3_controller: int = 19097
    zookeeper: int = 12181
    flink_2_rest: int = 18082
    flink_2_rpc: int = 16124
    clickhouse_2_http: int = 18124
    clickhouse_2_tcp: int = 19001
    clickhouse_2_interserver: int = 19010
    kafka_2_internal: int = 19099
    kafka_3_internal: int = 19100
    kafka_2_certificates: int = 19102
    kafka_3_certificates: int = 19103

    @property
    def brokers(self):
        return ",".join(f"127.0.0.1:{port}" for port in (self.kafka, self.kafka_2, self.kafka_3))

    @property
    def certificate_brokers(self):
        return ",".join(f"127.0.0.1:{port}" for port in
                        (self.kafka_certificates, self.kafka_2_certificates, self.kafka_3_certificates))

    def with_flink_rest_of(self, jobmanager):
        """The same ports, with Flink's REST calls going to JobManager 1 or 2."""
        return replace(self, flink_rest=(self.flink_rest, self.flink_2_rest)[jobmanager - 1],
                       flink_2_rest=(self.flink_2_rest, self.flink_rest)[jobmanager - 1])

    def of_clickhouse_replica(self, replica):
        """The ports of ClickHouse replica 1 or 2 in the clickhouse_* fields, for its clients."""
        if replica == 1:
            return self
        return replace(self, clickhouse_http=self.clickhouse_2_http, clickhouse_tcp=self.clickhouse_2_tcp,
                       clickhouse_interserver=self.clickhouse_2_interserver)


def kafka_cluster_id():
    """A new Kafka cluster's id: 16 random bytes, base64 without padding, as Kafka's Uuid."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass(frozen=True)
class ClickHouseUsers:
    """Passwords of the users infra/clickhouse/users.xml defines, one set per stack."""
    admin: str
    writer: str
    reader: str

    ROLES = ("admin", "writer", "reader")

    @classmethod
    def generate(cls):
        return cls(*(secrets.token_hex(16) for _ in cls.ROLES))

    @classmethod
    def of_demo_stack(cls):
        """The demo stack's passwords, made on first use and kept (0600) beside the caches."""
        path = CACHE / "clickhouse-users.json"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            path.write_text(json.dumps(cls.generate().__dict__))
        return cls(**json.loads(path.read_text()))

    def env(self):
        return {f"IOPIPE_CLICKHOUSE_{role.upper()}_PASSWORD": getattr(self, role) for role in self.ROLES}

    def client(self, ports, role):
        return ClickHouseHttp(ports.clickhouse_url, f"iopipe_{role}", getattr(self, role))


# ---------------------------------------------------------------- Kafka access

def kafka_access(brokers):
    """The certificates and credentials of the stack whose bootstrap servers are `brokers`."""
    return KafkaAccess.of(CACHE, brokers)


def prepare_kafka_access(ports, kafka_container, keep=False):
    """The stack's CA, certificates and service principals, made before it starts (`keep`:
    those of a stack started before, if any, as the demo's volumes keep its users)."""
    access = kafka_access(ports.brokers)
    if not (keep and access.exists()):
        access.create()
    access.remember_node(kafka_container, ports.kafka_internal, ports.certificate_brokers)
    return access


def kafka_client(brokers, principal=ADMIN, **settings):
    """librdkafka settings (confluent-kafka) of `principal` on the stack of `brokers`: by
    default iopipe-admin, the super user tests and operators use."""
    return {**kafka_access(brokers).client_config(brokers, principal), **settings}


def fleet_signer(brokers):
    """Signs records as any host would (host_signing.FleetSigner) on the stack of `brokers`."""
    return kafka_access(brokers).fleet_signer()


def kafka_java_config(brokers, principal=ADMIN):
    """The path of the Java client settings of `principal` for a program on this host."""
    return kafka_access(brokers).host_java_properties(principal)


def agent_access(brokers, host):
    """The Kafka settings and signing key of `host`'s agent (AgentAccess.args() for
    `iopipe-agent run`), its principal made on the running stack and allowed to produce
    the agents' records only."""
    return kafka_access(brokers).admin().add_agent(host, agent_topics(RECORD_TOPICS))


# ---------------------------------------------------------------- images

def build_images():
    """Builds every image; Docker's layer cache makes an unchanged rebuild take seconds."""
    run(["bash", str(INFRA / "bootstrap.sh")])
    for name in IMAGE_CONTEXTS:
        context = IMAGE_CONTEXTS[name]()
        say(f"building image iopipe/{name} (the first build installs packages into it)")
        _docker_build(f"iopipe/{name}:dev", context)


def _docker_build(tag, context):
    """docker build, echoing its step lines so a person sees it advance."""
    process = subprocess.Popen(["docker", "build", "-t", tag, str(context)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail = []
    for line in process.stdout:
        tail = (tail + [line.rstrip()])[-30:]
        if line.startswith("Step "):
            print(f"    {tag}: {line.strip()}", flush=True)
    if process.wait() != 0:
        sys.exit(f"docker build of {tag} failed:\n" + "\n".join(tail))


def _fresh_context(name):
    context = CACHE / "contexts" / name
    context.mkdir(parents=True, exist_ok=True)
    return context


def _copy(sources, context):
    for source in sources:
        shutil.copy2(source, context / source.name)


def _maven_libs(name, context):
    """The jars infra/NAME/pom.xml lists, into the context's libs/."""
    libs = context / "libs"
    say(f"fetching {name} jars from Maven Central (cached in ~/.m2)")
    shutil.rmtree(libs, ignore_errors=True)
    fetched = subprocess.run(["mvn", "-q", "-B", "-f", str(INFRA / name / "pom.xml"), "dependency:copy-dependencies",
                              f"-DoutputDirectory={libs}", "-DincludeScope=runtime"], capture_output=True, text=True)
    if fetched.returncode != 0:
        sys.exit(f"fetching the {name} jars failed (is Maven Central reachable?):\n{fetched.stdout}{fetched.stderr}")


def _kafka_context():
    context = _fresh_context("kafka")
    _maven_libs("kafka", context)
    _copy([INFRA / "kafka" / f for f in ("Dockerfile", "start-kafka.sh", "log4j2.properties")], context)
    _compile_java(INFRA / "kafka" / "ToolBatch.java", classpath=context / "libs" / "*", into=context / "tools")
    (context / "topics.txt").write_text("".join(f"{t['name']} {t['partitions']}\n" for t in TOPICS))
    (context / "acls.txt").write_text("".join(f"{line}\n" for line in acl_lines(RECORD_TOPICS, _TOPICS_JSON["accepted"])))
    (context / "super-users.txt").write_text(super_users() + "\n")
    return context


def _compile_java(source, classpath, into):
    """A class the image runs with its own Java 17, compiled by the host's JDK (Maven's)."""
    shutil.rmtree(into, ignore_errors=True)
    compiled = subprocess.run(["javac", "--release", "17", "-cp", str(classpath), "-d", str(into), str(source)],
                              capture_output=True, text=True)
    if compiled.returncode != 0:
        sys.exit(f"compiling {source.name} failed (javac is the JDK's, as Maven needs):\n{compiled.stderr}")


def _flink_context():
    context = _fresh_context("flink")
    wheels = _flink_wheels()
    stamp = hashlib.sha256("".join(sorted(w.name for w in wheels)).encode()).hexdigest()
    home = context / "flink"
    marker = home / ".iopipe-wheels"
    if not marker.exists() or marker.read_text() != stamp:
        say("unpacking the Flink distribution from its wheels")
        shutil.rmtree(home, ignore_errors=True)
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as z:
                for member in z.namelist():
                    top = member.split("/")[1] if member.startswith("pyflink/") and member.count("/") else ""
                    if top in ("bin", "conf", "lib") and not member.endswith("/"):
                        target = home / member[len("pyflink/"):]
                        target.parent.mkdir(parents=True, exist_ok=True)
                        with z.open(member) as src, open(target, "wb") as dst:
                            shutil.copyfileobj(src, dst)
        for script in (home / "bin").iterdir():
            script.chmod(0o755)
        (home / "log").mkdir(exist_ok=True)
        marker.write_text(stamp)
    _copy([INFRA / "flink" / f for f in ("Dockerfile", "start-flink.sh")], context)
    return context


def _flink_wheels():
    """The Flink distribution ships on PyPI as two wheels; cached outside the repo."""
    directory = CACHE / "flink"
    directory.mkdir(parents=True, exist_ok=True)
    wheels = []
    for requirement, brings in FLINK_WHEELS.items():
        name = requirement.split("==")[0].replace("-", "_")
        found = sorted(directory.glob(f"{name}-{FLINK_VERSION}-*.whl"))
        if not found:
            say(f"downloading {requirement} from PyPI ({brings}; the first time only)")
            run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                 "--python-version", "3.11", "--platform", "manylinux2014_x86_64",
                 "-d", str(directory), requirement])
            found = sorted(directory.glob(f"{name}-{FLINK_VERSION}-*.whl"))
        wheels.append(found[0])
    return wheels


def _clickhouse_context():
    context = _fresh_context("clickhouse")
    _copy([INFRA / "clickhouse" / f for f in ("Dockerfile", "start-clickhouse.sh", "users.xml")], context)
    return context


def _zookeeper_context():
    context = _fresh_context("zookeeper")
    _maven_libs("zookeeper", context)
    _copy([INFRA / "zookeeper" / f for f in ("Dockerfile", "start-zookeeper.sh", "logback.xml")], context)
    return context


IMAGE_CONTEXTS = {"kafka": _kafka_context, "flink": _flink_context, "clickhouse": _clickhouse_context,
                  "zookeeper": _zookeeper_context}


# ---------------------------------------------------------------- readiness

def wait_for(what, check, timeout_s=180, every_s=1.0):
    """Polls `check` until it returns a truthy value, printing progress while waiting."""
    started = time.monotonic()
    last_note = started
    last_error = None
    while True:
        try:
            result = check()
            if result:
                say(f"{what}: ready after {time.monotonic() - started:.0f} s")
                return result
        except Exception as e:  # noqa: BLE001 - any failure of a probe means "not yet"
            last_error = e
        now = time.monotonic()
        if now - started > timeout_s:
            raise TimeoutError(f"{what} not ready after {timeout_s} s (last error: {last_error})")
        if now - last_note >= 10:
            say(f"waiting for {what} ({now - started:.0f} s)")
            last_note = now
        time.sleep(every_s)


def container_log_contains(container, text):
    logs = subprocess.run(["docker", "logs", container], capture_output=True, text=True)
    return text in logs.stdout or text in logs.stderr


def http_json(url, data=None, method=None, timeout=30):
    body = json.dumps(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read() or b"null")


def flink_has_slots(ports, taskmanagers=1):
    overview = http_json(f"{ports.flink_url}/overview")
    return overview["taskmanagers"] >= taskmanagers and overview["slots-available"] >= 2


def zookeeper_answers(ports):
    with socket.create_connection(("127.0.0.1", ports.zookeeper), timeout=5) as s:
        s.sendall(b"ruok")
        return s.recv(4) == b"imok"


def clickhouse_answers(ports):
    with urllib.request.urlopen(f"{ports.clickhouse_url}/ping", timeout=5) as response:
        return response.read().strip() == b"Ok."


def container_alive(container):
    """Raises, with the container's last log lines, when it has exited: waiting longer is pointless."""
    state = subprocess.run(["docker", "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", container],
                           capture_output=True, text=True).stdout.split()
    if state and state[0] in ("exited", "dead"):
        raise SystemExit(f"container {container} exited with code {state[1]}:\n{container_log_tail(container, 20)}")
    return True


def container_log_tail(container, lines):
    logs = subprocess.run(["docker", "logs", "--tail", str(lines), container], capture_output=True, text=True)
    return logs.stdout + logs.stderr


def start_container(image, ports, users=None, prefix="iopipe-bench"):
    """`docker run -d --rm` of one of the stack's images on the host network, configured
    by `ports` (and `users` for ClickHouse), with its Kafka certificates and credentials (a
    Kafka node's made anew); returns the container's name."""
    kind = image.split('/')[-1].split(':')[0]
    name = f"{prefix}-{kind}-{uuid.uuid4().hex[:8]}"
    if kind == "kafka":
        prepare_kafka_access(ports, name)
    env = {**ports.env(), **(users.env() if users else {})}
    mount = kafka_access(ports.brokers).mounts().get(kind)
    volumes = ["-v", f"{mount}:{KAFKA_MOUNT}:ro"] if mount and mount.exists() else []
    run(["docker", "run", "-d", "--rm", "--name", name, "--network", "host", *volumes,
         *(arg for key, value in env.items() for arg in ("-e", f"{key}={value}")), image], stdout=subprocess.DEVNULL)
    return name


def wait_until_ready(ports, containers):
    """`containers`: service name -> container name. Waits for each kind of service that
    was started: ZooKeeper, every Kafka node's topics, ClickHouse, Flink's TaskManagers."""
    def alive_and(check):
        return lambda: all(container_alive(c) for c in containers.values()) and check()
    if "zookeeper" in containers:
        wait_for("ZooKeeper", alive_and(lambda: zookeeper_answers(ports)))
    for service, container in containers.items():
        if service.startswith("kafka"):
            try:
                wait_for(f"{service} topics", alive_and(lambda c=container: container_log_contains(c, "iopipe: topics ready")))
            except TimeoutError as e:
                raise TimeoutError(f"{e}; its last log lines:\n{container_log_tail(container, 40)}") from None
    if "clickhouse" in containers:
        wait_for("ClickHouse", alive_and(lambda: clickhouse_answers(ports)))
    for replica in CLICKHOUSE_REPLICAS:
        if f"clickhouse-{replica}" in containers:
            wait_for(f"ClickHouse replica {replica}", alive_and(lambda r=replica: clickhouse_answers(ports.of_clickhouse_replica(r))))
    taskmanagers = sum(service.startswith("flink-taskmanager") for service in containers)
    if taskmanagers:
        wait_for("Flink task slots", alive_and(lambda: flink_has_slots(ports, taskmanagers)))


# ---------------------------------------------------------------- job and schema

def submit_live_job(ports, jar=JOB_JAR, restore_from=None, group_id=None, job_args=()):
    """Runs the live job through Flink's CLI, from the checkpoint or savepoint at
    `restore_from` if given, reading as consumer group `group_id` if given (else the job's
    own), with the further options `job_args` (LiveJob.java); returns its id. The CLI runs
    in a throwaway container of the Flink image: the cluster's REST API takes no jar
    uploads (web.submit.enable is off), only the job graph the CLI builds."""
    if not jar.exists():
        sys.exit(f"{jar} is missing: run `make jobs` first")
    # Every operator's state must find its operator again: the CLI leaves none unclaimed
    # unless told (--allowNonRestoredState).
    restore = ["--fromSavepoint", restore_from] if restore_from else []
    # The job's Kafka settings are read where it is built, by the CLI, and travel with it.
    program_args = ["--brokers", ports.brokers, "--kafka-config", f"{KAFKA_MOUNT}/client.properties",
                    "--signing-secret", f"{KAFKA_MOUNT}/{SIGNING_SECRET}",
                    *(["--group-id", group_id] if group_id else []), *job_args]
    job_kafka_dir = kafka_access(ports.brokers).mounts()["flink"]
    # The CLI builds the job graph with its own configuration, and the job-level settings
    # (state backend, checkpointing and its retention, restarts, parallelism) travel in
    # it: give it the cluster's, or the job runs on the distribution's defaults.
    job_settings = [f"-D{key}={value}" for key, value in flink_config(ports).items() if key.startswith(JOB_LEVEL_SETTINGS)]
    submitted = subprocess.run(
        ["docker", "run", "--rm", "--network", "host", "-v", f"{jar.resolve()}:/tmp/job.jar:ro",
         "-v", f"{job_kafka_dir}:{KAFKA_MOUNT}:ro",
         "--entrypoint", "/opt/flink/bin/flink", FLINK_IMAGE,
         "run", "--detached", "--target", "remote", "-Drest.address=127.0.0.1", f"-Drest.port={ports.flink_rest}",
         *job_settings, "--class", LIVE_JOB_CLASS, *restore,
         "/tmp/job.jar", *program_args], capture_output=True, text=True, timeout=300)
    found = re.search(r"submitted with JobID ([0-9a-f]{32})", submitted.stdout)
    if submitted.returncode != 0 or not found:
        sys.exit(f"submitting the live job failed:\n{submitted.stdout[-3000:]}{submitted.stderr[-3000:]}")
    job_id = found.group(1)
    wait_for("live job running", lambda: _job_running(ports, job_id))
    return job_id


def flink_config(ports):
    """The JobManager's configuration, key -> value."""
    return {kv["key"]: kv["value"] for kv in http_json(f"{ports.flink_url}/jobmanager/config")}


def _job_running(ports, job_id):
    job = http_json(f"{ports.flink_url}/jobs/{job_id}")
    if job["state"] in ("FAILED", "CANCELED", "FINISHED"):
        raise SystemExit(f"live job ended as {job['state']}: see {ports.flink_url}/#/job/{job_id}")
    return job["state"] == "RUNNING" and all(v["status"] == "RUNNING" for v in job["vertices"])


def running_job(ports):
    """The id of the one running job, or None."""
    jobs = http_json(f"{ports.flink_url}/jobs")["jobs"]
    running = [j["id"] for j in jobs if j["status"] == "RUNNING"]
    return running[0] if running else None


def completed_checkpoints(ports, job_id):
    """How many checkpoints of the job have completed, and the path of the newest one."""
    counts = http_json(f"{ports.flink_url}/jobs/{job_id}/checkpoints")
    latest = (counts.get("latest") or {}).get("completed") or {}
    return counts["counts"]["completed"], latest.get("external_path")


def checkpoint_after(ports, job_id, timeout_s=120):
    """Waits for a checkpoint that starts after this call, so it holds everything the job
    had read by then; returns its path."""
    before, _ = completed_checkpoints(ports, job_id)
    # The checkpoint under way now may have begun before the call: wait for the one after it.
    return wait_for("a checkpoint of the live job", timeout_s=timeout_s, check=lambda: (
        lambda done, path: path if done >= before + 2 else None)(*completed_checkpoints(ports, job_id)))


def cancel_job(ports, job_id):
    """Cancels the job; its retained checkpoints stay where they are."""
    http_json(f"{ports.flink_url}/jobs/{job_id}?mode=cancel", method="PATCH")
    wait_for("live job cancelled", lambda: http_json(f"{ports.flink_url}/jobs/{job_id}")["state"] == "CANCELED")


def stop_with_savepoint(ports, job_id, timeout_s=120):
    """Stops the job after a savepoint (its state, in the format a later build restores); returns its path."""
    trigger = http_json(f"{ports.flink_url}/jobs/{job_id}/stop", {"drain": False}, method="POST")["request-id"]

    def savepoint_done():
        status = http_json(f"{ports.flink_url}/jobs/{job_id}/savepoints/{trigger}")
        if status["status"]["id"] != "COMPLETED":
            return None
        operation = status["operation"]
        if "failure-cause" in operation:
            raise SystemExit(f"the savepoint failed: {operation['failure-cause'].get('stack-trace', '')[:2000]}")
        return operation["location"]
    return wait_for("a savepoint of the live job", savepoint_done, timeout_s=timeout_s)


def migrate_clickhouse(ports, users, clickhouse_cluster=None):
    """Migrates the one server, or each replica of `clickhouse_cluster` (its name; `ports` a ClusterPorts)."""
    if not clickhouse_cluster:
        Migrator(users.client(ports, "admin"), kafka_brokers=ports.certificate_brokers, log=say).up()
        return
    say(f"ClickHouse replicas {', '.join(map(str, CLICKHOUSE_REPLICAS))}, each migration on all of them before the next")
    up_in_lockstep([Migrator(users.client(ports.of_clickhouse_replica(replica), "admin"), kafka_brokers=ports.certificate_brokers,
                             log=say, cluster=clickhouse_cluster) for replica in CLICKHOUSE_REPLICAS])


# ---------------------------------------------------------------- compose

def compose(*args, ports=Ports(), users=None, file=COMPOSE_FILE, project=COMPOSE_PROJECT, env=None):
    env = {**os.environ, **ports.env(), **(users or ClickHouseUsers.of_demo_stack()).env(),
           **kafka_access(ports.brokers).compose_env(), **(env or {})}
    run(["docker-compose", "-p", project, "-f", str(file), *args], env=env)


def up(ports=Ports(), users=None):
    """Starts the demo stack; returns its ClickHouse users."""
    users = users or ClickHouseUsers.of_demo_stack()
    prepare_kafka_access(ports, f"{COMPOSE_PROJECT}-kafka", keep=True)
    say("starting Kafka, Flink and ClickHouse (docker-compose)")
    compose("up", "-d", "--remove-orphans", ports=ports, users=users)
    wait_until_ready(ports, {service: f"{COMPOSE_PROJECT}-{service}" for service in SERVICES})
    migrate_and_submit(ports, users)
    say_where_the_passwords_are()
    return users


def say_where_the_passwords_are():
    """For the demo's stack and `make cluster-up`'s, whose ClickHouse users are the demo's."""
    say(f"ClickHouse users iopipe_reader/iopipe_writer/iopipe_admin: passwords in {CACHE / 'clickhouse-users.json'}")


def migrate_and_submit(ports, users, clickhouse_cluster=None, job_args=()):
    """Migrates ClickHouse and runs the live job, side by side: the job needs none of
    ClickHouse's tables, whose Kafka tables read the topics from their start. Returns the
    job's id."""
    with ThreadPoolExecutor(1) as pool:
        migrated = pool.submit(migrate_clickhouse, ports, users, clickhouse_cluster)
        say("submitting the live job to Flink" + (f" ({' '.join(job_args)})" if job_args else ""))
        job_id = submit_live_job(ports, job_args=job_args)
        migrated.result()
    say(f"stack up: Flink UI {ports.flink_url}, ClickHouse {ports.clickhouse_url}, Kafka {ports.brokers}, job {job_id}")
    return job_id


def down():
    compose("down", "--volumes", "--remove-orphans")
    shutil.rmtree(kafka_access(Ports().brokers).root, ignore_errors=True)  # the next stack gets a new CA


def cluster_compose(*args, cluster):
    compose(*args, ports=cluster.ports, users=cluster.users, file=CLUSTER_COMPOSE_FILE, project=cluster.project,
            env={"KAFKA_CLUSTER_ID": cluster.kafka_id})


@dataclass(frozen=True)
class Cluster:
    """One cluster's name (its compose project), ports, ClickHouse users and Kafka cluster id."""
    project: str
    ports: ClusterPorts
    users: ClickHouseUsers
    kafka_id: str

    @classmethod
    def fresh(cls, project):
        return cls(project, ClusterPorts.free(), ClickHouseUsers.generate(), kafka_cluster_id())

    @classmethod
    def of_make(cls):
        """`make cluster-up`'s: the demo's passwords; the Kafka id it was formatted with, kept."""
        path = CACHE / "cluster.json"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"kafka_id": kafka_cluster_id()}))
        return cls(CLUSTER_PROJECT, ClusterPorts(), ClickHouseUsers.of_demo_stack(), json.loads(path.read_text())["kafka_id"])

    def container(self, service):
        return f"{self.project}_{service}_1"  # docker-compose 1.x names containers project_service_index


def cluster_up(cluster=None, submit=True, job_args=()):
    """Starts the cluster; with `submit`, migrates ClickHouse and runs the live job with the
    options `job_args` (LiveJob.java). Returns it."""
    cluster = cluster or Cluster.of_make()
    prepare_kafka_access(cluster.ports, cluster.container("kafka-1"), keep=cluster.project == CLUSTER_PROJECT)
    say(f"starting the cluster {cluster.project}: ZooKeeper, Kafka x3, Flink 2 JobManagers + 2 TaskManagers, "
        "ClickHouse 2 replicas")
    # What the others need first, alone: nine JVMs starting at once on a small machine take
    # longer than these four and then the rest.
    for services in (CLUSTER_SERVICES[:4], CLUSTER_SERVICES[4:]):
        cluster_compose("up", "-d", *services, cluster=cluster)
        wait_until_ready(cluster.ports, {service: cluster.container(service) for service in services})
    if submit:
        migrate_and_submit(cluster.ports, cluster.users, CLICKHOUSE_CLUSTER, job_args)
        if cluster.project == CLUSTER_PROJECT:
            say_where_the_passwords_are()
    return cluster


def cluster_down(cluster=None):
    cluster = cluster or Cluster.of_make()
    cluster_compose("down", "--volumes", "--remove-orphans", cluster=cluster)
    shutil.rmtree(kafka_access(cluster.ports.brokers).root, ignore_errors=True)
    if cluster.project == CLUSTER_PROJECT:
        (CACHE / "cluster.json").unlink(missing_ok=True)  # the next cluster is formatted anew


def _in_container(container, *command):
    return subprocess.run(["docker", "exec", container, *command], capture_output=True, text=True, check=True).stdout


def kafka_topic_command(kafka_container, *args):
    """Kafka's TopicCommand in a Kafka container, against its own node, as the node: what it prints."""
    port = _in_container(kafka_container, "sh", "-c", "echo ${KAFKA_INTERNAL_PORT:-9094}").strip()
    return _in_container(kafka_container, "java", "-Xmx256m", "-cp", "/opt/kafka/libs/*",
                         "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", f"127.0.0.1:{port}",
                         "--command-config", "/etc/kafka/tools.properties", *args)


def create_missing_topics(kafka_container):
    """Creates the topics of schema/topics.json a running Kafka lacks, with as many copies
    as it gives its own: it creates them only when it starts, and a job built since may
    write to a topic added after (its sink would fail until the topic is there)."""
    replication = _in_container(kafka_container, "sh", "-c", "echo ${KAFKA_REPLICATION:-1}").strip()
    listed = set(kafka_topic_command(kafka_container, "--list").split())
    for topic in TOPICS:
        if topic["name"] not in listed:
            say(f"creating topic {topic['name']}, which Kafka started without")
            kafka_topic_command(kafka_container, "--create", "--if-not-exists", "--topic", topic["name"],
                                "--partitions", str(topic["partitions"]), "--replication-factor", replication)


def upgrade_job(ports=Ports(), kafka_container=None):
    """Runs the job jar as built now in place of the running job, carrying its state over:
    stop with a savepoint, then start from it. With no job running, starts from the newest
    checkpoint a cancelled or failed job left. `kafka_container`: first create there the
    topics the new build may write to. Returns the new job's id."""
    if kafka_container:
        create_missing_topics(kafka_container)
    job_id = running_job(ports)
    if job_id:
        say(f"stopping job {job_id} with a savepoint")
        restore_from = stop_with_savepoint(ports, job_id)
    else:
        restore_from = newest_retained_checkpoint(ports)
    say(f"starting the live job from {restore_from}")
    return submit_live_job(ports, restore_from=restore_from)


def newest_retained_checkpoint(ports):
    ended = [j for j in http_json(f"{ports.flink_url}/jobs/overview")["jobs"] if j["state"] in ("CANCELED", "FAILED")]
    for job in sorted(ended, key=lambda j: j["end-time"], reverse=True):
        _, path = completed_checkpoints(ports, job["jid"])
        if path:
            return path
    sys.exit("no running job to take a savepoint of, and no ended job left a checkpoint: "
             "start the job afresh with `python3 -m iopipe.stack submit-job`")


def main(argv):
    commands = {
        "images": build_images,
        "up": up,
        "down": down,
        "submit-job": lambda: print(submit_live_job(Ports())),
        "upgrade-job": lambda: print(upgrade_job(kafka_container=f"{COMPOSE_PROJECT}-kafka")),
        "cluster-up": cluster_up,
        "cluster-down": cluster_down,
    }
    if len(argv) == 2 and argv[0] == "kafka-agent":
        print(" ".join(agent_access(Ports().brokers, argv[1]).args()))
        return
    if len(argv) != 1 or argv[0] not in commands:
        sys.exit(f"usage: python3 -m iopipe.stack {'|'.join(commands)}|kafka-agent HOST")
    commands[argv[0]]()


if __name__ == "__main__":
    main(sys.argv[1:])
