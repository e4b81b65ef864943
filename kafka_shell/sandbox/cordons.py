"""Cordoned log dirs (KIP-1066) as Kafka 4.4 treats them, read from its sources: a broker's dynamic
`cordoned.log.dirs` (entries of its log dirs, or `*` for all) keeps new replicas off them.

- The broker checks a new value against its log dirs (DynamicLogConfig.validateReconfiguration;
  KafkaConfig refuses `*` beside other entries); the controller refuses the key below
  metadata.version 4.3-IV0 (ConfigurationControlManager).
- DescribeLogDirs v5 says `is_cordoned` per dir (ReplicaManager.describeLogDirs).
- The controller places no new partition on a broker whose every dir is cordoned
  (BrokerHeartbeatManager.usableBrokers) and refuses any manual assignment or reassignment target
  naming one (ReplicationControlManager.validateManualPartitionAssignment).

The sandbox's brokers have their log dirs from sandbox/directories.py, and the controller sees a
change at once where Kafka waits for the broker's next heartbeat.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import configs
from kafka_shell.sandbox.model import ClusterState

KEY = "cordoned.log.dirs"
ALL = "*"
METADATA_LEVEL = 30     # metadata.version 4.3-IV0


def supported(cluster: ClusterState) -> bool:
    from kafka_shell.sandbox.handlers import features
    return cluster.kraft and features.finalized(cluster).get("metadata.version", 0) >= METADATA_LEVEL


def log_dirs(cluster: ClusterState, broker_id: int) -> list[str]:
    from kafka_shell.sandbox.directories import broker_dirs
    return broker_dirs(cluster, broker_id)


def entries(value: str | None) -> list[str]:
    return [d.strip() for d in (value or "").split(",") if d.strip()]


def cordoned_dirs(cluster: ClusterState, broker_id: int) -> set[str]:
    """The broker's cordoned log dirs (none where the cluster cannot cordon)."""
    if not supported(cluster) or broker_id not in cluster.brokers:
        return set()
    wanted = entries(configs.broker_value(cluster, broker_id, KEY))
    return set(log_dirs(cluster, broker_id)) if ALL in wanted else set(wanted) & set(log_dirs(cluster, broker_id))


def fully_cordoned(cluster: ClusterState, broker_id: int) -> bool:
    """Every log dir of the broker is cordoned: the controller gives it nothing new."""
    return cordoned_dirs(cluster, broker_id) == set(log_dirs(cluster, broker_id))


def assignment_refusal(cluster: ClusterState, broker_id: int) -> str | None:
    """Kafka's refusal of a manual assignment (or reassignment target) naming a cordoned broker."""
    if fully_cordoned(cluster, broker_id):
        return f"The manual partition assignment includes broker {broker_id}, but all its log directories are cordoned."
    return None


def check_value(cluster: ClusterState, broker_id: int, value: str) -> tuple[int, str] | None:
    """(error code, message) of Kafka's refusal of a new cordoned.log.dirs for the broker, or None:
    the broker's KafkaConfig checks first (INVALID_REQUEST), then the controller's metadata version
    (INVALID_CONFIG). Messages as Kafka 4.4 words them."""
    wanted = entries(value)
    if len(set(wanted)) != len(wanted):
        return (int(ErrorCode.invalid_request), f"Configuration '{KEY}' values must not be duplicated.")
    if ALL in wanted and len(wanted) > 1:
        return (int(ErrorCode.invalid_request),
                f"requirement failed: When {KEY} is set to *, it must not contain other values")
    missing = [d for d in wanted if d != ALL and d not in log_dirs(cluster, broker_id)]
    if missing:
        return (int(ErrorCode.invalid_request), f"requirement failed: All entries in {KEY} must be present in "
                f"log.dirs or log.dir. Missing entries : {', '.join(missing)}")
    if not supported(cluster):
        return (int(ErrorCode.invalid_config), f"The {KEY} configuration value cannot be set because it requires "
                                               "metadata.version >= 4.3-IV0")
    return None


def placement_refusal(cluster: ClusterState, replication_factor: int, usable: int) -> str:
    """The controller's refusal of a placement short of brokers, as the release words it: ZooKeeper's
    AdminUtils, KRaft's StripedReplicaPlacer, which names cordons from the release that has them
    (whether or not any broker is cordoned)."""
    if not cluster.kraft:
        return f"Replication factor: {replication_factor} larger than available brokers: {usable}."
    if KEY not in configs.release(cluster).broker_configs:
        return (f"The target replication factor of {replication_factor} cannot be reached because only {usable} "
                "broker(s) are registered.")
    if usable == 0:
        why = "All brokers are currently fenced, or have all their log directories cordoned."
    else:
        why = (f"The target replication factor of {replication_factor} cannot be reached because only {usable} "
               "broker(s) are registered or some brokers have all their log directories cordoned.")
    return f"Unable to replicate the partition {replication_factor} time(s): {why}"
