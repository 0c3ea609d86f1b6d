"""The stack's Kafka from this host: its certificates and credentials under the cache
(kafka_access.py says what they are), each client's settings, an agent's principal, and
the topics a running Kafka lacks."""
import subprocess

from iopipe.contract import RECORD_TOPICS, TOPICS
from iopipe.kafka_access import ADMIN, KafkaAccess, agent_topics
from iopipe.paths import CACHE
from iopipe.readiness import say


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
