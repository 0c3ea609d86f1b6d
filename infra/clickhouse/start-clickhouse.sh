#!/bin/bash
# Starts ClickHouse in the foreground on 127.0.0.1 with ports from the environment.
# Kafka-engine consumers of a new group start at the earliest offset: records
# produced before the tables existed are ingested, not skipped. A consumer commits its
# offsets after each block is written to the tables (at least once): a server killed in
# between re-reads that block, and the tables' deterministic keys absorb the repeat.
# Users and the ingestion profile: users.xml; the networks each user is accepted from:
# IOPIPE_CLICKHOUSE_WRITER_NETWORKS and IOPIPE_CLICKHOUSE_READER_NETWORKS (CIDRs).
# As a replica (CLICKHOUSE_REPLICA set, the cluster's compose file): Replicated* tables are
# coordinated by the ZooKeeper on 127.0.0.1:$ZOOKEEPER_PORT, and the cluster `iopipe`, one
# shard of the replicas whose native ports CLICKHOUSE_CLUSTER_TCP_PORTS lists, is what
# the Distributed tables read (as iopipe_reader: 18.16 has no cluster secret).
set -euo pipefail
fail() { echo "start-clickhouse: $*" >&2; exit 2; }
# The users file keeps each password as its SHA-256, unsalted (all 18.16 offers): safe for
# a random secret, not for a word a dictionary holds. So only random secrets are taken.
for role in ADMIN WRITER READER BRIDGE; do
  var="IOPIPE_CLICKHOUSE_${role}_PASSWORD"
  [ -n "${!var:-}" ] || fail "$var is not set; start the stack with python3 -m iopipe.stack up, which generates the passwords"
  password=${!var}
  [ "${#password}" -ge 32 ] || fail "$var is shorter than 32 characters: use a random secret (openssl rand -hex 16)"
done
sha256() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
# <ip> elements of the networks (CIDRs or addresses) a user is accepted from; this machine
# only by default. 18.16 compares a client's IPv4 address in its IPv6 form (::ffff:a.b.c.d)
# but applies an IPv4 network's prefix length to it unchanged, so 10.0.0.0/8 would admit
# every IPv4 client: an IPv4 network is written in the IPv6 form, its prefix 96 bits longer.
networks_xml() {
  local network xml=""
  for network in ${1:-127.0.0.1 ::1}; do
    if [[ $network =~ ^([0-9]{1,3}(\.[0-9]{1,3}){3})/([0-9]{1,2})$ ]] && (( BASH_REMATCH[3] <= 32 )); then
      network="::ffff:${BASH_REMATCH[1]}/$(( BASH_REMATCH[3] + 96 ))"
    elif ! [[ $network =~ ^[0-9A-Fa-f.:]+(/[0-9]{1,3})?$ ]] || [[ $network =~ ^[0-9.]+/ ]]; then
      fail "$network is not an address or CIDR network"
    fi
    xml+="<ip>${network}</ip>"
  done
  printf '%s' "$xml"
}
[ -w /var/lib/clickhouse ] || fail "/var/lib/clickhouse is not writable by $(id -un): a volume an older image made as root; run make down (or docker volume rm) to remove it"
writer_networks=$(networks_xml "${IOPIPE_CLICKHOUSE_WRITER_NETWORKS:-}")
reader_networks=$(networks_xml "${IOPIPE_CLICKHOUSE_READER_NETWORKS:-}")
umask 077  # the files written here hold passwords or their hashes
sed -e "s/@ADMIN_SHA256@/$(sha256 "$IOPIPE_CLICKHOUSE_ADMIN_PASSWORD")/" \
    -e "s/@WRITER_SHA256@/$(sha256 "$IOPIPE_CLICKHOUSE_WRITER_PASSWORD")/" \
    -e "s/@READER_SHA256@/$(sha256 "$IOPIPE_CLICKHOUSE_READER_PASSWORD")/" \
    -e "s/@BRIDGE_SHA256@/$(sha256 "$IOPIPE_CLICKHOUSE_BRIDGE_PASSWORD")/" \
    -e "s#@WRITER_NETWORKS@#${writer_networks}#" -e "s#@READER_NETWORKS@#${reader_networks}#" \
    /usr/local/share/iopipe/users.xml > /etc/clickhouse-server/users.d/iopipe.xml
# The Kafka engine's librdkafka settings (TLS, SASL) from the client settings mounted at
# /etc/iopipe/kafka, as <kafka> elements (ClickHouse reads security_protocol as
# security.protocol); none without them.
kafka_settings() {
  local file=/etc/iopipe/kafka/client.properties key value
  [ -r "$file" ] || return 0
  while IFS='=' read -r key value; do
    [[ -z $key || $key == \#* ]] && continue
    [[ $key =~ ^[a-z][a-z.]*$ ]] || fail "$file: $key is not a librdkafka setting"
    value=${value//&/&amp;}; value=${value//</&lt;}; value=${value//>/&gt;}
    printf '    <%s>%s</%s>\n' "${key//./_}" "$value" "${key//./_}"
  done < "$file"
}
replica_config() {
  [ -n "${CLICKHOUSE_REPLICA:-}" ] || return 0
  local replicas=""
  for port in ${CLICKHOUSE_CLUSTER_TCP_PORTS:?list the native ports of every replica}; do
    replicas+="<replica><host>127.0.0.1</host><port>${port}</port><user>iopipe_reader</user>"
    replicas+="<password>${IOPIPE_CLICKHOUSE_READER_PASSWORD}</password></replica>"
  done
  cat <<XML
  <zookeeper><node><host>127.0.0.1</host><port>${ZOOKEEPER_PORT:?the replicas need ZooKeeper}</port></node></zookeeper>
  <macros><shard>01</shard><replica>${CLICKHOUSE_REPLICA}</replica></macros>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <remote_servers replace="replace">
    <iopipe><shard><internal_replication>true</internal_replication>${replicas}</shard></iopipe>
  </remote_servers>
XML
}
kafka_xml=$(kafka_settings)
cat > /etc/clickhouse-server/config.d/iopipe.xml <<XML
<yandex>
  <listen_host>127.0.0.1</listen_host>
  <http_port>${CLICKHOUSE_HTTP_PORT:-8123}</http_port>
  <tcp_port>${CLICKHOUSE_TCP_PORT:-9000}</tcp_port>
  <interserver_http_port>${CLICKHOUSE_INTERSERVER_PORT:-9009}</interserver_http_port>
  <logger>
    <level>warning</level>
    <console>1</console>
  </logger>
  <kafka>
    <auto_offset_reset>smallest</auto_offset_reset>
${kafka_xml}
  </kafka>
$(replica_config)
</yandex>
XML
exec /usr/sbin/clickhouse-server --config-file=/etc/clickhouse-server/config.xml
