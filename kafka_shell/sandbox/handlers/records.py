"""The data path: Produce, Fetch, ListOffsets, DeleteRecords, OffsetForLeaderEpoch.

Fetch sessions (KIP-227) are not kept: every Fetch answers with session id 0 ("no session"),
which clients accept by sending full fetch requests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import asyncio
import uuid

from kio.schema.errors import ErrorCode

from kafka_shell.protocol import codec
from kafka_shell.sandbox import codecs, configs, log, message_sets, producer_state, transactions
from kafka_shell.protocol.codes import AclResourceType, ApiKey
from kafka_shell.sandbox.handlers import api, between_nodes
from kafka_shell.sandbox.handlers.common import current_leader, find_topic, leader_error, node_endpoints, topic_denied, topic_keys
from kafka_shell.sandbox.model import ClusterState, Partition, Topic, now_ms

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext


def _lookup(ctx: RequestContext, rt, name_attr: str) -> tuple[Topic | None, int, str | None, uuid.UUID | None]:
    name = getattr(rt, name_attr, None)
    topic_id = getattr(rt, "topic_id", None)
    t, err = find_topic(ctx.cluster, name, topic_id)
    return t, err, name, topic_id


# -- Produce ----------------------------------------------------------------------------------


@api(ApiKey.PRODUCE)
async def produce(ctx: RequestContext) -> dict | None:
    req = ctx.request
    cluster = ctx.cluster
    acks = req.acks
    transactional_id = getattr(req, "transactional_id", None)
    # Transactional batches need WRITE on the request's transactional id, and one (KafkaApis).
    txn_refused = _has_transactional_batch(req) and (
        transactional_id is None or not ctx.permits(AclResourceType.TRANSACTIONAL_ID, transactional_id))
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
            if txn_refused:
                answer["error_code"] = ErrorCode.transactional_id_authorization_failed
            elif acks not in (-1, 0, 1):
                answer["error_code"] = ErrorCode.invalid_required_acks
            elif denied:
                answer["error_code"] = ErrorCode.topic_authorization_failed
            elif t is None or p is None:
                answer["error_code"] = topic_err or ErrorCode.unknown_topic_or_partition
            elif t.internal:
                answer["error_code"] = ErrorCode.invalid_topic_exception
            elif (err := leader_error(ctx, p)):
                answer["error_code"] = err
                answer["current_leader"] = current_leader(p)
                moved.append(p)
            else:
                try:
                    batches = _request_batches(ctx.version, pd.records or b"")
                    _verify_transaction(ctx, p, log.header(batches[0]), transactional_id)
                    if acks == -1 and len(p.isr) < int(configs.topic_value(cluster, p.topic, "min.insync.replicas") or 1):
                        raise log.InvalidBatch(ErrorCode.not_enough_replicas, "")
                    batches = log.validate(cluster, p, batches)
                    duplicate = producer_state.check(producer_state.state_of(cluster, p), log.header(batches[0]))
                except log.InvalidBatch as exc:
                    answer["error_code"] = exc.code
                    answer["error_message"] = str(exc) if exc.answered else None
                    if exc.record_errors:   # Kafka's RecordValidationException: per record, with the log start
                        answer["record_errors"] = [{"batch_index": i, "batch_index_error_message": m}
                                                   for i, m in exc.record_errors]
                        answer["log_start_offset"] = p.log_start_offset
                    continue
                if duplicate is not None:
                    # Acknowledged again with its first offset, not appended (Kafka's ProducerStateManager).
                    answer.update(base_offset=duplicate.first_offset, log_append_time=duplicate.timestamp,
                                  log_start_offset=p.log_start_offset)
                    appended.append((p, duplicate.last_offset + 1, answer))
                    continue
                base, append_time = producer_state.append(cluster, p, batches)
                answer.update(base_offset=base, log_append_time=append_time,
                              log_start_offset=p.log_start_offset)
                appended.append((p, p.leo[p.leader], answer))
        topics.append({**topic_keys(t, name, topic_id), "partition_responses": answers})
    if acks == 0:
        # The producer reads no answer: Kafka closes the connection when any partition failed, so
        # that it notices and refreshes its metadata (KafkaApis.handleProduceRequest).
        if any(a["error_code"] for t in topics for a in t["partition_responses"]):
            raise codec.ProtocolError("an acks=0 produce failed on a partition: closing, as Kafka does")
        return None
    if acks == -1:
        await _await_replication(cluster, appended, req.timeout.total_seconds())
    return {"responses": topics, "node_endpoints": node_endpoints(ctx, moved)}


def _has_transactional_batch(req) -> bool:
    for td in req.topic_data:
        for pd in td.partition_data:
            data = pd.records or b""
            if len(data) >= log.HEADER_SIZE and not message_sets.is_message_set(data) and log.header(data).transactional:
                return True
    return False


def _request_batches(version: int, records: bytes) -> list[bytearray]:
    """Kafka's ProduceRequest.validateRecords: exactly one v2 batch, zstd only from v7. Produce
    v0-v2 (Kafka 3.9) may carry a message set of format v0 or v1: stored as one v2 batch."""
    if version < 3 and message_sets.is_message_set(records):
        return [message_sets.to_batch(records)]
    batches = log.split_batches(records)
    if len(batches) > 1:
        raise log.InvalidBatch(ErrorCode.invalid_record, f"Produce requests with version {version} are only "
                               "allowed to contain exactly one record batch per partition")
    if version < 7 and log.codec_of(batches[0]) == codecs.ZSTD:
        raise log.InvalidBatch(ErrorCode.unsupported_compression_type, f"Produce requests with version "
                               f"{version} are not allowed to use ZStandard compression")
    return batches


VERIFY_FAILED = "Unable to verify the partition has been added to the transaction. Underlying error: "


def _verify_transaction(ctx: RequestContext, p: Partition, h: log.Header, transactional_id: str | None) -> None:
    """KIP-890: a transactional batch that starts the producer's transaction in this partition is
    checked with the coordinator (Produce v12+, transactions v2: the partition is added to the
    transaction); errors as ReplicaManager and AddPartitionsToTxnManager translate them."""
    if not h.transactional or not h.has_producer_id or transactional_id is None:
        return
    s = producer_state.state_of(ctx.cluster, p)
    e = s.entries.get(h.producer_id)
    if e is not None and h.producer_epoch < e.epoch:
        raise log.InvalidBatch(ErrorCode.invalid_producer_epoch, "")
    adds = ctx.version >= 12
    if s.has_ongoing(h.producer_id, h.producer_epoch) or not (adds or transactions.verification_enabled(ctx.cluster)):
        return
    cluster = ctx.cluster
    tp = (p.topic, p.index)
    error: int
    if transactions.coordinator_of(cluster, transactional_id) < 0:
        error = ErrorCode.coordinator_not_available
    elif adds:
        error = transactions.add_partitions(cluster, transactional_id, h.producer_id, h.producer_epoch, {tp},
                                            client_version=2)
    else:
        error = transactions.verify_partitions(cluster, transactional_id, h.producer_id, h.producer_epoch, {tp})[tp]
    if error == ErrorCode.producer_fenced:
        error = ErrorCode.invalid_producer_epoch
    elif error == ErrorCode.transaction_abortable and ctx.version <= 10:
        error = ErrorCode.invalid_txn_state
    if error == ErrorCode.invalid_txn_state:
        raise log.InvalidBatch(error, "Partition was not added to the transaction", answered=True)
    if error in (ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available, ErrorCode.not_coordinator) \
            or (error == ErrorCode.concurrent_transactions and not adds):
        raise log.InvalidBatch(ErrorCode.not_enough_replicas, VERIFY_FAILED + ErrorCode(error).name.upper(),
                               answered=True)
    if error:
        raise log.InvalidBatch(error, "")


async def _await_replication(cluster: ClusterState, appended: list, timeout_s: float) -> None:
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

READ_COMMITTED = 1  # isolation_level of Fetch and ListOffsets


@api(ApiKey.FETCH)
async def fetch(ctx: RequestContext) -> dict:
    """A long poll: answer when min_bytes are readable, on any error, or after max_wait. On a
    controller listener, the metadata log's replication (between_nodes)."""
    if ctx.on_controller_listener:
        return between_nodes.raft_fetch(ctx)
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
            "node_endpoints": node_endpoints(ctx, moved)}


def _fetch_once(ctx: RequestContext) -> tuple[list[dict], int, bool, list[Partition]]:
    req = ctx.request
    remaining = getattr(req, "max_bytes", 2**31 - 1)   # none before v3
    size = 0
    failed = False
    moved: list[Partition] = []
    responses = []
    read_committed = getattr(req, "isolation_level", 0) == READ_COMMITTED
    for rt in req.topics:
        t, topic_err, name, topic_id = _lookup(ctx, rt, "topic")
        denied = topic_denied(ctx, t, name)
        parts = []
        for rp in rt.partitions:
            p = t.partition(rp.partition) if t else None
            answer = {"partition_index": rp.partition, "error_code": 0, "high_watermark": -1,
                      "last_stable_offset": -1, "log_start_offset": -1, "records": b"",
                      "aborted_transactions": [] if read_committed else None}
            parts.append(answer)
            if denied:
                answer["error_code"] = ErrorCode.topic_authorization_failed
            elif p is None:
                answer["error_code"] = topic_err or ErrorCode.unknown_topic_or_partition
            else:
                answer["error_code"] = leader_error(ctx, p, getattr(rp, "current_leader_epoch", -1))
                if answer["error_code"] == ErrorCode.not_leader_or_follower:
                    answer["current_leader"] = current_leader(p)
                    moved.append(p)
                elif not answer["error_code"]:
                    stable = producer_state.last_stable_offset(ctx.cluster, p)
                    answer.update(high_watermark=p.high_watermark, last_stable_offset=stable,
                                  log_start_offset=p.log_start_offset)
                    if not p.log_start_offset <= rp.fetch_offset <= p.leo.get(p.leader, 0):
                        answer["error_code"] = ErrorCode.offset_out_of_range
                    else:
                        # read_committed reads up to the last stable offset, and learns which
                        # transactions in what it read were aborted.
                        upper = stable if read_committed else p.high_watermark
                        data = log.read(p, rp.fetch_offset, upper, min(rp.partition_max_bytes, max(remaining, 0)),
                                        at_least_one=size == 0)
                        headers = log.headers_in(data)
                        if read_committed:
                            end = headers[-1].last_offset + 1 if headers else rp.fetch_offset
                            answer["aborted_transactions"] = [
                                {"producer_id": a.producer_id, "first_offset": a.first_offset}
                                for a in producer_state.aborted_between(ctx.cluster, p, rp.fetch_offset, end)]
                        if ctx.version < 10 and any(h.attributes & log.CODEC_MASK == codecs.ZSTD for h in headers):
                            answer["error_code"] = ErrorCode.unsupported_compression_type
                            data = b""
                        elif ctx.version < 4:   # Kafka 3.9 down-converts: v0-v1 read format 0, v2-v3 format 1
                            data = message_sets.from_batches(data, 0 if ctx.version < 2 else 1)
                        answer["records"] = data
                        size += len(data)
                        remaining -= len(data)
            failed = failed or bool(answer["error_code"])
        responses.append({**topic_keys(t, name, topic_id), "partitions": parts})
    return responses, size, failed, moved


# -- ListOffsets ------------------------------------------------------------------------------

LIST_OFFSETS_ROW = ("partition_index", "error_code", "timestamp", "offset", "leader_epoch")
CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2  # Kafka's debugging id: served from this broker's own log, leader or not


@api(ApiKey.LIST_OFFSETS)
def list_offsets(ctx: RequestContext) -> dict:
    req = ctx.request
    partition = codec.element_class(codec.element_class(codec.response_schema(ApiKey.LIST_OFFSETS, ctx.version),
                                                        "topics"), "partitions")
    topics = []
    me = ctx.broker.id
    debugging = req.replica_id == DEBUGGING_REPLICA_ID
    consumer = req.replica_id == CONSUMER_REPLICA_ID
    committed_only = consumer and getattr(req, "isolation_level", 0) == READ_COMMITTED
    for rt in req.topics:
        t = ctx.cluster.topics.get(rt.name)
        denied = topic_denied(ctx, t, rt.name)
        rows: list[tuple[int, int, int, int, int]] = []   # (partition, error code, timestamp, offset, leader epoch)
        legacy: list[list[int]] = []   # v0: each row's offsets
        for rp in rt.partitions:   # 10,000s at once (describe-group, snapshots): kept lean
            p = t.partition(rp.partition_index) if t else None
            if denied or p is None:
                rows.append((rp.partition_index, ErrorCode.topic_authorization_failed if denied
                             else ErrorCode.unknown_topic_or_partition, -1, -1, -1))
                legacy.append([])
                continue
            if debugging:  # any replica, even of an offline partition (ReplicaManager.fetchOffset)
                err = ErrorCode.not_leader_or_follower if me not in p.replicas else 0
            else:
                err = leader_error(ctx, p, getattr(rp, "current_leader_epoch", -1))
            if err:
                rows.append((rp.partition_index, err, -1, -1, -1))
                legacy.append([])
                continue
            # Clients see up to the high watermark (read_committed: the last stable offset); others
            # the LEO, the debugging id this replica's own (its epoch answered is the partition's current one).
            if debugging:
                upper = p.leo.get(me, 0)
            elif committed_only:
                upper = producer_state.last_stable_offset(ctx.cluster, p)
            elif consumer:
                upper = p.high_watermark
            else:
                upper = p.leo.get(p.leader, 0)
            if ctx.version == 0:
                rows.append((rp.partition_index, 0, -1, -1, -1))
                legacy.append(_legacy_offsets(p, rp.timestamp, rp.max_num_offsets, req.replica_id == CONSUMER_REPLICA_ID))
                continue
            found = _offset_for(p, rp.timestamp, upper)
            offset, ts, epoch = found if found else (-1, -1, -1)
            rows.append((rp.partition_index, 0, ts, offset, epoch))
        if ctx.version == 0:   # an array of offsets in each partition: not packed
            parts: object = [{"partition_index": r[0], "error_code": r[1], "old_style_offsets": offsets}
                             for r, offsets in zip(rows, legacy)]
        else:   # packed: describe-group and snapshots ask about 10,000s of partitions
            parts = codec.packed_rows(partition, LIST_OFFSETS_ROW, rows)
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
def delete_records(ctx: RequestContext) -> dict:
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
def offset_for_leader_epoch(ctx: RequestContext) -> dict:
    topics = []
    for rt in ctx.request.topics:
        t = ctx.cluster.topics.get(rt.topic)
        denied = topic_denied(ctx, t, rt.topic)
        parts = []
        for rp in rt.partitions:
            p = t.partition(rp.partition) if t else None
            err = ErrorCode.topic_authorization_failed if denied else \
                ErrorCode.unknown_topic_or_partition if p is None else leader_error(ctx, p, getattr(rp, "current_leader_epoch", -1))
            if p is None or err:
                parts.append({"partition": rp.partition, "error_code": err})
                continue
            epoch, end = log.end_offset_for_epoch(p, rp.leader_epoch)
            parts.append({"partition": rp.partition, "error_code": 0, "leader_epoch": epoch,
                          "end_offset": end})
        topics.append({"topic": rt.topic, "partitions": parts})
    return {"topics": topics}
