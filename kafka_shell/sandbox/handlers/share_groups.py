"""Share group APIs (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
ShareAcknowledge, the share coordinator's state RPCs (Initialize/Read/Write/DeleteShareGroupState,
ReadShareGroupStateSummary) and Describe/Alter/DeleteShareGroupOffsets.

The state is `kafka_shell.sandbox.share_groups`; this module checks requests as Kafka 4.4's
GroupCoordinatorService, KafkaApis and ShareCoordinatorService do and maps them onto it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import asyncio
import uuid

from kio.schema.errors import ErrorCode

from kafka_shell.protocol.codes import AclResourceType, ApiKey
from kafka_shell.sandbox import log, replay
from kafka_shell.sandbox import share_groups as sg
from kafka_shell.sandbox.handlers import api
from kafka_shell.sandbox.handlers.common import client_host, group_denied, not_coordinator
from kafka_shell.sandbox.handlers.common import current_leader, leader_error, node_endpoints, topic_denied
from kafka_shell.sandbox.model import Partition
from kafka_shell.sandbox.records import ShareSnapshotRecord

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

INVALID = ErrorCode.invalid_request


# -- ShareGroupHeartbeat and ShareGroupDescribe --------------------------------------------------------


def _invalid_heartbeat(req) -> str | None:
    """GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid (4.4)."""
    if not req.member_id:
        return "MemberId can't be empty."
    if not req.group_id:
        return "GroupId can't be empty."
    if req.rack_id == "":
        return "RackId can't be empty."
    if req.member_epoch == 0 and not req.subscribed_topic_names:
        return "SubscribedTopicNames must be set in first request."
    if req.member_epoch < sg.LEAVE_EPOCH:
        return "MemberEpoch is invalid."
    return None


@api(ApiKey.SHARE_GROUP_HEARTBEAT)
def share_group_heartbeat(ctx: RequestContext) -> dict:
    req = ctx.request
    base = {"member_id": None, "member_epoch": 0, "heartbeat_interval": 0, "assignment": None}
    err = group_denied(ctx, req.group_id) or not_coordinator(ctx, req.group_id)
    if err:
        return {**base, "error_code": err}
    if not req.member_id:   # KafkaApis refuses it before the coordinator, with no message
        return {**base, "error_code": INVALID}
    problem = _invalid_heartbeat(req)
    if problem:
        return {**base, "error_code": INVALID, "error_message": problem}
    names = None if req.subscribed_topic_names is None else list(req.subscribed_topic_names)
    denied = [n for n in names or () if topic_denied(ctx, None, n)]
    if denied:
        return {**base, "error_code": ErrorCode.topic_authorization_failed,
                "error_message": f"The group has subscribed to topics that it is not authorized to describe: {denied}"}
    try:
        answer = replay.commit(ctx.cluster, sg.Coordinator(ctx.cluster).heartbeat(
            req.group_id, req.member_id, req.member_epoch, req.rack_id, ctx.header.client_id or "", client_host(ctx),
            names))
    except sg.GroupError as exc:
        return {**base, "error_code": exc.code, "error_message": exc.message}
    return {**base, **answer}


@api(ApiKey.SHARE_GROUP_DESCRIBE)
def share_group_describe(ctx: RequestContext) -> dict:
    return {"groups": [_describe(ctx, group_id) for group_id in ctx.request.group_ids]}


def _describe(ctx: RequestContext, group_id: str) -> dict:
    base = {"group_id": group_id, "group_state": "", "group_epoch": 0, "assignment_epoch": 0,
            "assignor_name": "", "members": []}
    err = group_denied(ctx, group_id) or not_coordinator(ctx, group_id)
    if err:
        return {**base, "error_code": err}
    try:
        g = sg.Coordinator(ctx.cluster).group(group_id)
    except sg.GroupError as exc:
        return {**base, "error_code": exc.code, "error_message": exc.message}
    names = {t.id: name for name, t in ctx.cluster.topics.items()}
    members = [{"member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.epoch, "client_id": m.client_id,
                "client_host": m.client_host, "subscribed_topic_names": list(m.topic_names),
                "assignment": {"topic_partitions": [{"topic_id": t, "topic_name": names[t], "partitions": sorted(ps)}
                                                    for t, ps in m.assigned.items() if t in names]}}
               for m in g.members.values()]
    operations = ctx.authorized_operations(ctx.request.include_authorized_operations, AclResourceType.GROUP, group_id)
    return {**base, "error_code": 0, "group_state": g.state, "group_epoch": g.epoch,
            "assignment_epoch": g.assignment_epoch, "assignor_name": sg.ASSIGNOR, "members": members,
            "authorized_operations": operations}


# -- ShareFetch and ShareAcknowledge -------------------------------------------------------------------


def _session_key(ctx: RequestContext, req) -> tuple[int, str, str]:
    return (ctx.broker.id, req.group_id or "", req.member_id or "")


def _acks(rp) -> list[tuple[int, int, list[int]]]:
    return [(b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in rp.acknowledgement_batches]


def _partition(ctx: RequestContext, topic_id, index: int) -> tuple[Partition | None, int]:
    t = ctx.cluster.topic_by_id(topic_id)
    if t is None:
        return None, ErrorCode.unknown_topic_id
    if topic_denied(ctx, t, t.name):
        return None, ErrorCode.topic_authorization_failed
    p = t.partition(index)
    if p is None:
        return None, ErrorCode.unknown_topic_or_partition
    return p, leader_error(ctx, p)


def _top_error(code: int, message: str | None = None) -> dict:
    return {"error_code": code, "error_message": message, "responses": [], "node_endpoints": [],
            "acquisition_lock_timeout": 0}


@api(ApiKey.SHARE_FETCH)
async def share_fetch(ctx: RequestContext) -> dict:
    """A long poll: acknowledge what the request acknowledges, then acquire records of the
    session's partitions; answer when some are acquired, on an error, or after max_wait."""
    req = ctx.request
    if not req.group_id:
        return _top_error(ErrorCode.invalid_group_id)
    if not ctx.permits(AclResourceType.GROUP, req.group_id):
        return _top_error(ErrorCode.group_authorization_failed)
    if not req.member_id:
        return _top_error(ErrorCode.invalid_request, "Member id can't be empty.")
    wanted = [(rt.topic_id, rp.partition_index) for rt in req.topics for rp in rt.partitions]
    acks = {(rt.topic_id, rp.partition_index): _acks(rp) for rt in req.topics for rp in rt.partitions
            if rp.acknowledgement_batches}
    forgotten = {(ft.topic_id, p) for ft in req.forgotten_topics_data for p in ft.partitions}
    table = sg.sessions(ctx.cluster)
    key = _session_key(ctx, req)
    epoch = req.share_session_epoch
    final = epoch == -1
    if epoch == 0:
        if acks:
            return _top_error(ErrorCode.invalid_request)
        if key in table:
            sg.Partitions(ctx.cluster).release_member(req.group_id, req.member_id, table[key].partitions)
        session = table[key] = sg.Session(1, list(dict.fromkeys(wanted)), ctx.connection)
    else:
        found = table.get(key)
        if found is None:
            return _top_error(ErrorCode.share_session_not_found)
        session = found
        if final:
            if wanted and any(not rp.acknowledgement_batches for rt in req.topics for rp in rt.partitions):
                return _top_error(ErrorCode.invalid_request)
        elif session.epoch != epoch:
            return _top_error(ErrorCode.invalid_share_session_epoch)
        else:
            session.partitions = [tp for tp in dict.fromkeys(session.partitions + wanted) if tp not in forgotten]
            session.epoch = sg.next_epoch(session.epoch)
    parts = sg.Partitions(ctx.cluster)
    answers: dict[tuple[uuid.UUID, int], dict] = {}
    moved: list[Partition] = []
    for tp, batches in acks.items():
        answers[tp] = _acknowledged(ctx, parts, req, tp, batches, moved)
    lock_ms = sg.group_configs.value(ctx.cluster, req.group_id, "share.record.lock.duration.ms")
    if final:
        del table[key]
        parts.release_member(req.group_id, req.member_id, session.partitions)
        return {"error_code": 0, "responses": _by_topic(answers), "node_endpoints": node_endpoints(ctx, moved),
                "acquisition_lock_timeout": lock_ms}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + req.max_wait.total_seconds()
    strict = getattr(req, "share_acquire_mode", 0) == sg.RECORD_LIMIT_MODE
    fetchable = session.partitions if epoch != 0 else list(dict.fromkeys(wanted))
    while True:
        event = log.progress_event(ctx.cluster)
        size = _acquire(ctx, parts, req, fetchable, answers, moved, strict)
        if size or loop.time() >= deadline or any(a["error_code"] for a in answers.values()):
            break
        await log.wait_progress(event, deadline - loop.time())
    if epoch == 0:   # a new session answers for every partition it holds
        for tp in fetchable:
            answers.setdefault(tp, _empty(ctx, tp))
    return {"error_code": 0, "responses": _by_topic(answers), "node_endpoints": node_endpoints(ctx, moved),
            "acquisition_lock_timeout": lock_ms}


def _empty(ctx: RequestContext, tp: tuple[uuid.UUID, int]) -> dict:
    p, _ = _partition(ctx, *tp)
    return {"partition_index": tp[1], "error_code": 0, "acknowledge_error_code": 0, "records": b"",
            "acquired_records": [], "current_leader": current_leader(p) if p else {"leader_id": -1, "leader_epoch": -1}}


def _acknowledged(ctx: RequestContext, parts: sg.Partitions, req, tp, batches, moved: list[Partition]) -> dict:
    answer = _empty(ctx, tp)
    p, err = _partition(ctx, *tp)
    if err:
        if err == ErrorCode.not_leader_or_follower and p is not None:
            moved.append(p)
        answer["acknowledge_error_code"] = err
        return answer
    sp = parts.get(req.group_id, tp[0], tp[1], create=False)
    code = ErrorCode.invalid_record_state if sp is None else parts.acknowledge(sp, req.member_id, batches)
    answer["acknowledge_error_code"] = code
    return answer


def _acquire(ctx: RequestContext, parts: sg.Partitions, req, fetchable, answers: dict, moved: list[Partition], strict: bool) -> int:
    """One pass over the session's partitions; the number of records acquired."""
    total = 0
    left = max(req.max_records, 1)
    remaining = req.max_bytes
    for tp in fetchable:
        p, err = _partition(ctx, *tp)
        answer = answers.setdefault(tp, _empty(ctx, tp))
        if err:
            answer["error_code"] = err
            if err == ErrorCode.not_leader_or_follower and p is not None:
                moved.append(p)
            continue
        if left <= 0 or remaining <= 0:
            continue
        assert p is not None, "no error: the partition exists"
        sp = parts.get(req.group_id, tp[0], tp[1])
        assert sp is not None, "get(create=True) makes one"
        ranges = parts.acquire(sp, p, req.member_id, left, strict, remaining)
        if not ranges:
            continue
        data = parts.read(p, ranges, remaining)
        answer["records"] = answer["records"] + data
        answer["acquired_records"] = answer["acquired_records"] + [
            {"first_offset": f, "last_offset": last, "delivery_count": c} for f, last, c in ranges]
        count = sum(last - f + 1 for f, last, _ in ranges)
        total += count
        left -= count
        remaining -= len(data)
    return total


def _by_topic(answers: dict[tuple[uuid.UUID, int], dict]) -> list[dict]:
    out: dict[uuid.UUID, list[dict]] = {}
    for (topic_id, _), answer in answers.items():
        out.setdefault(topic_id, []).append(answer)
    return [{"topic_id": t, "partitions": ps} for t, ps in out.items()]


@api(ApiKey.SHARE_ACKNOWLEDGE)
def share_acknowledge(ctx: RequestContext) -> dict:
    req = ctx.request
    base: dict = {"responses": [], "node_endpoints": []}
    if not req.group_id:
        return {**base, "error_code": ErrorCode.invalid_group_id}
    if not ctx.permits(AclResourceType.GROUP, req.group_id):
        return {**base, "error_code": ErrorCode.group_authorization_failed}
    table = sg.sessions(ctx.cluster)
    key = _session_key(ctx, req)
    epoch = req.share_session_epoch
    if epoch == 0:
        return {**base, "error_code": ErrorCode.invalid_share_session_epoch}
    session = table.get(key)
    if session is None:
        return {**base, "error_code": ErrorCode.share_session_not_found}
    if epoch != -1:
        if session.epoch != epoch:
            return {**base, "error_code": ErrorCode.invalid_share_session_epoch}
        session.epoch = sg.next_epoch(session.epoch)
    parts = sg.Partitions(ctx.cluster)
    moved: list[Partition] = []
    answers = {}
    for rt in req.topics:
        for rp in rt.partitions:
            a = _acknowledged(ctx, parts, req, (rt.topic_id, rp.partition_index), _acks(rp), moved)
            answers[(rt.topic_id, rp.partition_index)] = {
                "partition_index": rp.partition_index, "error_code": a["acknowledge_error_code"],
                "current_leader": a["current_leader"]}
    if epoch == -1:
        del table[key]
        parts.release_member(req.group_id, req.member_id or "", session.partitions)
    return {"error_code": 0, "responses": _by_topic(answers), "node_endpoints": node_endpoints(ctx, moved)}


# -- the share coordinator's state RPCs -----------------------------------------------------------------


FENCED_LEADER_EPOCH_MESSAGE = "The leader epoch in the request is older than the epoch on the broker."
FENCED_STATE_EPOCH_MESSAGE = "The coordinator rejected the request because the state epoch did not match."
UNKNOWN_PARTITION_MESSAGE = "This server does not host this topic-partition."
# How ShareCoordinatorService words a failed operation ("Unable to ...: <the error's message>").
STATE_VERBS = {"Initialize": "initialize share group state", "Read": "read share group state",
               "Write": "write share group state", "Summary": "read share group state summary",
               "Delete": "delete share group state"}


def _state_refused(ctx: RequestContext, group_id: str, topic_id, rp, sp: sg.SharePartition | None, what: str) -> tuple[int, str | None]:
    """Why a share coordinator refuses a state request for one share-partition (0: it does not),
    in Kafka's order: CLUSTER_ACTION (KafkaApis), this broker not its coordinator (the
    coordinator runtime), then ShareCoordinatorShard's checks for `what` (Initialize, Read,
    Write, Summary, Delete): a negative partition, a Read or Write before any Initialize, an
    older leader or state epoch, a topic-partition the cluster does not have."""
    if not ctx.permits(AclResourceType.CLUSTER):
        return ErrorCode.cluster_authorization_failed, None
    if sg.state_coordinator_of(ctx.cluster, group_id, topic_id, rp.partition) != ctx.broker.id:
        return ErrorCode.not_coordinator, f"Unable to {STATE_VERBS[what]}: This is not the correct coordinator."
    if rp.partition < 0:
        return ErrorCode.invalid_request, "The partition id cannot be a negative number."
    if what in ("Read", "Write") and sp is None:
        return ErrorCode.invalid_request, f"{what} operation on uninitialized share partition not allowed."
    leader_epoch = getattr(rp, "leader_epoch", -1)
    if sp is not None and ((what == "Write" and leader_epoch != -1) or what == "Read") and leader_epoch < sp.leader_epoch:
        return ErrorCode.fenced_leader_epoch, FENCED_LEADER_EPOCH_MESSAGE
    if what in ("Initialize", "Write") and sp is not None and rp.state_epoch != -1 and rp.state_epoch < sp.state_epoch:
        return ErrorCode.fenced_state_epoch, FENCED_STATE_EPOCH_MESSAGE
    t = ctx.cluster.topic_by_id(topic_id)
    if t is None or t.partition(rp.partition) is None:
        return ErrorCode.unknown_topic_or_partition, UNKNOWN_PARTITION_MESSAGE
    return 0, None


def _state_answers(ctx: RequestContext, what: str, answer) -> list[dict]:
    """One result per topic of the request: per partition, the refusal (its other fields the
    schema's defaults, as Kafka's error answers) or `answer(share-partition or None, topic id,
    request partition)`."""
    req, parts = ctx.request, sg.Partitions(ctx.cluster)

    def one(topic_id, rp) -> dict:
        sp = parts.get(req.group_id, topic_id, rp.partition, create=False)
        code, message = _state_refused(ctx, req.group_id, topic_id, rp, sp, what)
        if code:
            return {"partition": rp.partition, "error_code": code, "error_message": message}
        return {"partition": rp.partition, "error_code": 0, **answer(sp, topic_id, rp)}
    return [{"topic_id": rt.topic_id, "partitions": [one(rt.topic_id, rp) for rp in rt.partitions]}
            for rt in req.topics]


@api(ApiKey.INITIALIZE_SHARE_GROUP_STATE)
def initialize_share_group_state(ctx: RequestContext) -> dict:
    req = ctx.request
    parts = sg.Partitions(ctx.cluster)

    def initialized(sp: sg.SharePartition | None, topic_id, rp) -> dict:
        sp = sp or parts.get(req.group_id, topic_id, rp.partition)
        assert sp is not None, "get(create=True) makes one"
        parts.reset(sp, rp.start_offset, rp.state_epoch)
        return {}
    return {"results": _state_answers(ctx, "Initialize", initialized)}


@api(ApiKey.READ_SHARE_GROUP_STATE)
def read_share_group_state(ctx: RequestContext) -> dict:
    def read(sp: sg.SharePartition, topic_id, rp) -> dict:
        if rp.leader_epoch != -1:   # only a Read moves the leader epoch kept (never back: older is fenced)
            sg.write_leader_epoch(ctx.cluster, sp, rp.leader_epoch)
        return {"state_epoch": sp.state_epoch, "start_offset": sp.written_start,
                "state_batches": [b for b in sp.state_batches() if b["last_offset"] >= sp.written_start]}
    return {"results": _state_answers(ctx, "Read", read)}


@api(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY)
def read_share_group_state_summary(ctx: RequestContext) -> dict:
    def summary(sp: sg.SharePartition | None, topic_id, rp) -> dict:
        if sp is None:   # Kafka's PartitionFactory defaults for a share-partition never initialized
            return {"state_epoch": 0, "leader_epoch": 0, "start_offset": -1, "delivery_complete_count": -1}
        return {"state_epoch": sp.state_epoch, "leader_epoch": sp.leader_epoch, "start_offset": sp.written_start,
                "delivery_complete_count": sp.written_done}
    return {"results": _state_answers(ctx, "Summary", summary)}


@api(ApiKey.WRITE_SHARE_GROUP_STATE)
def write_share_group_state(ctx: RequestContext) -> dict:
    def written(sp: sg.SharePartition, topic_id, rp) -> dict:
        # A Write keeps the state and leader epochs (ShareCoordinatorShard writes the current ones).
        if rp.start_offset >= 0:
            sp.start_offset = rp.start_offset
            sp.next_offset = max(sp.next_offset, sp.start_offset)
        end = sg.high_watermark(ctx.cluster, topic_id, rp.partition)
        for b in rp.state_batches:
            sp.put_states(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count, end)
        sp.records = {o: r for o, r in sp.records.items() if o >= sp.start_offset}
        sg.write_state(ctx.cluster, sp)
        if getattr(rp, "delivery_complete_count", -1) >= 0:   # v1+
            sp.written_done = rp.delivery_complete_count
        sp.advance()
        return {}
    return {"results": _state_answers(ctx, "Write", written)}


@api(ApiKey.DELETE_SHARE_GROUP_STATE)
def delete_share_group_state(ctx: RequestContext) -> dict:
    req = ctx.request

    def deleted(sp: sg.SharePartition | None, topic_id, rp) -> dict:
        replay.apply(ctx.cluster, ShareSnapshotRecord(req.group_id, topic_id, rp.partition, None))
        return {}
    return {"results": _state_answers(ctx, "Delete", deleted)}


# -- Describe/Alter/DeleteShareGroupOffsets ---------------------------------------------------------------


@api(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
def describe_share_group_offsets(ctx: RequestContext) -> dict:
    return {"groups": [_offsets(ctx, g.group_id, g.topics) for g in ctx.request.groups]}


def _offsets(ctx: RequestContext, group_id: str, wanted) -> dict:
    base = {"group_id": group_id, "topics": []}
    err = group_denied(ctx, group_id) or not_coordinator(ctx, group_id)
    if err:
        return {**base, "error_code": err}
    coordinator = sg.Coordinator(ctx.cluster)
    try:
        coordinator.group(group_id)
    except sg.GroupError as exc:
        return {**base, "error_code": exc.code, "error_message": exc.message}
    parts = sg.Partitions(ctx.cluster)
    states = coordinator.state_topics(group_id)

    def row(t, index: int) -> dict:
        sp = parts.get(group_id, t.id, index, create=False) if t is not None else None
        p = t.partition(index) if t is not None else None
        if t is None or p is None:
            return {"partition_index": index, "start_offset": -1, "leader_epoch": -1, "lag": -1,
                    "error_code": ErrorCode.unknown_topic_or_partition}
        if sp is None or sp.written_start < 0:
            return {"partition_index": index, "start_offset": -1, "leader_epoch": -1, "lag": -1, "error_code": 0}
        return {"partition_index": index, "start_offset": sp.written_start, "leader_epoch": sp.leader_epoch,
                "lag": parts.lag(sp, p), "error_code": 0}
    topics = []
    if wanted is None:   # every topic the group has state for
        for topic_id, sps in states.items():
            t = ctx.cluster.topic_by_id(topic_id)
            if t is None or topic_denied(ctx, t, t.name):
                continue
            topics.append({"topic_name": t.name, "topic_id": t.id, "partitions": [row(t, sp.partition) for sp in sps]})
    else:
        for rt in wanted:
            t = ctx.cluster.topics.get(rt.topic_name)
            if topic_denied(ctx, t, rt.topic_name):
                topics.append({"topic_name": rt.topic_name, "partitions": [
                    {"partition_index": i, "start_offset": -1, "leader_epoch": -1, "lag": -1,
                     "error_code": ErrorCode.topic_authorization_failed} for i in rt.partitions]})
                continue
            topics.append({"topic_name": rt.topic_name, "topic_id": t.id if t else uuid.UUID(int=0),
                           "partitions": [row(t, i) for i in rt.partitions]})
    return {**base, "error_code": 0, "topics": topics}


def _empty_share_group(ctx: RequestContext, group_id: str, create: bool) -> tuple[sg.ShareGroup | None, int, str | None]:
    err = group_denied(ctx, group_id) or not_coordinator(ctx, group_id)
    if err:
        return None, err, None
    coordinator = sg.Coordinator(ctx.cluster)
    try:
        g = coordinator.existing_or_new(group_id) if create else coordinator.group(group_id)
    except sg.GroupError as exc:
        return None, exc.code, exc.message
    if g.members:
        return None, ErrorCode.non_empty_group, "The group is not empty."
    return g, 0, None


@api(ApiKey.ALTER_SHARE_GROUP_OFFSETS)
def alter_share_group_offsets(ctx: RequestContext) -> dict:
    req = ctx.request
    g, err, message = _empty_share_group(ctx, req.group_id, create=True)
    if err:
        return {"error_code": err, "error_message": message, "responses": []}
    assert g is not None, "no error: the group"
    parts = sg.Partitions(ctx.cluster)
    responses = []
    for rt in req.topics:
        t = ctx.cluster.topics.get(rt.topic_name)
        rows = []
        for rp in rt.partitions:
            if t is None or topic_denied(ctx, t, rt.topic_name) or t.partition(rp.partition_index) is None:
                rows.append({"partition_index": rp.partition_index, "error_code": ErrorCode.unknown_topic_or_partition,
                             "error_message": "This server does not host this topic-partition."})
                continue
            sp = parts.get(req.group_id, t.id, rp.partition_index)
            assert sp is not None, "get(create=True) makes one"
            parts.reset(sp, rp.start_offset, max(sp.state_epoch + 1, g.epoch))
            rows.append({"partition_index": rp.partition_index, "error_code": 0})
        responses.append({"topic_name": rt.topic_name, "topic_id": t.id if t else uuid.UUID(int=0), "partitions": rows})
    return {"error_code": 0, "responses": responses}


@api(ApiKey.DELETE_SHARE_GROUP_OFFSETS)
def delete_share_group_offsets(ctx: RequestContext) -> dict:
    req = ctx.request
    if not req.group_id:
        return {"error_code": ErrorCode.invalid_group_id, "responses": []}
    g, err, message = _empty_share_group(ctx, req.group_id, create=False)
    if err:
        return {"error_code": err, "error_message": message, "responses": []}
    coordinator = sg.Coordinator(ctx.cluster)
    initialized = coordinator.state_topics(req.group_id)
    parts = sg.Partitions(ctx.cluster)
    responses = []
    for rt in req.topics:
        t = ctx.cluster.topics.get(rt.topic_name)
        if t is None or topic_denied(ctx, t, rt.topic_name):
            responses.append({"topic_name": rt.topic_name, "error_code": ErrorCode.unknown_topic_or_partition,
                              "error_message": "This server does not host this topic-partition."})
        elif t.id not in initialized:
            responses.append({"topic_name": rt.topic_name, "error_code": ErrorCode.unknown_topic_or_partition,
                              "error_message": "There is no offset information to delete."})
        else:
            parts.delete_group(req.group_id, {t.id})
            responses.append({"topic_name": rt.topic_name, "topic_id": t.id, "error_code": 0})
    return {"error_code": 0, "responses": responses}
