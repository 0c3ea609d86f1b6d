"""vector.yaml's structure against Vector 0.50's own reference, so that a typo fails here
rather than on the host: every component's and secret backend's type exists, its options
exist (nested ones too) with allowed values, its required options are there, its inputs
name outputs that exist, its files exist, the Kafka sinks write the topics
schema/topics.json lists, and the agent topics are signed as schema/signing.json says.

The reference table, vector-0.50-components.json, was taken from Vector's documentation
source at tag v0.50.0 (its $comment says which files); Vector itself cannot be installed
here (see the repository's ENVIRONMENT notes).
"""
import json
import re
from pathlib import Path

import pytest
import yaml

VECTOR_DIR = Path(__file__).resolve().parent.parent
ROOT = VECTOR_DIR.parent.parent  # Vector's working directory: file paths resolve here
CONFIG = VECTOR_DIR / "vector.yaml"
REFERENCE = json.loads((Path(__file__).parent / "vector-0.50-components.json").read_text())
TOPICS = json.loads((ROOT / "schema" / "topics.json").read_text())
SIGNING = json.loads((ROOT / "schema" / "signing.json").read_text())

# Vector's smallest disk buffer: "If type = "disk" then must be at least ~256 megabytes
# (268435488 bytes)" (buffer.max_size, website/cue/reference/components/generated/sinks.cue, v0.50.0).
MIN_DISK_BUFFER_BYTES = 268435488

# Vector's interpolation of environment variables into the config text (src/config/vars.rs, v0.50.0).
INTERPOLATION = re.compile(r"\$\$|\$([\w.]+)|\$\{([\w.]+)(?:(:?-|:?\?)([^}]*))?\}")
# Vector's secret placeholder, SECRET[backend.key], filled after the variables (src/config/loading/secret.rs, v0.50.0).
SECRET_PLACEHOLDER = re.compile(r"SECRET\[(\w+)\.([\w.-]+)\]")


def interpolate(text, env):
    errors = []

    def value(match):
        name = match.group(1) or match.group(2)
        if name is None:
            return "$"
        flag, fallback, have = match.group(3) or "", match.group(4) or "", env.get(name)
        if flag == ":-":
            return have if have else fallback
        if flag == "-":
            return fallback if have is None else have
        if flag in (":?", "?") and (have is None or (flag == ":?" and not have)):
            errors.append(f"{name} is required: {fallback}")
            return ""
        if have is None:
            errors.append(f"missing environment variable {name}")
            return ""
        return have

    text = INTERPOLATION.sub(value, text)
    assert not errors, errors
    return text


# What a host must set: its principal's credentials (no default would be right). Its host
# key is a file (signing.key in IOPIPE_SIGNING_KEY_DIR), which Vector reads through its secret
# backend; the structure checked here holds the placeholder, so these tests need no key.
REQUIRED = {"IOPIPE_KAFKA_USERNAME": "agent-web-17", "IOPIPE_KAFKA_PASSWORD": "from-the-environment"}


def load(env):
    return yaml.safe_load(interpolate(CONFIG.read_text(), env))


CONFIG_DOC = load(REQUIRED)  # a host that sets only its credentials gets the defaults
KINDS = ("sources", "transforms", "sinks")
COMPONENTS = [(kind, cid, options) for kind in KINDS for cid, options in CONFIG_DOC[kind].items()]
IDS = [f"{kind}.{cid}" for kind, cid, _ in COMPONENTS]


def relevant(entry, siblings):
    """Whether an option applies, by its relevant_when (`key = "value" or key = "value"`)."""
    condition = entry.get("relevant_when")
    if condition is None:
        return True
    return any(siblings.get(key) == want for key, want in re.findall(r'(\w+) = "([^"]*)"', condition))


def option_problems(options, reference, where):
    """Unknown options, values outside an option's enum, and required options missing,
    down every nested table the reference has."""
    problems = []
    for name, value in options.items():
        entry = reference.get(name, reference.get("*"))
        if entry is None:
            problems.append(f"{where}.{name}: not an option (known: {sorted(reference)})")
            continue
        if "enum" in entry and isinstance(value, str) and value not in entry["enum"]:
            problems.append(f"{where}.{name}: {value!r} is not one of {entry['enum']}")
        if "options" in entry:
            for i, item in enumerate(value if isinstance(value, list) else [value]):
                if isinstance(item, dict):
                    problems += option_problems(item, entry["options"], f"{where}.{name}[{i}]" if isinstance(value, list) else f"{where}.{name}")
    for name, entry in reference.items():
        if name != "*" and entry["required"] and name not in options and relevant(entry, options):
            problems.append(f"{where}.{name}: required")
    return problems


@pytest.mark.parametrize("kind,cid,options", COMPONENTS, ids=IDS)
def test_component_is_a_vector_050_type_with_its_options(kind, cid, options):
    types = REFERENCE[kind]["types"]
    assert options.get("type") in types, f"{kind}.{cid}: type {options.get('type')!r} is not a Vector 0.50 {kind[:-1]}"
    reference = {**REFERENCE[kind]["common"], **types[options["type"]]}
    given = {k: v for k, v in options.items() if k != "type"}
    assert option_problems(given, reference, f"{kind}.{cid}") == []


@pytest.mark.parametrize("name,options", CONFIG_DOC.get("secret", {}).items())
def test_secret_backend_is_a_vector_050_type_with_its_options(name, options):
    types = REFERENCE["secret"]["types"]
    assert options.get("type") in types, f"secret.{name}: type {options.get('type')!r} is not a Vector 0.50 secret backend"
    given = {k: v for k, v in options.items() if k != "type"}
    assert option_problems(given, types[options["type"]], f"secret.{name}") == []


def test_the_reference_would_catch_a_typo():
    """The check above can say no: a misspelt option, a wrong enum value, a missing required one."""
    kafka = {**REFERENCE["sinks"]["common"], **REFERENCE["sinks"]["types"]["kafka"]}
    sink = dict(CONFIG_DOC["sinks"]["to_io_events_v1"])
    del sink["type"]
    assert option_problems(sink, kafka, "s") == []
    assert option_problems({**sink, "compresion": "lz4"}, kafka, "s")
    assert option_problems({**sink, "compression": "lz5"}, kafka, "s")
    assert option_problems({k: v for k, v in sink.items() if k != "topic"}, kafka, "s")
    assert option_problems({**sink, "buffer": {"type": "disk", "max_sise": 1}}, kafka, "s")


def outputs_of(cid, options):
    """The outputs a transform offers: a route its routes and `_unmatched` only; others
    their own, and a remap its `dropped` when it reroutes."""
    if options["type"] == "route":
        return {f"{cid}.{name}" for name in options["route"]} | {f"{cid}._unmatched"}
    outputs = {cid}
    if options["type"] == "remap" and options.get("reroute_dropped"):
        outputs.add(f"{cid}.dropped")
    return outputs


EVERY_OUTPUT = set(CONFIG_DOC["sources"]) | {
    output for cid, options in CONFIG_DOC["transforms"].items() for output in outputs_of(cid, options)}


@pytest.mark.parametrize("kind,cid,options", [c for c in COMPONENTS if c[0] != "sources"], ids=IDS[len(CONFIG_DOC["sources"]):])
def test_inputs_name_outputs_that_exist(kind, cid, options):
    assert options["inputs"], f"{cid} reads nothing"
    assert set(options["inputs"]) <= EVERY_OUTPUT


def test_every_output_is_read_so_nothing_leaves_unseen():
    read = {i for _, _, options in COMPONENTS for i in options.get("inputs", [])}
    assert EVERY_OUTPUT - read == set()


def test_remap_programs_live_in_files_that_exist():
    """Vector fills secrets into the config's own text, never into a .vrl file, so the one
    program that holds a secret is written in vector.yaml; every other one is a file."""
    remaps = {cid: o for cid, o in CONFIG_DOC["transforms"].items() if o["type"] == "remap"}
    assert remaps
    for cid, options in remaps.items():
        if "source" in options:
            assert "file" not in options and SECRET_PLACEHOLDER.search(options["source"]), f"{cid}: VRL lives in .vrl files"
        else:
            assert (ROOT / options["file"]).is_file(), f"{cid}: {options['file']}"


def kafka_sinks():
    return {cid: o for cid, o in CONFIG_DOC["sinks"].items() if o["type"] == "kafka"}


def test_kafka_sinks_write_each_agent_topic_and_the_dead_letter_once():
    wanted = sorted([t["name"] for t in TOPICS["topics"] if t["producer"] == "agent"]
                    + [t["name"] for t in TOPICS["topics"] if t["record"] == "io.deadletter.v1"])
    assert sorted(o["topic"] for o in kafka_sinks().values()) == wanted


def test_kafka_sinks_are_keyed_compressed_idempotent_acknowledged_and_disk_buffered():
    for cid, options in kafka_sinks().items():
        assert options["key_field"] == "%kafka_key", cid
        assert options["compression"] == "lz4", cid
        assert options["librdkafka_options"]["enable.idempotence"] == "true", cid
        assert options["acknowledgements"]["enabled"] is True, cid
        assert options["buffer"]["type"] == "disk", cid
        assert options["buffer"]["max_size"] >= MIN_DISK_BUFFER_BYTES, cid
        assert options["buffer"]["when_full"] == "block", f"{cid}: a full buffer holds the agent back, which counts what it sheds"


def test_vectors_own_metrics_and_the_dead_letter_count_are_exposed():
    exporters = [o for o in CONFIG_DOC["sinks"].values() if o["type"] == "prometheus_exporter"]
    internal = [cid for cid, o in CONFIG_DOC["sources"].items() if o["type"] == "internal_metrics"]
    counters = [cid for cid, o in CONFIG_DOC["transforms"].items() if o["type"] == "log_to_metric"]
    assert len(exporters) == 1 and internal and counters
    assert set(internal + counters) <= set(exporters[0]["inputs"])
    assert all(m["name"].endswith("_total") for cid in counters for m in CONFIG_DOC["transforms"][cid]["metrics"])


def test_the_socket_is_where_the_agent_writes():
    socket = CONFIG_DOC["sources"]["agent"]
    assert (socket["type"], socket["mode"]) == ("socket", "unix_stream")
    assert load({**REQUIRED, "IOPIPE_SOCKET": "/run/x.sock"})["sources"]["agent"]["path"] == "/run/x.sock"
    assert load({**REQUIRED, "IOPIPE_KAFKA_BROKERS": "k1:9092"})["sinks"]["to_io_agent_v1"]["bootstrap_servers"] == "k1:9092"


def test_config_tests_name_transforms_and_outputs_that_exist():
    tests = CONFIG_DOC["tests"]
    assert tests
    for test in tests:
        for given in test["inputs"]:
            assert given["insert_at"] in CONFIG_DOC["transforms"], test["name"]
        for expected in test.get("outputs", []):
            names = expected["extract_from"]
            assert set(names if isinstance(names, list) else [names]) <= EVERY_OUTPUT, test["name"]
            assert expected["conditions"], test["name"]
        assert set(test.get("no_outputs_from", [])) <= EVERY_OUTPUT, test["name"]


def test_every_variable_the_configuration_reads_is_iopipes_and_has_a_default():
    """A host that sets only its credentials gets a configuration Vector loads; without
    them Vector refuses to start, saying which is missing."""
    variables = INTERPOLATION.findall(CONFIG.read_text())
    assert variables
    for bare, braced, flag, fallback in variables:
        wanted = ":?" if braced in REQUIRED else ":-"
        assert not bare and braced.startswith("IOPIPE_") and flag == wanted and fallback, (bare, braced, flag, fallback)
    for missing in REQUIRED:
        with pytest.raises(AssertionError, match=f"{missing} is required"):
            load({k: v for k, v in REQUIRED.items() if k != missing})


def test_kafka_sinks_authenticate_over_tls_with_a_password_from_the_environment():
    text = CONFIG.read_text()
    for cid, options in kafka_sinks().items():
        assert options["tls"]["enabled"] is True and options["tls"]["ca_file"], cid
        assert options["sasl"] == {"enabled": True, "mechanism": "SCRAM-SHA-512", **{
            "username": REQUIRED["IOPIPE_KAFKA_USERNAME"], "password": REQUIRED["IOPIPE_KAFKA_PASSWORD"]}}, cid
    assert "password: ${IOPIPE_KAFKA_PASSWORD:?" in text, "the password is read from the environment only"


def agent_topic_sinks():
    agent_topics = {t["name"] for t in TOPICS["topics"] if t["producer"] == "agent"}
    return {cid: o for cid, o in kafka_sinks().items() if o["topic"] in agent_topics}


def signing_remaps():
    """The remaps that set the signature header: those that write %kafka_headers."""
    return {cid: o for cid, o in CONFIG_DOC["transforms"].items()
            if o["type"] == "remap" and "%kafka_headers =" in o.get("source", "")}


def test_agent_topics_are_sent_as_the_signed_message_with_its_header():
    """The sink sends .message as it is (codec text) and the header sign set: the value
    Kafka carries is the one signed. Dead letters stay JSON records, unsigned."""
    agent = agent_topic_sinks()
    assert len(agent) == len([t for t in TOPICS["topics"] if t["producer"] == "agent"])
    for cid, options in agent.items():
        assert options["encoding"] == {"codec": "text"}, cid
        assert options["headers_key"] == "%kafka_headers", cid
    for cid, options in kafka_sinks().items():
        if cid not in agent:
            assert options["encoding"] == {"codec": "json"} and "headers_key" not in options, cid


def test_every_path_from_the_agent_to_an_agent_topic_passes_the_signing():
    """Take the signing transform out of the graph: no agent topic's sink can then be
    reached from the socket, so nothing reaches one unsigned."""
    (signer,) = signing_remaps()
    readers = {}
    for kind in ("transforms", "sinks"):
        for cid, options in CONFIG_DOC[kind].items():
            for source in options["inputs"]:
                readers.setdefault(source.split(".")[0], set()).add(cid)
    reached, frontier = set(), {cid for cid, o in CONFIG_DOC["sources"].items() if o["type"] == "socket"}
    while frontier:
        reached |= frontier
        frontier = {r for cid in frontier for r in readers.get(cid, ()) if r != signer} - reached
    assert not reached & set(agent_topic_sinks()), "an agent topic reachable without signing"
    assert set(kafka_sinks()) - set(agent_topic_sinks()) <= reached, "the dead letters are reached (the check can say no)"


def test_the_signature_has_the_contracts_header_name_and_version():
    """schema/signing.json names the header and the version; vector.yaml must not retype
    them differently, in the signing program or in its tests."""
    text = CONFIG.read_text()
    (source,) = [o["source"] for o in signing_remaps().values()]
    assert f'%kafka_headers = {{"{SIGNING["header"]}": "{SIGNING["version"]}=" + encode_base16(' in source, source
    assert 'algorithm: "SHA-256"' in source and SIGNING["algorithm"] == "HMAC-SHA256"
    headers = re.findall(r'%kafka_headers\s*==?\s*\{\s*"([^"]+)"', text) + re.findall(r'%kafka_headers\."([^"]+)"', text)
    versions = re.findall(r'"([^"]*)=" \+', text)
    assert len(headers) >= 2 and set(headers) == {SIGNING["header"]}, headers
    assert len(versions) >= 2 and set(versions) == {SIGNING["version"]}, versions


def test_the_host_key_comes_from_its_file_through_a_directory_secret_backend():
    """The key is signing.key in IOPIPE_SIGNING_KEY_DIR, as the contract hands it to a host (a
    trailing newline allowed), never a literal in vector.yaml; a malformed one is refused
    before any signing."""
    placeholders = set(SECRET_PLACEHOLDER.findall(CONFIG.read_text()))
    assert len(placeholders) == 1, placeholders
    ((backend, key),) = placeholders
    assert key == "signing.key"
    options = CONFIG_DOC["secret"][backend]
    assert options == {"type": "directory", "path": "/etc/iopipe/kafka", "remove_trailing_whitespace": True}
    assert load({**REQUIRED, "IOPIPE_SIGNING_KEY_DIR": "/run/keys"})["secret"][backend]["path"] == "/run/keys"
    (source,) = [o["source"] for o in signing_remaps().values()]
    assert f"host_key = s'SECRET[{backend}.{key}]'" in source
    check = source.index("if !match(host_key, r'\\A[0-9a-f]{64}\\z')")
    assert check < source.index("abort") < source.index("hmac("), "checked, and refused, before it signs"
