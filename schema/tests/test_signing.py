"""schema/signing.json's examples, as iopipe/host_signing.py computes them."""
import json

import pytest

from iopipe import host_signing
from iopipe.paths import SCHEMA

CONTRACT = json.loads((SCHEMA / "signing.json").read_text())


@pytest.mark.parametrize("example", CONTRACT["examples"], ids=lambda e: e["host"])
def test_the_contracts_examples(example):
    master = bytes.fromhex(example["master_secret_hex"])
    key = host_signing.host_key(master, example["host"])
    assert key.hex() == example["host_key_hex"]
    assert host_signing.signature(key, example["value"].encode()) == example["header_value"]
    signer = host_signing.FleetSigner(master)
    assert signer.headers(example["host"], example["value"].encode()) == [
        (CONTRACT["header"], example["header_value"].encode())]


def test_another_hosts_key_signs_differently():
    master = bytes(range(32))
    value = b'{"host": "a"}'
    assert host_signing.signature(host_signing.host_key(master, "a"), value) != \
        host_signing.signature(host_signing.host_key(master, "b"), value)


@pytest.mark.parametrize("text", ["", "ab" * 31, "AB" * 32, "zz" * 32, " " + "ab" * 32])
def test_a_malformed_key_file_is_refused_unquoted(tmp_path, text):
    path = tmp_path / "key"
    path.write_text(text)
    with pytest.raises(ValueError) as refused:
        host_signing.read_key(path)
    assert str(path) in str(refused.value)
    assert not text.strip() or text.strip() not in str(refused.value)
