"""AlterPartitionReassignments v0-v1 and ListPartitionReassignments v0 (controller APIs).

Validation follows KRaft's ReplicationControlManager: unknown topic or partition, an empty
replica list, a broker listed twice or never registered are refused per partition (a stopped
broker is still registered, so a move onto it is accepted and waits for it); null replicas
cancel a move. The move itself runs in `replication` (copy, join the ISR, complete).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import cordons, replication
from kafka_shell.protocol.codes import AclResourceType, ApiKey
from kafka_shell.sandbox.handlers import api

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext



def _validate_target(ctx: RequestContext, p, target: list[int], allow_rf_change: bool) -> tuple[int, str | None]:
    if not target:
        return ErrorCode.invalid_replica_assignment, (
            "The manual partition assignment includes an empty replica list.")
    seen: set[int] = set()
    for b in sorted(target):
        if b not in ctx.cluster.brokers or not ctx.cluster.brokers[b].registered:
            return ErrorCode.invalid_replica_assignment, (
                f"The manual partition assignment includes broker {b}, but no such broker is registered.")
        cordoned = cordons.assignment_refusal(ctx.cluster, b)   # KIP-1066: a reorder is refused too
        if cordoned:
            return ErrorCode.invalid_replica_assignment, cordoned
        if b in seen:
            return ErrorCode.invalid_replica_assignment, (
                f"The manual partition assignment includes the broker {b} more than once.")
        seen.add(b)
    current_rf = len(p.replicas) - len(p.adding)
    if not allow_rf_change and len(target) != current_rf:
        return ErrorCode.invalid_replication_factor, (
            f"The replication factor is changed from {current_rf} to {len(target)} "
            "but allowReplicationFactorChange is false.")
    return ErrorCode.none, None


def _alter_one(ctx: RequestContext, topic: str, index: int, target, allow_rf_change: bool) -> tuple[int, str | None]:
    if topic not in ctx.cluster.topics:
        return ErrorCode.unknown_topic_or_partition, f"Unable to find a topic named {topic}."
    p = ctx.cluster.partition(topic, index)
    if p is None:
        return ErrorCode.unknown_topic_or_partition, f"Unable to find partition {topic}:{index}."
    if target is None:
        return replication.cancel_reassignment(ctx.cluster, p)
    code, message = _validate_target(ctx, p, list(target), allow_rf_change)
    if code == ErrorCode.none:
        replication.reassign(ctx.cluster, p, list(target))
    return code, message


@api(ApiKey.ALTER_PARTITION_REASSIGNMENTS, controller_only=True)
def alter_partition_reassignments(ctx: RequestContext) -> dict:
    req = ctx.request
    allow_rf_change = req.allow_replication_factor_change
    authorized = ctx.permits(AclResourceType.CLUSTER)
    responses = []
    for t in req.topics:
        parts = []
        for rp in t.partitions:
            if not authorized:  # Kafka's error response: the error everywhere
                code, message = int(ErrorCode.cluster_authorization_failed), None
            elif ctx.is_controller:
                code, message = _alter_one(ctx, t.name, rp.partition_index, rp.replicas, allow_rf_change)
            else:
                code, message = ErrorCode.not_controller, None
            parts.append({"partition_index": rp.partition_index, "error_code": code,
                          "error_message": message})
        responses.append({"name": t.name, "partitions": parts})
    replication.settle(ctx.cluster)  # copying starts; moves that need no copy complete now
    top = ErrorCode.cluster_authorization_failed if not authorized else \
        ErrorCode.none if ctx.is_controller else ErrorCode.not_controller
    return {"error_code": top, "error_message": None, "responses": responses,
            "allow_replication_factor_change": allow_rf_change}


def _ongoing(p) -> dict:
    return {"partition_index": p.index, "replicas": p.replicas,
            "adding_replicas": p.adding, "removing_replicas": p.removing}


@api(ApiKey.LIST_PARTITION_REASSIGNMENTS, controller_only=True)
def list_partition_reassignments(ctx: RequestContext) -> dict:
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None, "topics": []}
    if not ctx.is_controller:
        return {"error_code": ErrorCode.not_controller, "error_message": None, "topics": []}
    cluster = ctx.cluster
    wanted: dict[str, list[int] | None]
    if ctx.request.topics is None:
        wanted = {p.topic: None for p in replication.reassigning(cluster)}
    else:
        wanted = {t.name: list(t.partition_indexes) for t in ctx.request.topics}
    topics = []
    for name, indexes in wanted.items():
        t = cluster.topics.get(name)
        if t is None:
            continue  # Kafka leaves unknown topics out
        parts = [_ongoing(p) for p in t.partitions
                 if (indexes is None or p.index in indexes) and (p.adding or p.removing)]
        if parts:
            topics.append({"name": name, "partitions": parts})
    return {"error_code": 0, "error_message": None, "topics": topics}
