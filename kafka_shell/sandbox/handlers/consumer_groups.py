"""KIP-848 consumer group APIs: ConsumerGroupHeartbeat and ConsumerGroupDescribe.

The state machine is `kafka_shell.sandbox.consumer_groups`; this module checks requests as Kafka
4.4's GroupCoordinatorService does and maps them onto it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafka_shell.protocol.codes import AclOperation, AclResourceType, ApiKey
from kafka_shell.protocol.definitions import releases
from kafka_shell.sandbox import consumer_groups as cg
from kafka_shell.sandbox import replay
from kafka_shell.sandbox.handlers import api
from kafka_shell.sandbox.handlers.common import client_host, group_denied, not_coordinator

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

INVALID = ErrorCode.invalid_request


def _invalid(req, version: int) -> str | None:
    """GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid (4.4)."""
    epoch = req.member_epoch
    if (version >= 1 or epoch > 0 or epoch == cg.LEAVE_EPOCH) and not req.member_id:
        return "MemberId can't be empty."
    if not req.group_id:
        return "GroupId can't be empty."
    if req.instance_id == "":
        return "InstanceId can't be empty."
    if req.rack_id == "":
        return "RackId can't be empty."
    if epoch == 0:
        if int(req.rebalance_timeout.total_seconds() * 1000) == -1:
            return "RebalanceTimeoutMs must be provided in first request."
        if req.topic_partitions is None or req.topic_partitions:
            return "TopicPartitions must be empty when (re-)joining."
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            return "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
    elif epoch == cg.STATIC_LEAVE_EPOCH:
        if req.instance_id is None:
            return "InstanceId can't be null."
    elif epoch < cg.STATIC_LEAVE_EPOCH:
        return "MemberEpoch is invalid."
    return None


def _protocol_off(ctx: RequestContext) -> bool:
    """Kafka 3.x lists both APIs but, without the group.version feature and the consumer
    protocol in group.coordinator.rebalance.protocols (a stock cluster has neither), answers
    UNSUPPORTED_VERSION before anything else (KafkaApis.isConsumerGroupProtocolEnabled)."""
    return releases.release(ctx.cluster.kafka_version).major < 4


def _topics_denied(ctx: RequestContext, names: list[str] | None) -> int:
    """KafkaApis.handleConsumerGroupHeartbeat: a member may subscribe only to topics it may
    describe (asked before the coordinator sees the request)."""
    if names and not all(ctx.authorize(AclOperation.DESCRIBE, AclResourceType.TOPIC, n) for n in set(names)):
        return ErrorCode.topic_authorization_failed
    return 0


@api(ApiKey.CONSUMER_GROUP_HEARTBEAT)
def consumer_group_heartbeat(ctx: RequestContext) -> dict:
    req = ctx.request
    base = {"member_id": None, "member_epoch": 0, "heartbeat_interval": 0, "assignment": None}
    if _protocol_off(ctx):
        return {**base, "error_code": ErrorCode.unsupported_version}
    err = group_denied(ctx, req.group_id) or _topics_denied(ctx, req.subscribed_topic_names) \
        or not_coordinator(ctx, req.group_id)
    if err:
        return {**base, "error_code": err}
    problem = _invalid(req, ctx.version)
    if problem:
        return {**base, "error_code": INVALID, "error_message": problem}
    owned = None if req.topic_partitions is None else [(tp.topic_id, list(tp.partitions))
                                                        for tp in req.topic_partitions]
    try:
        answer = replay.commit(ctx.cluster, cg.Coordinator(ctx.cluster).heartbeat(
            req.group_id, req.member_id, req.member_epoch, req.instance_id, req.rack_id,
            int(req.rebalance_timeout.total_seconds() * 1000), ctx.header.client_id or "", client_host(ctx),
            None if req.subscribed_topic_names is None else list(req.subscribed_topic_names),
            req.subscribed_topic_regex, req.server_assignor, owned))
    except cg.GroupError as exc:
        return {**base, "error_code": exc.code, "error_message": exc.message}
    return {**base, **answer}


@api(ApiKey.CONSUMER_GROUP_DESCRIBE)
def consumer_group_describe(ctx: RequestContext) -> dict:
    if _protocol_off(ctx):
        return {"groups": [{"group_id": g, "error_code": ErrorCode.unsupported_version, "group_state": "",
                            "assignor_name": "", "members": []} for g in ctx.request.group_ids]}
    return {"groups": [_describe(ctx, group_id) for group_id in ctx.request.group_ids]}


def _describe(ctx: RequestContext, group_id: str) -> dict:
    base = {"group_id": group_id, "group_state": "", "group_epoch": 0, "assignment_epoch": 0,
            "assignor_name": "", "members": []}
    err = group_denied(ctx, group_id) or not_coordinator(ctx, group_id)
    if err:
        return {**base, "error_code": err}
    coordinator = cg.Coordinator(ctx.cluster)
    g = coordinator.groups.get(group_id)
    if g is None:
        return {**base, "error_code": ErrorCode.group_id_not_found, "error_message": f"Group {group_id} not found."}
    if not isinstance(g, cg.ConsumerGroup):
        return {**base, "error_code": ErrorCode.group_id_not_found,
                "error_message": f"Group {group_id} is not a consumer group."}
    names = {t.id: name for name, t in ctx.cluster.topics.items()}

    def assignment(parts) -> dict:
        return {"topic_partitions": [{"topic_id": t, "topic_name": names[t], "partitions": sorted(ps)}
                                     for t, ps in parts.items() if t in names]}
    members = [{"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                "member_epoch": m.epoch, "client_id": m.client_id, "client_host": m.client_host,
                "subscribed_topic_names": sorted(m.topic_names), "subscribed_topic_regex": m.topic_regex or "",
                "assignment": assignment(m.assigned), "target_assignment": assignment(g.targets.get(m.member_id, {})),
                "member_type": cg.MEMBER_TYPE_CONSUMER} for m in g.members.values()]
    operations = ctx.authorized_operations(ctx.request.include_authorized_operations,
                                           AclResourceType.GROUP, group_id)
    return {**base, "error_code": 0, "group_state": g.state, "group_epoch": g.epoch,
            "assignment_epoch": g.assignment_epoch,
            "assignor_name": g.preferred_assignor() or cg.assignors(ctx.cluster)[0],
            "members": members, "authorized_operations": operations}
