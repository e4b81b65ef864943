"""Classic group coordinator APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups, OffsetDelete.

The state machine is `kafka_shell.sandbox.classic_groups`; this module maps requests onto it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import uuid

from kio.schema.errors import ErrorCode

from kafka_shell.protocol import codec
from kafka_shell.sandbox import consumer_groups as cg
from kafka_shell.sandbox import classic_groups as gc
from kafka_shell.sandbox import share_groups as share
from kafka_shell.sandbox import streams_groups as sg
from kafka_shell.sandbox import transactions
from kafka_shell.sandbox.model import Topic
from kafka_shell.protocol.codes import AclOperation, AclResourceType, ApiKey
from kafka_shell.sandbox.handlers import api
from kafka_shell.sandbox.handlers.common import client_host, find_topic, group_denied, not_coordinator, topic_denied, topic_keys

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2
INVALID_REQUEST_MESSAGE = ("This most likely occurs because of a request being malformed by the client library or "
                           "the message was sent to an incompatible broker. See the broker logs for more details.")


def _coordinator(ctx: RequestContext) -> gc.Coordinator:
    return gc.Coordinator(ctx.cluster, ctx.sandbox.spawn)


# -- FindCoordinator --------------------------------------------------------------------------


@api(ApiKey.FIND_COORDINATOR)
def find_coordinator(ctx: RequestContext) -> dict:
    req = ctx.request
    key_type = req.key_type
    keys = list(req.coordinator_keys) if ctx.version >= 4 else [req.key]
    found = [_find(ctx, key, key_type) for key in keys]
    if ctx.version >= 4:
        return {"coordinators": found}
    return found[0]


def _find(ctx: RequestContext, key: str, key_type: int) -> dict:
    missing = {"key": key, "node_id": -1, "host": "", "port": -1}
    # Kafka answers each refusal with its error's default message (Errors.message()).
    if key_type == TRANSACTION_KEY and not ctx.permits(AclResourceType.TRANSACTIONAL_ID, key):
        return {**missing, "error_code": ErrorCode.transactional_id_authorization_failed,
                "error_message": "Transactional Id authorization failed."}
    if key_type == GROUP_KEY and (denied := group_denied(ctx, key)):
        return {**missing, "error_code": denied, "error_message": "Group authorization failed."}
    if key_type == SHARE_KEY and ApiKey.SHARE_GROUP_HEARTBEAT in ctx.served_apis():
        # KafkaApis: v6+ only, then CLUSTER_ACTION on the cluster, then a key SharePartitionKey reads.
        shared = share.parse_state_key(key) if ctx.version >= 6 else None
        if ctx.version >= 6 and not ctx.authorize(AclOperation.CLUSTER_ACTION, AclResourceType.CLUSTER):
            return {**missing, "error_code": ErrorCode.cluster_authorization_failed,
                    "error_message": "Cluster authorization failed."}
        if shared is None:
            return {**missing, "error_code": ErrorCode.invalid_request, "error_message": INVALID_REQUEST_MESSAGE}
        share.ensure_state_topic(ctx.cluster)
        node = share.state_coordinator_of(ctx.cluster, *shared)
    elif key_type not in (GROUP_KEY, TRANSACTION_KEY):
        return {**missing, "error_code": ErrorCode.invalid_request,
                "error_message": f"unknown coordinator key type {key_type}"}
    elif key_type == TRANSACTION_KEY:
        transactions.ensure_topic(ctx.cluster)
        node = transactions.coordinator_of(ctx.cluster, key)
    else:
        gc.ensure_offsets_topic(ctx.cluster)
        node = gc.coordinator_of(ctx.cluster, key)
    if node < 0:
        return {**missing, "error_code": ErrorCode.coordinator_not_available,
                "error_message": "The coordinator is not available."}
    b = ctx.cluster.brokers[node]
    return {"key": key, "node_id": b.id, "host": b.host, "port": ctx.port_of(b), "error_code": 0}


# -- membership -------------------------------------------------------------------------------


@api(ApiKey.JOIN_GROUP)
async def join_group(ctx: RequestContext) -> dict:
    req = ctx.request
    # Fields older versions lack: v0 has no rebalance timeout (the session timeout serves).
    base = {"generation_id": -1, "leader": "", "members": [], "member_id": req.member_id,
            "protocol_name": None if ctx.version >= 7 else ""}
    err = group_denied(ctx, req.group_id) or not_coordinator(ctx, req.group_id)
    if err:
        return {**base, "error_code": err}
    session_ms = int(req.session_timeout.total_seconds() * 1000)
    rebalance_ms = int(req.rebalance_timeout.total_seconds() * 1000)  # v0: Kafka's default -1, the session timeout
    result = await _coordinator(ctx).join(
        req.group_id, req.member_id, req.group_instance_id,
        ctx.header.client_id or "", client_host(ctx), session_ms,
        rebalance_ms if rebalance_ms >= 0 else session_ms,
        req.protocol_type, [(p.name, p.metadata) for p in req.protocols],
        require_known_member_id=ctx.version >= 4, skips_assignment=ctx.version >= 9)
    return {**base, **{k: v for k, v in result.items() if v is not None}}


@api(ApiKey.SYNC_GROUP)
async def sync_group(ctx: RequestContext) -> dict:
    req = ctx.request
    err = group_denied(ctx, req.group_id) or not_coordinator(ctx, req.group_id)
    if err:
        return {"error_code": err, "assignment": b""}
    result = await _coordinator(ctx).sync(
        req.group_id, req.member_id, req.generation_id, req.protocol_type,
        req.protocol_name, {a.member_id: a.assignment for a in req.assignments}, req.group_instance_id)
    return {"assignment": b"", **result}


@api(ApiKey.HEARTBEAT)
def heartbeat(ctx: RequestContext) -> dict:
    req = ctx.request
    err = group_denied(ctx, req.group_id) or not_coordinator(ctx, req.group_id) or \
        _coordinator(ctx).heartbeat(req.group_id, req.member_id, req.generation_id, getattr(req, "group_instance_id", None))
    return {"error_code": err}


@api(ApiKey.LEAVE_GROUP)
def leave_group(ctx: RequestContext) -> dict:
    req = ctx.request
    if ctx.version >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in req.members]
    else:
        leaving = [(req.member_id, None)]
    err = group_denied(ctx, req.group_id) or not_coordinator(ctx, req.group_id)
    if err:
        return {"error_code": err, "members": []}
    answers = _coordinator(ctx).leave(req.group_id, leaving)
    if ctx.version < 3:
        return {"error_code": answers[0][1]}
    return {"error_code": 0, "members": [
        {"member_id": m, "group_instance_id": i, "error_code": c} for (m, c), (_, i) in zip(answers, leaving)]}


# -- offsets ----------------------------------------------------------------------------------


def _commit_verdict(ctx: RequestContext, g: cg.ConsumerGroup | sg.StreamsGroup, member_id: str, epoch: int):
    """A commit into a group whose members commit with their member epoch (its coordinator's
    commit_error: 0, an error code, or a check per partition)."""
    if isinstance(g, sg.StreamsGroup):
        return sg.Coordinator(ctx.cluster).commit_error(g, member_id, epoch, ctx.version)
    return cg.Coordinator(ctx.cluster).commit_error(g, member_id, epoch, ctx.version)


def _fetch_error(ctx: RequestContext, g: cg.ConsumerGroup | sg.StreamsGroup, member_id: str | None, epoch: int) -> int:
    if isinstance(g, sg.StreamsGroup):
        return sg.Coordinator(ctx.cluster).fetch_error(g, member_id, epoch)
    return cg.Coordinator(ctx.cluster).fetch_error(g, member_id, epoch)


@api(ApiKey.OFFSET_COMMIT)
def offset_commit(ctx: RequestContext) -> dict:
    req = ctx.request
    coord = _coordinator(ctx)
    group: gc.OffsetHolder | None = None
    err = group_denied(ctx, req.group_id) or not_coordinator(ctx, req.group_id)
    check = None  # KIP-848: a commit with an older member epoch is checked per partition
    found = gc.all_groups(ctx.cluster).get(req.group_id)
    if not err and isinstance(found, (cg.ConsumerGroup, sg.StreamsGroup)):
        verdict = _commit_verdict(ctx, found, req.member_id, req.generation_id_or_member_epoch)
        group, err = (None, verdict) if isinstance(verdict, int) and verdict else (found, 0)
        check = verdict if callable(verdict) else None
    elif not err:
        found, err = coord.commit_error(req.group_id, req.member_id, req.generation_id_or_member_epoch,
                                        getattr(req, "group_instance_id", None), ctx.version)
        group = found if isinstance(found, gc.Group) else None
    topics = []
    for rt in req.topics:
        name, topic_id = getattr(rt, "name", None), getattr(rt, "topic_id", None)
        t, topic_err = find_topic(ctx.cluster, name, topic_id)
        if topic_denied(ctx, t, name):
            topic_err = ErrorCode.topic_authorization_failed
        parts = []
        for rp in rt.partitions:
            code = err or topic_err
            if not code:
                assert group is not None and t is not None, "no error: commit_error gave a group, find_topic a topic"
                if not 0 <= rp.partition_index < len(t.partitions):
                    code = ErrorCode.unknown_topic_or_partition
                elif check is not None and (stale := check(t.name, rp.partition_index)):
                    code = stale
                else:
                    code = coord.commit(group, t.name, rp.partition_index, rp.committed_offset,
                                        rp.committed_leader_epoch, rp.committed_metadata)
            parts.append({"partition_index": rp.partition_index, "error_code": code})
        topics.append({**topic_keys(t, name, topic_id), "partitions": parts})
    return {"topics": topics}


@api(ApiKey.OFFSET_FETCH)
def offset_fetch(ctx: RequestContext) -> dict:
    req = ctx.request
    if ctx.version >= 8:
        return {"groups": [_fetch_offsets(ctx, g.group_id, g.topics, (getattr(g, "member_id", None),
                                                                        getattr(g, "member_epoch", -1)))
                           for g in req.groups]}
    answer = _fetch_offsets(ctx, req.group_id, req.topics)
    return {"topics": answer["topics"], "error_code": answer["error_code"]}


OFFSET_FETCH_ROW = ("partition_index", "committed_offset", "committed_leader_epoch", "error_code")


def _partitions_answered(ctx: RequestContext, rows: list[tuple[int, int, int, int]], metadata: list[str]) -> object:
    """The partitions of an OffsetFetch answer (`rows` as OFFSET_FETCH_ROW, each one's metadata):
    packed at once when every metadata is the same (nearly always: none), as a group may hold
    offsets of 10,000s of partitions; else an entity each."""
    cls = codec.response_schema(ApiKey.OFFSET_FETCH, ctx.version)
    if ctx.version >= 8:
        cls = codec.element_class(cls, "groups")
    cls = codec.element_class(codec.element_class(cls, "topics"), "partitions")
    texts = set(metadata)
    if len(texts) <= 1:
        return codec.packed_array(cls, len(rows), {**dict(zip(OFFSET_FETCH_ROW, zip(*rows))),
                                                   "metadata": texts.pop() if texts else ""})
    make = codec.maker(cls)
    return [make(**dict(zip(OFFSET_FETCH_ROW, row)), metadata=text) for row, text in zip(rows, metadata)]


def _fetch_offsets(ctx: RequestContext, group_id: str, wanted, member: tuple[str | None, int] = (None, -1)) -> dict:
    err = group_denied(ctx, group_id) or not_coordinator(ctx, group_id)
    g = gc.all_groups(ctx.cluster).get(group_id)
    if not err and isinstance(g, (cg.ConsumerGroup, sg.StreamsGroup)):
        err = _fetch_error(ctx, g, *member)  # members fetch with their epoch
    if err:
        return {"group_id": group_id, "error_code": err, "topics": []}
    committed = g.offsets if g else {}
    stable = getattr(ctx.request, "require_stable", False)
    requests: list[tuple[Topic | None, str | None, uuid.UUID | None, list[int]]]
    if wanted is None:  # every topic the group has offsets for
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(committed):
            by_topic.setdefault(topic, []).append(partition)
        # Kafka leaves out the topics the principal may not describe.
        requests = [(ctx.cluster.topics.get(topic), topic, None, parts) for topic, parts in by_topic.items()
                    if not topic_denied(ctx, None, topic)]
    else:
        requests = []
        for rt in wanted:
            name, topic_id = getattr(rt, "name", None), getattr(rt, "topic_id", None)
            requests.append((find_topic(ctx.cluster, name, topic_id)[0], name, topic_id,
                             list(rt.partition_indexes)))
    topics = []
    for t, name, topic_id, partitions in requests:
        keys = topic_keys(t, name, topic_id)  # its "name" is "" for a topic unknown by name
        parts: object
        if t is None and topic_id is not None or topic_denied(ctx, t, name):
            code = ErrorCode.unknown_topic_id if t is None and topic_id is not None else ErrorCode.topic_authorization_failed
            parts = [{"partition_index": i, "committed_offset": -1, "metadata": "",
                      "error_code": code} for i in partitions]
        else:
            rows: list[tuple[int, int, int, int]] = []
            metadata: list[str] = []
            for i in partitions:
                o = committed.get((keys["name"], i))
                if stable and transactions.has_pending_offsets(ctx.cluster, group_id, (keys["name"], i)):
                    # KIP-447: an offset a transaction has yet to commit is not answered yet.
                    rows.append((i, -1, -1, ErrorCode.unstable_offset_commit))
                    metadata.append("")
                elif o is None:
                    rows.append((i, -1, -1, ErrorCode.none))
                    metadata.append("")
                else:
                    rows.append((i, o.offset, o.leader_epoch, ErrorCode.none))
                    metadata.append(o.metadata or "")
            parts = _partitions_answered(ctx, rows, metadata)
        topics.append({**keys, "partitions": parts})
    return {"group_id": group_id, "error_code": 0, "topics": topics}


@api(ApiKey.OFFSET_DELETE)
def offset_delete(ctx: RequestContext) -> dict:
    req = ctx.request
    err = group_denied(ctx, req.group_id) or not_coordinator(ctx, req.group_id)
    g = gc.all_groups(ctx.cluster).get(req.group_id)
    coord = _coordinator(ctx)
    err = err or coord.delete_offsets_error(g)
    if err:
        return {"error_code": err, "topics": []}
    assert g is not None, "delete_offsets_error reports a missing group"
    subscribed = coord.subscribed_topics(g)
    topics = []
    for rt in req.topics:
        t = ctx.cluster.topics.get(rt.name)
        denied = topic_denied(ctx, t, rt.name)
        parts = []
        for rp in rt.partitions:
            if denied:
                code = ErrorCode.topic_authorization_failed
            elif t is None or not 0 <= rp.partition_index < len(t.partitions):
                code = ErrorCode.unknown_topic_or_partition
            elif rt.name in subscribed:
                code = ErrorCode.group_subscribed_to_topic
            else:
                coord.delete_offset(g, rt.name, rp.partition_index)
                code = ErrorCode.none
            parts.append({"partition_index": rp.partition_index, "error_code": code})
        topics.append({"name": rt.name, "partitions": parts})
    return {"error_code": 0, "topics": topics}


# -- administration ---------------------------------------------------------------------------


@api(ApiKey.LIST_GROUPS)
def list_groups(ctx: RequestContext) -> dict:
    req = ctx.request
    states = {s.lower() for s in req.states_filter}
    types = {s.lower() for s in req.types_filter}
    out = []
    # DESCRIBE on the cluster lists every group; without it, those the principal may describe.
    everything = ctx.permits(AclResourceType.CLUSTER)
    for g in gc.all_groups(ctx.cluster).values():
        if gc.coordinator_of(ctx.cluster, g.group_id) != ctx.broker.id:
            continue
        if not everything and group_denied(ctx, g.group_id):
            continue
        if (states and g.state.lower() not in states) or (types and g.group_type not in types):
            continue
        out.append({"group_id": g.group_id, "protocol_type": g.protocol_type or "",
                    "group_state": g.state, "group_type": g.group_type})
    return {"error_code": 0, "groups": out}


@api(ApiKey.DESCRIBE_GROUPS)
def describe_groups(ctx: RequestContext) -> dict:
    return {"groups": [_describe(ctx, group_id) for group_id in ctx.request.groups]}


def _describe(ctx: RequestContext, group_id: str) -> dict:
    base = {"group_id": group_id, "group_state": "", "protocol_type": "", "protocol_data": "",
            "members": []}
    err = group_denied(ctx, group_id) or not_coordinator(ctx, group_id)
    if err:
        return {**base, "error_code": err}
    found = gc.all_groups(ctx.cluster).get(group_id)
    g = found if isinstance(found, gc.Group) else None
    if g is None:
        # v6+ (KIP-1043) reports a missing group (or one of another type) as an error; older versions as Dead.
        code = ErrorCode.group_id_not_found if ctx.version >= 6 else 0
        message = None if found is None else f"Group {group_id} is not a classic group."
        return {**base, "error_code": code, "group_state": gc.DEAD, "error_message": message if code else None}
    stable = g.state == gc.STABLE
    # Kafka shows member metadata, assignments and the protocol only once the group is stable.
    members = [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                "client_id": m.client_id, "client_host": m.client_host,
                "member_metadata": m.metadata(g.protocol_name) if stable else b"",
                "member_assignment": m.assignment if stable else b""} for m in g.members.values()]
    operations = ctx.authorized_operations(ctx.request.include_authorized_operations,
                                           AclResourceType.GROUP, group_id)
    return {**base, "error_code": 0, "group_state": g.state, "protocol_type": g.protocol_type or "",
            "protocol_data": (g.protocol_name or "") if stable else "", "members": members,
            "authorized_operations": operations}


@api(ApiKey.DELETE_GROUPS)
def delete_groups(ctx: RequestContext) -> dict:
    coord = _coordinator(ctx)
    return {"results": [{"group_id": gid, "error_code": group_denied(ctx, gid) or not_coordinator(ctx, gid)
                         or coord.delete(gid)}
                        for gid in ctx.request.groups_names]}
