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


@pytest.mark.parametrize("name", ["pipeline", "sampling"])
def test_a_settings_file_is_what_its_schema_says(name):
    schema = json.loads((SCHEMA / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(json.loads((SCHEMA / f"{name}.json").read_text()))


def test_an_anomalys_evidence_text_is_its_evidence():
    for record in ndjson(SCHEMA / "examples" / "io.anomaly.v1.valid.ndjson"):
        assert json.loads(record["evidence_json"]) == record["evidence"]


# The most bytes one value of a type takes in JSON as the job writes it (Jackson: a long
# in at most 20 characters, a double in at most 24); a string's character in at most 6
# (a control character escaped as \u00XX; beyond the BMP, 4 bytes of UTF-8).
INTEGER_BYTES, NUMBER_BYTES, CHARACTER_BYTES = 20, 24, 6
# An object a schema leaves open whose bound another field states: io.anomaly.v1's
# evidence is the object its evidence_json writes (its description says so), at most 4
# bytes a character, unescaped.
WRITTEN_AS = {("io.anomaly.v1", "evidence"): "evidence_json"}


class Unbounded(AssertionError):
    pass


def largest_json_bytes(root, node, at, record):
    """The most bytes a value `node` admits takes as JSON; raises Unbounded naming the
    first field at `at` the schema leaves without a bound."""
    if "$ref" in node:
        target = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    if "const" in node:
        return len(json.dumps(node["const"]))
    if "enum" in node:
        return max(len(json.dumps(value)) for value in node["enum"])
    for keyword in ("oneOf", "anyOf"):
        if keyword in node:
            return max(largest_json_bytes(root, branch, at, record) for branch in node[keyword])
    types = node.get("type")
    types = types if isinstance(types, list) else [types]
    return max(largest_of_type(root, node, kind, at, record) for kind in types)


def largest_of_type(root, node, kind, at, record):
    if kind == "string":
        if "maxLength" not in node:
            raise Unbounded(f"{record}{at}: a string without maxLength")
        return 2 + CHARACTER_BYTES * node["maxLength"]
    if kind == "integer":
        return INTEGER_BYTES
    if kind == "number":
        return NUMBER_BYTES
    if kind in ("boolean", "null"):
        return 5
    if kind == "array":
        if "maxItems" not in node:
            raise Unbounded(f"{record}{at}: an array without maxItems")
        return 2 + node["maxItems"] * (1 + largest_json_bytes(root, node.get("items", {}), at + "[]", record))
    if kind == "object":
        return largest_object(root, node, at, record)
    raise Unbounded(f"{record}{at}: no type, const or enum bounds it")


def largest_object(root, node, at, record):
    total = 2
    for name, sub in node.get("properties", {}).items():
        field = f"{at}/{name}"
        if (record, name) in WRITTEN_AS and not at:
            value = 4 * node["properties"][WRITTEN_AS[record, name]]["maxLength"]
        else:
            value = largest_json_bytes(root, sub, field, record)
        total += len(json.dumps(name)) + 2 + value
    others = node.get("additionalProperties", False)  # the job writes the fields a schema names, no others
    if others is False:
        return total
    names = node.get("propertyNames", {})
    count = node.get("maxProperties", len(names.get("enum", ())) or None)
    if count is None or not ("enum" in names or "maxLength" in names) or others is True:
        raise Unbounded(f"{record}{at}: an object open to names without a bound on their number and length")
    return total + count * (largest_json_bytes(root, names, at + "/<name>", record) + 2
                            + largest_json_bytes(root, others, at + "/*", record))


def records_the_job_writes():
    """Its verdicts, windows, rollups and dead letters. (The agent records it passes on as
    accepted are as their hosts sent them: one over the sink's size goes as a dead letter.)"""
    listed = json.loads((SCHEMA / "topics.json").read_text())
    return sorted(t["record"] for t in listed["topics"] if t["producer"] in ("stream-jobs", "any"))


@pytest.mark.parametrize("name", records_the_job_writes())
def test_the_largest_record_the_job_may_write_fits_its_sink(name):
    """Every field of what the job writes is bounded, and the largest record its schema
    allows (escapes at their worst) fits in what the sink sends as one record: a record
    over it would go as a dead letter, and a verdict so be lost."""
    limit = json.loads((SCHEMA / "topics.json").read_text())["record_size"]["max_record_bytes"]
    schema = load_schema(name)
    assert largest_json_bytes(schema, schema, "", name) <= limit


def test_an_output_names_its_disk_within_the_bounds_of_the_records_it_came_from():
    host, disk = (load_schema("io.hist.v1")["properties"][field] for field in ("host", "disk"))
    for name in ("io.anomaly.v1", "io.health.v1", "io.window.v1", "io.latency.v1"):
        fields = load_schema(name)["properties"]
        assert (fields["host"]["maxLength"], fields["disk"]["maxLength"]) == (host["maxLength"], disk["maxLength"]), name
