"""CreateTopics, DeleteTopics and CreatePartitions: controller APIs.

A request reaching a broker that is not the active controller gets NOT_CONTROLLER for every
topic, as ZooKeeper-era brokers answered; clients refresh metadata and retry on the controller.
Validation and state changes live in `sandbox.topic_lifecycle`; these handlers map requests onto it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from collections import Counter

from kio.schema.errors import ErrorCode

from kafka_shell.protocol import codec
from kafka_shell.sandbox import configs, replay, topic_lifecycle
from kafka_shell.sandbox.topic_lifecycle import AdminError
from kafka_shell.protocol.codes import AclOperation, AclResourceType, ApiKey
from kafka_shell.sandbox.handlers import api

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

NOT_CONTROLLER_MESSAGE = "This is not the correct controller for this cluster."
AUTHORIZATION_FAILED = "Authorization failed."   # ControllerApis' message for CreateTopics
TOPIC_AUTHORIZATION_FAILED = "Topic authorization failed."   # ApiError's default one


def _error(name: str, code: int, message: str | None, **extra: object) -> dict:
    return {"name": name, "error_code": code, "error_message": message, **extra}


# -- CreateTopics ----------------------------------------------------------------------------


@api(ApiKey.CREATE_TOPICS)
def create_topics(ctx: RequestContext) -> dict:
    req = ctx.request
    cluster = ctx.cluster
    failed = {"topic_id": codec.ZERO_UUID, "num_partitions": -1, "replication_factor": -1, "configs": None}
    if not ctx.is_controller:
        return {"topics": [_error(t.name, ErrorCode.not_controller, NOT_CONTROLLER_MESSAGE, **failed)
                           for t in req.topics]}
    total = sum(topic_lifecycle.requested_partitions(cluster, t.num_partitions, len(t.assignments)) for t in req.topics)
    if total > topic_lifecycle.MAX_PARTITIONS_PER_BATCH:
        return {"topics": [_error(t.name, ErrorCode.policy_violation, topic_lifecycle.TOO_MANY_PARTITIONS, **failed)
                           for t in req.topics]}
    counts = Counter(t.name for t in req.topics)
    may_create_any = ctx.permits(AclResourceType.CLUSTER)  # CREATE on the cluster, else per topic
    results: list[dict | None] = []
    planned: dict[int, tuple[list[list[int]], dict[str, str]]] = {}
    records = 0
    for i, t in enumerate(req.topics):
        if counts[t.name] > 1:
            results.append(_error(t.name, ErrorCode.invalid_request, "Duplicate topic name.", **failed))
        elif not may_create_any and not ctx.permits(AclResourceType.TOPIC, t.name):
            results.append(_error(t.name, ErrorCode.topic_authorization_failed, AUTHORIZATION_FAILED, **failed))
        else:
            try:
                planned[i] = _plan_one(ctx, t)
                results.append(None)
                records += 1 + len(planned[i][0]) + len(t.configs)   # a topic, partition and config record each
            except AdminError as exc:
                results.append(_error(t.name, exc.code, exc.message, **failed))
    if cluster.kraft and records > topic_lifecycle.MAX_RECORDS_PER_OPERATION:
        # The controller's bounded record list overflows: the whole request fails (every topic).
        return {"topics": [_error(t.name, ErrorCode.policy_violation, topic_lifecycle.EXCESSIVE_BATCH, **failed)
                           for t in req.topics]}
    for i, (replicas, checked) in planned.items():
        results[i] = _create_one(ctx, req.topics[i], replicas, checked, req.validate_only)
    return {"topics": results}


def _plan_one(ctx: RequestContext, t) -> tuple[list[list[int]], dict[str, str]]:
    """The topic's replicas and checked configs, or AdminError."""
    assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments}
    if len(assignment) != len(t.assignments):
        dup = next(i for i, n in Counter(a.partition_index for a in t.assignments).items() if n > 1)
        raise AdminError(ErrorCode.invalid_replica_assignment,
                         f"Found multiple manual partition assignments for partition {dup}")
    return topic_lifecycle.plan_topic(ctx.cluster, t.name, t.num_partitions, t.replication_factor, assignment,
                            {c.name: c.value for c in t.configs})


def _create_one(ctx: RequestContext, t, replicas: list[list[int]], checked: dict[str, str], validate_only: bool) -> dict:
    cluster = ctx.cluster
    topic_id = codec.ZERO_UUID
    if not validate_only:
        topic_id = topic_lifecycle.create_topic(cluster, t.name, assignment=replicas, configs=checked).id
    result = {"name": t.name, "topic_id": topic_id, "error_code": 0, "error_message": None,
              "num_partitions": len(replicas), "replication_factor": len(replicas[0])}
    if ctx.version >= 5:  # configs are only in v5+; skip the work for older clients
        result["configs"] = [
            {"name": e["name"], "value": e["value"], "read_only": e["read_only"],
             "config_source": e["config_source"], "is_sensitive": e["is_sensitive"]}
            for e in configs.describe_topic(cluster, checked)]
    return result


# -- DeleteTopics ----------------------------------------------------------------------------


@api(ApiKey.DELETE_TOPICS)
def delete_topics(ctx: RequestContext) -> dict:
    req = ctx.request
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id if t.topic_id != codec.ZERO_UUID else None) for t in req.topics]
    else:
        wanted = [(name, None) for name in req.topic_names]
    if not ctx.is_controller:
        return {"responses": [{"name": n, "topic_id": i or codec.ZERO_UUID,
                               "error_code": ErrorCode.not_controller,
                               "error_message": NOT_CONTROLLER_MESSAGE} for n, i in wanted]}
    counts = Counter(i or n for n, i in wanted)
    may_delete_any = ctx.permits(AclResourceType.CLUSTER)  # DELETE on the cluster, else per topic
    return {"responses": [_delete_one(ctx, name, topic_id, counts[topic_id or name] > 1, may_delete_any)
                          for name, topic_id in wanted]}


def _delete_one(ctx: RequestContext, name: str | None, topic_id, duplicate: bool, may_delete_any: bool) -> dict:
    cluster = ctx.cluster
    result = {"name": name, "topic_id": topic_id or codec.ZERO_UUID, "error_code": 0, "error_message": None}
    if name and topic_id:
        return {**result, "error_code": ErrorCode.invalid_request,
                "error_message": "Topic name and topic id cannot both be set."}
    if duplicate:
        return {**result, "error_code": ErrorCode.invalid_request,
                "error_message": "Duplicate topic id." if topic_id else "Duplicate topic name."}
    topic = cluster.topic_by_id(topic_id) if topic_id else cluster.topics.get(name or "")
    # ControllerApis says a topic is unknown only to whom may describe it, and deletes it for
    # whom may delete it.
    if not may_delete_any:
        topic_name = topic.name if topic is not None else name
        describable = topic_name and ctx.authorize(AclOperation.DESCRIBE, AclResourceType.TOPIC, topic_name)
        if not describable and (topic is not None or name) or \
                topic is not None and not ctx.permits(AclResourceType.TOPIC, topic.name):
            return {**result, "name": name if not describable else topic_name,
                    "error_code": ErrorCode.topic_authorization_failed,
                    "error_message": TOPIC_AUTHORIZATION_FAILED}
    if topic is None:
        code = ErrorCode.unknown_topic_id if topic_id else ErrorCode.unknown_topic_or_partition
        return {**result, "error_code": code}
    if configs.broker_value(cluster, None, "delete.topic.enable") != "true":
        return {**result, "name": topic.name, "error_code": ErrorCode.topic_deletion_disabled,
                "error_message": "Topic deletion is disabled."}
    topic_lifecycle.delete_topic(cluster, topic.name)
    return {**result, "name": topic.name, "topic_id": topic.id}


# -- CreatePartitions ------------------------------------------------------------------------


@api(ApiKey.CREATE_PARTITIONS)
def create_partitions(ctx: RequestContext) -> dict:
    req = ctx.request
    cluster = ctx.cluster
    if not ctx.is_controller:
        return {"results": [_error(t.name, ErrorCode.not_controller, NOT_CONTROLLER_MESSAGE)
                            for t in req.topics]}
    counts = Counter(t.name for t in req.topics)
    results = []
    for t in req.topics:
        if counts[t.name] > 1:
            results.append(_error(t.name, ErrorCode.invalid_request, "Duplicate topic name."))
            continue
        if not ctx.permits(AclResourceType.TOPIC, t.name):
            results.append(_error(t.name, ErrorCode.topic_authorization_failed, None))
            continue
        assignment = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
        try:
            replicas = topic_lifecycle.plan_new_partitions(cluster, t.name, t.count, assignment)
        except AdminError as exc:
            results.append(_error(t.name, exc.code, exc.message))
            continue
        if not req.validate_only:
            replay.commit(cluster, topic_lifecycle.partition_creation(cluster, t.name, replicas))
        results.append(_error(t.name, 0, None))
    return {"results": results}
