"""The transaction coordinator of the sandbox, after Kafka's TransactionCoordinator,
TransactionMetadata and TransactionStateManager.

Each transactional id's state (producer id and epoch, state, partitions, timeout, start time) is
written as Kafka writes it: records of Kafka's TransactionLogKey / TransactionLogValue format in
the `__transaction_state` partition its id hashes to, whose leader is its coordinator. The cache
in `ClusterState.transactions` changes by the same records (TransactionLogRecord, applied by
`replay.apply`), so `--data-dir` journals them and a restart replays them; a transaction found
half-ended (PrepareCommit or PrepareAbort) at start is completed then, as Kafka completes one it
loads.

Transactions v1 and v2 (KIP-890) are both served: the client's request versions say which
(EndTxn v5+ and Produce v12+ are v2). With v2 the epoch is bumped as the transaction ends, the
markers carry the new epoch, and a partition joins the transaction with its first produce.

Markers are written into the partitions as control batches during the EndTxn request (Kafka
sends them just after answering); a partition without a live leader keeps its transaction in
PrepareCommit / PrepareAbort (clients get CONCURRENT_TRANSACTIONS) until a retry every
MARKER_RETRY_S succeeds. Open transactions past their timeout are aborted by a ticker every
`transaction.abort.timed.out.transaction.cleanup.interval.ms`, as Kafka does.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import struct
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import configs, log, producer_ids, producer_state, replay, topic_lifecycle
from kafka_shell.sandbox.classic_groups import (OFFSETS_TOPIC, CommittedOffset, hash_partition, internal_leader,
                                       offsets_partition, record_offsets)
from kafka_shell.sandbox.model import ClusterState, Partition, now_ms
from kafka_shell.sandbox.records import TransactionLogRecord, TransactionLogValue, TransactionPartitions

logger = logging.getLogger("kafka_shell.sandbox")

TXN_TOPIC = "__transaction_state"
STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
          "PrepareEpochFence")
EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, DEAD, PREPARE_EPOCH_FENCE = range(8)
NO_PRODUCER_ID, NO_EPOCH = -1, -1
MAX_EPOCH = 32767              # Short.MAX_VALUE; an epoch at MAX_EPOCH - 1 is exhausted
MARKER_RETRY_S = 0.1

# Broker settings of the coordinator, with Kafka's defaults (the shared config table lacks them).
DEFAULTS = {
    "transaction.state.log.num.partitions": 50,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "transaction.max.timeout.ms": 900000,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 10000,
}


def setting(cluster: ClusterState, key: str) -> int:
    return configs.broker_int(cluster, key, DEFAULTS)


def verification_enabled(cluster: ClusterState) -> bool:
    return (configs.broker_value(cluster, None, "transaction.partition.verification.enable") or "true") == "true"


@dataclass
class Txn:
    transactional_id: str
    producer_id: int
    timeout_ms: int
    previous_producer_id: int = NO_PRODUCER_ID   # Kafka's: the producer id before the last transition
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_EPOCH
    last_producer_epoch: int = NO_EPOCH
    state: int = EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    client_version: int = 0     # the transaction version of the client's requests (0-2)
    # An epoch fence whose abort this transaction is going through (InitProducerId or a timeout).
    fencing: bool = False

    @property
    def state_name(self) -> str:
        return STATES[self.state]

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH - 1


@dataclass
class Store:
    txns: dict[str, Txn] = field(default_factory=dict)
    ticking: bool = False
    retrying: set[str] = field(default_factory=set)   # ids whose markers wait for a leader
    # Offsets committed inside open transactions: (group, producer id) -> (topic, partition) -> offset.
    pending_offsets: dict[tuple[str, int], dict[tuple[str, int], CommittedOffset]] = field(default_factory=dict)


def store(cluster: ClusterState) -> Store:
    """The coordinator's cache (made by the TransactionLogRecords replayed)."""
    s = cluster.transactions
    if s is None:
        s = cluster.transactions = Store()
    return s


def start(cluster: ClusterState) -> None:
    """At the sandbox's start (loop thread): finish what the coordinator left half-ended, start
    aborting timed-out transactions."""
    _complete_loaded(cluster, store(cluster))
    _ensure_ticker(cluster)


# -- where a transactional id lives --------------------------------------------------------------


def partition_for(cluster: ClusterState, transactional_id: str) -> int:
    topic = cluster.topics.get(TXN_TOPIC)
    count = len(topic.partitions) if topic is not None else setting(cluster, "transaction.state.log.num.partitions")
    return hash_partition(transactional_id, count)


def ensure_topic(cluster: ClusterState) -> None:
    """Create __transaction_state on first use, as Kafka does on the first FindCoordinator. Like
    __consumer_offsets, with at most as many replicas as live brokers."""
    if TXN_TOPIC in cluster.topics or not cluster.live_brokers():
        return
    rf = min(setting(cluster, "transaction.state.log.replication.factor"), len(cluster.live_brokers()))
    min_isr = min(setting(cluster, "transaction.state.log.min.isr"), rf)
    topic_lifecycle.create_topic(cluster, TXN_TOPIC, setting(cluster, "transaction.state.log.num.partitions"), rf,
                       configs={"cleanup.policy": "compact", "min.insync.replicas": str(min_isr),
                                "unclean.leader.election.enable": "false"})


def coordinator_partition(cluster: ClusterState, transactional_id: str) -> Partition | None:
    t = cluster.topics.get(TXN_TOPIC)
    return t.partitions[partition_for(cluster, transactional_id)] if t is not None else None


def coordinator_of(cluster: ClusterState, transactional_id: str) -> int:
    """The broker coordinating the id (its __transaction_state partition's live leader), or -1."""
    return internal_leader(cluster, TXN_TOPIC, partition_for(cluster, transactional_id))


def coordinator_error(cluster: ClusterState, broker_id: int, transactional_id: str) -> int:
    """NOT_COORDINATOR unless `broker_id` coordinates the id (COORDINATOR_NOT_AVAILABLE without
    the topic)."""
    if TXN_TOPIC not in cluster.topics:
        return ErrorCode.coordinator_not_available
    return 0 if coordinator_of(cluster, transactional_id) == broker_id else ErrorCode.not_coordinator


def coordinator_epoch(cluster: ClusterState, transactional_id: str) -> int:
    p = coordinator_partition(cluster, transactional_id)
    return p.leader_epoch if p is not None else -1


# -- producer ids ---------------------------------------------------------------------------------


def new_producer_id(cluster: ClusterState, transactional_id: str) -> int:
    """A new producer id from the block of the id's coordinator (broker 0's when it has none
    live: the write that follows fails then)."""
    return producer_ids.new_producer_id(cluster, max(coordinator_of(cluster, transactional_id), 0))


# -- the transaction log --------------------------------------------------------------------------


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def log_key(transactional_id: str) -> bytes:
    return struct.pack(">h", 0) + _string(transactional_id)


def log_value(txn: Txn, flexible: bool) -> bytes:
    """TransactionLogValue: version 1 (flexible) on a cluster with transaction.version 2, else
    version 0 (Kafka's TransactionLog.valueToBytes)."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(txn.partitions):
        by_topic.setdefault(topic, []).append(partition)
    head = struct.pack(">qhib", txn.producer_id, txn.producer_epoch, txn.timeout_ms, txn.state)
    tail = struct.pack(">qq", txn.last_update_ms, txn.start_ms)
    if not flexible:
        parts = b"" if txn.state == EMPTY else b"".join(
            _string(t) + struct.pack(">i", len(ps)) + b"".join(struct.pack(">i", i) for i in ps)
            for t, ps in by_topic.items())
        count = struct.pack(">i", -1 if txn.state == EMPTY else len(by_topic))
        return struct.pack(">h", 0) + head + count + parts + tail
    topics = b"" if txn.state == EMPTY else b"".join(
        log.uvarint(len(t.encode()) + 1) + t.encode() + log.uvarint(len(ps) + 1)
        + b"".join(struct.pack(">i", i) for i in ps) + b"\x00" for t, ps in by_topic.items())
    count = log.uvarint(0 if txn.state == EMPTY else len(by_topic) + 1)
    tagged = [(0, struct.pack(">q", txn.previous_producer_id), txn.previous_producer_id != -1),
              (1, struct.pack(">q", txn.next_producer_id), txn.next_producer_id != -1),
              (2, struct.pack(">h", txn.client_version), txn.client_version != 0)]
    fields = [(tag, data) for tag, data, present in tagged if present]
    tags = log.uvarint(len(fields)) + b"".join(log.uvarint(tag) + log.uvarint(len(data)) + data for tag, data in fields)
    return struct.pack(">h", 1) + head + count + topics + tail + tags


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def uvarint(self) -> int:
        shift = n = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n

    def text(self, compact: bool) -> str:
        size = self.uvarint() - 1 if compact else self.take(">h")[0]
        value = self.data[self.pos:self.pos + size].decode()
        self.pos += size
        return value


def _parse_value(transactional_id: str, data: bytes) -> Txn:
    r = _Reader(data)
    (version,) = r.take(">h")
    pid, epoch, timeout, state = r.take(">qhib")
    flexible = version >= 1
    count = r.uvarint() - 1 if flexible else r.take(">i")[0]
    partitions: set[tuple[str, int]] = set()
    for _ in range(max(count, 0)):
        topic = r.text(flexible)
        n = r.uvarint() - 1 if flexible else r.take(">i")[0]
        partitions |= {(topic, r.take(">i")[0]) for _ in range(n)}
        if flexible:
            r.uvarint()   # no tagged fields in a partitions entry
    last_update, start_ms = r.take(">qq")
    txn = Txn(transactional_id, pid, timeout, producer_epoch=epoch, state=state, partitions=partitions,
              start_ms=start_ms, last_update_ms=last_update)
    if flexible:
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            if tag == 0:
                (txn.previous_producer_id,) = r.take(">q")
            elif tag == 1:
                (txn.next_producer_id,) = r.take(">q")
            elif tag == 2:
                (txn.client_version,) = r.take(">h")
            else:
                r.pos += size
    return txn


def _copy(txn: Txn) -> Txn:
    return dataclasses.replace(txn, partitions=set(txn.partitions))


def _write_or_undo(cluster: ClusterState, txn: Txn, before: Txn) -> int:
    """Write the transition, or when the log refuses it go back to `before`: Kafka changes its
    cache only once the transaction log has the new state."""
    error = _write(cluster, txn)
    if error:
        vars(txn).update(vars(_copy(before)))
    return error


def _write(cluster: ClusterState, txn: Txn) -> int:
    """Append the transaction's state to its __transaction_state partition (acks=all, as Kafka
    does); Kafka's errors for a failed write. A Dead state is a tombstone."""
    p = coordinator_partition(cluster, txn.transactional_id)
    if p is None or p.leader < 0 or not cluster.brokers[p.leader].usable:
        return ErrorCode.not_coordinator
    if len(p.isr) < int(configs.topic_value(cluster, TXN_TOPIC, "min.insync.replicas") or 1):
        return ErrorCode.coordinator_not_available   # Kafka maps NOT_ENOUGH_REPLICAS to this
    value = None if txn.state == DEAD else log_value(txn, server_version(cluster) >= 2)
    producer_state.append(cluster, p, [log.build_batch([(log_key(txn.transactional_id), value)])])
    replay.apply(cluster, log_record(txn))
    return 0


def log_record(txn: Txn) -> TransactionLogRecord:
    """The transaction's state as its record (a Dead one's tombstone)."""
    if txn.state == DEAD:
        return TransactionLogRecord(txn.transactional_id)
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(txn.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return TransactionLogRecord(txn.transactional_id, TransactionLogValue(
        txn.producer_id, txn.previous_producer_id, txn.next_producer_id, txn.producer_epoch, txn.timeout_ms,
        txn.state, tuple(TransactionPartitions(t, tuple(ps)) for t, ps in by_topic.items()), txn.last_update_ms,
        txn.start_ms, txn.client_version))


def replay_log(cluster: ClusterState, record: TransactionLogRecord) -> None:
    """The id's state as written: the cache's entry made or brought to it (what Kafka keeps in
    memory only, the last epoch and a fence under way, stays)."""
    s = store(cluster)
    v = record.value
    if v is None:
        s.txns.pop(record.transactional_id, None)
        return
    txn = s.txns.get(record.transactional_id)
    if txn is None:
        txn = s.txns[record.transactional_id] = Txn(record.transactional_id, v.producer_id, v.transaction_timeout_ms)
    txn.producer_id, txn.previous_producer_id, txn.next_producer_id = v.producer_id, v.previous_producer_id, v.next_producer_id
    txn.producer_epoch, txn.timeout_ms, txn.state = v.producer_epoch, v.transaction_timeout_ms, v.transaction_status
    txn.partitions = {(t.topic, p) for t in v.transaction_partitions for p in t.partition_ids}
    txn.last_update_ms, txn.start_ms = v.transaction_last_update_timestamp_ms, v.transaction_start_timestamp_ms
    txn.client_version = v.client_transaction_version


REPLAY = {TransactionLogRecord: replay_log}


def snapshot(cluster: ClusterState) -> list[TransactionLogRecord]:
    """Every transactional id's record (none for one whose first write failed: never written)."""
    s = cluster.transactions
    return [log_record(t) for t in s.txns.values() if t.producer_epoch != NO_EPOCH] if s is not None else []


def _complete_loaded(cluster: ClusterState, s: Store) -> None:
    """Kafka's loadTransactionsForTxnTopicPartition: a transaction found in PrepareCommit or
    PrepareAbort gets its markers and completes."""
    for txn in list(s.txns.values()):
        if txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
            _send_markers(cluster, txn)


# -- InitProducerId -------------------------------------------------------------------------------


def init_producer_id(cluster: ClusterState, transactional_id: str, timeout_ms: int, expected_pid: int,
                     expected_epoch: int) -> tuple[int, int, int]:
    """(error, producer id, epoch), as Kafka's handleInitProducerId for a transactional id."""
    fail = (NO_PRODUCER_ID, NO_EPOCH)
    if not 0 < timeout_ms <= setting(cluster, "transaction.max.timeout.ms"):
        return (ErrorCode.invalid_transaction_timeout, *fail)
    s = store(cluster)
    now = now_ms()
    txn = s.txns.get(transactional_id)
    if txn is None:
        txn = s.txns[transactional_id] = Txn(transactional_id, new_producer_id(cluster, transactional_id), timeout_ms, last_update_ms=now)
    expected = expected_pid != NO_PRODUCER_ID
    if expected and not (txn.producer_epoch == NO_EPOCH or expected_pid == txn.producer_id
                         or (expected_pid == txn.previous_producer_id and expected_epoch >= MAX_EPOCH - 1)):
        return (ErrorCode.producer_fenced, *fail)
    if txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
        return (ErrorCode.concurrent_transactions, *fail)
    if txn.state == ONGOING:
        # Fence the producer: its transaction is aborted with a newer epoch; the client retries.
        return (_fence(cluster, txn) or ErrorCode.concurrent_transactions, *fail)
    before = _copy(txn)
    txn.previous_producer_id = txn.producer_id
    if txn.epoch_exhausted and (not expected or expected_epoch == txn.producer_epoch):
        txn.previous_producer_id, txn.producer_id = txn.producer_id, new_producer_id(cluster, transactional_id)
        txn.producer_epoch, txn.last_producer_epoch = 0, NO_EPOCH
    elif not expected or txn.producer_epoch == NO_EPOCH or expected_epoch == txn.producer_epoch:
        txn.last_producer_epoch = txn.producer_epoch if expected else NO_EPOCH
        txn.producer_epoch += 1
    elif expected_epoch != txn.last_producer_epoch:   # else: a retry of the bump it already had
        return (ErrorCode.producer_fenced, *fail)
    txn.state, txn.timeout_ms, txn.partitions = EMPTY, timeout_ms, set()
    txn.start_ms, txn.last_update_ms = -1, now
    error = _write_or_undo(cluster, txn, before)
    if error:
        return (error, *fail)
    _ensure_ticker(cluster)
    return 0, txn.producer_id, txn.producer_epoch


def server_version(cluster: ClusterState) -> int:
    """The cluster's finalized transaction.version (what the coordinator uses on its own); none
    in zk mode, where Kafka 3.9 has transactions v1 only."""
    from kafka_shell.sandbox.handlers import features
    return features.finalized(cluster).get("transaction.version", 0) if cluster.kraft else 0


# -- AddPartitionsToTxn / AddOffsetsToTxn / verification -----------------------------------------


def _check_producer(txn: Txn | None, pid: int, epoch: int) -> int:
    if txn is None or txn.producer_id != pid:
        return ErrorCode.invalid_producer_id_mapping
    if txn.producer_epoch != epoch:
        return ErrorCode.producer_fenced
    return 0


def add_partitions(cluster: ClusterState, transactional_id: str, pid: int, epoch: int,
                   partitions: set[tuple[str, int]], client_version: int | None = None) -> int:
    """Kafka's handleAddPartitionsToTransaction: the partitions join the (now ongoing)
    transaction, written to the log first. `client_version`: set when a produce adds them
    (transactions v2)."""
    txn = store(cluster).txns.get(transactional_id)
    error = _check_producer(txn, pid, epoch)
    if error:
        return error
    assert txn is not None
    if txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
        return ErrorCode.concurrent_transactions
    if txn.state == ONGOING and partitions <= txn.partitions:
        return 0
    now = now_ms()
    before = _copy(txn)
    if txn.state != ONGOING:
        txn.start_ms = now
    txn.previous_producer_id = txn.producer_id
    txn.state = ONGOING
    txn.partitions |= partitions
    txn.last_update_ms = now
    if client_version is not None:
        txn.client_version = client_version
    return _write_or_undo(cluster, txn, before)


def verify_partitions(cluster: ClusterState, transactional_id: str, pid: int, epoch: int,
                      partitions: set[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Kafka's handleVerifyPartitionsInTransaction: per partition 0 if the transaction has it,
    TRANSACTION_ABORTABLE if not, or the error of the whole transaction."""
    txn = store(cluster).txns.get(transactional_id)
    error = _check_producer(txn, pid, epoch)
    if not error and txn is not None and txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
        error = ErrorCode.concurrent_transactions
    if error:
        return dict.fromkeys(partitions, error)
    assert txn is not None
    return {tp: 0 if tp in txn.partitions else ErrorCode.transaction_abortable for tp in partitions}


# -- EndTxn ---------------------------------------------------------------------------------------


def end_txn(cluster: ClusterState, transactional_id: str, pid: int, epoch: int, commit: bool,
            client_version: int) -> tuple[int, int, int]:
    """(error, producer id, epoch) as Kafka's handleEndTransaction (v2 answers the bumped epoch)."""
    fail = (NO_PRODUCER_ID, NO_EPOCH)
    txn = store(cluster).txns.get(transactional_id)
    if txn is None:
        return (ErrorCode.invalid_producer_id_mapping, *fail)
    if client_version < 2:
        return _end_v1(cluster, txn, pid, epoch, commit)
    retry_on_overflow = (txn.previous_producer_id == pid and epoch == MAX_EPOCH - 1 and txn.producer_epoch == 0)
    retry_on_bump = txn.producer_epoch == epoch + 1
    if txn.state in (ONGOING, EMPTY):
        valid = epoch == txn.producer_epoch
    elif txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
        valid = retry_on_bump
    else:
        valid = retry_on_bump or retry_on_overflow or epoch == txn.producer_epoch
    retry = retry_on_bump or retry_on_overflow
    if txn.producer_id != pid and not retry_on_overflow:
        return (ErrorCode.invalid_producer_id_mapping, *fail)
    if not valid:
        return (ErrorCode.producer_fenced, *fail)
    done = (0, txn.producer_id, txn.producer_epoch)
    if txn.state == ONGOING:
        return _end(cluster, txn, commit, client_version)
    if txn.state in (PREPARE_COMMIT, PREPARE_ABORT):
        return (ErrorCode.concurrent_transactions if commit == (txn.state == PREPARE_COMMIT)
                else ErrorCode.invalid_txn_state, *fail)
    if txn.state == COMPLETE_COMMIT:
        if commit:
            return done if retry else (ErrorCode.invalid_txn_state, *fail)
        return (ErrorCode.invalid_txn_state, *fail) if retry else _end(cluster, txn, False, client_version)
    if txn.state == COMPLETE_ABORT:
        if not commit:
            return done if retry else _end(cluster, txn, False, client_version)
        return (ErrorCode.invalid_txn_state, *fail)
    # Empty: transactions v2 may abort a transaction to which nothing was added.
    return _end(cluster, txn, False, client_version) if not commit else (ErrorCode.invalid_txn_state, *fail)


def _end_v1(cluster: ClusterState, txn: Txn, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
    fail = (NO_PRODUCER_ID, NO_EPOCH)
    if txn.producer_id != pid:
        return (ErrorCode.invalid_producer_id_mapping, *fail)
    if epoch != txn.producer_epoch:
        return (ErrorCode.producer_fenced, *fail)
    if txn.state == ONGOING:
        error, _, _ = _end(cluster, txn, commit, client_version=min(txn.client_version, 1))
        return (error, *fail)
    finished = {COMPLETE_COMMIT: True, COMPLETE_ABORT: False}
    pending = {PREPARE_COMMIT: True, PREPARE_ABORT: False}
    if finished.get(txn.state) == commit:
        return (0, *fail)
    if pending.get(txn.state) == commit:
        return (ErrorCode.concurrent_transactions, *fail)
    return (ErrorCode.invalid_txn_state, *fail)


def _end(cluster: ClusterState, txn: Txn, commit: bool, client_version: int, before: Txn | None = None) -> tuple[int, int, int]:
    """Prepare (epoch bumped for transactions v2), write the markers, complete. `before`: the
    state to go back to when the log refuses the prepare (default: as the transaction is)."""
    before = before or _copy(txn)
    now = now_ms()
    if txn.state != ONGOING:
        txn.start_ms = now    # v2 may end a transaction nothing joined
    txn.previous_producer_id = txn.producer_id
    if client_version >= 2:
        if txn.epoch_exhausted and not txn.fencing:
            txn.next_producer_id = new_producer_id(cluster, txn.transactional_id)
        txn.last_producer_epoch = txn.producer_epoch
        txn.producer_epoch += 1
    txn.client_version = client_version
    txn.state = PREPARE_COMMIT if commit else PREPARE_ABORT
    txn.last_update_ms = now
    error = _write_or_undo(cluster, txn, before)
    if error:
        return error, NO_PRODUCER_ID, NO_EPOCH
    answer = (0, txn.producer_id, txn.producer_epoch)   # before a new producer id takes over
    _send_markers(cluster, txn)
    return answer


def _send_markers(cluster: ClusterState, txn: Txn) -> None:
    """Write the markers of a prepared transaction; once every partition has its marker the
    transaction completes. Partitions without a live leader are retried in the background."""
    commit = txn.state == PREPARE_COMMIT
    epoch = coordinator_epoch(cluster, txn.transactional_id)
    waiting = {tp for tp in txn.partitions if not _write_marker(cluster, txn, tp, commit, epoch)}
    if waiting:
        txn.partitions = waiting
        _retry_later(cluster, txn.transactional_id)
        return
    before = _copy(txn)
    txn.previous_producer_id = txn.producer_id
    if txn.next_producer_id != NO_PRODUCER_ID:  # v2 ran out of epochs: the next transaction has a new id
        txn.producer_id = txn.next_producer_id
        txn.next_producer_id, txn.producer_epoch, txn.last_producer_epoch = NO_PRODUCER_ID, 0, NO_EPOCH
    txn.state = COMPLETE_COMMIT if commit else COMPLETE_ABORT
    txn.partitions = set()
    txn.fencing = False
    txn.last_update_ms = now_ms()
    if _write_or_undo(cluster, txn, before):
        _retry_later(cluster, txn.transactional_id)   # the markers are written again, then completion


def _write_marker(cluster: ClusterState, txn: Txn, tp: tuple[str, int], commit: bool, coordinator_epoch: int) -> bool:
    """True when the partition has its marker (or is gone); False to retry (no live leader)."""
    error = write_marker(cluster, tp, txn.producer_id, txn.producer_epoch, coordinator_epoch, commit,
                         txn.client_version)
    if error in (ErrorCode.not_leader_or_follower, ErrorCode.not_enough_replicas):
        return False
    if error and error != ErrorCode.unknown_topic_or_partition:   # deleted meanwhile: nothing to mark
        logger.info("transaction %s: marker refused by %s-%d (%s)", txn.transactional_id, tp[0], tp[1],
                    ErrorCode(error).name)
    return True


def write_marker(cluster: ClusterState, tp: tuple[str, int], producer_id: int, epoch: int, coordinator_epoch: int,
                 commit: bool, transaction_version: int) -> int:
    """Write one end-transaction marker into a partition (what WriteTxnMarkers asks of its
    leader); Kafka's error when it cannot."""
    p = cluster.partition(*tp)
    if p is None:
        return ErrorCode.unknown_topic_or_partition
    if p.leader < 0 or not cluster.brokers[p.leader].usable:
        return ErrorCode.not_leader_or_follower
    s = producer_state.state_of(cluster, p)
    error = producer_state.check_marker(s, producer_id, epoch, coordinator_epoch, transaction_version)
    if error:
        return error
    producer_state.append(cluster, p, [producer_state.marker_batch(producer_id, epoch, coordinator_epoch, commit)])
    if tp[0] == OFFSETS_TOPIC:
        _complete_offsets(cluster, producer_id, tp[1], commit)
    return 0


def _retry_later(cluster: ClusterState, transactional_id: str) -> None:
    """Send the markers again every MARKER_RETRY_S until the transaction completes (one retrying
    task per id: _send_markers asking again meanwhile changes nothing)."""
    s = store(cluster)
    spawn = cluster.runtime.spawn
    if transactional_id in s.retrying or spawn is None:
        return
    s.retrying.add(transactional_id)

    async def retry() -> None:
        try:
            while True:
                await asyncio.sleep(MARKER_RETRY_S)
                txn = s.txns.get(transactional_id)
                if txn is None or txn.state not in (PREPARE_COMMIT, PREPARE_ABORT):
                    return
                _send_markers(cluster, txn)
        finally:
            s.retrying.discard(transactional_id)

    spawn(retry())


def _fence(cluster: ClusterState, txn: Txn) -> int:
    """Abort an open transaction with the epoch bumped (an InitProducerId of another producer, a
    timeout): the producer of the old epoch is fenced. Transactions v1 bump before aborting;
    v2's abort bumps once itself (the markers carry epoch + 1 either way)."""
    version = server_version(cluster)
    before = _copy(txn)
    if version < 2:
        txn.producer_epoch += 1
    txn.fencing = True
    error, _, _ = _end(cluster, txn, commit=False, client_version=version, before=before)
    if not error:
        txn.last_producer_epoch = NO_EPOCH   # the fenced producer may not pass for a retry
    return error


# -- timeouts -------------------------------------------------------------------------------------


def _ensure_ticker(cluster: ClusterState) -> None:
    s = store(cluster)
    spawn = cluster.runtime.spawn
    if s.ticking or spawn is None:
        return
    s.ticking = True

    async def tick() -> None:
        while True:
            await asyncio.sleep(setting(cluster, "transaction.abort.timed.out.transaction.cleanup.interval.ms") / 1000)
            abort_timed_out(cluster)

    spawn(tick())


def abort_timed_out(cluster: ClusterState) -> None:
    """Kafka's abortTimedOutTransactions: fence the producer of each open transaction past its
    timeout (epoch + 1) and abort it."""
    now = now_ms()
    for txn in list(store(cluster).txns.values()):
        if txn.state == ONGOING and txn.start_ms + txn.timeout_ms < now:
            logger.info("aborting transaction %s after its timeout of %d ms", txn.transactional_id, txn.timeout_ms)
            _fence(cluster, txn)


# -- offsets in transactions (the group coordinator's side) --------------------------------------


def add_offsets(cluster: ClusterState, group_id: str, pid: int, offsets: dict[tuple[str, int], CommittedOffset]) -> None:
    store(cluster).pending_offsets.setdefault((group_id, pid), {}).update(offsets)


def has_pending_offsets(cluster: ClusterState, group_id: str, tp: tuple[str, int]) -> bool:
    s = cluster.transactions
    return s is not None and any(g == group_id and tp in offsets for (g, _), offsets in s.pending_offsets.items())


def forget_topic(cluster: ClusterState, topic: str) -> None:
    """A deleted topic's offsets go from open transactions too: Kafka's tombstones for them
    (OffsetMetadataManager.onTopicsDeleted) clear the pending offsets of each open transaction."""
    s = cluster.transactions
    for offsets in s.pending_offsets.values() if s is not None else ():
        for key in [k for k in offsets if k[0] == topic]:
            del offsets[key]


def _complete_offsets(cluster: ClusterState, pid: int, offsets_partition_index: int, commit: bool) -> None:
    """A marker in a __consumer_offsets partition: the producer's offsets for the groups of that
    partition become committed (or are dropped)."""
    s = store(cluster)
    for key in [k for k in s.pending_offsets if k[1] == pid and offsets_partition(cluster, k[0]) == offsets_partition_index]:
        offsets = s.pending_offsets.pop(key)
        if commit:
            record_offsets(cluster, key[0], offsets)   # records, as an OffsetCommit's are


# -- describing -----------------------------------------------------------------------------------


def coordinated_by(cluster: ClusterState, broker_id: int) -> list[Txn]:
    """The transactions this broker coordinates (Dead ones left out)."""
    return [txn for txn in store(cluster).txns.values()
            if txn.state != DEAD and coordinator_of(cluster, txn.transactional_id) == broker_id]
