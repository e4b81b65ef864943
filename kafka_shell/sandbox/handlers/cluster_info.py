"""DescribeCluster and DescribeTopicPartitions (KIP-966's paginated topic description)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import AclOperation, AclResourceType, ApiKey, EndpointType
from kafka_shell.sandbox import topic_lifecycle
from kafka_shell.sandbox.topic_lifecycle import AdminError
from kafka_shell.sandbox.handlers import api
from kafka_shell.sandbox.handlers.core import partition_metadata

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

# Kafka's max.request.partition.size.limit default: the most partitions one answer holds.
MAX_PARTITIONS_PER_ANSWER = 2000


@api(ApiKey.DESCRIBE_CLUSTER)
def describe_cluster(ctx: RequestContext) -> dict:
    """A broker listener describes the brokers (controller_id: see `advertised_controller_id`);
    a KRaft controller listener, asked with endpoint type CONTROLLER, the voters and the active
    controller (KIP-919). The other endpoint type: MISMATCHED_ENDPOINT_TYPE (v0: INVALID_REQUEST),
    an unknown one UNSUPPORTED_ENDPOINT_TYPE, as Kafka's AuthHelper answers."""
    req = ctx.request
    cluster = ctx.cluster
    served = EndpointType.CONTROLLER if ctx.on_controller_listener else EndpointType.BROKER
    wanted = req.endpoint_type
    answer: dict = {"error_code": 0, "error_message": None, "endpoint_type": served,
              "cluster_id": cluster.cluster_id, "controller_id": -1,
              "brokers": [], "cluster_authorized_operations": ctx.authorized_operations(
                  req.include_cluster_authorized_operations, AclResourceType.CLUSTER)}
    if ctx.on_controller_listener and not ctx.authorize(AclOperation.ALTER, AclResourceType.CLUSTER):
        # ControllerApis asks ALTER on the cluster here (a broker asks nothing).
        return {**answer, "cluster_id": "", "error_code": ErrorCode.cluster_authorization_failed}
    if wanted not in tuple(EndpointType):
        code = ErrorCode.invalid_request if ctx.version == 0 else ErrorCode.unsupported_endpoint_type
        return {**answer, "endpoint_type": EndpointType.BROKER, "cluster_id": "", "error_code": code,
                "error_message": f"Unsupported endpoint type {wanted}"}
    if wanted != served:
        code = ErrorCode.invalid_request if ctx.version == 0 else ErrorCode.mismatched_endpoint_type
        return {**answer, "endpoint_type": EndpointType.BROKER, "cluster_id": "", "error_code": code,
                "error_message": f"The request was sent to an endpoint of type {served.name}, "
                                 f"but we wanted an endpoint of type {EndpointType(wanted).name}"}
    if served == EndpointType.CONTROLLER:
        # Every registered controller (a stopped one stays registered until unregistered), never fenced.
        answer["brokers"] = [{"broker_id": c.id, "host": c.host, "port": c.port, "rack": None, "is_fenced": False}
                             for c in sorted(cluster.controllers.values(), key=lambda c: c.id) if c.registered]
        answer["controller_id"] = cluster.controller_id
        return answer
    # A stopped broker stays registered but fenced: listed only when fenced brokers are asked for.
    include_fenced = req.include_fenced_brokers
    answer["brokers"] = [
        {"broker_id": b.id, "host": b.host, "port": ctx.port_of(b), "rack": b.rack, "is_fenced": not b.usable}
        for b in sorted(cluster.brokers.values(), key=lambda b: b.id)
        if b.usable or (include_fenced and b.registered)]
    answer["controller_id"] = ctx.advertised_controller_id()
    return answer


@api(ApiKey.DESCRIBE_TOPIC_PARTITIONS)
def describe_topic_partitions(ctx: RequestContext) -> dict:
    req = ctx.request
    cluster = ctx.cluster
    cursor = req.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    requested = [t.name for t in req.topics]
    if requested:
        names = sorted({n for n in requested if n >= cursor_topic})
        if cursor is not None and cursor.topic_name not in names:
            return _invalid(requested)  # the cursor topic must be one of the requested topics
    else:
        names = sorted(n for n in cluster.topics if n >= cursor_topic)
    if cursor is not None and cursor.partition_index < 0:
        return _invalid(requested)  # a cursor partition must be valid
    remaining = max(min(MAX_PARTITIONS_PER_ANSWER, req.response_partition_limit), 1)
    topics: list[dict] = []
    next_cursor = None
    for name in names:
        if remaining == 0:
            # Every partition of the previous topic fitted: continue at this topic's start.
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        if not ctx.permits(AclResourceType.TOPIC, name):  # named: refused; listed: left out
            if requested:
                topics.append({"error_code": ErrorCode.topic_authorization_failed, "name": name,
                               "topic_id": codec.ZERO_UUID, "partitions": []})
            continue
        topic = cluster.topics.get(name)
        if topic is None:
            if requested:  # listing all topics never names a missing one
                topics.append({"error_code": _missing_topic_error(name), "name": name,
                               "topic_id": codec.ZERO_UUID, "partitions": []})
            continue
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        end = min(len(topic.partitions), start + remaining)
        topics.append({"error_code": 0, "name": name, "topic_id": topic.id, "is_internal": topic.internal,
                       "partitions": [_partition(cluster, p) for p in topic.partitions[start:end]]})
        if end < len(topic.partitions):
            next_cursor = {"topic_name": name, "partition_index": end}
            break
        remaining -= max(end - start, 0)
    return {"topics": topics, "next_cursor": next_cursor}


def _partition(cluster, p) -> dict:
    return {**partition_metadata(cluster, p), "eligible_leader_replicas": p.elr,
            "last_known_elr": p.last_known_elr}


def _missing_topic_error(name: str) -> int:
    try:
        topic_lifecycle.check_topic_name(name)
    except AdminError as exc:
        return exc.code
    return ErrorCode.unknown_topic_or_partition


def _invalid(requested: list[str]) -> dict:
    """Kafka's error answer to an invalid request: the error on every topic it named."""
    return {"topics": [{"error_code": ErrorCode.invalid_request, "name": n, "topic_id": codec.ZERO_UUID,
                        "partitions": []} for n in requested], "next_cursor": None}
