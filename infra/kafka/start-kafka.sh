#!/bin/bash
# Starts a KRaft Kafka node (broker and controller in one process) on 127.0.0.1 (the
# container shares the host's network), formats its storage on first start; node 1 then
# creates the topics listed in topics.txt (generated from schema/topics.json), and every
# node prints "iopipe: topics ready" once they all exist.
#
# Alone (the default) it is its own quorum with replication factor 1. In a cluster each
# node gets KAFKA_NODE_ID, the same KAFKA_CLUSTER_ID and KAFKA_CONTROLLER_VOTERS
# ("1@127.0.0.1:9093,2@127.0.0.1:9095,..."), and KAFKA_REPLICATION copies of every
# partition, of which a write needs KAFKA_MIN_INSYNC acknowledged (with acks=all).
set -euo pipefail
PORT=${KAFKA_PORT:-9092}
CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-9093}
NODE_ID=${KAFKA_NODE_ID:-1}
REPLICATION=${KAFKA_REPLICATION:-1}
MIN_INSYNC=${KAFKA_MIN_INSYNC:-1}
DATA=/var/lib/kafka
CP="/opt/kafka/libs/*"
JAVA=(java -Xms256m -Xmx512m -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties -cp "$CP")
# The tools run for a second or two: a JVM that starts fast matters more than one that runs fast.
TOOL_JAVA=(java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties -cp "$CP")
TOOL=("${TOOL_JAVA[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$PORT")

if [ -n "${KAFKA_CONTROLLER_VOTERS:-}" ]; then
  QUORUM="controller.quorum.voters=${KAFKA_CONTROLLER_VOTERS}"
else
  QUORUM="controller.quorum.bootstrap.servers=127.0.0.1:${CONTROLLER_PORT}"
fi

mkdir -p "$DATA"
[ -w "$DATA" ] || { echo "start-kafka: $DATA is not writable by $(id -un): a volume an older image made as root; run make down (or docker volume rm) to remove it" >&2; exit 2; }
cat > /etc/kafka/server.properties <<PROPS
process.roles=broker,controller
node.id=${NODE_ID}
${QUORUM}
listeners=PLAINTEXT://127.0.0.1:${PORT},CONTROLLER://127.0.0.1:${CONTROLLER_PORT}
advertised.listeners=PLAINTEXT://127.0.0.1:${PORT}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=${DATA}
auto.create.topics.enable=false
default.replication.factor=${REPLICATION}
min.insync.replicas=${MIN_INSYNC}
offsets.topic.replication.factor=${REPLICATION}
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=${REPLICATION}
transaction.state.log.min.isr=${MIN_INSYNC}
share.coordinator.state.topic.replication.factor=${REPLICATION}
group.initial.rebalance.delay.ms=0
PROPS

if [ ! -f "$DATA/meta.properties" ]; then
  if [ -n "${KAFKA_CONTROLLER_VOTERS:-}" ]; then
    "${TOOL_JAVA[@]}" kafka.tools.StorageTool format -t "${KAFKA_CLUSTER_ID:?the nodes of a cluster share KAFKA_CLUSTER_ID}" \
      -c /etc/kafka/server.properties
  else
    "${TOOL_JAVA[@]}" kafka.tools.StorageTool format --standalone \
      -t "$("${TOOL_JAVA[@]}" kafka.tools.StorageTool random-uuid)" -c /etc/kafka/server.properties
  fi
fi

note() { echo "iopipe: $* ($SECONDS s after start)"; }

all_topics_listed() {
  local listed
  listed=$("${TOOL[@]}" --list 2>/dev/null) || return 1
  while read -r topic _; do
    grep -qx "$topic" <<<"$listed" || return 1
  done < <(cat /opt/kafka/topics.txt; echo __consumer_offsets)
}

create_topic() {
  # Until every node of a cluster has joined, a topic with more copies than nodes is refused.
  until "${TOOL[@]}" --create --if-not-exists --topic "$1" --partitions "$2" \
        --replication-factor "$REPLICATION" >/dev/null 2>&1; do
    sleep 2
  done
}

create_topics() {
  # One after another: each is a tool process, a JVM that takes seconds to start, and
  # more of them at once would only starve the starting brokers of CPU.
  while read -r topic partitions; do
    create_topic "$topic" "$partitions"
  done < /opt/kafka/topics.txt
  note "topics created"
  # The first consumer group to commit makes the broker create its offsets topic, and
  # commits fail until it is loaded: a consumer that wrote a block and then failed to
  # commit reads the block again (ClickHouse's Kafka tables do). Make it exist first.
  until "${TOOL[@]}" --list 2>/dev/null | grep -qx __consumer_offsets; do
    "${TOOL_JAVA[@]}" org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "127.0.0.1:$PORT" \
      --topic io.agent.v1 --group iopipe-offsets-warmup --timeout-ms 3000 >/dev/null 2>&1 || true
  done
  note "offsets topic created"
}

topics_ready() {
  if [ "$NODE_ID" = 1 ]; then
    create_topics
  fi
  until all_topics_listed; do
    sleep 2
  done
  note "topics ready"
}
topics_ready &
exec "${JAVA[@]}" kafka.Kafka /etc/kafka/server.properties
