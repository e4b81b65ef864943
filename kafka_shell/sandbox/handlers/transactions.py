"""Idempotent and transactional producers' APIs: InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn, TxnOffsetCommit, WriteTxnMarkers, and the admin side: DescribeProducers,
DescribeTransactions, ListTransactions. Versions are Kafka 4.4's (TxnOffsetCommit up to v5: kio
lacks v6). The coordinator is `kafka_shell.sandbox.transactions`, producer state
`kafka_shell.sandbox.producer_state`; this module maps requests onto them as KafkaApis does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import datetime

from kio.schema.errors import ErrorCode

from kafka_shell.protocol.codes import AclOperation, AclResourceType, ApiKey
from kafka_shell.sandbox import classic_groups as gc
from kafka_shell.sandbox import producer_ids, producer_state, transactions
from kafka_shell.sandbox.classic_groups import CommittedOffset
from kafka_shell.sandbox.handlers import api
from kafka_shell.sandbox.handlers.common import find_topic, leader_error, topic_denied, topic_keys
from kafka_shell.sandbox.model import now_ms
from kafka_shell.base.regex import compile_kafka_regex

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

TXN = AclResourceType.TRANSACTIONAL_ID


def _ms(value: datetime.timedelta | int) -> int:
    return int(value.total_seconds() * 1000) if isinstance(value, datetime.timedelta) else int(value)


def _txn_error(ctx: RequestContext, transactional_id: str | None) -> int:
    """Kafka's first checks of a transactional request: WRITE on the id, this broker its coordinator."""
    if transactional_id is None or not ctx.permits(TXN, transactional_id):
        return ErrorCode.transactional_id_authorization_failed
    if not transactional_id:
        return ErrorCode.invalid_request
    return transactions.coordinator_error(ctx.cluster, ctx.broker.id, transactional_id)


# -- InitProducerId ---------------------------------------------------------------------------


@api(ApiKey.INIT_PRODUCER_ID, max_version=5)
def init_producer_id(ctx: RequestContext) -> dict:
    req = ctx.request
    transactional_id = req.transactional_id
    fail = {"producer_id": -1, "producer_epoch": -1}
    if transactional_id is None:
        # An idempotent producer: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic.
        if not (ctx.authorize(AclOperation.IDEMPOTENT_WRITE, AclResourceType.CLUSTER)
                or any(ctx.authorize(AclOperation.WRITE, AclResourceType.TOPIC, t) for t in ctx.cluster.topics)):
            return {**fail, "error_code": ErrorCode.cluster_authorization_failed}
        return {"error_code": 0, "producer_id": producer_ids.new_producer_id(ctx.cluster, ctx.broker.id),
                "producer_epoch": 0}
    error = _txn_error(ctx, transactional_id)
    if error:
        return {**fail, "error_code": error}
    error, pid, epoch = transactions.init_producer_id(
        ctx.cluster, transactional_id, _ms(req.transaction_timeout),
        getattr(req, "producer_id", -1), getattr(req, "producer_epoch", -1))
    return {"error_code": error, "producer_id": pid, "producer_epoch": epoch}


# -- AddPartitionsToTxn / AddOffsetsToTxn -----------------------------------------------------


@api(ApiKey.ADD_PARTITIONS_TO_TXN)
def add_partitions_to_txn(ctx: RequestContext) -> dict:
    req = ctx.request
    if ctx.version < 4:
        result = _add(ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                      req.v3_and_below_producer_epoch, False, req.v3_and_below_topics)
        return {"results_by_topic_v3_and_below": result["topic_results"]}
    # v4+ batches transactions for brokers (KIP-890): CLUSTER_ACTION.
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "results_by_transaction": []}
    return {"error_code": 0, "results_by_transaction": [
        _add(ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.verify_only, t.topics)
        for t in req.transactions]}


def _add(ctx: RequestContext, transactional_id: str, pid: int, epoch: int, verify_only: bool, topics) -> dict:
    wanted = [(t.name, i) for t in topics for i in t.partitions]
    errors: dict[tuple[str, int], int] = {}
    if ctx.version < 4 and not ctx.permits(TXN, transactional_id):
        errors = dict.fromkeys(wanted, ErrorCode.transactional_id_authorization_failed)
    else:
        for topic, i in wanted:
            if ctx.version < 4 and topic_denied(ctx, None, topic):
                errors[(topic, i)] = ErrorCode.topic_authorization_failed
            elif ctx.cluster.partition(topic, i) is None:
                errors[(topic, i)] = ErrorCode.unknown_topic_or_partition
        if errors:  # Kafka attempts nothing when one partition fails
            errors = {tp: errors.get(tp, ErrorCode.operation_not_attempted) for tp in wanted}
    if not errors:
        error = transactions.coordinator_error(ctx.cluster, ctx.broker.id, transactional_id) or \
            (ErrorCode.invalid_request if not transactional_id else 0)
        if error:
            errors = dict.fromkeys(wanted, error)
        elif verify_only:
            errors = transactions.verify_partitions(ctx.cluster, transactional_id, pid, epoch, set(wanted))
        else:
            errors = dict.fromkeys(wanted, transactions.add_partitions(ctx.cluster, transactional_id, pid, epoch, set(wanted)))
    by_topic: dict[str, list[dict]] = {}
    for (topic, i), code in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": i, "partition_error_code": code})
    return {"transactional_id": transactional_id, "topic_results": [
        {"name": topic, "results_by_partition": parts} for topic, parts in by_topic.items()]}


@api(ApiKey.ADD_OFFSETS_TO_TXN)
def add_offsets_to_txn(ctx: RequestContext) -> dict:
    req = ctx.request
    error = _txn_error(ctx, req.transactional_id)
    if not error and not ctx.permits(AclResourceType.GROUP, req.group_id):
        error = ErrorCode.group_authorization_failed
    if not error:
        gc.ensure_offsets_topic(ctx.cluster)
        error = transactions.add_partitions(ctx.cluster, req.transactional_id, req.producer_id, req.producer_epoch,
                                            {(gc.OFFSETS_TOPIC, gc.offsets_partition(ctx.cluster, req.group_id))})
    return {"error_code": error}


# -- EndTxn -----------------------------------------------------------------------------------


@api(ApiKey.END_TXN)
def end_txn(ctx: RequestContext) -> dict:
    req = ctx.request
    error = _txn_error(ctx, req.transactional_id)
    pid, epoch = -1, -1
    if not error:
        # EndTxn v5+ is a transactions-v2 client (KIP-890): the epoch is bumped as it ends.
        error, pid, epoch = transactions.end_txn(ctx.cluster, req.transactional_id, req.producer_id,
                                                 req.producer_epoch, req.committed, 2 if ctx.version >= 5 else 0)
    return {"error_code": error, "producer_id": pid, "producer_epoch": epoch}


# -- TxnOffsetCommit --------------------------------------------------------------------------


@api(ApiKey.TXN_OFFSET_COMMIT)
def txn_offset_commit(ctx: RequestContext) -> dict:
    req = ctx.request
    error = 0
    if req.transactional_id is None or not ctx.permits(TXN, req.transactional_id):
        error = ErrorCode.transactional_id_authorization_failed
    elif not ctx.permits(AclResourceType.GROUP, req.group_id):
        error = ErrorCode.group_authorization_failed
    elif gc.coordinator_of(ctx.cluster, req.group_id) != ctx.broker.id:
        error = ErrorCode.not_coordinator
    # v6+ (Kafka 4.4) names topics by id, older versions by name.
    named = []
    for rt in req.topics:
        name, topic_id = getattr(rt, "name", None), getattr(rt, "topic_id", None)
        t, topic_err = find_topic(ctx.cluster, name, topic_id)
        if topic_denied(ctx, t, name):
            topic_err = ErrorCode.topic_authorization_failed
        named.append((rt, t, topic_err, topic_keys(t, name, topic_id)))
    any_topic_error = any(topic_err for _, _, topic_err, _ in named)
    group = None
    if not error and not any_topic_error:
        error = _offsets_partition_error(ctx)
    if not error and not any_topic_error:
        group, error = _txn_group(ctx)
    offsets: dict[tuple[str, int], CommittedOffset] = {}
    topics = []
    for rt, t, topic_err, keys in named:
        parts = []
        for rp in rt.partitions:
            code = error or topic_err
            if not code and t is not None and t.partition(rp.partition_index) is None:
                code = ErrorCode.unknown_topic_or_partition
            if not code and t is not None:
                offsets[(t.name, rp.partition_index)] = CommittedOffset(
                    rp.committed_offset, getattr(rp, "committed_leader_epoch", -1), rp.committed_metadata, now_ms())
            parts.append({"partition_index": rp.partition_index, "error_code": code})
        topics.append({**keys, "partitions": parts})
    if group is not None and offsets:
        transactions.add_offsets(ctx.cluster, req.group_id, req.producer_id, offsets)
    return {"topics": topics}


def _offsets_partition_error(ctx: RequestContext) -> int:
    """The group's __consumer_offsets partition must be in the transaction: v5+ (transactions v2)
    adds it, older versions have it verified (AddOffsetsToTxn added it)."""
    req = ctx.request
    tp = (gc.OFFSETS_TOPIC, gc.offsets_partition(ctx.cluster, req.group_id))
    error: int
    if transactions.coordinator_of(ctx.cluster, req.transactional_id) < 0:
        return ErrorCode.coordinator_not_available
    if ctx.version >= 5:
        error = transactions.add_partitions(ctx.cluster, req.transactional_id, req.producer_id,
                                            req.producer_epoch, {tp}, client_version=2)
    elif transactions.verification_enabled(ctx.cluster):
        error = transactions.verify_partitions(ctx.cluster, req.transactional_id, req.producer_id,
                                               req.producer_epoch, {tp})[tp]
    else:
        error = 0
    translated: dict[int, int] = {ErrorCode.producer_fenced: ErrorCode.invalid_producer_epoch,
                                  ErrorCode.transaction_abortable: ErrorCode.invalid_txn_state}
    return translated.get(error, error)


def _txn_group(ctx: RequestContext) -> tuple[gc.OffsetHolder | None, int]:
    """The group to commit into: any group for a commit without member (older clients), else the
    member's generation is checked as for OffsetCommit."""
    req = ctx.request
    coord = gc.Coordinator(ctx.cluster, ctx.sandbox.spawn)
    if req.generation_id < 0 and not getattr(req, "member_id", ""):
        g = coord.groups.get(req.group_id)
        if g is None:
            g = coord.groups[req.group_id] = gc.Group(req.group_id)
        return (g, 0) if g.state != gc.DEAD else (None, ErrorCode.coordinator_not_available)
    return coord.commit_error(req.group_id, req.member_id, req.generation_id, getattr(req, "group_instance_id", None))


# -- WriteTxnMarkers (the coordinator's request to partition leaders) -------------------------


@api(ApiKey.WRITE_TXN_MARKERS)
def write_txn_markers(ctx: RequestContext) -> dict:
    allowed = ctx.permits(AclResourceType.CLUSTER)
    results = []
    for m in ctx.request.markers:
        topics = []
        for rt in m.topics:
            parts = []
            for i in rt.partition_indexes:
                p = ctx.cluster.partition(rt.name, i)
                code: int
                if not allowed:
                    code = ErrorCode.cluster_authorization_failed
                elif p is None:
                    code = ErrorCode.unknown_topic_or_partition
                else:
                    code = leader_error(ctx, p) or transactions.write_marker(
                        ctx.cluster, (rt.name, i), m.producer_id, m.producer_epoch, m.coordinator_epoch,
                        bool(m.transaction_result), getattr(m, "transaction_version", 0))
                parts.append({"partition_index": i, "error_code": code})
            topics.append({"name": rt.name, "partitions": parts})
        results.append({"producer_id": m.producer_id, "topics": topics})
    return {"markers": results}


# -- DescribeProducers / DescribeTransactions / ListTransactions ------------------------------


@api(ApiKey.DESCRIBE_PRODUCERS)
def describe_producers(ctx: RequestContext) -> dict:
    topics = []
    for rt in ctx.request.topics:
        t = ctx.cluster.topics.get(rt.name)
        denied = topic_denied(ctx, t, rt.name)
        parts = []
        for i in rt.partition_indexes:
            p = t.partition(i) if t is not None else None
            # Any replica answers, a follower too (Kafka's Partition.activeProducerState).
            code = ErrorCode.topic_authorization_failed if denied else \
                ErrorCode.unknown_topic_or_partition if p is None else \
                ErrorCode.not_leader_or_follower if ctx.broker.id not in p.replicas else 0
            answer: dict = {"partition_index": i, "error_code": code, "error_message": None, "active_producers": []}
            if not code:
                assert p is not None
                answer["active_producers"] = [
                    {"producer_id": e.producer_id, "producer_epoch": e.epoch, "last_sequence": e.last_seq,
                     "last_timestamp": e.last_timestamp, "coordinator_epoch": e.coordinator_epoch,
                     "current_txn_start_offset": -1 if e.txn_first_offset is None else e.txn_first_offset}
                    for e in producer_state.state_of(ctx.cluster, p).entries.values()]
            parts.append(answer)
        topics.append({"name": rt.name, "partitions": parts})
    return {"topics": topics}


@api(ApiKey.DESCRIBE_TRANSACTIONS)
def describe_transactions(ctx: RequestContext) -> dict:
    return {"transaction_states": [_describe(ctx, i) for i in ctx.request.transactional_ids]}


def _describe(ctx: RequestContext, transactional_id: str) -> dict:
    base = {"transactional_id": transactional_id, "transaction_state": "", "transaction_timeout": 0,
            "transaction_start_time": 0, "producer_id": 0, "producer_epoch": 0, "topics": []}
    if not ctx.permits(TXN, transactional_id):
        return {**base, "error_code": ErrorCode.transactional_id_authorization_failed}
    if not transactional_id:
        return {**base, "error_code": ErrorCode.invalid_request}
    error = transactions.coordinator_error(ctx.cluster, ctx.broker.id, transactional_id)
    txn = transactions.store(ctx.cluster).txns.get(transactional_id)
    if not error and (txn is None or txn.state == transactions.DEAD):
        error = ErrorCode.transactional_id_not_found
    if error:
        return {**base, "error_code": error}
    assert txn is not None
    by_topic: dict[str, list[int]] = {}
    for topic, i in sorted(txn.partitions):
        if ctx.permits(AclResourceType.TOPIC, topic):   # Kafka leaves out topics the principal may not describe
            by_topic.setdefault(topic, []).append(i)
    return {**base, "error_code": 0, "transaction_state": txn.state_name, "transaction_timeout": txn.timeout_ms,
            "transaction_start_time": txn.start_ms, "producer_id": txn.producer_id,
            "producer_epoch": txn.producer_epoch,
            "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]}


@api(ApiKey.LIST_TRANSACTIONS)
def list_transactions(ctx: RequestContext) -> dict:
    req = ctx.request
    states = set(req.state_filters)
    unknown = sorted(s for s in states if s not in transactions.STATES)
    pids = set(req.producer_id_filters)
    duration = getattr(req, "duration_filter", -1)
    pattern = getattr(req, "transactional_id_pattern", None)
    try:
        regex = compile_kafka_regex(pattern) if pattern else None
    except ValueError:
        return {"error_code": ErrorCode.invalid_regular_expression, "unknown_state_filters": [],
                "transaction_states": []}
    now = now_ms()
    found = []
    for txn in transactions.coordinated_by(ctx.cluster, ctx.broker.id):
        if (states and txn.state_name not in states) or (pids and txn.producer_id not in pids):
            continue
        if duration >= 0 and (txn.state != transactions.ONGOING or now - txn.start_ms < duration):
            continue
        if regex is not None and not regex.fullmatch(txn.transactional_id):
            continue
        if not ctx.authorize(AclOperation.DESCRIBE, TXN, txn.transactional_id):
            continue
        found.append({"transactional_id": txn.transactional_id, "producer_id": txn.producer_id,
                      "transaction_state": txn.state_name})
    return {"error_code": 0, "unknown_state_filters": unknown, "transaction_states": found}
