#!/bin/bash
# Starts a Flink process in the foreground: `jobmanager` or `taskmanager`.
# The containers share the host's network, so every address is 127.0.0.1 and the
# ports come from the environment (tests run a stack beside the demo's).
set -euo pipefail
ROLE=${1:?usage: start-flink.sh jobmanager|taskmanager}
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
rest:
  address: 127.0.0.1
  bind-address: 127.0.0.1
  port: ${FLINK_REST_PORT:-8081}
parallelism:
  default: ${FLINK_PARALLELISM:-2}
blob:
  server:
    port: "0"
web:
  submit:
    enable: true
env:
  java:
    opts:
      all: --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED
CONF
exec "/opt/flink/bin/${ROLE}.sh" start-foreground
