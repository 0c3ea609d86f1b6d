"""The production manifests in infra/k8s hold together without a cluster: every object
matches the schema Kubernetes or its operator would check it against (k8s_schemas.py says
where each comes from), a misspelt field fails, and the manifests keep iopipe's own rules
(the agent's two capabilities, the job's durable checkpoints, topics from topics.json, every
Kafka client on TLS as its own principal allowed its part only, the master secret in the
job's pods only and each node's agent with its own host's key)."""
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

from iopipe import kafka_access
from iopipe.bench import taskmanager_java_options
from iopipe.contract import SAMPLING
from iopipe.paths import REPO

import k8s_schemas

K8S = REPO / "infra" / "k8s"
README = K8S / "README.md"
TOPICS_JSON = json.loads((REPO / "schema" / "topics.json").read_text())
PIPELINE = json.loads((REPO / "schema" / "pipeline.json").read_text())
# What `make bench-fleet` measured a 100,000-disk fleet to need (stream-jobs/bench/RESULTS-fleet.md).
FLEET_SIZING = json.loads((REPO / "stream-jobs" / "bench" / "fleet-sizing.json").read_text())
TOPICS = TOPICS_JSON["topics"] + TOPICS_JSON["accepted"]
NAMESPACE = "iopipe"
CUSTOM_KINDS = {"Kafka", "KafkaNodePool", "KafkaTopic", "KafkaUser", "FlinkDeployment"}
USERS_XML = REPO / "infra" / "clickhouse" / "users.xml"
USERS_MODERN_XML = REPO / "infra" / "clickhouse" / "users.modern.xml"
# schema/signing.json's example: a master secret and the key it gives one host.
SIGNING = json.loads((REPO / "schema" / "signing.json").read_text())
SIGNING_EXAMPLE = SIGNING["examples"][0]
# What agent-users is run with here: the example's host among them.
AGENT_NODES = ("node-a", "node-b.zone-1.example.com", SIGNING_EXAMPLE["host"])
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


def run_agent_users(*nodes, master_secret=SIGNING_EXAMPLE["master_secret_hex"] + "\n"):
    """iopipe.k8s agent-users as the README runs it: the master secret through a pipe."""
    return subprocess.run([sys.executable, "-m", "iopipe.k8s", "agent-users", "--signing-secret", "/dev/stdin", *nodes],
                          input=master_secret, capture_output=True, text=True, cwd=REPO)


def agent_users_output(nodes=AGENT_NODES):
    result = run_agent_users(*nodes)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def test_the_agent_users_printed_for_the_nodes_match_their_schemas():
    docs = agent_users_output()
    assert sorted(doc["kind"] for doc in docs) == \
        ["KafkaUser"] * len(AGENT_NODES) + ["Role"] + ["Secret"] * len(AGENT_NODES)
    for doc in docs:
        if doc["kind"] in CUSTOM_KINDS:
            assert k8s_schemas.custom_resource_errors(doc) == []
        else:
            for version in k8s_schemas.KUBERNETES_VERSIONS:
                assert k8s_schemas.builtin_errors(doc, version) == []


def test_agent_users_refuses_a_name_no_node_can_have():
    result = run_agent_users("Node_A")
    assert result.returncode != 0 and "Node_A" in result.stderr and not result.stdout


def test_agent_users_refuses_a_master_secret_that_is_not_64_hex_digits_and_never_shows_it():
    result = run_agent_users("node-a", master_secret="correct horse battery staple\n")
    assert result.returncode != 0 and "--signing-secret" in result.stderr and not result.stdout
    assert "horse" not in result.stderr


def host_keys(docs):
    """{Secret name: signing.key} of agent-users' output."""
    return {doc["metadata"]["name"]: doc["stringData"]["signing.key"] for doc in docs if doc["kind"] == "Secret"}


def test_each_nodes_key_is_the_one_schema_signing_json_derives_for_its_name():
    keys = host_keys(agent_users_output())
    assert keys[f"iopipe-host-key-{SIGNING_EXAMPLE['host']}"] == SIGNING_EXAMPLE["host_key_hex"]
    assert sorted(keys) == sorted(f"iopipe-host-key-{node}" for node in AGENT_NODES)
    assert len(set(keys.values())) == len(AGENT_NODES), "each node its own key"


def test_agent_users_print_the_nodes_keys_but_never_the_master_secret():
    result = run_agent_users(*AGENT_NODES)
    assert SIGNING_EXAMPLE["master_secret_hex"] not in result.stdout + result.stderr


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


def test_an_acl_rule_in_the_singular_form_strimzis_v1_dropped_fails():
    user = copy.deepcopy(the("KafkaUser", "iopipe-job"))
    rule = user["spec"]["authorization"]["acls"][0]
    rule["operation"] = rule.pop("operations")[0]
    paths = {(path, validator) for path, validator, _ in k8s_schemas.custom_resource_errors(user)}
    assert ("spec.authorization.acls.0", "additionalProperties") in paths  # the unknown `operation`
    assert ("spec.authorization.acls.0", "required") in paths  # and the missing `operations`


def test_a_misspelt_label_field_in_custom_resource_metadata_fails():
    topic = copy.deepcopy(topics_in_manifests()[0])
    topic["metadata"]["label"] = topic["metadata"].pop("labels")
    assert [(p, v) for p, v, _ in k8s_schemas.custom_resource_errors(topic)] == [("metadata", "additionalProperties")]


def test_a_value_that_breaks_a_crds_cel_rule_fails_with_the_rules_message():
    kafka = copy.deepcopy(the("Kafka"))
    kafka["spec"]["kafka"]["rack"] = {"topologyKey": ""}
    assert [(p, v) for p, v, _ in k8s_schemas.custom_resource_errors(kafka)] == \
        [("spec.kafka.rack", "x-kubernetes-validations")]
    user = copy.deepcopy(the("KafkaUser", "iopipe-clickhouse"))
    user["spec"]["authentication"] = {"type": "tls", "validityDays": 30}
    assert k8s_schemas.custom_resource_errors(user) == [
        ("spec.authentication", "x-kubernetes-validations",
         "Both 'validityDays' and 'renewalDays' must be set together, or both must be unset.")]


def test_a_value_that_keeps_a_crds_cel_rules_passes():
    kafka = copy.deepcopy(the("Kafka"))
    kafka["spec"]["kafka"]["rack"] = {"topologyKey": "topology.kubernetes.io/zone"}
    assert k8s_schemas.custom_resource_errors(kafka) == []


def test_a_cel_rule_that_cannot_be_evaluated_here_counts_as_broken():
    """Kubernetes' own CEL functions (isURL, quantity, ...) are not cel-python's."""
    (message,) = k8s_schemas.broken_cel_rules({"url": "https://example.com"}, [{"rule": "isURL(self.url)"}])
    assert "cannot be evaluated here" in message


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


def kafka_scram_bootstrap():
    """<cluster>-kafka-bootstrap:<port of the TLS listener with SCRAM passwords>: what
    iopipe's own clients use (kafka.yaml)."""
    kafka = the("Kafka")
    (scram,) = [listener for listener in kafka["spec"]["kafka"]["listeners"]
                if listener.get("authentication", {}).get("type") == "scram-sha-512"]
    return f"{kafka['metadata']['name']}-kafka-bootstrap:{scram['port']}"


def env_of(container):
    return {env["name"]: env for env in container.get("env", [])}


def mounted_at(pod, container, path):
    """The volume of `pod` whose mount in `container` holds `path`."""
    (mount,) = [m for m in container["volumeMounts"] if Path(path).is_relative_to(m["mountPath"])]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    return volume


def secret_sources(volume):
    """The Secrets a secret or projected volume holds, each as {"name", "items"}."""
    sources = [source["secret"] for source in volume.get("projected", {}).get("sources", []) if "secret" in source]
    if "secret" in volume:
        sources.append({"name": volume["secret"]["secretName"], "items": volume["secret"].get("items", [])})
    return sources


def secret_keys(volume):
    """(Secret, key) pairs a secret or projected volume holds."""
    return {(source["name"], item["key"]) for source in secret_sources(volume) for item in source["items"]}


def secret_item_at(pod, container, path):
    """(Secret, key) of the file at `path` in `container`."""
    (mount,) = [m for m in container["volumeMounts"] if Path(path).is_relative_to(m["mountPath"])]
    volume = mounted_at(pod, container, path)
    (found,) = [(source["name"], item["key"]) for source in secret_sources(volume) for item in source["items"]
                if Path(mount["mountPath"]) / item["path"] == Path(path)]
    return found


def cluster_ca():
    """The Secret and key where Strimzi keeps the certificate of the cluster's CA."""
    return (f"{the('Kafka')['metadata']['name']}-cluster-ca-cert", "ca.crt")


def test_agent_produces_to_kafka_over_tls_as_its_nodes_principal():
    pod = agent_pod()
    (container,) = pod["containers"]
    assert container["command"] == ["iopipe-agent"]
    args = container["args"]
    assert args[0] == "run"
    assert args[args.index("--output") + 1] == "kafka"
    assert args[args.index("--brokers") + 1] == kafka_scram_bootstrap()
    assert env_of(container)["IOPIPE_HOST"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    # The settings come from the init container, through a volume in memory both mount.
    config = args[args.index("--kafka-config") + 1]
    volume = mounted_at(pod, container, config)
    assert volume["emptyDir"]["medium"] == "Memory"
    (init,) = pod["initContainers"]
    assert mounted_at(pod, init, config) == volume
    script = " ".join(init["args"])
    assert config in script and 'user="agent-$IOPIPE_HOST"' in script and "umask 077" in script
    assert env_of(init)["IOPIPE_HOST"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    assert "ssl.ca.location=/etc/iopipe/kafka-ca/ca.crt" in script
    assert secret_keys(mounted_at(pod, container, "/etc/iopipe/kafka-ca/ca.crt")) == {cluster_ca()}


def test_agent_signs_with_its_nodes_key_for_the_host_its_records_name():
    pod = agent_pod()
    (container,) = pod["containers"]
    (init,) = pod["initContainers"]
    args = container["args"]
    key_file = args[args.index("--signing-key") + 1]
    # Written by the init container (mode 600, umask 077) into the volume in memory both mount.
    assert mounted_at(pod, container, key_file) == mounted_at(pod, init, key_file)
    assert mounted_at(pod, container, key_file)["emptyDir"]["medium"] == "Memory"
    script = " ".join(init["args"])
    assert f"> {key_file}" in script
    # From the Secret agent-users makes for the node the pod runs on ...
    assert 'secret_key "iopipe-host-key-$IOPIPE_HOST" signing.key' in script
    assert env_of(init)["IOPIPE_HOST"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    # ... whose name, the one its key is derived for, is the host the records name.
    assert "--host" not in args
    assert env_of(container)["IOPIPE_HOST"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"


def test_only_the_agents_init_container_holds_an_api_token():
    pod = agent_pod()
    assert pod["automountServiceAccountToken"] is False
    tokens = {v["name"] for v in pod["volumes"]
              if any("serviceAccountToken" in s for s in v.get("projected", {}).get("sources", []))}
    assert len(tokens) == 1
    (container,) = pod["containers"]
    (init,) = pod["initContainers"]
    assert not tokens & {m["name"] for m in container["volumeMounts"]}
    assert tokens <= {m["name"] for m in init["volumeMounts"]}


def test_the_agents_account_may_get_the_agents_secrets_and_nothing_else():
    pod = agent_pod()
    assert the("ServiceAccount", pod["serviceAccountName"])["automountServiceAccountToken"] is False
    subject = {"kind": "ServiceAccount", "name": pod["serviceAccountName"], "namespace": NAMESPACE}
    bindings = [doc for _, doc in OBJECTS if doc["kind"] == "RoleBinding" and subject in doc["subjects"]]
    assert [b["roleRef"]["kind"] for b in bindings] == ["Role"]
    (role,) = [doc for doc in agent_users_output() if doc["kind"] == "Role"]
    assert role["metadata"]["name"] == bindings[0]["roleRef"]["name"]
    (rule,) = role["rules"]
    assert rule == {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                    "resourceNames": sorted([f"agent-{node}" for node in AGENT_NODES]
                                            + [f"iopipe-host-key-{node}" for node in AGENT_NODES])}


def test_agent_keeps_its_state_file_across_container_restarts_on_a_writable_volume():
    pod = agent_pod()
    (container,) = pod["containers"]
    args = container["args"]
    state_file = Path(args[args.index("--state-file") + 1])
    (mount,) = [m for m in container["volumeMounts"] if state_file.is_relative_to(m["mountPath"])]
    assert not mount.get("readOnly", False)
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert "emptyDir" in volume, "kept across the container's restarts, within one boot"
    output_rs = (REPO / "agent/src/output.rs").read_text()
    delivery_s = int(re.search(r"DEFAULT_DELIVERY_TIMEOUT_S: u64 = (\d+);", output_rs).group(1))
    margin_s = int(re.search(r"CLOSE_MARGIN: Duration = Duration::from_secs\((\d+)\)", output_rs).group(1))
    assert "--kafka-delivery-timeout" not in container["args"]
    assert pod["terminationGracePeriodSeconds"] > delivery_s + margin_s, "room for a closing agent's records' delivery timeout"


def test_the_agents_liveness_is_its_loop_and_only_scrapers_reach_its_port():
    pod = agent_pod()
    (container,) = pod["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz", "/metrics answers with stale counters for ever"
    (port,) = container["ports"]
    policy = the("NetworkPolicy", "iopipe-agent-metrics")["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= agent_pod_labels().items()
    assert policy["policyTypes"] == ["Ingress"]
    (rule,) = policy["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": port["name"]}]
    assert all(source.get("podSelector", {}).get("matchLabels") for source in rule["from"]), "scrapers only, not every pod"


def agent_pod_labels():
    return the("DaemonSet", "iopipe-agent")["spec"]["template"]["metadata"]["labels"]


# ---------------------------------------------------------------- the live job


def flink():
    return the("FlinkDeployment")["spec"]


def test_the_job_has_the_slots_its_measured_rate_gives_the_fleet_it_is_sized_for():
    spec = flink()
    slots_per_taskmanager = int(spec["flinkConfiguration"]["taskmanager.numberOfTaskSlots"])
    slots = FLEET_SIZING["slots"]
    assert spec["job"]["parallelism"] == slots, "flink.yaml's parallelism is fleet-sizing.json's slots"
    assert spec["taskManager"]["replicas"] == -(-slots // slots_per_taskmanager), "TaskManagers enough for its slots"
    assert spec["taskManager"]["resource"]["cpu"] == slots_per_taskmanager, "a core a slot, as a slot was measured"
    assert f"{slots} slots" in (K8S / "flink.yaml").read_text(), "the comment says the figure it is held to"


def test_flink_checkpoints_incrementally_in_rocksdb_to_object_storage_and_keeps_them_on_cancel():
    conf = flink()["flinkConfiguration"]
    assert conf["state.backend.type"] == "rocksdb"
    assert conf["execution.checkpointing.incremental"] == "true"
    assert conf["execution.checkpointing.dir"] == "s3://iopipe-flink/checkpoints"
    assert conf["execution.checkpointing.savepoint-dir"] == "s3://iopipe-flink/savepoints"
    assert conf["execution.checkpointing.interval"] == f"{PIPELINE['checkpoint_interval_s']}s"  # what the job asks for
    assert conf["execution.checkpointing.externalized-checkpoint-retention"] == "RETAIN_ON_CANCELLATION"
    assert conf["restart-strategy.type"] == "exponential-delay"


def test_taskmanagers_run_the_garbage_collector_the_benchmarks_measured():
    local = " ".join(taskmanager_java_options())  # infra/flink/start-flink.sh's, which bench-jobs' JVM runs too
    assert flink()["flinkConfiguration"]["env.java.opts.taskmanager"] == local == "-XX:+UseParallelGC"


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
    assert job["args"][:2] == ["--brokers", kafka_scram_bootstrap()]
    assert job["upgradeMode"] == "savepoint"
    slots = int(spec["flinkConfiguration"]["taskmanager.numberOfTaskSlots"])
    assert job["parallelism"] <= spec["taskManager"]["replicas"] * slots


def test_flink_connects_to_kafka_with_the_settings_of_its_principal_and_the_cluster_ca():
    spec = flink()
    args = spec["job"]["args"]
    config = Path(args[args.index("--kafka-config") + 1])
    pod = spec["podTemplate"]["spec"]
    (container,) = pod["containers"]
    volume = mounted_at(pod, container, config)
    assert secret_keys(volume) == {("iopipe-job-kafka", config.name), cluster_ca()}
    items = {item["key"]: item["path"] for source in volume["projected"]["sources"]
             for item in source["secret"]["items"]}
    mount = Path(next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == volume["name"]))
    assert mount / items[config.name] == config
    assert (mount / items["ca.crt"]).as_posix() in README.read_text(), "the README's client.properties names it"


MASTER_SECRET = "iopipe-signing-secret"  # the Secret the installer makes (README.md)
FLINK_IMAGE_GID = 9999  # the flink user's group in the official Flink image


def signing_secret_option():
    """The job's option that names the master secret's file (HostSignatures.OPTION)."""
    java = (REPO / "stream-jobs/src/main/java/io/iopipe/jobs/records/HostSignatures.java").read_text()
    return "--" + re.search(r'String OPTION = "([\w-]+)";', java).group(1)


def test_the_job_checks_every_records_signature_with_the_master_secret_from_its_secret():
    spec = flink()
    args = spec["job"]["args"]
    secret_file = args[args.index(signing_secret_option()) + 1]
    pod = spec["podTemplate"]["spec"]
    (container,) = pod["containers"]
    assert secret_item_at(pod, container, secret_file) == (MASTER_SECRET, "signing.secret")
    (mount,) = [m for m in container["volumeMounts"] if Path(secret_file).is_relative_to(m["mountPath"])]
    assert mount["readOnly"] is True
    assert mounted_at(pod, container, secret_file)["secret"]["defaultMode"] == 0o440, "its group's only"
    assert pod["securityContext"]["fsGroup"] == FLINK_IMAGE_GID
    assert f"--from-file={Path(secret_file).name}=/dev/stdin" in README.read_text(), "the README's command makes it"


def secrets_referenced(doc):
    """Names of the Secrets an object's pods get: volumes (secret, projected), env and envFrom."""
    found = set()
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key == "secretName":
                found.add(value)
            elif key in ("secret", "secretKeyRef", "secretRef") and isinstance(value, dict) and "name" in value:
                found.add(value["name"])
            found |= secrets_referenced(value)
    elif isinstance(doc, list):
        for item in doc:
            found |= secrets_referenced(item)
    return found


def test_only_the_flink_pods_get_the_master_secret():
    holders = [f"{doc['kind']}/{doc['metadata']['name']}" for _, doc in OBJECTS if MASTER_SECRET in secrets_referenced(doc)]
    assert holders == [f"FlinkDeployment/{the('FlinkDeployment')['metadata']['name']}"]
    (init,) = agent_pod()["initContainers"]
    assert MASTER_SECRET not in " ".join(init["args"])
    (role,) = [doc for doc in agent_users_output() if doc["kind"] == "Role"]
    assert MASTER_SECRET not in role["rules"][0]["resourceNames"]


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


def test_every_kafka_listener_is_tls_and_authenticates_and_acls_decide():
    kafka = the("Kafka")["spec"]["kafka"]
    assert all(listener["tls"] and listener["authentication"]["type"] for listener in kafka["listeners"])
    assert kafka["authorization"] == {"type": "simple"}, "no super users beyond Strimzi's own"


def listener_of(bootstrap):
    """The listener of the Kafka in kafka.yaml that a client's bootstrap address reaches."""
    kafka = the("Kafka")
    host, port = bootstrap.rsplit(":", 1)
    assert host == f"{kafka['metadata']['name']}-kafka-bootstrap"
    (listener,) = [listener for listener in kafka["spec"]["kafka"]["listeners"] if listener["port"] == int(port)]
    return listener


# librdkafka's and the Java client's security.protocol for a listener's authentication.
PROTOCOL_OF_AUTHENTICATION = {"scram-sha-512": "SASL_SSL", "tls": "SSL"}


def kafka_clients():
    """{client: (bootstrap address, security.protocol)} of every Kafka client the manifests
    run: the agent (its init container writes its settings), the job (its settings are the
    README's client.properties) and ClickHouse's Kafka tables (the migrations name their
    brokers, README.md)."""
    (agent,) = agent_pod()["containers"]
    (init,) = agent_pod()["initContainers"]
    job_args = flink()["job"]["args"]
    readme = README.read_text()
    (job_protocol,) = re.findall(r"security\.protocol=(\w+)", readme)
    (clickhouse_brokers,) = set(re.findall(r"iopipe\.migrate up .*?--kafka-brokers ([\w.:-]+)", readme, re.S))
    return {
        "agent": (agent["args"][agent["args"].index("--brokers") + 1],
                  re.search(r"security\.protocol=(\w+)", " ".join(init["args"])).group(1)),
        "job": (job_args[job_args.index("--brokers") + 1], job_protocol),
        "clickhouse": (clickhouse_brokers, clickhouse_kafka_settings()["security_protocol"]),
    }


@pytest.mark.parametrize("client", ["agent", "job", "clickhouse"])
def test_every_kafka_client_connects_over_tls_as_its_listener_authenticates(client):
    bootstrap, protocol = kafka_clients()[client]
    listener = listener_of(bootstrap)
    assert listener["tls"] is True
    assert PROTOCOL_OF_AUTHENTICATION[listener["authentication"]["type"]] == protocol


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


def topics_by_producer(*producers):
    return {t["name"] for t in TOPICS_JSON["topics"] if t["producer"] in producers}


ACCEPTED = {t["name"] for t in TOPICS_JSON["accepted"]}


def acls(user):
    """{(resource type, name, pattern): operations} of a KafkaUser."""
    assert user["spec"]["authorization"]["type"] == "simple"
    found = {}
    for rule in user["spec"]["authorization"]["acls"]:
        resource = rule["resource"]
        assert rule.get("type", "allow") == "allow"
        key = (resource["type"], resource["name"], resource.get("patternType", "literal"))
        assert key not in found
        found[key] = set(rule["operations"])
    return found


def topics_allowed(found, *operations):
    return {name for (kind, name, _), ops in found.items() if kind == "topic" and set(operations) <= ops}


def group_prefixes(found):
    assert all(ops == {"Read"} for (kind, _, _), ops in found.items() if kind == "group")
    return {name for (kind, name, pattern) in found if kind == "group" and pattern == "prefix"}


def kafka_user(name):
    user = the("KafkaUser", name)
    assert user["metadata"]["labels"]["strimzi.io/cluster"] == the("Kafka")["metadata"]["name"]
    return user


def kafka_access_acls(principal):
    """{(resource type, name, pattern): operations} that the compose stack's ACLs
    (kafka_access.acl_lines, AclCommand arguments) give `principal`, in a KafkaUser's terms."""
    found = {}
    for line in kafka_access.acl_lines(TOPICS_JSON["topics"], TOPICS_JSON["accepted"]):
        words = line.split()
        pairs = list(zip(words[::2], words[1::2]))
        if ("--allow-principal", principal) not in pairs:
            continue
        pattern = "prefix" if ("--resource-pattern-type", "prefixed") in pairs else "literal"
        operations = {value for flag, value in pairs if flag == "--operation"}
        for flag, value in pairs:
            if flag in ("--topic", "--group"):
                found.setdefault((flag.removeprefix("--"), value, pattern), set()).update(operations)
    return found


@pytest.mark.parametrize("name, authentication", [(kafka_access.JOB, "scram-sha-512"),
                                                  (kafka_access.CLICKHOUSE, "tls")])
def test_the_job_and_clickhouse_are_the_compose_stacks_principals_with_its_acls(name, authentication):
    """ClickHouse by its certificate, whose principal Strimzi names CN=<user> as
    kafka_access does; its ACLs are those of that principal."""
    user = kafka_user(name)
    assert user["spec"]["authentication"] == {"type": authentication}
    assert (name in kafka_access.CERTIFICATE_PRINCIPALS) == (authentication == "tls")
    assert acls(user) == kafka_access_acls(kafka_access.kafka_principal(name))


def test_the_job_reads_the_agents_records_and_writes_the_rest_and_the_dead_letters():
    found = acls(kafka_user("iopipe-job"))
    assert topics_allowed(found, "Read", "Describe") == topics_by_producer("agent")
    assert topics_allowed(found, "Write", "Describe") == topics_by_producer("stream-jobs", "any") | ACCEPTED
    assert all(ops <= {"Read", "Write", "Describe"} and not {"Read", "Write"} <= ops for ops in found.values())
    assert group_prefixes(found) == {TOPICS_JSON["consumer_groups"]["stream-jobs"]}  # LiveJob's --group-id default


def test_clickhouse_reads_what_it_stores_and_writes_nothing():
    found = acls(kafka_user("iopipe-clickhouse"))
    assert topics_allowed(found, "Read", "Describe") == topics_by_producer("stream-jobs") | ACCEPTED
    assert all(ops <= {"Read", "Describe"} for ops in found.values())
    assert group_prefixes(found) == {TOPICS_JSON["consumer_groups"]["clickhouse"]}  # its Kafka tables' groups' prefix


def test_each_nodes_agent_writes_its_records_and_the_dead_letters_and_reads_nothing():
    users = [doc for doc in agent_users_output() if doc["kind"] == "KafkaUser"]
    assert sorted(u["metadata"]["name"] for u in users) == sorted(f"agent-{node}" for node in AGENT_NODES)
    for user in users:
        assert user["spec"]["authentication"] == {"type": "scram-sha-512"}
        found = acls(user)
        assert set(found) == {("topic", name, "literal") for name in topics_by_producer("agent", "any")}
        assert all(ops == {"Write", "Describe"} for ops in found.values())


def test_each_agents_producer_quota_holds_a_full_hosts_event_budget():
    budget = SAMPLING["event_budget"]  # the agent's default (agent/build.rs compiles it in)
    assert kafka_access.AGENT_PRODUCER_BYTE_RATE >= \
        kafka_access.AGENT_QUOTA_DISKS * budget * kafka_access.AGENT_EVENT_BYTES
    # An event record as sent: the largest example, its key and its signature header.
    events = (REPO / "schema/examples/io.event.v1.valid.ndjson").read_text().splitlines()
    signature = len(SIGNING["header"]) + len(SIGNING_EXAMPLE["header_value"])
    assert max(map(len, events)) + len("web-17/nvme0n1") + signature < kafka_access.AGENT_EVENT_BYTES
    for user in agent_users_output():
        if user["kind"] == "KafkaUser":
            assert user["spec"]["quotas"] == {"producerByteRate": kafka_access.AGENT_PRODUCER_BYTE_RATE}


def test_committed_topics_and_users_are_what_the_generator_writes():
    result = subprocess.run([sys.executable, "-m", "iopipe.k8s", "--check"], capture_output=True, text=True, cwd=REPO)
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


def clickhouse_pod():
    return the("StatefulSet", "clickhouse")["spec"]["template"]["spec"]


def clickhouse_kafka_settings():
    """The Kafka tables' librdkafka settings, as <kafka> elements (dots as underscores)."""
    return {setting.tag: setting.text for setting in config_xml("clickhouse-config", "iopipe-cluster.xml").find("kafka")}


def test_clickhouse_reads_kafka_by_its_kafka_users_certificate_as_in_the_compose_stack():
    settings = clickhouse_kafka_settings()
    compose = {key.replace(".", "_"): value for key, value in kafka_access.certificate_settings().items()}
    assert settings.keys() - {"auto_offset_reset"} == compose.keys()
    assert settings["security_protocol"] == compose["security_protocol"] == "SSL"
    pod = clickhouse_pod()
    (container,) = pod["containers"]
    assert secret_item_at(pod, container, settings["ssl_ca_location"]) == cluster_ca()
    assert secret_item_at(pod, container, settings["ssl_certificate_location"]) == (kafka_access.CLICKHOUSE, "user.crt")
    assert secret_item_at(pod, container, settings["ssl_key_location"]) == (kafka_access.CLICKHOUSE, "user.key")
    assert mounted_at(pod, container, settings["ssl_key_location"])["projected"]["defaultMode"] == 0o440


def users_d():
    """users.d of the ClickHouse servers: file name -> the Secret key it comes from."""
    pod = clickhouse_pod()
    (container,) = pod["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == "/etc/clickhouse-server/users.d"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    return {item["path"]: item["key"] for item in volume["secret"]["items"]}


def test_the_modern_users_file_lets_the_reader_set_its_query_time_limit_within_the_profiles_own():
    modern = ET.parse(USERS_MODERN_XML).getroot()
    users = ET.parse(USERS_XML).getroot()
    defined = {profile.tag for profile in users.find("profiles")}
    named = {profile.tag for profile in modern.find("profiles")}
    assert named and named <= defined
    reader = users.find("profiles/iopipe_reader")
    assert reader.findtext("readonly") == "1"
    (constraint,) = modern.find("profiles/iopipe_reader/constraints")
    assert constraint.tag == "max_execution_time"
    assert constraint.findtext("max") == reader.findtext("max_execution_time")
    assert constraint.find("changeable_in_readonly") is not None
    assert float(constraint.findtext("min")) > 0, "max_execution_time 0 is no limit at all"


def test_clickhouse_servers_load_both_users_files_and_let_changeable_in_readonly_work():
    assert sorted(users_d()) == ["iopipe-modern.xml", "iopipe.xml"]
    config = config_xml("clickhouse-config", "iopipe-cluster.xml")
    assert config.findtext("access_control_improvements/settings_constraints_replace_previous") == "true"
    # The README's command puts each file in the Secret under its key.
    readme = README.read_text()
    assert f"{users_d()['iopipe-modern.xml']}=infra/clickhouse/{USERS_MODERN_XML.name}" in readme
    assert f"{users_d()['iopipe.xml']}=/dev/stdin" in readme


def test_the_readmes_command_fills_in_every_placeholder_of_the_users_file():
    placeholders = set(re.findall(r"@[A-Z_0-9]+@", USERS_XML.read_text()))
    filled = set(re.findall(r"s[/#](@[A-Z_0-9]+@)[/#]", README.read_text()))
    assert placeholders and placeholders <= filled, f"the README's sed leaves {sorted(placeholders - filled)}"


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


def test_the_readmes_commands_hand_kubectl_secrets_through_pipes_never_as_arguments():
    readme = README.read_text()
    assert "--from-literal" not in readme, "ps shows every process's arguments"
    assert readme.count("/dev/stdin") >= 5  # users, interserver, master secret, S3 keys, job settings
