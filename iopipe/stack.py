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
`Ports` (iopipe/ports.py) so a test stack can run beside the demo's. Used by the Makefile,
the demo and the integration tests alike: one way to build and start the stack. Here the
services are started, awaited and stopped and ClickHouse migrated; the images are built by
iopipe/images.py, the live job run by iopipe/flink_rest.py and the stack's Kafka access
made by iopipe/stack_kafka.py.
"""
import base64
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from iopipe.flink_rest import flink_has_slots, submit_live_job, upgrade_job
from iopipe.images import build_images
from iopipe.kafka_access import MOUNT as KAFKA_MOUNT
from iopipe.migrate import ClickHouseHttp, Migrator, up_in_lockstep
from iopipe.paths import CACHE, INFRA
from iopipe.ports import ClusterPorts, Ports
from iopipe.readiness import (clickhouse_answers, container_alive, container_log_contains, container_log_tail, run, say,
                              wait_for, zookeeper_answers)
from iopipe.stack_kafka import agent_access, kafka_access, prepare_kafka_access

COMPOSE_FILE = INFRA / "compose.yaml"
COMPOSE_PROJECT = "iopipe"
CLUSTER_COMPOSE_FILE = INFRA / "compose.cluster.yaml"
CLUSTER_PROJECT = "iopipe-cluster"
CLUSTER_SERVICES = ("zookeeper", "kafka-1", "kafka-2", "kafka-3",  # the coordination the rest need: started first
                    "flink-jobmanager-1", "flink-jobmanager-2", "flink-taskmanager-1", "flink-taskmanager-2",
                    "clickhouse-1", "clickhouse-2")
CLICKHOUSE_CLUSTER = "iopipe"  # the replicas' <remote_servers> name (infra/clickhouse/start-clickhouse.sh)
CLICKHOUSE_REPLICAS = (1, 2)  # compose.cluster.yaml's clickhouse-1 and clickhouse-2
SERVICES = ("kafka", "flink-jobmanager", "flink-taskmanager", "clickhouse")
# Every image runs as its own user, which needs no capability and may gain none: each
# container drops these and takes these security options (compose's x-service says the
# same for the stack and the cluster, infra/tests/test_bench_containers.py holds it to it).
CAP_DROP = ("ALL",)
SECURITY_OPT = ("no-new-privileges:true",)
CONFINED = (*(arg for cap in CAP_DROP for arg in ("--cap-drop", cap)),
            *(arg for opt in SECURITY_OPT for arg in ("--security-opt", opt)))


def kafka_cluster_id():
    """A new Kafka cluster's id: 16 random bytes, base64 without padding, as Kafka's Uuid.
    One id in 64 would begin with '-', which `kafka-storage format -t` takes for an option;
    like Kafka's own Uuid.randomUuid, draw again."""
    while (cluster_id := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")).startswith("-"):
        pass
    return cluster_id


@dataclass(frozen=True)
class ClickHouseUsers:
    """Passwords of the users infra/clickhouse/users.xml defines, one set per stack."""
    admin: str
    writer: str
    reader: str
    bridge: str

    ROLES = ("admin", "writer", "reader", "bridge")

    @classmethod
    def generate(cls):
        return cls(*(secrets.token_hex(16) for _ in cls.ROLES))

    @classmethod
    def of_demo_stack(cls):
        """The demo stack's passwords, made on first use and kept (0600) beside the caches."""
        path = CACHE / "clickhouse-users.json"
        kept = json.loads(path.read_text()) if path.exists() else {}
        if set(kept) != set(cls.ROLES):  # new, or kept from before a role was added
            kept = {**cls.generate().__dict__, **{r: kept[r] for r in cls.ROLES if r in kept}}
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            path.write_text(json.dumps(kept))
        return cls(**kept)

    def env(self):
        return {f"IOPIPE_CLICKHOUSE_{role.upper()}_PASSWORD": getattr(self, role) for role in self.ROLES}

    def client(self, ports, role):
        return ClickHouseHttp(ports.clickhouse_url, f"iopipe_{role}", getattr(self, role))


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
    # The passwords go in a file only this user reads, which docker reads as it starts the
    # container: on the command line (-e) any user of the machine would see them in `ps`.
    with tempfile.NamedTemporaryFile("w", prefix="iopipe-env-") as env_file:
        env_file.write("".join(f"{key}={value}\n" for key, value in env.items()))
        env_file.flush()
        run(["docker", "run", "-d", "--rm", "--name", name, "--network", "host", *CONFINED, *volumes,
             "--env-file", env_file.name, image], stdout=subprocess.DEVNULL)
    return name


def wait_until_ready(ports, containers, flink=True):
    """`containers`: service name -> container name. Waits for each kind of service that
    was started: ZooKeeper, every Kafka node's topics, ClickHouse, Flink's TaskManagers
    (unless `flink` is False: migrate_and_submit waits for those, migrating meanwhile)."""
    def all_alive():
        return all(container_alive(c) for c in containers.values())

    def alive_and(check):
        return lambda: all_alive() and check()
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
    taskmanagers = taskmanagers_of(containers)
    if taskmanagers and flink:
        wait_for_task_slots(ports, taskmanagers, alive=all_alive)


def taskmanagers_of(services):
    return sum(service.startswith("flink-taskmanager") for service in services)


def wait_for_task_slots(ports, taskmanagers, alive=lambda: True):
    wait_for("Flink task slots", lambda: alive() and flink_has_slots(ports, taskmanagers))


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
    wait_until_ready(ports, {service: f"{COMPOSE_PROJECT}-{service}" for service in SERVICES}, flink=False)
    migrate_and_submit(ports, users, taskmanagers=taskmanagers_of(SERVICES))
    say_where_the_passwords_are()
    return users


def say_where_the_passwords_are():
    """For the demo's stack and `make cluster-up`'s, whose ClickHouse users are the demo's."""
    say(f"ClickHouse users {'/'.join('iopipe_' + r for r in ClickHouseUsers.ROLES)}: passwords in {CACHE / 'clickhouse-users.json'}")


def migrate_and_submit(ports, users, clickhouse_cluster=None, job_args=(), taskmanagers=0):
    """Migrates ClickHouse and runs the live job, side by side: the job needs none of
    ClickHouse's tables, whose Kafka tables read the topics from their start. Given the
    number of `taskmanagers` still starting, waits for their slots while migrating.
    Returns the job's id."""
    with ThreadPoolExecutor(1) as pool:
        migrated = pool.submit(migrate_clickhouse, ports, users, clickhouse_cluster)
        if taskmanagers:
            wait_for_task_slots(ports, taskmanagers)
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
        if not path.exists() or json.loads(path.read_text())["kafka_id"].startswith("-"):  # no node took that one
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
        wait_until_ready(cluster.ports, {service: cluster.container(service) for service in services}, flink=not submit)
    if submit:
        migrate_and_submit(cluster.ports, cluster.users, CLICKHOUSE_CLUSTER, job_args, taskmanagers_of(CLUSTER_SERVICES))
        if cluster.project == CLUSTER_PROJECT:
            say_where_the_passwords_are()
    return cluster


def cluster_down(cluster=None):
    cluster = cluster or Cluster.of_make()
    cluster_compose("down", "--volumes", "--remove-orphans", cluster=cluster)
    shutil.rmtree(kafka_access(cluster.ports.brokers).root, ignore_errors=True)
    if cluster.project == CLUSTER_PROJECT:
        (CACHE / "cluster.json").unlink(missing_ok=True)  # the next cluster is formatted anew


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
