"""The contract itself: schemas are valid JSON Schema, examples are the test vectors
every component shares, topics.json names only records that exist, and pipeline.json
holds every timing its schema says, in whole seconds."""
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


def fields_at_fault(error):
    """The fields, as dotted paths, a validation error is about: where it points, or
    what a `required` misses."""
    path = [str(part) for part in error.absolute_path]
    if error.validator == "required":
        return {".".join(path + [name]) for name in error.validator_value if name not in error.instance}
    return {".".join(path)}


def holds(record, field):
    """Whether the record has the field a dotted path names."""
    value = record
    for part in field.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return True


@pytest.mark.parametrize("name", NAMES)
def test_invalid_examples_fail_for_their_stated_reason(name):
    """Each invalid example is a valid record with one fault, in the field it names. A
    fault JSON Schema cannot express (across fields, or against a sum) is marked so: the
    schema must then accept the record, which only the stream jobs' decoder refuses."""
    validator = jsonschema.Draft202012Validator(load_schema(name))
    cases = ndjson(SCHEMA / "examples" / f"{name}.invalid.ndjson")
    assert cases, f"{name} needs at least one invalid example"
    for case in cases:
        assert case["why"], "every invalid example says why"
        assert case["field"], f"{case['why']}: every invalid example names the field at fault"
        errors = list(validator.iter_errors(case["record"]))
        if case.get("schema_can_express", True):
            assert errors, case["why"]
            assert {field for e in errors for field in fields_at_fault(e)} == {case["field"]}, \
                f"{case['why']}: {[e.message for e in errors]}"
        else:
            assert case["schema_can_express"] is False, case["why"]
            assert not errors, f"{case['why']}: the schema can express it after all: {[e.message for e in errors]}"
            assert holds(case["record"], case["field"]), case["why"]


def test_topics_carry_known_records_keyed_by_disk():
    listed = json.loads((SCHEMA / "topics.json").read_text())
    topics, accepted = listed["topics"], listed["accepted"]
    assert {t["record"] for t in topics} == set(NAMES)
    every = topics + accepted
    assert len({t["name"] for t in every}) == len(every)
    assert all(t["name"].endswith(".v1") and t["partitions"] >= 1 for t in every)


def test_each_agent_record_the_job_reads_has_an_accepted_topic():
    listed = json.loads((SCHEMA / "topics.json").read_text())
    agent = {t["record"]: t for t in listed["topics"] if t["producer"] == "agent" and t["record"] != "io.agent.v1"}
    accepted = {t["record"]: t for t in listed["accepted"]}
    assert set(accepted) == set(agent), "every agent record ClickHouse stores, and only those"


def test_pipeline_json_is_what_its_schema_says():
    schema = json.loads((SCHEMA / "pipeline.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(json.loads((SCHEMA / "pipeline.json").read_text()))


def test_an_anomalys_evidence_text_is_its_evidence():
    for record in ndjson(SCHEMA / "examples" / "io.anomaly.v1.valid.ndjson"):
        assert json.loads(record["evidence_json"]) == record["evidence"]
