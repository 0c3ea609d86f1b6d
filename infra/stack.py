#!/usr/bin/env python3
"""The iopipe stack on one machine: images, services, the live job, ClickHouse schema.

    stack.py images          build iopipe/kafka, iopipe/flink, iopipe/clickhouse
    stack.py up              start them (docker-compose), migrate ClickHouse, submit the job
    stack.py down            stop and remove everything `up` started
    stack.py submit-job      (re)submit the live Flink job

Every service shares the host's network and listens on 127.0.0.1 only; ports come from
`Ports` so a test stack can run beside the demo's. Used by the Makefile, the demo and the
integration tests alike: one way to build and start the stack.
"""
import hashlib
import json
import os
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
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
INFRA = REPO / "infra"
CACHE = Path(os.environ.get("IOPIPE_CACHE", Path.home() / ".cache" / "iopipe"))
COMPOSE_FILE = INFRA / "compose.yaml"
COMPOSE_PROJECT = "iopipe"
JOB_JAR = REPO / "stream-jobs" / "target" / "iopipe-stream-jobs.jar"
LIVE_JOB_CLASS = "io.iopipe.jobs.LiveJob"
FLINK_VERSION = "2.3.0"
FLINK_WHEELS = {  # pip requirement -> what it brings
    f"apache-flink-libraries=={FLINK_VERSION}": "lib/ (flink-dist and friends)",
    f"apache-flink=={FLINK_VERSION}": "bin/ and conf/",
}
IMAGES = ("kafka", "flink", "clickhouse")
SERVICES = ("kafka", "flink-jobmanager", "flink-taskmanager", "clickhouse")

sys.path.insert(0, str(REPO / "schema" / "clickhouse"))
from migrate import ClickHouseHttp, Migrator  # noqa: E402


def say(message):
    print(f"[iopipe] {message}", flush=True)


def run(cmd, **kwargs):
    return subprocess.run(cmd, check=True, **kwargs)


@dataclass(frozen=True)
class Ports:
    kafka: int = 9092
    kafka_controller: int = 9093
    flink_rest: int = 8081
    flink_rpc: int = 6123
    clickhouse_http: int = 8123
    clickhouse_tcp: int = 9000
    clickhouse_interserver: int = 9009

    @classmethod
    def free(cls):
        """Unused ports, for a stack that must not collide with another one."""
        sockets = [socket.socket() for _ in cls.__dataclass_fields__]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        ports = cls(*(s.getsockname()[1] for s in sockets))
        for s in sockets:
            s.close()
        return ports

    @property
    def brokers(self):
        return f"127.0.0.1:{self.kafka}"

    @property
    def clickhouse_url(self):
        return f"http://127.0.0.1:{self.clickhouse_http}"

    @property
    def flink_url(self):
        return f"http://127.0.0.1:{self.flink_rest}"

    def env(self):
        return {
            "KAFKA_PORT": str(self.kafka),
            "KAFKA_CONTROLLER_PORT": str(self.kafka_controller),
            "FLINK_REST_PORT": str(self.flink_rest),
            "FLINK_RPC_PORT": str(self.flink_rpc),
            "CLICKHOUSE_HTTP_PORT": str(self.clickhouse_http),
            "CLICKHOUSE_TCP_PORT": str(self.clickhouse_tcp),
            "CLICKHOUSE_INTERSERVER_PORT": str(self.clickhouse_interserver),
        }


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


# ---------------------------------------------------------------- images

def build_images():
    """Builds every image; Docker's layer cache makes an unchanged rebuild take seconds."""
    run(["bash", str(INFRA / "bootstrap.sh")])
    for name in IMAGES:
        context = globals()[f"_{name}_context"]()
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


def _kafka_context():
    context = _fresh_context("kafka")
    libs = context / "libs"
    say("fetching Kafka jars from Maven Central (cached in ~/.m2)")
    shutil.rmtree(libs, ignore_errors=True)
    fetched = subprocess.run(["mvn", "-q", "-B", "-f", str(INFRA / "kafka" / "pom.xml"), "dependency:copy-dependencies",
                              f"-DoutputDirectory={libs}", "-DincludeScope=runtime"], capture_output=True, text=True)
    if fetched.returncode != 0:
        sys.exit(f"fetching the Kafka jars failed (is Maven Central reachable?):\n{fetched.stdout}{fetched.stderr}")
    _copy([INFRA / "kafka" / f for f in ("Dockerfile", "start-kafka.sh", "log4j2.properties")], context)
    topics = json.loads((REPO / "schema" / "topics.json").read_text())["topics"]
    (context / "topics.txt").write_text("".join(f"{t['name']} {t['partitions']}\n" for t in topics))
    return context


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


def flink_has_slots(ports):
    overview = http_json(f"{ports.flink_url}/overview")
    return overview["taskmanagers"] >= 1 and overview["slots-available"] >= 2


def clickhouse_answers(ports):
    with urllib.request.urlopen(f"{ports.clickhouse_url}/ping", timeout=5) as response:
        return response.read().strip() == b"Ok."


def container_alive(container):
    """Raises, with the container's last log lines, when it has exited: waiting longer is pointless."""
    state = subprocess.run(["docker", "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}}", container],
                           capture_output=True, text=True).stdout.split()
    if state and state[0] in ("exited", "dead"):
        logs = subprocess.run(["docker", "logs", "--tail", "20", container], capture_output=True, text=True)
        raise SystemExit(f"container {container} exited with code {state[1]}:\n{logs.stdout}{logs.stderr}")
    return True


def start_container(image, ports, users=None, prefix="iopipe-bench"):
    """`docker run -d --rm` of one of the stack's images on the host network, configured
    by `ports` (and `users` for ClickHouse); returns the container's name."""
    name = f"{prefix}-{image.split('/')[-1].split(':')[0]}-{uuid.uuid4().hex[:8]}"
    env = {**ports.env(), **(users.env() if users else {})}
    run(["docker", "run", "-d", "--rm", "--name", name, "--network", "host",
         *(arg for key, value in env.items() for arg in ("-e", f"{key}={value}")), image], stdout=subprocess.DEVNULL)
    return name


def wait_until_ready(ports, containers):
    """`containers`: service name -> container name, for kafka, clickhouse and (if started) the Flink pair."""
    def alive_and(check):
        return lambda: all(container_alive(c) for c in containers.values()) and check()
    wait_for("Kafka topics", alive_and(lambda: container_log_contains(containers["kafka"], "iopipe: topics ready")))
    wait_for("ClickHouse", alive_and(lambda: clickhouse_answers(ports)))
    if "flink-taskmanager" in containers:
        wait_for("Flink task slots", alive_and(lambda: flink_has_slots(ports)))


# ---------------------------------------------------------------- job and schema

def submit_live_job(ports, jar=JOB_JAR):
    """Uploads the job jar through Flink's REST API and runs the live job; returns its id."""
    if not jar.exists():
        sys.exit(f"{jar} is missing: run `make jobs` first")
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"jarfile\"; filename=\"{jar.name}\"\r\n"
            "Content-Type: application/x-java-archive\r\n\r\n").encode() + jar.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(f"{ports.flink_url}/jars/upload", data=body, method="POST")
    request.add_header("Content-Type", f"multipart/form-data; boundary={boundary}")
    with urllib.request.urlopen(request, timeout=120) as response:
        jar_id = json.loads(response.read())["filename"].rsplit("/", 1)[-1]
    run_request = {"entryClass": LIVE_JOB_CLASS, "programArgsList": ["--brokers", ports.brokers]}
    job_id = http_json(f"{ports.flink_url}/jars/{jar_id}/run", run_request, method="POST", timeout=120)["jobid"]
    wait_for("live job running", lambda: _job_running(ports, job_id))
    return job_id


def _job_running(ports, job_id):
    job = http_json(f"{ports.flink_url}/jobs/{job_id}")
    if job["state"] in ("FAILED", "CANCELED", "FINISHED"):
        raise SystemExit(f"live job ended as {job['state']}: see {ports.flink_url}/#/job/{job_id}")
    return job["state"] == "RUNNING" and all(v["status"] == "RUNNING" for v in job["vertices"])


def migrate_clickhouse(ports, users):
    Migrator(users.client(ports, "admin"), kafka_brokers=ports.brokers, log=say).up()


# ---------------------------------------------------------------- compose

def compose(*args, ports=Ports(), users=None):
    env = {**os.environ, **ports.env(), **(users or ClickHouseUsers.of_demo_stack()).env()}
    run(["docker-compose", "-p", COMPOSE_PROJECT, "-f", str(COMPOSE_FILE), *args], env=env)


def up(ports=Ports(), users=None):
    """Starts the demo stack; returns its ClickHouse users."""
    users = users or ClickHouseUsers.of_demo_stack()
    say("starting Kafka, Flink and ClickHouse (docker-compose)")
    compose("up", "-d", "--remove-orphans", ports=ports, users=users)
    wait_until_ready(ports, {service: f"{COMPOSE_PROJECT}-{service}" for service in SERVICES})
    migrate_clickhouse(ports, users)
    say("submitting the live job to Flink")
    job_id = submit_live_job(ports)
    say(f"stack up: Flink UI {ports.flink_url}, ClickHouse {ports.clickhouse_url}, Kafka {ports.brokers}, job {job_id}")
    say(f"ClickHouse users iopipe_reader/iopipe_writer/iopipe_admin: passwords in {CACHE / 'clickhouse-users.json'}")
    return users


def down():
    compose("down", "--volumes", "--remove-orphans")


def main(argv):
    commands = {
        "images": build_images,
        "up": up,
        "down": down,
        "submit-job": lambda: print(submit_live_job(Ports())),
    }
    if len(argv) != 1 or argv[0] not in commands:
        sys.exit(f"usage: stack.py {'|'.join(commands)}")
    commands[argv[0]]()


if __name__ == "__main__":
    main(sys.argv[1:])
