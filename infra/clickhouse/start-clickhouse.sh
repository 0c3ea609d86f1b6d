#!/bin/bash
# Starts ClickHouse in the foreground on 127.0.0.1 with ports from the environment.
# Kafka-engine consumers of a new group start at the earliest offset: records
# produced before the tables existed are ingested, not skipped.
set -euo pipefail
mkdir -p /etc/clickhouse-server/config.d /var/lib/clickhouse /var/log/clickhouse-server
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
  </kafka>
</yandex>
XML
chown -R clickhouse:clickhouse /var/lib/clickhouse /var/log/clickhouse-server
exec su -s /bin/bash clickhouse -c "exec /usr/sbin/clickhouse-server --config-file=/etc/clickhouse-server/config.xml"
