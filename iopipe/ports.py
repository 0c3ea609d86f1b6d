"""The ports of a stack's services: the demo stack's (`Ports`), the cluster's
(`ClusterPorts`), or unused ones drawn afresh so a test stack can run beside either."""
import random
import socket
from dataclasses import dataclass, replace
from pathlib import Path


def _bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_ports(n):
    """`n` unused ports. They are drawn below the kernel's ephemeral range: that is where
    every process's outgoing connections and port-0 listeners (Flink's blob and RPC servers
    among them) get theirs, and one could take a port between its choice here and its
    service's bind."""
    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    draw = random.SystemRandom()
    ports = []
    while len(ports) < n:
        port = draw.randrange(10_000, ephemeral_low)
        if port not in ports and _bindable(port):
            ports.append(port)
    return ports


@dataclass(frozen=True)
class Ports:
    kafka: int = 9092
    kafka_controller: int = 9093
    kafka_internal: int = 9094
    kafka_certificates: int = 9095
    flink_rest: int = 8081
    flink_rpc: int = 6123
    clickhouse_http: int = 8123
    clickhouse_tcp: int = 9000
    clickhouse_interserver: int = 9009

    @classmethod
    def free(cls):
        """Unused ports, for a stack that must not collide with another one."""
        return cls(*free_ports(len(cls.__dataclass_fields__)))

    @property
    def brokers(self):
        return f"127.0.0.1:{self.kafka}"

    @property
    def certificate_brokers(self):
        """Kafka's listeners for clients with a certificate (ClickHouse's Kafka tables)."""
        return f"127.0.0.1:{self.kafka_certificates}"

    @property
    def clickhouse_url(self):
        return f"http://127.0.0.1:{self.clickhouse_http}"

    @property
    def flink_url(self):
        return f"http://127.0.0.1:{self.flink_rest}"

    def env(self):
        """Each port as the services read it: `kafka_2` is KAFKA_2_PORT."""
        return {f"{name.upper()}_PORT": str(getattr(self, name)) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class ClusterPorts(Ports):
    """The cluster's ports: by default clear of the demo stack's, so both can run."""
    kafka: int = 19092
    kafka_controller: int = 19093
    kafka_internal: int = 19098
    kafka_certificates: int = 19101
    flink_rest: int = 18081
    flink_rpc: int = 16123
    clickhouse_http: int = 18123
    clickhouse_tcp: int = 19000
    clickhouse_interserver: int = 19009
    kafka_2: int = 19094
    kafka_2_controller: int = 19095
    kafka_3: int = 19096
    kafka_3_controller: int = 19097
    zookeeper: int = 12181
    flink_2_rest: int = 18082
    flink_2_rpc: int = 16124
    clickhouse_2_http: int = 18124
    clickhouse_2_tcp: int = 19001
    clickhouse_2_interserver: int = 19010
    kafka_2_internal: int = 19099
    kafka_3_internal: int = 19100
    kafka_2_certificates: int = 19102
    kafka_3_certificates: int = 19103

    @property
    def brokers(self):
        return ",".join(f"127.0.0.1:{port}" for port in (self.kafka, self.kafka_2, self.kafka_3))

    @property
    def certificate_brokers(self):
        return ",".join(f"127.0.0.1:{port}" for port in
                        (self.kafka_certificates, self.kafka_2_certificates, self.kafka_3_certificates))

    def with_flink_rest_of(self, jobmanager):
        """The same ports, with Flink's REST calls going to JobManager 1 or 2."""
        return replace(self, flink_rest=(self.flink_rest, self.flink_2_rest)[jobmanager - 1],
                       flink_2_rest=(self.flink_2_rest, self.flink_rest)[jobmanager - 1])

    def of_clickhouse_replica(self, replica):
        """The ports of ClickHouse replica 1 or 2 in the clickhouse_* fields, for its clients."""
        if replica == 1:
            return self
        return replace(self, clickhouse_http=self.clickhouse_2_http, clickhouse_tcp=self.clickhouse_2_tcp,
                       clickhouse_interserver=self.clickhouse_2_interserver)
