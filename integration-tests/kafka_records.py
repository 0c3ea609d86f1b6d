"""Records to and from Kafka, as a test sends and checks them (as iopipe-admin, the
stack's super user: a test writes where any producer may)."""
import json
import time
import uuid
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from iopipe.record_batches import BATCHED_IN, unfold
from iopipe.stack_kafka import fleet_signer, kafka_client

TOPICS_JSON = json.loads((Path(__file__).resolve().parent.parent / "schema/topics.json").read_text())
TOPICS = {t["record"]: t["name"] for t in TOPICS_JSON["topics"]}
# Where the stream job passes on the agent records it accepted: ClickHouse's raw tables read these.
ACCEPTED_TOPICS = {t["record"]: t["name"] for t in TOPICS_JSON["accepted"]}


def produce(brokers, records, wait=True, topics=TOPICS, headers=None, value_of=None):
    """Each record to its topic in `topics` (by record schema), keyed host/disk and signed by
    its host's key as the agents send them (the job keys them the same), or with the
    `headers(host, value)` given; its message is the record's JSON, or `value_of(record)`.
    Without `wait`, returns the producer with what it has not delivered yet (it retries for
    5 min)."""
    producer = Producer({**kafka_client(brokers), "enable.idempotence": True, "linger.ms": 20,
                         "message.timeout.ms": 300_000})
    headers = headers or fleet_signer(brokers).headers
    for record in records:
        value = value_of(record) if value_of else json.dumps(record).encode()
        producer.produce(topics[record["schema"]], key=f"{record['host']}/{record['disk']}", value=value,
                         headers=headers(record["host"], value))
        producer.poll(0)
    if wait:
        assert producer.flush(60) == 0, "every record delivered to Kafka"
    return producer


def consume_host(brokers, topic, host):
    """Every record of `host` on `topic`, read back from the beginning."""
    def of_host(message, record):
        if record.get("host") != host:  # a record without one is no host's
            return False
        # Records of a disk are keyed host/disk, the agent's own reports by host.
        assert message.key().decode() == (f"{host}/{record['disk']}" if "disk" in record else host)
        return True
    return consume(brokers, topic, of_host, mentioning=host)


def consume_agent_records(brokers, schema, host, topics=TOPICS):
    """Every `schema` record (io.diskstats.v1, io.hist.v1 or io.event.v1) of `host`, as sent
    or unfolded from the batch that carried it (an agent sends either), read back from
    `topics` (the agents' by default, or ACCEPTED_TOPICS)."""
    records = consume_host(brokers, topics[schema], host) + consume_host(brokers, topics[BATCHED_IN[schema]], host)
    return [part for record in records for part in unfold(record) if part["schema"] == schema]


def partitions_short_of_copies(brokers, min_in_sync):
    """Each partition, as topic/partition, with no leader or fewer than `min_in_sync` copies
    in sync: an acks=all write to it waits until they catch up."""
    metadata = AdminClient(kafka_client(brokers)).list_topics(timeout=10)
    return [f"{topic.topic}/{partition.id}" for topic in metadata.topics.values()
            for partition in topic.partitions.values() if partition.leader < 0 or len(partition.isrs) < min_in_sync]


def dead_letters_naming(brokers, host):
    """Every dead letter whose input names `host`."""
    return consume(brokers, TOPICS["io.deadletter.v1"], lambda _, letter: host in letter["raw"], mentioning=host)


def consume(brokers, topic, wanted, timeout_s=120, mentioning=None):
    """Every record on `topic` that `wanted(message, record)`, read from the beginning to
    the end of each partition as the read finds it; records still on their way are for
    the caller to wait for. A partition not read to its end within `timeout_s` (its leader
    away all that time) is an error, never a short answer: a fetch can stall for seconds
    on a loaded machine, or while the brokers come back from an outage. With
    `mentioning`, a record whose bytes do not hold that text is passed over unparsed: on a
    topic that many hosts share, most of them."""
    mentioned = mentioning.encode() if mentioning else b""
    consumer = Consumer({**kafka_client(brokers), "group.id": f"itest-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    try:
        partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        unread, records, deadline = set(partitions), [], time.monotonic() + timeout_s
        while unread:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: partitions {sorted(unread)} not read to their end within {timeout_s} s")
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() == KafkaError._PARTITION_EOF:
                    unread.discard(message.partition())
                continue
            if mentioned not in message.value():
                continue
            record = json.loads(message.value())
            if wanted(message, record):
                records.append(record)
    finally:
        consumer.close()
    return records
