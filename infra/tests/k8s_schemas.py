"""The schemas infra/k8s is validated against, each taken from a registry package.

- Built-in kinds: PyPI `kubernetes-validate`, which bundles each Kubernetes release's
  OpenAPI as JSON Schema (strict variant: unknown fields are errors, as `kubectl apply`'s
  server-side field validation makes them).
- Strimzi's Kafka, KafkaNodePool, KafkaTopic and KafkaUser: Strimzi publishes no CRD YAML to a
  registry, so the CRDs are made the way Strimzi's own release build makes them: its CRD
  generator (`io.strimzi:crd-generator`) run over its API classes (`io.strimzi:api`),
  both from Maven Central, same version. The generator's classes need Java 21 or newer.
- FlinkDeployment: the CRD YAML that `org.apache.flink:flink-kubernetes-operator-api`
  carries in META-INF/fabric8/.
- CEL rules (x-kubernetes-validations) in those CRDs: evaluated with PyPI `cel-python`, a
  rule at a time with `self` bound to the field, as the API server does on create.

Downloads and generated CRDs are cached under $IOPIPE_CACHE/k8s-schemas/<package>-<version>/
(default ~/.cache/iopipe); an empty cache is filled with mvn on first use.
"""
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import celpy
import jsonschema
import kubernetes_validate
from referencing import Registry, Resource

# The oldest and newest Kubernetes releases maintained when the manifests were written.
KUBERNETES_VERSIONS = ("1.35.0", "1.37.0")

STRIMZI_VERSION = "1.2.0"
STRIMZI_MODEL_CLASSES = {
    "Kafka": "io.strimzi.api.kafka.model.kafka.Kafka",
    "KafkaNodePool": "io.strimzi.api.kafka.model.nodepool.KafkaNodePool",
    "KafkaTopic": "io.strimzi.api.kafka.model.topic.KafkaTopic",
    "KafkaUser": "io.strimzi.api.kafka.model.user.KafkaUser",
}
STRIMZI_MIN_JAVA = 21

# The newest release of the operator's API that Maven Central serves here. Its CRD predates
# Flink 2 (flinkVersion stops at v1_20); the operator lists v2_3 from 1.15.0 on, and every
# other field the manifest uses has the same schema there.
FLINK_OPERATOR_VERSION = "1.10.0"
FLINK_CRD_ENTRY = "META-INF/fabric8/flinkdeployments.flink.apache.org-v1.yml"

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def cache_root():
    base = os.environ.get("IOPIPE_CACHE") or Path.home() / ".cache" / "iopipe"
    return Path(base) / "k8s-schemas"


def _cached(name, fill):
    """The directory `name` under the cache, made by fill(tmpdir) if absent. Filled in a
    temporary directory and renamed into place, so an interrupted fill leaves nothing."""
    target = cache_root() / name
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        fill(work)
        try:
            work.rename(target)
        except OSError:
            if not target.is_dir():  # not a concurrent fill that got there first
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _mvn(*args, cwd):
    result = subprocess.run(["mvn", "-B", "-q", "-Dstyle.color=never", *args], cwd=cwd,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"mvn {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")


def _java_at_least(major):
    """A java binary of at least this major version: $JAVA_HOME's, else the newest JDK
    under /usr/lib/jvm that says its version in its `release` file."""
    candidates = [Path(os.environ["JAVA_HOME"])] if os.environ.get("JAVA_HOME") else []
    candidates += sorted(Path("/usr/lib/jvm").glob("*"), reverse=True)
    for home in candidates:
        release = home / "release"
        if not release.is_file() or not (home / "bin" / "java").exists():
            continue
        found = re.search(r'^JAVA_VERSION="(\d+)', release.read_text(), re.M)
        if found and int(found.group(1)) >= major:
            return str(home / "bin" / "java")
    raise RuntimeError(f"Strimzi {STRIMZI_VERSION}'s CRD generator needs Java {major} or newer; "
                       "none found in $JAVA_HOME or /usr/lib/jvm")


def _generate_strimzi_crds(out):
    pom = out / "pom.xml"
    pom.write_text(f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.iopipe</groupId><artifactId>strimzi-crds</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>io.strimzi</groupId><artifactId>api</artifactId><version>{STRIMZI_VERSION}</version></dependency>
    <dependency><groupId>io.strimzi</groupId><artifactId>crd-generator</artifactId><version>{STRIMZI_VERSION}</version></dependency>
  </dependencies>
</project>
""")
    _mvn("dependency:build-classpath", "-Dmdep.outputFile=classpath.txt", cwd=out)
    classpath = (out / "classpath.txt").read_text().strip()
    # The arguments of Strimzi's api/pom.xml, for the v1 API it serves and stores.
    outputs = {kind: out / f"{kind}.yaml" for kind in STRIMZI_MODEL_CLASSES}
    result = subprocess.run(
        [_java_at_least(STRIMZI_MIN_JAVA), "-cp", classpath, "io.strimzi.crdgenerator.CrdGenerator",
         "--crd-api-version", "v1", "--api-versions", "v1", "--storage-version", "v1", "--yaml",
         *(f"{cls}={outputs[kind]}" for kind, cls in STRIMZI_MODEL_CLASSES.items())],
        cwd=out, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"Strimzi's CRD generator failed:\n{result.stdout}\n{result.stderr}")
    for kind, path in outputs.items():
        (out / f"{kind}.json").write_text(json.dumps(_load_yaml(path.read_text())))
        path.unlink()
    pom.unlink()
    (out / "classpath.txt").unlink()


def _extract_flink_crd(out):
    _mvn("dependency:copy", f"-Dartifact=org.apache.flink:flink-kubernetes-operator-api:{FLINK_OPERATOR_VERSION}",
         f"-DoutputDirectory={out}", cwd=out)
    jar = out / f"flink-kubernetes-operator-api-{FLINK_OPERATOR_VERSION}.jar"
    with zipfile.ZipFile(jar) as archive:
        crd = _load_yaml(archive.read(FLINK_CRD_ENTRY).decode())
    (out / "FlinkDeployment.json").write_text(json.dumps(crd))
    jar.unlink()


def _load_yaml(text):
    import yaml
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@functools.lru_cache(maxsize=None)
def crds():
    """CustomResourceDefinition documents by the kind they define."""
    # Named by its kinds as well, so adding a kind makes a new cache instead of a missing file.
    strimzi = _cached(f"strimzi-{STRIMZI_VERSION}-" + "-".join(sorted(STRIMZI_MODEL_CLASSES)).lower(),
                      _generate_strimzi_crds)
    flink = _cached(f"flink-kubernetes-operator-api-{FLINK_OPERATOR_VERSION}", _extract_flink_crd)
    found = {kind: json.loads((strimzi / f"{kind}.json").read_text()) for kind in STRIMZI_MODEL_CLASSES}
    found["FlinkDeployment"] = json.loads((flink / "FlinkDeployment.json").read_text())
    return found


def crd_version(crd, api_version):
    """The served version of `crd` that `api_version` names, or None."""
    group = crd["spec"]["group"]
    for version in crd["spec"]["versions"]:
        if version.get("served") and api_version == f"{group}/{version['name']}":
            return version
    return None


def as_json_schema(node):
    """A CRD's structural OpenAPI schema as a JSON Schema that rejects unknown fields,
    as the API server does under strict field validation (kubectl's default): an object
    that declares its properties allows no others unless it preserves unknown fields.
    oneOf/anyOf/allOf/not only constrain values in a structural schema, never declare
    fields, so they are left as they are."""
    if not isinstance(node, dict):
        return node
    schema = dict(node)
    if schema.pop("nullable", False) and "type" in schema:
        schema["type"] = [schema["type"], "null"]
    if schema.pop("x-kubernetes-int-or-string", False):
        schema.pop("type", None)
        schema.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if "properties" in schema:
        schema["properties"] = {name: as_json_schema(sub) for name, sub in schema["properties"].items()}
    if isinstance(schema.get("additionalProperties"), dict):
        schema["additionalProperties"] = as_json_schema(schema["additionalProperties"])
    if "items" in schema:
        schema["items"] = as_json_schema(schema["items"])
    if (schema.get("type") == "object" and "properties" in schema and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")):
        schema["additionalProperties"] = False
    return schema


@functools.lru_cache(maxsize=None)
def _crd_validator(kind, api_version):
    version = crd_version(crds()[kind], api_version)
    if version is None:
        return None
    root = as_json_schema(version["schema"]["openAPIV3Schema"])
    # Every object may carry these whether or not its CRD declares them (the Flink
    # operator's does not); metadata is checked against ObjectMeta separately.
    root["properties"] = {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                          "metadata": {"type": "object"}, **root.get("properties", {})}
    # Draft 4: OpenAPI 3.0's schema dialect (boolean exclusiveMinimum, no $defs).
    return jsonschema.Draft4Validator(root)


@functools.lru_cache(maxsize=None)
def _object_meta_validator(kubernetes_version):
    """ObjectMeta of a Kubernetes release, which a CRD's schema leaves to the API server."""
    root = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    definitions = json.loads((root / f"v{kubernetes_version}-local-strict" / "_definitions.json").read_text())
    registry = Resource.from_contents(definitions) @ Registry()
    return jsonschema.Draft202012Validator(
        {"$ref": f"{definitions['$id']}#/$defs/{OBJECT_META}"}, registry=registry)


def _rule_paths(node, path=()):
    """(path, rules) of each schema node that carries CEL rules (x-kubernetes-validations),
    the path with "*" for any item or key."""
    if node.get("x-kubernetes-validations"):
        yield path, node["x-kubernetes-validations"]
    for name, sub in node.get("properties", {}).items():
        yield from _rule_paths(sub, (*path, name))
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            yield from _rule_paths(node[key], (*path, "*"))


def _values_at(value, path, where=()):
    """(where, value) of each value of `value` at `path`, where naming each item or key."""
    if not path:
        yield where, value
    elif path[0] == "*":
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            yield from _values_at(item, path[1:], (*where, key))
    elif isinstance(value, dict) and path[0] in value:
        yield from _values_at(value[path[0]], path[1:], (*where, path[0]))


@functools.lru_cache(maxsize=None)
def _cel_program(rule):
    environment = celpy.Environment()
    return environment.program(environment.compile(rule))


def broken_cel_rules(value, rules):
    """The messages of the CEL `rules` that `value` breaks. A rule that cannot be evaluated
    here (a Kubernetes extension function cel-python lacks, a transition rule on oldSelf)
    counts as broken: this check vouches only for what it evaluated."""
    broken = []
    for rule in rules:
        try:
            holds = _cel_program(rule["rule"]).evaluate({"self": celpy.json_to_cel(value)})
        except Exception as error:  # parse and evaluation errors alike: what the rule cannot say
            broken.append(f"CEL rule {rule['rule']!r} cannot be evaluated here: {error}")
            continue
        if not (isinstance(holds, celpy.celtypes.BoolType) and holds):
            broken.append(rule.get("message") or f"CEL rule {rule['rule']!r} does not hold")
    return broken


def _where(error, prefix=()):
    return ".".join(str(part) for part in (*prefix, *error.absolute_path)) or "(top)"


def custom_resource_errors(doc, kubernetes_version=KUBERNETES_VERSIONS[0]):
    """Every way `doc` breaks its CRD's schema, as (path, validator, message), path dotted."""
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    if kind not in crds():
        return [("kind", "kind", f"no CRD schema for kind {kind!r}")]
    validator = _crd_validator(kind, api_version)
    if validator is None:
        return [("apiVersion", "apiVersion", f"{kind}'s CRD serves no version {api_version!r}")]
    errors = [(_where(e), e.validator, e.message) for e in validator.iter_errors(doc)]
    schema = crd_version(crds()[kind], api_version)["schema"]["openAPIV3Schema"]
    errors += [(".".join(map(str, where)) or "(top)", "x-kubernetes-validations", message)
               for rule_path, rules in _rule_paths(schema) for where, value in _values_at(doc, rule_path)
               for message in broken_cel_rules(value, rules)]
    errors += [(_where(e, prefix=("metadata",)), e.validator, e.message)
               for e in _object_meta_validator(kubernetes_version).iter_errors(doc.get("metadata", {}))]
    return sorted(errors)


def builtin_errors(doc, kubernetes_version):
    """How `doc` breaks the strict schema of its kind in this Kubernetes release, or []."""
    try:
        kubernetes_validate.validate(doc, kubernetes_version, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [(_where(error), error.validator, error.message)]
    return []


def is_builtin(doc, kubernetes_version):
    try:
        kubernetes_validate.validate(doc, kubernetes_version, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        return False
    except kubernetes_validate.ValidationError:
        pass
    return True
