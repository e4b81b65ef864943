"""The data path: Produce, Fetch, ListOffsets, DeleteRecords, OffsetForLeaderEpoch.

Fetch sessions (KIP-227) are not kept: every Fetch answers with session id 0 ("no session"),
which clients accept by sending full fetch requests.
"""

from __future__ import annotations

import asyncio
import uuid

from kio.schema.errors import ErrorCode

from kafka_shell import protocol
from kafka_shell.sandbox import configs, log
from kafka_shell.codes import AclResourceType, ApiKey
from kafka_shell.sandbox.handlers import api
from kafka_shell.sandbox.model import Cluster, Partition, Topic, now_ms


def find_topic(cluster: Cluster, name: str | None, topic_id: uuid.UUID | None) -> tuple[Topic | None, int]:
    """The topic a request names by name or (newer versions) by id, or the error to answer."""
    if name:
        t = cluster.topics.get(name)
        return t, 0 if t else ErrorCode.unknown_topic_or_partition
    t = cluster.topic_by_id(topic_id) if topic_id and topic_id != protocol.ZERO_UUID else None
    return t, 0 if t else ErrorCode.unknown_topic_id


def topic_keys(t: Topic | None, name: str | None, topic_id: uuid.UUID | None) -> dict:
    """Both ways a response may name a topic; `build` keeps the one the version has."""
    return {"name": name or (t.name if t else ""), "topic": name or (t.name if t else ""),
            "topic_id": topic_id or (t.id if t else protocol.ZERO_UUID)}


def leader_error(ctx, p: Partition, current_leader_epoch: int = -1) -> int:
    """Kafka's check before serving a partition: this broker a replica, the client's leader epoch
    current, this broker the leader."""
    if ctx.broker.id not in p.replicas:
        return ErrorCode.not_leader_or_follower
    if current_leader_epoch >= 0 and current_leader_epoch < p.leader_epoch:
        return ErrorCode.fenced_leader_epoch
    if current_leader_epoch > p.leader_epoch:
        return ErrorCode.unknown_leader_epoch
    if p.leader != ctx.broker.id:
        return ErrorCode.not_leader_or_follower
    return 0


def topic_denied(ctx, t: Topic | None, name: str | None) -> bool:
    """Whether the principal lacks what this API needs on the topic (authorizer.API_NEEDS):
    asked before whether a named topic exists, as Kafka does."""
    topic_name = name or (t.name if t else None)
    return bool(topic_name) and not ctx.permits(AclResourceType.TOPIC, topic_name)


def _current_leader(p: Partition | None) -> dict:
    return {"leader_id": p.leader, "leader_epoch": p.leader_epoch} if p else {}


def _node_endpoints(ctx, partitions: list[Partition]) -> list[dict]:
    """Endpoints of the leaders named in NOT_LEADER_OR_FOLLOWER answers (KIP-951)."""
    ids = sorted({p.leader for p in partitions if p.leader >= 0})
    return [{"node_id": b.id, "host": b.host, "port": ctx.port_of(b), "rack": b.rack}
            for b in (ctx.cluster.brokers[i] for i in ids) if b.usable]


def _lookup(ctx, rt, name_attr: str) -> tuple[Topic | None, int, str | None, uuid.UUID | None]:
    name = getattr(rt, name_attr, None)
    topic_id = getattr(rt, "topic_id", None)
    t, err = find_topic(ctx.cluster, name, topic_id)
    return t, err, name, topic_id


# -- Produce ----------------------------------------------------------------------------------


@api(ApiKey.PRODUCE)
async def produce(ctx) -> dict | None:
    req = ctx.request
    cluster = ctx.cluster
    acks = req.acks
    appended: list[tuple[Partition, int, dict]] = []
    moved: list[Partition] = []
    topics = []
    for td in req.topic_data:
        t, topic_err, name, topic_id = _lookup(ctx, td, "name")
        denied = topic_denied(ctx, t, name)
        answers = []
        for pd in td.partition_data:
            answer = {"index": pd.index, "error_code": 0, "base_offset": -1, "log_append_time": -1,
                      "log_start_offset": -1, "record_errors": []}
            answers.append(answer)
            p = t.partition(pd.index) if t else None
            if acks not in (-1, 0, 1):
                answer["error_code"] = ErrorCode.invalid_required_acks
            elif denied:
                answer["error_code"] = ErrorCode.topic_authorization_failed
            elif t is None or p is None:
                answer["error_code"] = topic_err or ErrorCode.unknown_topic_or_partition
            elif t.internal:
                answer["error_code"] = ErrorCode.invalid_topic_exception
            elif (err := leader_error(ctx, p)):
                answer["error_code"] = err
                answer["current_leader"] = _current_leader(p)
                moved.append(p)
            elif acks == -1 and len(p.isr) < int(configs.topic_value(cluster, p.topic, "min.insync.replicas") or 1):
                answer["error_code"] = ErrorCode.not_enough_replicas
            else:
                try:
                    batches = log.validate(cluster, p, log.split_batches(pd.records or b""))
                except log.InvalidBatch as exc:
                    answer["error_code"] = exc.code
                    answer["error_message"] = str(exc)
                    continue
                base, append_time = log.append(cluster, p, batches)
                log.replicate(cluster, p)
                answer.update(base_offset=base, log_append_time=append_time,
                              log_start_offset=p.log_start_offset)
                appended.append((p, p.leo[p.leader], answer))
        topics.append({**topic_keys(t, name, topic_id), "partition_responses": answers})
    if acks == 0:
        return None
    if acks == -1:
        await _await_replication(cluster, appended, req.timeout.total_seconds())
    return {"responses": topics, "node_endpoints": _node_endpoints(ctx, moved)}


async def _await_replication(cluster: Cluster, appended: list, timeout_s: float) -> None:
    """acks=-1: answer once the high watermark passed each write (REQUEST_TIMED_OUT after the
    request's timeout), as Kafka's delayed produce does."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        waiting = [(p, end, a) for p, end, a in appended if p.high_watermark < end]
        remaining = deadline - asyncio.get_running_loop().time()
        if not waiting:
            return
        if remaining <= 0:
            for _, _, answer in waiting:
                answer["error_code"] = ErrorCode.request_timed_out
            return
        await log.wait_progress(log.progress_event(cluster), remaining)


# -- Fetch ------------------------------------------------------------------------------------


@api(ApiKey.FETCH)
async def fetch(ctx) -> dict:
    """A long poll: answer when min_bytes are readable, on any error, or after max_wait."""
    req = ctx.request
    loop = asyncio.get_running_loop()
    deadline = loop.time() + req.max_wait.total_seconds()
    while True:
        event = log.progress_event(ctx.cluster)
        responses, size, failed, moved = _fetch_once(ctx)
        remaining = deadline - loop.time()
        if failed or size >= req.min_bytes or remaining <= 0:
            break
        await log.wait_progress(event, remaining)
    return {"error_code": 0, "session_id": 0, "responses": responses,
            "node_endpoints": _node_endpoints(ctx, moved)}


def _fetch_once(ctx) -> tuple[list[dict], int, bool, list[Partition]]:
    req = ctx.request
    remaining = req.max_bytes
    size = 0
    failed = False
    moved: list[Partition] = []
    responses = []
    for rt in req.topics:
        t, topic_err, name, topic_id = _lookup(ctx, rt, "topic")
        denied = topic_denied(ctx, t, name)
        parts = []
        for rp in rt.partitions:
            p = t.partition(rp.partition) if t else None
            answer = {"partition_index": rp.partition, "error_code": 0, "high_watermark": -1,
                      "last_stable_offset": -1, "log_start_offset": -1, "records": b""}
            parts.append(answer)
            if denied:
                answer["error_code"] = ErrorCode.topic_authorization_failed
            elif p is None:
                answer["error_code"] = topic_err or ErrorCode.unknown_topic_or_partition
            else:
                answer["error_code"] = leader_error(ctx, p, rp.current_leader_epoch)
                if answer["error_code"] == ErrorCode.not_leader_or_follower:
                    answer["current_leader"] = _current_leader(p)
                    moved.append(p)
                elif not answer["error_code"]:
                    answer.update(high_watermark=p.high_watermark, last_stable_offset=p.high_watermark,
                                  log_start_offset=p.log_start_offset)
                    if not p.log_start_offset <= rp.fetch_offset <= p.leo.get(p.leader, 0):
                        answer["error_code"] = ErrorCode.offset_out_of_range
                    else:
                        data = log.read(p, rp.fetch_offset, p.high_watermark,
                                        min(rp.partition_max_bytes, max(remaining, 0)),
                                        at_least_one=size == 0)
                        answer["records"] = data
                        size += len(data)
                        remaining -= len(data)
            failed = failed or bool(answer["error_code"])
        responses.append({**topic_keys(t, name, topic_id), "partitions": parts})
    return responses, size, failed, moved


# -- ListOffsets ------------------------------------------------------------------------------

CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2  # Kafka's debugging id: served from this broker's own log, leader or not


@api(ApiKey.LIST_OFFSETS)
def list_offsets(ctx) -> dict:
    req = ctx.request
    # Answers are made as entities at once (describe-group asks about 10,000s of partitions).
    make = protocol.maker(protocol.element_class(protocol.element_class(
        protocol.response_schema(ApiKey.LIST_OFFSETS, ctx.version), "topics"), "partitions"), error_code=ErrorCode.none)
    topics = []
    for rt in req.topics:
        t = ctx.cluster.topics.get(rt.name)
        denied = topic_denied(ctx, t, rt.name)
        parts: list[object] = []
        for rp in rt.partitions:
            p = t.partition(rp.partition_index) if t else None
            if denied or p is None:
                parts.append({"partition_index": rp.partition_index, "error_code":
                              ErrorCode.topic_authorization_failed if denied else ErrorCode.unknown_topic_or_partition})
                continue
            debugging = req.replica_id == DEBUGGING_REPLICA_ID
            if debugging:  # any replica, even of an offline partition (ReplicaManager.fetchOffset)
                err = ErrorCode.not_leader_or_follower if ctx.broker.id not in p.replicas else 0
            else:
                err = leader_error(ctx, p, rp.current_leader_epoch)
            if err:
                parts.append({"partition_index": rp.partition_index, "error_code": err})
                continue
            # Clients see up to the high watermark (no transactions: LSO = HW); others the LEO,
            # the debugging id this replica's own (its epoch answered is the partition's current one).
            if debugging:
                upper = p.leo.get(ctx.broker.id, 0)
            elif req.replica_id == CONSUMER_REPLICA_ID:
                upper = p.high_watermark
            else:
                upper = p.leo.get(p.leader, 0)
            if ctx.version == 0:
                parts.append({"partition_index": rp.partition_index, "error_code": 0, "old_style_offsets":
                              _legacy_offsets(p, rp.timestamp, rp.max_num_offsets, req.replica_id == CONSUMER_REPLICA_ID)})
                continue
            found = _offset_for(p, rp.timestamp, upper)
            offset, ts, epoch = found if found else (-1, -1, -1)
            parts.append(make(partition_index=rp.partition_index, timestamp=ts, offset=offset, leader_epoch=epoch))
        topics.append({"name": rt.name, "partitions": parts})
    return {"topics": topics}


def _legacy_offsets(p: Partition, timestamp: int, max_num: int, consumer: bool) -> list[int]:
    """ListOffsets v0 (Kafka 3.9's UnifiedLog.legacyFetchOffsetsBefore): offsets of segment
    starts, newest first, up to `max_num`. The sandbox keeps one segment per partition: its
    start, then the log end (written now) when it holds anything; consumers see no further than
    the high watermark."""
    entries = [(p.log_start_offset, max((b.max_timestamp for b in p.batches), default=0))]
    if p.batches:
        entries.append((p.leo.get(p.leader, 0), now_ms()))
    if timestamp == log.LATEST:
        start = len(entries) - 1
    elif timestamp == log.EARLIEST:
        start = 0
    else:
        start = max((i for i, (_, at) in enumerate(entries) if at <= timestamp), default=-1)
    offsets = [entries[i][0] for i in range(start, -1, -1)][:max(max_num, 0)]
    if consumer and timestamp == log.LATEST and any(o > p.high_watermark for o in offsets):
        offsets = [p.high_watermark, *(o for o in offsets if o <= p.high_watermark)]
    return offsets


def _offset_for(p: Partition, timestamp: int, upper: int) -> tuple[int, int, int] | None:
    if timestamp == log.LATEST:
        return upper, -1, p.leader_epoch
    if timestamp in (log.EARLIEST, log.EARLIEST_LOCAL):
        return p.log_start_offset, -1, log.epoch_at(p, p.log_start_offset)
    if timestamp == log.MAX_TIMESTAMP:
        return log.max_timestamp(p, upper)
    return log.offset_for_time(p, timestamp, upper)


# -- DeleteRecords ----------------------------------------------------------------------------

HIGH_WATERMARK = -1


@api(ApiKey.DELETE_RECORDS)
def delete_records(ctx) -> dict:
    topics = []
    for rt in ctx.request.topics:
        t = ctx.cluster.topics.get(rt.name)
        denied = topic_denied(ctx, t, rt.name)
        parts = []
        for rp in rt.partitions:
            answer = {"partition_index": rp.partition_index, "low_watermark": -1, "error_code": 0}
            parts.append(answer)
            p = t.partition(rp.partition_index) if t else None
            if denied:
                answer["error_code"] = ErrorCode.topic_authorization_failed
            elif p is None:
                answer["error_code"] = ErrorCode.unknown_topic_or_partition
            elif (err := leader_error(ctx, p)):
                answer["error_code"] = err
            elif "delete" not in (configs.topic_value(ctx.cluster, p.topic, "cleanup.policy") or ""):
                answer["error_code"] = ErrorCode.policy_violation
            else:
                offset = p.high_watermark if rp.offset == HIGH_WATERMARK else rp.offset
                if not 0 <= offset <= p.high_watermark:
                    answer["error_code"] = ErrorCode.offset_out_of_range
                else:
                    log.delete_before(ctx.cluster, p, offset)
                    answer["low_watermark"] = p.log_start_offset
        topics.append({"name": rt.name, "partitions": parts})
    return {"topics": topics}


# -- OffsetForLeaderEpoch ---------------------------------------------------------------------


@api(ApiKey.OFFSET_FOR_LEADER_EPOCH)
def offset_for_leader_epoch(ctx) -> dict:
    topics = []
    for rt in ctx.request.topics:
        t = ctx.cluster.topics.get(rt.topic)
        denied = topic_denied(ctx, t, rt.topic)
        parts = []
        for rp in rt.partitions:
            p = t.partition(rp.partition) if t else None
            err = ErrorCode.topic_authorization_failed if denied else \
                ErrorCode.unknown_topic_or_partition if p is None else leader_error(ctx, p, rp.current_leader_epoch)
            if p is None or err:
                parts.append({"partition": rp.partition, "error_code": err})
                continue
            epoch, end = log.end_offset_for_epoch(p, rp.leader_epoch)
            parts.append({"partition": rp.partition, "error_code": 0, "leader_epoch": epoch,
                          "end_offset": end})
        topics.append({"topic": rt.topic, "partitions": parts})
    return {"topics": topics}
