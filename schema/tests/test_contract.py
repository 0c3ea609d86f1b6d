"""The contract itself: schemas are valid JSON Schema, examples are the test vectors
every component shares, and topics.json names only records that exist."""
import json
from pathlib import Path

import jsonschema
import pytest

SCHEMA = Path(__file__).resolve().parent.parent
RECORDS = sorted((SCHEMA / "records").glob("*.schema.json"))
NAMES = [p.name.removesuffix(".schema.json") for p in RECORDS]


def load_schema(name):
    return json.loads((SCHEMA / "records" / f"{name}.schema.json").read_text())


def ndjson(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("name", NAMES)
def test_schema_is_valid_json_schema_named_by_its_id(name):
    schema = load_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == f"urn:iopipe:schema:{name}"
    assert schema["properties"]["schema"] == {"const": name}
    assert "schema" in schema["required"]


@pytest.mark.parametrize("name", NAMES)
def test_valid_examples_validate(name):
    validator = jsonschema.Draft202012Validator(load_schema(name))
    examples = ndjson(SCHEMA / "examples" / f"{name}.valid.ndjson")
    assert examples, f"{name} needs at least one valid example"
    for record in examples:
        validator.validate(record)


@pytest.mark.parametrize("name", NAMES)
def test_invalid_examples_fail_for_their_stated_reason(name):
    validator = jsonschema.Draft202012Validator(load_schema(name))
    cases = ndjson(SCHEMA / "examples" / f"{name}.invalid.ndjson")
    assert cases, f"{name} needs at least one invalid example"
    for case in cases:
        assert case["why"], "every invalid example says why"
        assert not validator.is_valid(case["record"]), case["why"]


def test_topics_carry_known_records_keyed_by_disk():
    topics = json.loads((SCHEMA / "topics.json").read_text())["topics"]
    assert {t["record"] for t in topics} == set(NAMES)
    assert len({t["name"] for t in topics}) == len(topics)
    assert all(t["name"].endswith(".v1") and t["partitions"] >= 1 for t in topics)


def test_an_anomalys_evidence_text_is_its_evidence():
    for record in ndjson(SCHEMA / "examples" / "io.anomaly.v1.valid.ndjson"):
        assert json.loads(record["evidence_json"]) == record["evidence"]
