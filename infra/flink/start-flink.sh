#!/bin/bash
# Starts a Flink process in the foreground: `jobmanager` or `taskmanager`.
# The containers share the host's network, so every address is 127.0.0.1 and the
# ports come from the environment (tests run a stack beside the demo's).
#
# Job state lives in RocksDB on each TaskManager's disk and is checkpointed,
# incrementally, to FLINK_STATE_DIR: a directory every JobManager and TaskManager of the
# cluster mounts at the same path (a shared volume here; object storage, s3://..., in
# production). Checkpoints are kept when the job is cancelled, so it can be restored
# from the latest one (`make upgrade-job` with no job running).
#
# With FLINK_HA_ZOOKEEPER (a ZooKeeper quorum, host:port,...) the JobManagers elect a
# leader through ZooKeeper and keep the running jobs' metadata under the state directory:
# a standby JobManager takes over the jobs of one that dies, from their latest checkpoint,
# and TaskManagers find whichever leads.
set -euo pipefail
ROLE=${1:?usage: start-flink.sh jobmanager|taskmanager}
STATE_DIR=${FLINK_STATE_DIR:-file:///var/lib/iopipe/flink}
if [[ $STATE_DIR == file://* ]] && [ ! -w "${STATE_DIR#file://}" ]; then
  echo "start-flink: ${STATE_DIR#file://} is not writable by $(id -un): a volume an older image made as root; run make down (or docker volume rm) to remove it" >&2; exit 2
fi

high_availability() {
  [ -n "${FLINK_HA_ZOOKEEPER:-}" ] || return 0
  cat <<HA
high-availability:
  type: zookeeper
  storageDir: ${STATE_DIR}/ha
  cluster-id: ${FLINK_CLUSTER_ID:-iopipe}
  zookeeper:
    quorum: ${FLINK_HA_ZOOKEEPER}
    path:
      root: /flink
HA
}
cat > /opt/flink/conf/config.yaml <<CONF
jobmanager:
  rpc:
    address: 127.0.0.1
    port: ${FLINK_RPC_PORT:-6123}
  bind-host: 127.0.0.1
  memory:
    process:
      size: 1024m
taskmanager:
  bind-host: 127.0.0.1
  host: 127.0.0.1
  numberOfTaskSlots: ${FLINK_TASK_SLOTS:-4}
  memory:
    process:
      size: 2048m
  # A job's subtasks spread over the TaskManagers rather than filling the first one's slots.
  load-balance:
    mode: SLOTS
rest:
  address: 127.0.0.1
  bind-address: 127.0.0.1
  port: ${FLINK_REST_PORT:-8081}
  # Stack samples of a task on demand (the web UI's flame graph; make bench-fleet's profile).
  flamegraph:
    enabled: true
parallelism:
  default: ${FLINK_PARALLELISM:-2}
state:
  backend:
    type: rocksdb
execution:
  checkpointing:
    dir: ${STATE_DIR}/checkpoints
    savepoint-dir: ${STATE_DIR}/savepoints
    incremental: true
    externalized-checkpoint-retention: RETAIN_ON_CANCELLATION
    num-retained: 3
# A failing task is restarted with growing pauses (1 s doubling to 1 min), for ever: a
# broker or ClickHouse away for an hour must not end the job. The pause is reset after
# an hour of running without failure.
restart-strategy:
  type: exponential-delay
  exponential-delay:
    initial-backoff: 1 s
    max-backoff: 1 min
    backoff-multiplier: 2.0
    reset-backoff-threshold: 1 h
blob:
  server:
    port: "0"
# No jar uploads through the REST API: jobs arrive as job graphs from the CLI (iopipe/flink_rest.py).
# The REST API still accepts those (POST /jobs) and cancels jobs, so it listens on
# 127.0.0.1 only; elsewhere put it behind TLS client authentication (security.ssl.rest.*).
web:
  submit:
    enable: false
$(high_availability)
env:
  java:
    opts:
      all: --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED
      # The parallel collector: keyed state is off the heap (RocksDB), and G1's concurrent
      # threads and write barriers cost the TaskManagers more CPU than its pauses save. At
      # 10,000 disks on one build (make bench-fleet), its collector threads took 14% of a
      # core against G1's 25%, and the job consumed 13,757 and 13,476 records/s against
      # G1's 12,219 and 8,370. infra/k8s/flink.yaml runs them alike.
      taskmanager: -XX:+UseParallelGC
CONF
exec "/opt/flink/bin/${ROLE}.sh" start-foreground
