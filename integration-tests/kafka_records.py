"""Reading back what reached Kafka, as a test checks it."""
import json
import time
import uuid

from confluent_kafka import Consumer


def consume_host(brokers, topic, host, idle_s=5):
    """Every record of `host` on `topic`, read back from the beginning."""
    consumer = Consumer({"bootstrap.servers": brokers, "group.id": f"itest-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    records, last_new = [], time.monotonic()
    try:
        while time.monotonic() - last_new < idle_s:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            record = json.loads(message.value())
            if record["host"] == host:
                # Records of a disk are keyed host/disk, the agent's own reports by host.
                assert message.key().decode() == (f"{host}/{record['disk']}" if "disk" in record else host)
                records.append(record)
                last_new = time.monotonic()
    finally:
        consumer.close()
    return records
