#!/bin/bash
# Starts a KRaft Kafka node (broker and controller in one process) on 127.0.0.1 (the
# container shares the host's network), formats its storage on first start; node 1 then
# creates the principals' credentials and ACLs and the topics listed in topics.txt
# (generated from schema/topics.json), and every node prints "iopipe: topics ready" once
# they all exist.
#
# Every listener is TLS, with the certificates of /etc/iopipe/kafka (a private CA's,
# iopipe/kafka_access.py makes them when the stack starts; nothing is committed):
#   KAFKA_PORT           clients: SASL_SSL, SCRAM-SHA-512; each principal's ACLs say what it may do
#   KAFKA_CERTIFICATES_PORT  clients with a certificate of the CA (TLS client authentication,
#                        principal User:CN=<its CN>): ClickHouse, whose librdkafka predates
#                        the SCRAM that Kafka 4 checks (confluentinc/librdkafka#4895)
#   KAFKA_INTERNAL_PORT  the nodes to each other and the tools run here: TLS client certificates
#   KAFKA_CONTROLLER_PORT  the KRaft quorum: TLS client certificates
# The nodes' certificate names the super user; principals are the SCRAM users of
# /etc/iopipe/kafka/users/ (NAME.scram: `SCRAM-SHA-512=iterations=8192,password=...`) and
# the certificates' CNs, whose ACLs acls.txt gives by role: agents produce to the agents'
# topics, iopipe-job reads those and writes the rest, CN=iopipe-clickhouse reads what
# ClickHouse stores, iopipe-admin (tests, operators) is a super user. super-users.txt and
# acls.txt are written by iopipe/kafka_access.py when the image is built.
#
# Alone (the default) it is its own quorum with replication factor 1. In a cluster each
# node gets KAFKA_NODE_ID, the same KAFKA_CLUSTER_ID and KAFKA_CONTROLLER_VOTERS
# ("1@127.0.0.1:9093,2@127.0.0.1:9095,..."), and KAFKA_REPLICATION copies of every
# partition, of which a write needs KAFKA_MIN_INSYNC acknowledged (with acks=all).
set -euo pipefail
PORT=${KAFKA_PORT:-9092}
CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-9093}
INTERNAL_PORT=${KAFKA_INTERNAL_PORT:-9094}
CERTIFICATES_PORT=${KAFKA_CERTIFICATES_PORT:-9095}
SECRETS=/etc/iopipe/kafka
NODE_ID=${KAFKA_NODE_ID:-1}
REPLICATION=${KAFKA_REPLICATION:-1}
MIN_INSYNC=${KAFKA_MIN_INSYNC:-1}
DATA=/var/lib/kafka
CP="/opt/kafka/libs/*:/opt/kafka/tools"
JAVA=(java -Xms256m -Xmx512m -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties -cp "$CP")
# The tools run for a second or two: a JVM that starts fast matters more than one that runs fast.
TOOL_JAVA=(java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties -cp "$CP")
TOOLS_CONFIG=/etc/kafka/tools.properties  # the tools connect as the node: its certificate
AS_NODE=(--bootstrap-server "127.0.0.1:$INTERNAL_PORT" --command-config "$TOOLS_CONFIG")
TOOL=("${TOOL_JAVA[@]}" org.apache.kafka.tools.TopicCommand "${AS_NODE[@]}")

for file in ca.pem node.pem; do
  [ -r "$SECRETS/$file" ] || { echo "start-kafka: $SECRETS/$file is missing: start the stack with python3 -m iopipe.stack up, which makes the certificates" >&2; exit 2; }
done

if [ -n "${KAFKA_CONTROLLER_VOTERS:-}" ]; then
  QUORUM="controller.quorum.voters=${KAFKA_CONTROLLER_VOTERS}"
else
  QUORUM="controller.quorum.bootstrap.servers=127.0.0.1:${CONTROLLER_PORT}"
fi

mkdir -p "$DATA"
[ -w "$DATA" ] || { echo "start-kafka: $DATA is not writable by $(id -un): a volume an older image made as root; run make down (or docker volume rm) to remove it" >&2; exit 2; }
cat > "$TOOLS_CONFIG" <<PROPS
security.protocol=SSL
ssl.keystore.type=PEM
ssl.keystore.location=${SECRETS}/node.pem
ssl.truststore.type=PEM
ssl.truststore.location=${SECRETS}/ca.pem
PROPS
cat > /etc/kafka/server.properties <<PROPS
process.roles=broker,controller
node.id=${NODE_ID}
${QUORUM}
listeners=SASL_SSL://127.0.0.1:${PORT},CERTIFICATES://127.0.0.1:${CERTIFICATES_PORT},INTERNAL://127.0.0.1:${INTERNAL_PORT},CONTROLLER://127.0.0.1:${CONTROLLER_PORT}
advertised.listeners=SASL_SSL://127.0.0.1:${PORT},CERTIFICATES://127.0.0.1:${CERTIFICATES_PORT},INTERNAL://127.0.0.1:${INTERNAL_PORT}
controller.listener.names=CONTROLLER
listener.security.protocol.map=SASL_SSL:SASL_SSL,CERTIFICATES:SSL,INTERNAL:SSL,CONTROLLER:SSL
inter.broker.listener.name=INTERNAL
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PEM
ssl.keystore.location=${SECRETS}/node.pem
ssl.truststore.type=PEM
ssl.truststore.location=${SECRETS}/ca.pem
listener.name.certificates.ssl.client.auth=required
listener.name.internal.ssl.client.auth=required
listener.name.controller.ssl.client.auth=required
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=$(cat /opt/kafka/super-users.txt)
allow.everyone.if.no.acl.found=false
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

# Node 1's users (from $SECRETS/users/), ACLs (acls.txt: one AclCommand's arguments after
# --add per line, from schema/topics.json) and topics (topics.txt), as ToolBatch lines: the
# tools run in one JVM, each again until it succeeds (until every node of a cluster has
# joined, a topic with more copies than nodes is refused).
bootstrap_commands() {
  local user line topic partitions
  for user in "$SECRETS"/users/*.scram; do
    [ -e "$user" ] || continue
    echo "kafka.admin.ConfigCommand ${AS_NODE[*]} --alter --entity-type users --entity-name $(basename "$user" .scram) --add-config-file $user"
  done
  while read -r line; do
    echo "org.apache.kafka.tools.AclCommand ${AS_NODE[*]} --add $line"
  done < /opt/kafka/acls.txt
  while read -r topic partitions _; do
    echo "org.apache.kafka.tools.TopicCommand ${AS_NODE[*]} --create --if-not-exists --topic $topic --partitions $partitions --replication-factor $REPLICATION"
  done < /opt/kafka/topics.txt
}

bootstrap() {
  local commands=/etc/kafka/bootstrap-commands.txt
  bootstrap_commands > "$commands"
  # Every command is idempotent: a batch whose JVM died (a tool that failed leaves its
  # client's threads behind, and a slow start makes many) runs whole again. Under set -e a
  # failure here would end this background job silently, and the node would never be ready.
  until "${TOOL_JAVA[@]}" ToolBatch "$commands"; do
    note "the tools' batch ended with status $?; running it again"
    sleep 2
  done
  note "users, ACLs and topics created"
  # The first consumer group to commit makes the broker create its offsets topic, and
  # commits fail until it is loaded: a consumer that wrote a block and then failed to
  # commit reads the block again (ClickHouse's Kafka tables do). Make it exist first.
  until "${TOOL[@]}" --list 2>/dev/null | grep -qx __consumer_offsets; do
    "${TOOL_JAVA[@]}" org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "127.0.0.1:$INTERNAL_PORT" \
      --consumer.config "$TOOLS_CONFIG" --topic io.agent.v1 --group iopipe-offsets-warmup --timeout-ms 3000 >/dev/null 2>&1 || true
  done
  note "offsets topic created"
}

topics_ready() {
  if [ "$NODE_ID" = 1 ]; then
    bootstrap
  fi
  until all_topics_listed; do
    sleep 2
  done
  note "topics ready"
}
topics_ready &
exec "${JAVA[@]}" kafka.Kafka /etc/kafka/server.properties
