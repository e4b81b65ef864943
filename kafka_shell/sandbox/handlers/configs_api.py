"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics, brokers and loggers.

Resources: type 2 is a topic, type 4 a broker by id, or the cluster-wide default with the name
"", type 8 a node's loggers (`sandbox.loggers`), type 16 a client metrics subscription
(`sandbox.client_metrics`; both changed by IncrementalAlterConfigs only). Topic keys are
checked as Kafka's LogConfig does (INVALID_CONFIG); broker values as Kafka's DynamicBrokerConfig
does (INVALID_REQUEST), unknown broker keys accepted as Kafka accepts them. The keys and their definitions are in `sandbox.configs`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from collections import Counter

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import client_metrics, configs, cordons, group_configs, loggers, replay, replication, topic_lifecycle
from kafka_shell.sandbox.topic_lifecycle import AdminError
from kafka_shell.sandbox.configs import ConfigProblem
from kafka_shell.protocol.codes import AclResourceType, ApiKey
from kafka_shell.sandbox.handlers import api

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

TOPIC = 2
BROKER = 4
RESOURCE_NAMES = {2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}
CLIENT_METRICS, GROUP, BROKER_LOGGER = 16, 32, 8
CLUSTER_RESOURCES = (BROKER, BROKER_LOGGER, CLIENT_METRICS)   # authorized on the cluster
# Where Kafka 4.4 answers "" for "no error" (a result's error_message, a logger's documentation).
EMPTY_WHEN_FINE = (BROKER_LOGGER, CLIENT_METRICS)
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
# Keys that only make sense cluster-wide (the mirror of Kafka's per-broker-only keys).
CLUSTER_ONLY_KEYS = {replication.PREFERRED_CONTROLLER_KEY}


def _broker_id(name: str) -> int:
    try:
        return int(name)
    except ValueError:
        raise AdminError(ErrorCode.invalid_request, f"Broker id must be an integer, but it is: {name}") from None


def _check_authorized(ctx: RequestContext, resource_type: int, name: str) -> None:
    """What the API needs (authorizer.API_NEEDS): DESCRIBE_CONFIGS or ALTER_CONFIGS on the topic,
    or on the cluster for broker resources. Asked before whether the resource exists."""
    if resource_type == TOPIC and not ctx.permits(AclResourceType.TOPIC, name):
        raise AdminError(ErrorCode.topic_authorization_failed, None)
    if resource_type in CLUSTER_RESOURCES and not ctx.permits(AclResourceType.CLUSTER):
        raise AdminError(ErrorCode.cluster_authorization_failed, None)
    if resource_type == GROUP and not ctx.permits(AclResourceType.GROUP, name):
        raise AdminError(ErrorCode.group_authorization_failed, None)


def _unsupported(resource_type: int) -> AdminError:
    kind = RESOURCE_NAMES.get(resource_type, str(resource_type))
    return AdminError(ErrorCode.invalid_request, f"Unsupported resource type {kind} in the sandbox")


# -- DescribeConfigs -------------------------------------------------------------------------


@api(ApiKey.DESCRIBE_CONFIGS)
def describe_configs(ctx: RequestContext) -> dict:
    req = ctx.request
    results = []
    for r in req.resources:
        result = {"resource_type": r.resource_type, "resource_name": r.resource_name,
                  "error_code": 0, "error_message": None, "configs": []}
        try:
            entries = _describe(ctx, r.resource_type, r.resource_name)
        except AdminError as exc:
            results.append({**result, "error_code": exc.code, "error_message": exc.message})
            continue
        if r.configuration_keys is not None:
            wanted = set(r.configuration_keys)
            entries = [e for e in entries if e["name"] in wanted]
        for e in entries:
            if not req.include_synonyms:
                e["synonyms"] = []
            if not req.include_documentation and r.resource_type != BROKER_LOGGER:
                e["documentation"] = None
        if r.resource_type in EMPTY_WHEN_FINE:
            result["error_message"] = ""
        results.append({**result, "configs": entries})
    return {"results": results}


def _describe(ctx: RequestContext, resource_type: int, name: str) -> list[dict]:
    cluster = ctx.cluster
    _check_authorized(ctx, resource_type, name)
    if resource_type == TOPIC:
        topic_lifecycle.check_topic_name(name)
        topic = cluster.topics.get(name)
        if topic is None:
            raise AdminError(ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist.")
        return configs.describe_topic(cluster, topic.configs, ctx.broker.id)
    if resource_type == BROKER:
        if name == "":
            return configs.describe_cluster_defaults(cluster)
        # Kafka's brokers describe only themselves (clients send broker resources to that broker).
        if _broker_id(name) != ctx.broker.id:
            raise AdminError(ErrorCode.invalid_request, f"Unexpected broker id, expected "
                             f"{ctx.broker.id} or empty string, but received {name}")
        return configs.describe_broker(cluster, ctx.broker.id)
    if resource_type == GROUP:
        return group_configs.describe(cluster, name)
    if resource_type == BROKER_LOGGER:
        loggers.check_node_name(ctx.broker, name, describing=True)
        return loggers.describe(cluster, ctx.broker)
    if resource_type == CLIENT_METRICS:
        return client_metrics.describe(cluster, name)
    raise _unsupported(resource_type)


# -- ListConfigResources (ListClientMetricsResources before 4.1) ----------------------------------

# The types each version lists by default and accepts (ListConfigResourcesRequest.supportedResourceTypes).
LISTABLE = {0: (CLIENT_METRICS,), 1: (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)}


@api(ApiKey.LIST_CONFIG_RESOURCES)
def list_config_resources(ctx: RequestContext) -> dict:
    """As Kafka 4.4's KafkaApis lists them: groups with configs, client metrics subscriptions,
    each live broker as BROKER_LOGGER and BROKER, then every topic."""
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "config_resources": []}
    supported = LISTABLE[min(ctx.version, 1)]
    wanted = list(ctx.request.resource_types) or list(supported)
    if any(t not in supported for t in wanted):
        return {"error_code": ErrorCode.unsupported_version, "config_resources": []}
    brokers = [str(b.id) for b in ctx.cluster.live_brokers()]
    subscriptions = sorted(client_metrics.subscriptions(ctx.cluster))
    found = [(name, kind) for kind, names in ((GROUP, group_configs.configured(ctx.cluster)),
                                             (CLIENT_METRICS, subscriptions), (BROKER_LOGGER, brokers),
                                             (BROKER, brokers), (TOPIC, list(ctx.cluster.topics)))
             if kind in wanted for name in names]
    return {"error_code": 0, "config_resources": [{"resource_name": n, "resource_type": t} for n, t in found]}


# -- AlterConfigs / IncrementalAlterConfigs --------------------------------------------------


@api(ApiKey.ALTER_CONFIGS)
def alter_configs(ctx: RequestContext) -> dict:
    """The legacy API: the given configs replace every dynamic config of the resource."""
    def new_values(resource, current: dict[str, str], defs, kind: str) -> dict[str, str]:
        return {c.name: c.value for c in resource.configs if c.value is not None}
    return _alter(ctx, new_values)


@api(ApiKey.INCREMENTAL_ALTER_CONFIGS)
def incremental_alter_configs(ctx: RequestContext) -> dict:
    def new_values(resource, current: dict[str, str], defs, kind: str) -> dict[str, str]:
        out = dict(current)
        for c in resource.configs:
            _apply_op(out, c.name, c.config_operation, c.value, defs, kind, ctx.cluster.kraft)
        return out
    return _alter(ctx, new_values)


def _apply_op(values: dict[str, str], key: str, op: int, value: str | None, defs, kind: str, kraft: bool) -> None:
    """One incremental operation, as Kafka applies it (unknown broker keys are taken as they are)."""
    if op == DELETE:
        values.pop(key, None)
        return
    if op not in OP_NAMES:
        raise AdminError(ErrorCode.invalid_request, f"Unknown operation type {op}")
    d = defs.get(key)
    if d is None and kind == "topic":
        raise AdminError(ErrorCode.invalid_config, f"Unknown {kind} config name: {key}")
    if value is None:
        raise AdminError(ErrorCode.invalid_request, f"Null value not supported for : {key}")
    if op == SET:
        values[key] = value
        return
    if d is None or d.type != "list":
        if kind == "topic" and kraft:  # the KRaft controller's check; other brokers check in their own words
            raise AdminError(ErrorCode.invalid_config, f"Can't {OP_NAMES[op]} to key {key} because its type is not LIST.")
        raise AdminError(ErrorCode.invalid_config,
                         f"Config value {OP_NAMES[op].lower()} is not allowed for config key: {key}")
    parts = configs.split_list(values.get(key, d.default))
    for item in configs.split_list(value):
        if op == APPEND and item not in parts:
            parts.append(item)
        elif op == SUBTRACT and item in parts:
            parts.remove(item)
    values[key] = ",".join(parts)


def _alter(ctx: RequestContext, new_values) -> dict:
    req = ctx.request
    responses = []
    for r in req.resources:
        result = {"resource_type": r.resource_type, "resource_name": r.resource_name,
                  "error_code": 0, "error_message": None}
        try:
            _alter_resource(ctx, r, new_values, req.validate_only)
        except (AdminError, ConfigProblem) as exc:
            result.update(error_code=exc.code, error_message=exc.message)
        responses.append(result)
    return {"responses": responses}


def _alter_resource(ctx: RequestContext, r, new_values, validate_only: bool) -> None:
    cluster = ctx.cluster
    if r.resource_type == BROKER_LOGGER and ctx.api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS:
        # Each node changes its own loggers, without the controller (RuntimeLoggerManager).
        _check_authorized(ctx, r.resource_type, r.resource_name)
        loggers.alter(cluster, ctx.broker, r.resource_name, list(r.configs), validate_only)
        return
    if cluster.kraft and not ctx.is_controller:
        # KRaft: the active controller changes configs (brokers forward to it); a standby voter
        # answers NOT_CONTROLLER. In zk mode every broker writes configs itself.
        raise AdminError(ErrorCode.not_controller, "This is not the correct controller for this cluster.")
    _check_authorized(ctx, r.resource_type, r.resource_name)
    duplicates = [k for k, n in Counter(c.name for c in r.configs).items() if n > 1]
    if duplicates:
        raise AdminError(ErrorCode.invalid_request, "Error due to duplicate config keys")
    if r.resource_type == CLIENT_METRICS and ctx.api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS:
        client_metrics.alter(cluster, r.resource_name, list(r.configs), validate_only)
        return
    if r.resource_type == TOPIC:
        topic_lifecycle.check_topic_name(r.resource_name)
        topic = cluster.topics.get(r.resource_name)
        if topic is None:
            raise AdminError(ErrorCode.unknown_topic_or_partition,
                             f"The topic '{r.resource_name}' does not exist.")
        new = new_values(r, topic.configs, configs.topic_defs(cluster), "topic")
        configs.check_topic_configs(cluster, new, r.resource_name)
        if not validate_only:
            replay.apply_all(cluster, configs.config_records(TOPIC, topic.name, topic.configs, new))
        return
    if r.resource_type == GROUP and ctx.api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS:
        try:
            group_configs.alter(cluster, r.resource_name, [(c.name, c.config_operation, c.value) for c in r.configs],
                                validate_only)
        except group_configs.GroupConfigError as exc:
            raise AdminError(exc.code, str(exc)) from None
        return
    if r.resource_type != BROKER:
        raise _unsupported(r.resource_type)
    cluster_wide = r.resource_name == ""
    node = None
    if cluster_wide:
        current = cluster.cluster_configs
    else:
        broker_id = _broker_id(r.resource_name)
        if not ctx.on_controller_listener and broker_id != ctx.broker.id:
            # Kafka's brokers change only their own configs (ConfigAdminManager).
            raise AdminError(ErrorCode.invalid_request,
                             f"Unexpected broker id, expected {ctx.broker.id}, but received {r.resource_name}")
        node = cluster.node(broker_id)
        if node is None:
            raise AdminError(ErrorCode.invalid_request, f"Broker {broker_id} is not in the cluster.")
        current = node.configs
    new = new_values(r, current, configs.broker_defs(cluster), "broker")
    given = {c.name for c in r.configs if getattr(c, "config_operation", SET) != DELETE}
    configs.check_broker_change(cluster, ctx.broker.id, r.resource_name, {k: new[k] for k in given if k in new})
    if node is not None and cordons.KEY in given and new.get(cordons.KEY):
        refused = cordons.check_value(cluster, int(r.resource_name), new[cordons.KEY])
        if refused:
            raise AdminError(*refused)
    if not cluster_wide and CLUSTER_ONLY_KEYS & given:
        keys = ", ".join(sorted(CLUSTER_ONLY_KEYS & given))
        raise AdminError(ErrorCode.invalid_request, f"Cannot update these configs at per-broker level, use the "
                         f"cluster default (name \"\"): {keys}")
    _check_preferred_controller(cluster, new)
    configs.check_min_isr_change(cluster, r.resource_name, {c.name for c in r.configs}, current, new)
    if validate_only or new == current:
        return
    changes = configs.config_records(BROKER, str(node.id) if node is not None else "", current, new)
    replay.apply_all(cluster, changes)
    if node is None:
        for key in sorted(c.name for c in changes):
            _cluster_config_changed(cluster, key)


def _check_preferred_controller(cluster, new: dict[str, str]) -> None:
    """The sandbox's preferred.controller.id (KAFKA-1778) names a voter in KRaft mode, a broker in zk mode."""
    preferred = new.get(replication.PREFERRED_CONTROLLER_KEY)
    candidates, kind = (cluster.controllers, "controller") if cluster.kraft else (cluster.brokers, "broker")
    if preferred is not None and int(preferred) != -1 and int(preferred) not in candidates:
        raise AdminError(ErrorCode.invalid_request,
                         f"{replication.PREFERRED_CONTROLLER_KEY} {preferred} is not a {kind} of the cluster")


def _cluster_config_changed(cluster, key: str) -> None:
    """Let the controller logic react to a cluster-wide change (the preferred controller)."""
    hook = getattr(replication, "on_cluster_config_changed", None)
    if hook is not None:
        hook(cluster, key)
    elif key == replication.PREFERRED_CONTROLLER_KEY:
        replication.elect_controller(cluster)
