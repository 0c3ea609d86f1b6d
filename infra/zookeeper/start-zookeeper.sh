#!/bin/bash
# Starts a standalone ZooKeeper on 127.0.0.1:$ZOOKEEPER_PORT (the container shares the
# host's network), its data on /var/lib/zookeeper. One node holds this machine's cluster
# together; a production ensemble has three or five (infra/k8s).
# `echo ruok` on the port answers `imok` once it serves.
set -euo pipefail
PORT=${ZOOKEEPER_PORT:-2181}
DATA=/var/lib/zookeeper
mkdir -p "$DATA"
[ -w "$DATA" ] || { echo "start-zookeeper: $DATA is not writable by $(id -un): a volume an older image made as root; run make down (or docker volume rm) to remove it" >&2; exit 2; }
cat > /etc/zookeeper/zoo.cfg <<CFG
dataDir=${DATA}
clientPortAddress=127.0.0.1
clientPort=${PORT}
tickTime=2000
initLimit=10
syncLimit=5
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,mntr
autopurge.snapRetainCount=3
autopurge.purgeInterval=1
CFG
exec java -Xms128m -Xmx256m -Dlogback.configurationFile=/opt/zookeeper/logback.xml -cp "/opt/zookeeper/libs/*" \
  org.apache.zookeeper.server.quorum.QuorumPeerMain /etc/zookeeper/zoo.cfg
