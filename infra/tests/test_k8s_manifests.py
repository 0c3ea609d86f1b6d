"""The production manifests in infra/k8s hold together without a cluster: every object
matches the schema Kubernetes or its operator would check it against (k8s_schemas.py says
where each comes from), a misspelt field fails, and the manifests keep iopipe's own rules
(the agent's two capabilities, the job's durable checkpoints, topics from topics.json)."""
import copy
import json
import re
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

import k8s_schemas

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "infra" / "k8s"
TOPICS_JSON = json.loads((REPO / "schema" / "topics.json").read_text())
TOPICS = TOPICS_JSON["topics"] + TOPICS_JSON["accepted"]
NAMESPACE = "iopipe"
CUSTOM_KINDS = {"Kafka", "KafkaNodePool", "KafkaTopic", "FlinkDeployment"}
# Flink 2 versions that the CRD of FLINK_OPERATOR_VERSION cannot list (k8s_schemas.py).
FLINK_2_VERSION = re.compile(r"v2_\d+")


def manifest_files():
    return sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def load_objects():
    return [(path.name, doc) for path in manifest_files()
            for doc in yaml.safe_load_all(path.read_text()) if doc]


OBJECTS = load_objects()


def object_id(item):
    name, doc = item
    return f"{name}:{doc['kind']}/{doc['metadata']['name']}"


def the(kind, name=None):
    found = [doc for _, doc in OBJECTS if doc["kind"] == kind and name in (None, doc["metadata"]["name"])]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def topics_in_manifests():
    return [doc for _, doc in OBJECTS if doc["kind"] == "KafkaTopic"]


BUILTINS = [item for item in OBJECTS if item[1]["kind"] not in CUSTOM_KINDS]
CUSTOMS = [item for item in OBJECTS if item[1]["kind"] in CUSTOM_KINDS]


def without_known_crd_gaps(doc, errors):
    """The FlinkDeployment's flinkVersion, v2_3, is newer than the registry's operator CRD
    can list; every other error stands."""
    if doc["kind"] != "FlinkDeployment" or not FLINK_2_VERSION.fullmatch(doc["spec"].get("flinkVersion", "")):
        return errors
    return [e for e in errors if not (e[0] == "spec.flinkVersion" and e[1] == "enum")]


# ---------------------------------------------------------------- schemas


@pytest.mark.parametrize("version", k8s_schemas.KUBERNETES_VERSIONS)
@pytest.mark.parametrize("item", BUILTINS, ids=object_id)
def test_builtin_object_matches_the_kubernetes_schema(item, version):
    _, doc = item
    assert k8s_schemas.is_builtin(doc, version), f"Kubernetes {version} has no {doc['apiVersion']} {doc['kind']}"
    assert k8s_schemas.builtin_errors(doc, version) == []


@pytest.mark.parametrize("item", CUSTOMS, ids=object_id)
def test_custom_resource_matches_its_operators_crd(item):
    _, doc = item
    assert without_known_crd_gaps(doc, k8s_schemas.custom_resource_errors(doc)) == []


def test_the_flink_crd_gap_is_still_there():
    """When the pinned operator API lists Flink 2 versions, without_known_crd_gaps must go."""
    crd = k8s_schemas.crds()["FlinkDeployment"]
    schema = k8s_schemas.crd_version(crd, "flink.apache.org/v1beta1")["schema"]["openAPIV3Schema"]
    listed = schema["properties"]["spec"]["properties"]["flinkVersion"]["enum"]
    assert not any(FLINK_2_VERSION.fullmatch(v) for v in listed), \
        f"operator API {k8s_schemas.FLINK_OPERATOR_VERSION} lists {listed}: drop the exception"


# ---------------------------------------------------------------- the schemas can fail


def test_a_misspelt_field_in_a_kafka_spec_fails():
    kafka = copy.deepcopy(the("Kafka"))
    kafka["spec"]["kafka"]["listners"] = kafka["spec"]["kafka"].pop("listeners")
    paths = {(path, validator) for path, validator, _ in k8s_schemas.custom_resource_errors(kafka)}
    assert ("spec.kafka", "additionalProperties") in paths  # the unknown `listners`
    assert ("spec.kafka", "required") in paths  # and the missing `listeners`


def test_a_partition_count_that_is_not_a_number_fails():
    topic = copy.deepcopy(topics_in_manifests()[0])
    topic["spec"]["partitions"] = "six"
    assert [(p, v) for p, v, _ in k8s_schemas.custom_resource_errors(topic)] == [("spec.partitions", "type")]


def test_a_flink_configuration_value_that_is_not_a_string_fails():
    flink = copy.deepcopy(the("FlinkDeployment"))
    flink["spec"]["flinkConfiguration"]["taskmanager.numberOfTaskSlots"] = 4
    errors = without_known_crd_gaps(flink, k8s_schemas.custom_resource_errors(flink))
    assert [(p, v) for p, v, _ in errors] == [("spec.flinkConfiguration.taskmanager.numberOfTaskSlots", "type")]


def test_a_misspelt_label_field_in_custom_resource_metadata_fails():
    topic = copy.deepcopy(topics_in_manifests()[0])
    topic["metadata"]["label"] = topic["metadata"].pop("labels")
    assert [(p, v) for p, v, _ in k8s_schemas.custom_resource_errors(topic)] == [("metadata", "additionalProperties")]


def test_a_field_with_cel_rules_is_refused_rather_than_passed_unchecked():
    kafka = copy.deepcopy(the("Kafka"))
    kafka["spec"]["kafka"]["rack"] = {"topologyKey": "topology.kubernetes.io/zone"}
    assert [(p, v) for p, v, _ in k8s_schemas.custom_resource_errors(kafka)] == \
        [("spec.kafka.rack", "x-kubernetes-validations")]


def test_a_misspelt_field_in_a_pod_security_context_fails():
    agent = copy.deepcopy(the("DaemonSet", "iopipe-agent"))
    agent["spec"]["template"]["spec"]["containers"][0]["securityContext"]["privilege"] = False
    errors = k8s_schemas.builtin_errors(agent, k8s_schemas.KUBERNETES_VERSIONS[0])
    assert [(p, v) for p, v, _ in errors] == [("spec.template.spec.containers.0.securityContext", "additionalProperties")]


# ---------------------------------------------------------------- the agent


def agent_pod():
    return the("DaemonSet", "iopipe-agent")["spec"]["template"]["spec"]


def test_agent_adds_exactly_bpf_and_perfmon_and_is_not_privileged():
    pod = agent_pod()
    (container,) = pod["containers"]
    security = container["securityContext"]
    assert security["capabilities"]["drop"] == ["ALL"]
    assert sorted(security["capabilities"]["add"]) == ["BPF", "PERFMON"]
    assert security.get("privileged", False) is False
    assert security["readOnlyRootFilesystem"] is True
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert not any(pod.get(host) for host in ("hostPID", "hostNetwork", "hostIPC"))
    assert not any("hostPath" in volume for volume in pod.get("volumes", []))
    assert {"cpu", "memory"} <= set(container["resources"]["limits"])


def kafka_plain_bootstrap():
    """<cluster>-kafka-bootstrap:<port of the listener without TLS>: what iopipe's own
    clients use (kafka.yaml says why)."""
    kafka = the("Kafka")
    (plain,) = [listener for listener in kafka["spec"]["kafka"]["listeners"] if not listener["tls"]]
    return f"{kafka['metadata']['name']}-kafka-bootstrap:{plain['port']}"


def test_agent_produces_to_kafka_through_the_plain_listener_under_the_nodes_name():
    (container,) = agent_pod()["containers"]
    assert container["command"] == ["iopipe-agent"]
    args = container["args"]
    assert args[0] == "run"
    assert args[args.index("--output") + 1] == "kafka"
    assert args[args.index("--brokers") + 1] == kafka_plain_bootstrap()
    host = {env["name"]: env for env in container["env"]}["IOPIPE_HOST"]
    assert host["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"


def test_agent_keeps_its_state_file_across_container_restarts_on_a_writable_volume():
    pod = agent_pod()
    (container,) = pod["containers"]
    args = container["args"]
    state_file = Path(args[args.index("--state-file") + 1])
    (mount,) = [m for m in container["volumeMounts"] if state_file.is_relative_to(m["mountPath"])]
    assert not mount.get("readOnly", False)
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert "emptyDir" in volume, "kept across the container's restarts, within one boot"
    stall_s = int(re.search(r"CLOSE_STALL_TIMEOUT: Duration = Duration::from_secs\((\d+)\)",
                            (REPO / "agent/src/output.rs").read_text()).group(1))
    assert pod["terminationGracePeriodSeconds"] > stall_s, "room for the stall a closing agent waits out"


# ---------------------------------------------------------------- the live job


def flink():
    return the("FlinkDeployment")["spec"]


def test_flink_checkpoints_incrementally_in_rocksdb_to_object_storage_and_keeps_them_on_cancel():
    conf = flink()["flinkConfiguration"]
    assert conf["state.backend.type"] == "rocksdb"
    assert conf["execution.checkpointing.incremental"] == "true"
    assert conf["execution.checkpointing.dir"] == "s3://iopipe-flink/checkpoints"
    assert conf["execution.checkpointing.savepoint-dir"] == "s3://iopipe-flink/savepoints"
    assert conf["execution.checkpointing.interval"] == "10s"
    assert conf["execution.checkpointing.externalized-checkpoint-retention"] == "RETAIN_ON_CANCELLATION"
    assert conf["restart-strategy.type"] == "exponential-delay"


def test_flink_recovers_its_jobmanager_through_kubernetes_ha_and_takes_no_uploads():
    spec = flink()
    conf = spec["flinkConfiguration"]
    assert conf["high-availability.type"] == "kubernetes"
    assert conf["high-availability.storageDir"].startswith("s3://")
    assert conf["web.submit.enable"] == "false"
    assert spec["jobManager"]["replicas"] == 1
    # HA keeps the leader and the checkpoint pointers in ConfigMaps the JobManager writes.
    bindings = [doc for _, doc in OBJECTS if doc["kind"] == "RoleBinding"
                and {"kind": "ServiceAccount", "name": spec["serviceAccount"], "namespace": NAMESPACE} in doc["subjects"]]
    rules = [rule for binding in bindings for rule in the("Role", binding["roleRef"]["name"])["rules"]]
    assert any("configmaps" in rule["resources"] and {"create", "update", "delete"} <= set(rule["verbs"]) for rule in rules)


def test_flink_runs_the_live_job_from_savepoints_within_its_slots():
    spec = flink()
    job = spec["job"]
    assert spec["mode"] == "native"
    assert job["entryClass"] == "io.iopipe.jobs.LiveJob"
    assert job["args"] == ["--brokers", kafka_plain_bootstrap()]
    assert job["upgradeMode"] == "savepoint"
    slots = int(spec["flinkConfiguration"]["taskmanager.numberOfTaskSlots"])
    assert job["parallelism"] <= spec["taskManager"]["replicas"] * slots


def stream_jobs_pom():
    pom = ET.parse(REPO / "stream-jobs" / "pom.xml").getroot()
    return pom, {"m": "http://maven.apache.org/POM/4.0.0"}


def test_flink_version_is_the_one_the_job_is_built_against():
    pom, ns = stream_jobs_pom()
    major, minor = pom.find("m:properties/m:flink.version", ns).text.split(".")[:2]
    assert flink()["flinkVersion"] == f"v{major}_{minor}"


def test_image_tags_are_the_versions_of_what_they_package():
    pom, ns = stream_jobs_pom()
    agent_version = tomllib.loads((REPO / "agent" / "Cargo.toml").read_text())["package"]["version"]
    assert flink()["image"] == f"iopipe/stream-jobs:{pom.find('m:version', ns).text}"
    (container,) = agent_pod()["containers"]
    assert container["image"] == f"iopipe/agent:{agent_version}"


# ---------------------------------------------------------------- Kafka


def test_kafka_is_three_kraft_nodes_with_replication_3_min_isr_2_on_persistent_disks_and_tls():
    kafka = the("Kafka")["spec"]["kafka"]
    pool = the("KafkaNodePool")
    assert pool["metadata"]["labels"]["strimzi.io/cluster"] == the("Kafka")["metadata"]["name"]
    assert pool["spec"]["replicas"] == 3
    assert sorted(pool["spec"]["roles"]) == ["broker", "controller"]
    volumes = pool["spec"]["storage"]["volumes"]
    assert volumes and all(v["type"] == "persistent-claim" and not v.get("deleteClaim") for v in volumes)
    assert kafka["config"]["default.replication.factor"] == 3
    assert kafka["config"]["min.insync.replicas"] == 2
    assert any(listener["tls"] for listener in kafka["listeners"])


def test_topics_are_those_of_topics_json_with_three_replicas():
    cluster = the("Kafka")["metadata"]["name"]
    expected = [(t["name"], t["partitions"], 3, cluster) for t in TOPICS]
    actual = [(t["metadata"]["name"], t["spec"]["partitions"], t["spec"]["replicas"],
               t["metadata"]["labels"]["strimzi.io/cluster"]) for t in topics_in_manifests()]
    assert actual == expected


def test_committed_topics_are_what_the_generator_writes():
    result = subprocess.run([sys.executable, str(K8S / "generate.py"), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------- ClickHouse


def config_xml(configmap, key):
    return ET.fromstring(the("ConfigMap", configmap)["data"][key])


def pod_names(statefulset):
    spec = the("StatefulSet", statefulset)["spec"]
    return [f"{statefulset}-{ordinal}.{spec['serviceName']}" for ordinal in range(spec["replicas"])]


def test_clickhouse_is_one_shard_of_two_replicas_listed_by_their_stable_names():
    config = config_xml("clickhouse-config", "iopipe-cluster.xml")
    (shard,) = config.findall("remote_servers/iopipe/shard")
    assert shard.findtext("internal_replication") == "true"
    assert [r.findtext("host") for r in shard.findall("replica")] == pod_names("clickhouse")
    assert len(pod_names("clickhouse")) == 2
    assert the("Service", the("StatefulSet", "clickhouse")["spec"]["serviceName"])["spec"]["clusterIP"] == "None"
    macros = config.find("macros")
    assert macros.findtext("shard") and macros.find("replica").get("from_env") == "CLICKHOUSE_REPLICA"
    (container,) = the("StatefulSet", "clickhouse")["spec"]["template"]["spec"]["containers"]
    replica = {env["name"]: env for env in container["env"]}["CLICKHOUSE_REPLICA"]
    assert replica["value"] == "$(POD_NAME)"


def test_clickhouse_uses_all_three_keepers_and_they_know_each_other():
    keepers = pod_names("clickhouse-keeper")
    assert len(keepers) == 3
    config = config_xml("clickhouse-config", "iopipe-cluster.xml")
    assert [node.findtext("host") for node in config.findall("zookeeper/node")] == keepers
    keeper = config_xml("clickhouse-keeper-config", "keeper.xml")
    raft = [(s.findtext("id"), s.findtext("hostname")) for s in keeper.findall("keeper_server/raft_configuration/server")]
    # The container's command sets server_id to the pod's ordinal + 1.
    assert raft == [(str(ordinal + 1), name) for ordinal, name in enumerate(keepers)]
    (container,) = the("StatefulSet", "clickhouse-keeper")["spec"]["template"]["spec"]["containers"]
    assert "KEEPER_SERVER_ID=$(( ${HOSTNAME##*-} + 1 ))" in " ".join(container["args"])


# ---------------------------------------------------------------- all of it


def test_kustomization_lists_every_manifest():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert kustomization["namespace"] == NAMESPACE
    assert sorted(kustomization["resources"]) == [p.name for p in manifest_files()]


def test_every_object_but_the_namespace_is_in_the_iopipe_namespace():
    for _, doc in OBJECTS:
        if doc["kind"] == "Namespace":
            assert doc["metadata"]["name"] == NAMESPACE
        else:
            assert doc["metadata"].get("namespace") == NAMESPACE, doc["metadata"]["name"]


def test_every_container_has_a_memory_limit_and_a_read_only_root():
    for kind in ("DaemonSet", "StatefulSet"):
        for _, doc in OBJECTS:
            if doc["kind"] != kind:
                continue
            for container in doc["spec"]["template"]["spec"]["containers"]:
                assert "memory" in container["resources"]["limits"], doc["metadata"]["name"]
                assert container["securityContext"]["readOnlyRootFilesystem"] is True, doc["metadata"]["name"]
