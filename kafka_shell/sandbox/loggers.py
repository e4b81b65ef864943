"""Broker loggers (config resource BROKER_LOGGER, 8): each node's log4j logger levels, which
DescribeConfigs lists and IncrementalAlterConfigs sets (SET) or resets (DELETE) at runtime, as
Kafka 4.4's RuntimeLoggerManager and Log4jCoreController do.

The loggers are those a Kafka 4.4 node lists once it serves (the classes that have logged), as
real brokers and controllers list them with a root-only log4j2 configuration at INFO: root and
the kafka.* loggers. A logger without a level of its own takes its nearest dotted ancestor's,
else root's. Levels live as long as the node's process: a restarted broker starts again from
INFO, as Kafka does (nothing is written to the metadata log).
"""

from __future__ import annotations

from collections import Counter

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox.topic_lifecycle import AdminError
from kafka_shell.sandbox.model import Broker, ClusterState, Controller

ROOT = "root"
DEFAULT_LEVEL = "INFO"
# LogLevelConfig.VALID_LOG_LEVELS, sorted as Kafka prints them.
LEVELS = ("DEBUG", "ERROR", "FATAL", "INFO", "TRACE", "WARN")
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG; a logger's config type is UNKNOWN (0).
SOURCE = 6

BROKER_LOGGERS = (
    ROOT, "state.change.logger", "kafka.request.logger",
    "kafka.coordinator.transaction.TransactionCoordinator",
    "kafka.coordinator.transaction.TransactionMarkerChannelManager", "kafka.log.LogCleaner",
    "kafka.network.ConnectionQuotas", "kafka.network.DataPlaneAcceptor", "kafka.network.Processor",
    "kafka.network.RequestChannel$", "kafka.network.SocketServer", "kafka.server.BrokerServer",
    "kafka.server.ConfigAdminManager", "kafka.server.KafkaApis", "kafka.server.KafkaConfig",
    "kafka.server.KafkaRaftServer", "kafka.server.KafkaRequestHandler", "kafka.server.ReplicaManager",
    "kafka.server.ReplicaManager$LogDirFailureHandler", "kafka.server.SharedServer",
    "kafka.server.metadata.BrokerMetadataPublisher", "kafka.server.metadata.DynamicConfigPublisher",
    "kafka.server.share.ReplicaManagerLogReader", "kafka.server.share.ReplicaManagerPartitionMetadataProvider",
    "kafka.server.share.ShareCoordinatorMetadataCacheHelperImpl", "kafka.server.share.SharePartitionManager",
)
CONTROLLER_LOGGERS = (
    ROOT, "kafka.request.logger", "kafka.network.ConnectionQuotas", "kafka.network.DataPlaneAcceptor",
    "kafka.network.Processor", "kafka.network.RequestChannel$", "kafka.network.SocketServer",
    "kafka.server.ConfigAdminManager", "kafka.server.ControllerApis", "kafka.server.ControllerServer",
    "kafka.server.KafkaRaftServer", "kafka.server.KafkaRequestHandler", "kafka.server.metadata.DynamicConfigPublisher",
)


def names(node: Broker | Controller) -> tuple[str, ...]:
    return BROKER_LOGGERS if isinstance(node, Broker) else CONTROLLER_LOGGERS


def _levels(cluster: ClusterState, node: Broker | Controller) -> dict[str, str]:
    """The levels set on this run of the node (a broker's epoch changes at every start)."""
    return cluster.runtime.logger_levels.setdefault((node.id, getattr(node, "epoch", 0)), {})


def level(levels: dict[str, str], name: str) -> str:
    """A logger's effective level: its own, else its nearest dotted ancestor's, else root's."""
    while True:
        if name in levels:
            return levels[name]
        if "." not in name:
            return levels.get(ROOT, DEFAULT_LEVEL)
        name = name.rsplit(".", 1)[0]


def describe(cluster: ClusterState, node: Broker | Controller) -> list[dict]:
    levels = _levels(cluster, node)
    return [{"name": n, "value": level(levels, n), "read_only": False, "config_source": SOURCE,
             "is_sensitive": False, "synonyms": [], "config_type": 0, "documentation": ""}
            for n in names(node)]


def check_node_name(node: Broker | Controller, resource_name: str, describing: bool) -> None:
    """Kafka's nodes describe and change only their own loggers."""
    try:
        wanted = int(resource_name)
    except ValueError:
        what = "Broker" if describing else "Node"
        raise AdminError(ErrorCode.invalid_request, f"{what} id must be an integer, but it is: {resource_name}") from None
    if wanted != node.id:
        message = (f"Unexpected broker id, expected {node.id} but received {resource_name}" if describing
                   else f"Unexpected node id. Expected {node.id}, but received {resource_name}")
        raise AdminError(ErrorCode.invalid_request, message)


def alter(cluster: ClusterState, node: Broker | Controller, resource_name: str, ops: list, validate_only: bool) -> None:
    """IncrementalAlterConfigs on this node's loggers: `ops` (name, config_operation, value)
    are all checked before any applies (AdminError on the first problem)."""
    if any(n > 1 for n in Counter(op.name for op in ops).values()):
        raise AdminError(ErrorCode.invalid_request, "Error due to duplicate config keys")
    for op in ops:
        if op.config_operation != DELETE and op.value is None:
            raise AdminError(ErrorCode.invalid_request, f"Null value not supported for : {op.name}")
    check_node_name(node, resource_name, describing=False)
    known = names(node)
    for op in ops:
        kind = op.config_operation
        if kind in (APPEND, SUBTRACT):
            verb = "APPEND" if kind == APPEND else "SUBTRACT"
            raise AdminError(ErrorCode.invalid_request, f"{verb} operation is not allowed for the BROKER_LOGGER resource")
        if kind not in (SET, DELETE):
            raise AdminError(ErrorCode.invalid_request,
                             f"Unknown operation type {kind} is not allowed for the BROKER_LOGGER resource")
        if op.name not in known:
            raise AdminError(ErrorCode.invalid_config, f"Logger {op.name} does not exist!")
        if kind == SET and op.value not in LEVELS:
            raise AdminError(ErrorCode.invalid_config, f"Cannot set the log level of {op.name} to {op.value} as it is "
                             f"not a supported log level. Valid log levels are {', '.join(LEVELS)}")
        if kind == DELETE and op.name == ROOT:
            raise AdminError(ErrorCode.invalid_request, "Removing the log level of the root logger is not allowed")
    if validate_only:
        return
    levels = _levels(cluster, node)
    for op in ops:
        if op.config_operation == SET:
            levels[op.name] = op.value
        else:
            levels.pop(op.name, None)
