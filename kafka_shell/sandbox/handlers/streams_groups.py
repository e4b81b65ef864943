"""Streams group APIs (KIP-1071): StreamsGroupHeartbeat, StreamsGroupDescribe and
StreamsGroupTopologyDescriptionUpdate.

The state machine is `kafka_shell.sandbox.streams_groups`; this module checks requests as Kafka
4.4's GroupCoordinatorService does and maps them onto it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafka_shell.protocol.codes import AclResourceType, ApiKey
from kafka_shell.sandbox import replay
from kafka_shell.sandbox import streams_groups as sg
from kafka_shell.sandbox.consumer_groups import GroupError
from kafka_shell.sandbox.handlers import api
from kafka_shell.sandbox.handlers.common import client_host, group_denied, not_coordinator

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

STREAMS_INVALID_TOPOLOGY = 130


def _invalid(req) -> tuple[int, str] | None:
    """GroupCoordinatorService.throwIfStreamsGroupHeartbeatRequestIsInvalid (4.4)."""
    for value, what in ((req.member_id, "MemberId"), (req.group_id, "GroupId"), (req.instance_id, "InstanceId"),
                        (req.rack_id, "RackId")):
        if value == "":
            return ErrorCode.invalid_request, f"{what} can't be empty."
    tasks = (req.active_tasks, req.standby_tasks, req.warmup_tasks)
    if req.member_epoch == 0:
        if int(req.rebalance_timeout.total_seconds() * 1000) == -1:
            return ErrorCode.invalid_request, "RebalanceTimeoutMs must be provided in first request."
        for given, kind in zip(tasks, ("ActiveTasks", "StandbyTasks", "WarmupTasks")):
            if given:
                return ErrorCode.invalid_request, f"{kind} must be empty when (re-)joining."
        if req.topology is None:
            return ErrorCode.invalid_request, "Topology must be non-null when (re-)joining."
        if req.process_id is None:
            return ErrorCode.invalid_request, "ProcessId must be non-null when (re-)joining."
        for s in req.topology.subtopologies:
            for t in s.state_changelog_topics:
                if t.partitions != 0:
                    return STREAMS_INVALID_TOPOLOGY, (f"Changelog topic {t.name} must have an undefined partition "
                                                      f"count, but it is set to {t.partitions}.")
    elif req.member_epoch < sg.STATIC_LEAVE_EPOCH:
        return ErrorCode.invalid_request, "MemberEpoch is invalid."
    elif req.topology is not None:
        return ErrorCode.invalid_request, "Topology can only be provided when (re-)joining."
    if any(t is None for t in tasks) and any(t is not None for t in tasks):
        return ErrorCode.invalid_request, "If one task-type is non-null, all must be non-null."
    return None


@api(ApiKey.STREAMS_GROUP_HEARTBEAT)
def streams_group_heartbeat(ctx: RequestContext) -> dict:
    req = ctx.request
    base = {"member_id": req.member_id, "member_epoch": 0, "heartbeat_interval": 0, "task_offset_interval": 0,
            "acceptable_recovery_lag": 0, "endpoint_information_epoch": 0, "topology_description_required": False}
    err = group_denied(ctx, req.group_id) or not_coordinator(ctx, req.group_id)
    if err:
        return {**base, "error_code": err}
    problem = _invalid(req)
    if problem:
        return {**base, "error_code": problem[0], "error_message": problem[1]}
    try:
        answer = replay.commit(ctx.cluster, sg.Coordinator(ctx.cluster).heartbeat(req, ctx.header.client_id or "",
                                                                                    client_host(ctx)))
    except GroupError as exc:
        return {**base, "error_code": exc.code, "error_message": exc.message}
    return {**base, **answer}


# GroupCoordinatorService's refusal while no group.streams topology description plugin is set.
NO_DESCRIPTION_PLUGIN = "The broker has no streams group topology description plugin configured."


@api(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE)
def streams_group_topology_description_update(ctx: RequestContext) -> dict:
    """Kafka 4.4 keeps a group's topology description only through a plugin, which it has none
    of by default: past KafkaApis' READ on the group, its coordinator refuses every update with
    UNSUPPORTED_VERSION before it looks at the group. The sandbox has no plugins."""
    if group_denied(ctx, ctx.request.group_id):
        return {"error_code": ErrorCode.group_authorization_failed, "error_message": "Group authorization failed."}
    return {"error_code": ErrorCode.unsupported_version, "error_message": NO_DESCRIPTION_PLUGIN}


@api(ApiKey.STREAMS_GROUP_DESCRIBE)
def streams_group_describe(ctx: RequestContext) -> dict:
    return {"groups": [_describe(ctx, group_id) for group_id in ctx.request.group_ids]}


def _task_ids(tasks: sg.Tasks) -> list[dict]:
    return [{"subtopology_id": s, "partitions": sorted(ps)} for s, ps in sorted(tasks.items()) if ps]


def _topic_info(t: sg.TopicInfo, configured: sg.Configured | None) -> dict:
    """As Kafka describes it: the partitions the coordinator decided, once it did."""
    decided = configured.internal.get(t.name) if configured is not None else None
    return {"name": t.name, "partitions": decided.partitions if decided is not None else t.partitions,
            "replication_factor": t.replication_factor,
            "topic_configs": [{"key": k, "value": v} for k, v in t.configs]}


def _describe(ctx: RequestContext, group_id: str) -> dict:
    base = {"group_id": group_id, "group_state": "", "group_epoch": 0, "assignment_epoch": 0, "topology": None,
            "members": [], "assignor_name": None, "topology_description": None, "topology_description_status": 0}
    err = group_denied(ctx, group_id) or not_coordinator(ctx, group_id)
    if err:
        return {**base, "error_code": err}
    g = sg.Coordinator(ctx.cluster).groups.get(group_id)
    if not isinstance(g, sg.StreamsGroup):
        message = f"Group {group_id} not found." if g is None else f"Group {group_id} is not a streams group."
        return {**base, "error_code": ErrorCode.group_id_not_found, "error_message": message}
    topology = None if g.topology is None else {
        "epoch": g.topology.epoch,
        "subtopologies": [{"subtopology_id": s.subtopology_id, "source_topics": list(s.source_topics),
                           "repartition_sink_topics": list(s.repartition_sink_topics),
                           "state_changelog_topics": [_topic_info(t, g.configured) for t in s.changelog_topics],
                           "repartition_source_topics": [_topic_info(t, g.configured)
                                                         for t in s.repartition_source_topics]}
                          for s in g.topology.subtopologies]}
    members = []
    for m in g.members.values():
        target = g.targets.get(m.member_id, sg.Target())
        members.append({
            "member_id": m.member_id, "member_epoch": m.epoch, "instance_id": m.instance_id, "rack_id": m.rack_id,
            "client_id": m.client_id, "client_host": m.client_host, "topology_epoch": m.topology_epoch,
            "process_id": m.process_id,
            "user_endpoint": None if m.user_endpoint is None else {"host": m.user_endpoint[0],
                                                                   "port": m.user_endpoint[1]},
            "client_tags": [{"key": k, "value": v} for k, v in m.client_tags], "task_offsets": [],
            "task_end_offsets": [],
            "assignment": {"active_tasks": _task_ids(m.active), "standby_tasks": _task_ids(m.standby),
                           "warmup_tasks": _task_ids(m.warmup)},
            "target_assignment": {"active_tasks": _task_ids(target.active), "standby_tasks": _task_ids(target.standby),
                                  "warmup_tasks": _task_ids(target.warmup)},
            "is_classic": False})
    operations = ctx.authorized_operations(ctx.request.include_authorized_operations,
                                           AclResourceType.GROUP, group_id)
    return {**base, "error_code": 0, "group_state": g.state, "group_epoch": g.epoch,
            "assignment_epoch": g.assignment_epoch, "topology": topology, "members": members,
            "authorized_operations": operations, "assignor_name": "sticky"}
