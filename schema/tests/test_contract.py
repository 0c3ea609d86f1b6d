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


# Keywords that bound a value, and where subschemas hold more of them (`if` only
# selects the records its `then` bounds).
BOUNDS = {"const", "enum", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
          "exclusiveMaximum", "minItems", "maxItems", "minProperties", "maxProperties"}
SUBSCHEMA_MAPS = {"properties", "$defs", "dependentSchemas"}
SUBSCHEMAS = {"items", "additionalProperties", "propertyNames", "then", "else"}


def bounds(schema, at=""):
    """Where the schema bounds a value: a JSON pointer to each bounding keyword."""
    found = set()
    for keyword, value in schema.items():
        if keyword in BOUNDS:
            found.add(f"{at}/{keyword}")
        elif keyword in SUBSCHEMA_MAPS:
            for name, sub in value.items():
                found |= bounds(sub, f"{at}/{keyword}/{name}")
        elif keyword in SUBSCHEMAS:
            found |= bounds(value, f"{at}/{keyword}")
    return found


def broken_bound(schema, error):
    """The JSON pointer of the keyword a validation error breaks, through a `$ref` to where
    that keyword is written."""
    node, at = schema, ""
    for part in error.absolute_schema_path:
        if part not in node and "$ref" in node:
            at = node["$ref"].removeprefix("#")
            node = schema
            for name in at.strip("/").split("/"):
                node = node[name]
        if part != "$ref":
            node, at = node[part], f"{at}/{part}"
    return at


def records_the_job_decodes():
    """The agent's records the stream job reads (it reports its own health apart)."""
    listed = json.loads((SCHEMA / "topics.json").read_text())
    return sorted(t["record"] for t in listed["topics"] if t["producer"] == "agent" and t["record"] != "io.agent.v1")


@pytest.mark.parametrize("name", records_the_job_decodes())
def test_every_bound_the_job_decodes_with_has_an_invalid_example_breaking_it(name):
    """The job's decoder reads each bound from the schema and refuses every invalid example
    for its field (RecordDecoderTest): an example per bound is what exercises each rule."""
    schema = load_schema(name)
    validator = jsonschema.Draft202012Validator(schema)
    broken = {broken_bound(schema, e) for case in ndjson(SCHEMA / "examples" / f"{name}.invalid.ndjson")
              for e in validator.iter_errors(case["record"])}
    assert bounds(schema) - broken == set(), f"{name}: bounds no invalid example breaks"


def test_topics_carry_known_records_keyed_by_disk():
    listed = json.loads((SCHEMA / "topics.json").read_text())
    topics, accepted = listed["topics"], listed["accepted"]
    assert {t["record"] for t in topics} == set(NAMES)
    every = topics + accepted
    assert len({t["name"] for t in every}) == len(every)
    assert all(t["name"].endswith(".v1") and t["partitions"] >= 1 for t in every)


def test_each_agent_record_the_job_reads_has_an_accepted_topic():
    listed = json.loads((SCHEMA / "topics.json").read_text())
    accepted = {t["record"] for t in listed["accepted"]}
    assert sorted(accepted) == records_the_job_decodes(), "every agent record ClickHouse stores, and only those"


def test_pipeline_json_is_what_its_schema_says():
    schema = json.loads((SCHEMA / "pipeline.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(json.loads((SCHEMA / "pipeline.json").read_text()))


def test_an_anomalys_evidence_text_is_its_evidence():
    for record in ndjson(SCHEMA / "examples" / "io.anomaly.v1.valid.ndjson"):
        assert json.loads(record["evidence_json"]) == record["evidence"]
