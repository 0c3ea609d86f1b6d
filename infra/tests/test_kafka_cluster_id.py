"""A Kafka cluster's id is handed to `kafka-storage format -t` on every node's first start."""
import base64
import itertools
import uuid

from iopipe import stack

BEGINS_WITH_DASH = uuid.UUID(bytes=b"\xf8" + bytes(15))  # base64 '-AAA…': 0xf8's top six bits are 62


def test_an_id_that_would_read_as_an_option_is_drawn_again(monkeypatch):
    draws = itertools.chain([BEGINS_WITH_DASH], iter(uuid.uuid4, None))
    monkeypatch.setattr(stack.uuid, "uuid4", lambda: next(draws))
    cluster_id = stack.kafka_cluster_id()
    assert not cluster_id.startswith("-")
    assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


def test_ids_are_kafkas_22_character_base64():
    ids = {stack.kafka_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
