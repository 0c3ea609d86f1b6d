#!/bin/bash
# Starts a single-node KRaft Kafka on 127.0.0.1 (the container shares the host's
# network), formats its storage on first start, then creates the topics listed in
# topics.txt (generated from schema/topics.json) and prints "iopipe: topics ready".
set -euo pipefail
PORT=${KAFKA_PORT:-9092}
CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-9093}
DATA=/var/lib/kafka
CP="/opt/kafka/libs/*"
JAVA=(java -Xms256m -Xmx512m -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties -cp "$CP")

mkdir -p "$DATA"
cat > /opt/kafka/server.properties <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:${CONTROLLER_PORT}
listeners=PLAINTEXT://127.0.0.1:${PORT},CONTROLLER://127.0.0.1:${CONTROLLER_PORT}
advertised.listeners=PLAINTEXT://127.0.0.1:${PORT}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=${DATA}
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
group.initial.rebalance.delay.ms=0
PROPS

if [ ! -f "$DATA/meta.properties" ]; then
  "${JAVA[@]}" kafka.tools.StorageTool format --standalone \
    -t "$("${JAVA[@]}" kafka.tools.StorageTool random-uuid)" -c /opt/kafka/server.properties
fi

create_topics() {
  until "${JAVA[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$PORT" --list >/dev/null 2>&1; do
    sleep 1
  done
  while read -r topic partitions; do
    "${JAVA[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$PORT" \
      --create --if-not-exists --topic "$topic" --partitions "$partitions" --replication-factor 1 >/dev/null
  done < /opt/kafka/topics.txt
  # The first consumer group to commit makes the broker create its offsets topic, and
  # commits fail until it is loaded: a consumer that wrote a block and then failed to
  # commit reads the block again (ClickHouse's Kafka tables do). Make it exist first.
  "${JAVA[@]}" org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "127.0.0.1:$PORT" \
    --topic io.agent.v1 --group iopipe-offsets-warmup --timeout-ms 3000 >/dev/null 2>&1 || true
  until "${JAVA[@]}" org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$PORT" --list 2>/dev/null \
        | grep -qx __consumer_offsets; do
    sleep 1
  done
  echo "iopipe: topics ready"
}
create_topics &
exec "${JAVA[@]}" kafka.Kafka /opt/kafka/server.properties
