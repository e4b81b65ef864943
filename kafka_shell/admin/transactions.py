"""Transactions, as Kafka's kafka-transactions tool sees them: the transactional ids each
coordinator holds (ListTransactions, every broker), one id's transaction (DescribeTransactions at
its transaction coordinator), the producers of a partition (DescribeProducers at its leader or
a named replica), hanging transactions (the tool's find-hanging algorithm over those three) and
aborting one (WriteTxnMarkers at the partition's leader, as Kafka's Admin.abortTransaction).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.connection.manager import TRANSACTION_KEY_TYPE
from kafka_shell.base.errors import KafkaCallError, NotSupported, shown

from kafka_shell.admin.errors import code_name, error_line, partition_line, response_error
from kafka_shell.base.regex import compile_kafka_regex

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.connection.metadata import ClusterSnapshot

Key = tuple[str, int]
# Kafka's TransactionState names (what ListTransactions' state filter takes).
STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
          "PrepareEpochFence", "Dead")
DURATION_FILTER_VERSION = 1    # ListTransactions filters by duration from v1 (KIP-994, Kafka 3.8)
PATTERN_FILTER_VERSION = 2     # ... and by a transactional id pattern from v2 (KIP-1152, Kafka 4.1)
BATCH = 500                    # partitions per DescribeProducers, as Kafka's tool batches them
LEADER_MOVED = {Error.not_leader_or_follower, Error.replica_not_available, Error.broker_not_available,
                Error.unknown_topic_or_partition}


# -- list-transactions ---------------------------------------------------------------------------


class Listing(NamedTuple):
    transactional_id: str
    coordinator: int
    producer_id: int
    state: str


@dataclass(frozen=True)
class Listings:
    transactions: list[Listing]
    failures: list[str]


def list_transactions(conn: ConnectionManager, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                      duration_ms: int = -1, pattern: str | None = None) -> Listings:
    """Every broker's ListTransactions (each lists the ids it coordinates), with Kafka's
    filters: states, producer ids, open longer than `duration_ms`, ids matching `pattern`."""
    brokers = sorted(conn.read([]).brokers)
    needed = PATTERN_FILTER_VERSION if pattern is not None else DURATION_FILTER_VERSION if duration_ms >= 0 else 0

    def body(broker: int, version: int) -> dict:
        if version < needed:
            what = "--transactional-id-pattern needs Kafka 4.1" if needed == PATTERN_FILTER_VERSION \
                else "--duration-filter needs Kafka 3.8"
            raise NotSupported(f"{what} or later (ListTransactions v{needed}); broker {broker} has v{version}.")
        return {"state_filters": list(states), "producer_id_filters": list(producer_ids),
                "duration_filter": duration_ms, "transactional_id_pattern": pattern}

    conn.require(ApiKey.LIST_TRANSACTIONS, "list-transactions")
    answers = conn.each_broker(brokers, ApiKey.LIST_TRANSACTIONS, body)
    failures = [f"Broker {b} did not list its transactions: {why}" for b, why in sorted(answers.failed.items())]
    out: list[Listing] = []
    for broker, answer in sorted(answers.answers.items()):
        if answer.error_code:
            failures.append(f"Broker {broker} did not list its transactions: "
                            + error_line(ApiKey.LIST_TRANSACTIONS, int(answer.error_code)))
            continue
        out += [Listing(t.transactional_id, broker, int(t.producer_id), t.transaction_state)
                for t in answer.transaction_states]
    return Listings(sorted(out), failures)


def check_pattern(text: str) -> str:
    """A --transactional-id-pattern: a regular expression (Kafka's is Java's; the common subset)
    of printable text."""
    if not text or not text.isprintable():
        raise ValueError("a regular expression of printable characters, such as 'orders-.*'")
    try:
        compile_kafka_regex(text)
    except ValueError as exc:
        raise ValueError(f"a regular expression ({exc})") from None
    return text


# -- describe-transaction ----------------------------------------------------------------------


@dataclass(frozen=True)
class Transaction:
    transactional_id: str
    coordinator: int
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    start_ms: int | None               # None when no transaction is open (Kafka's -1)
    partitions: tuple[Key, ...]


class Problem(NamedTuple):
    """Why a transactional id could not be described; `missing`: it does not exist."""
    line: str
    missing: bool = False


def describe(conn: ConnectionManager, transactional_ids: list[str]) -> dict[str, Transaction | Problem]:
    """DescribeTransactions at each id's transaction coordinator: id -> its transaction, or why
    it could not be described."""
    conn.require(ApiKey.DESCRIBE_TRANSACTIONS, "describe-transaction")
    parts = conn.coordinator_requests(
        transactional_ids, ApiKey.DESCRIBE_TRANSACTIONS, lambda ids, version: {"transactional_ids": ids},
        lambda answer, ids: {t.transactional_id: t for t in answer.transaction_states},
        key_type=TRANSACTION_KEY_TYPE)
    out: dict[str, Transaction | Problem] = {}
    for tid in transactional_ids:
        t, node = parts[tid]
        code = int(t.error_code)
        if code:
            out[tid] = Problem(transaction_line(code, tid, getattr(t, "why", None)),
                               code == Error.transactional_id_not_found)
            continue
        start = int(t.transaction_start_time)
        keys = tuple(sorted((topic.topic, int(p)) for topic in t.topics for p in topic.partitions))
        out[tid] = Transaction(tid, node, int(t.producer_id), int(t.producer_epoch), t.transaction_state,
                               _ms(t.transaction_timeout), start if start >= 0 else None, keys)
    return out


def transaction_line(code: int, transactional_id: str, why: str | None = None) -> str:
    if code == Error.transactional_id_not_found:
        return f"Transactional id '{shown(transactional_id)}' does not exist (see list-transactions)."
    line = why or error_line(ApiKey.DESCRIBE_TRANSACTIONS, code, purpose="describe the transaction")
    return f"Transactional id '{shown(transactional_id)}': {line}"


def _ms(value: Any) -> int:
    """kio reads some millisecond fields as timedeltas."""
    return int(value.total_seconds() * 1000) if hasattr(value, "total_seconds") else int(value)


# -- describe-producers ------------------------------------------------------------------------


class Producer(NamedTuple):
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int             # -1 when none is known
    last_sequence: int
    last_timestamp: int
    txn_start_offset: int | None       # the open transaction's first offset, None when none


@dataclass(frozen=True)
class PartitionProducers:
    key: Key
    broker: int
    producers: tuple[Producer, ...] = ()
    problem: str | None = None


def describe_producers(conn: ConnectionManager, snap: ClusterSnapshot, keys: list[Key],
                       broker_id: int | None = None) -> dict[Key, PartitionProducers]:
    """DescribeProducers of each partition at its leader (or at `broker_id`'s replica), in
    batches of BATCH partitions per broker, all brokers at once; partitions whose leader moved
    are asked once more after a fresh read."""
    conn.require(ApiKey.DESCRIBE_PRODUCERS, "describe-producers")
    out: dict[Key, PartitionProducers] = {}
    pending = list(dict.fromkeys(keys))
    for attempt in range(2):
        by_broker: dict[int, list[Key]] = {}
        for key in pending:
            topic = snap.topics.get(key[0])
            if topic is None or not 0 <= key[1] < len(topic.partitions):
                out[key] = PartitionProducers(key, -1, problem=partition_line(key, Error.unknown_topic_or_partition))
                continue
            node = broker_id if broker_id is not None else topic.partitions[key[1]].leader
            if node < 0:
                out[key] = PartitionProducers(key, -1, problem=partition_line(key, Error.leader_not_available))
            else:
                by_broker.setdefault(node, []).append(key)
        moved: list[Key] = []
        for node, mine in by_broker.items():
            for start in range(0, len(mine), BATCH):
                batch = mine[start:start + BATCH]
                try:
                    answer = conn.broker_request(node, ApiKey.DESCRIBE_PRODUCERS, {"topics": _by_topic(batch)})
                except KafkaCallError as exc:
                    out.update({k: PartitionProducers(k, node, problem=f"{k[0]}-{k[1]}: {exc}") for k in batch})
                    continue
                for t in answer.topics:
                    for p in t.partitions:
                        key = (t.name, int(p.partition_index))
                        code = int(p.error_code)
                        if code in LEADER_MOVED and broker_id is None and not attempt:
                            moved.append(key)
                        elif code:
                            out[key] = PartitionProducers(key, node, problem=partition_line(key, code))
                        else:
                            out[key] = PartitionProducers(key, node, tuple(
                                Producer(int(s.producer_id), int(s.producer_epoch), int(s.coordinator_epoch),
                                         int(s.last_sequence), int(s.last_timestamp),
                                         int(s.current_txn_start_offset) if s.current_txn_start_offset >= 0 else None)
                                for s in p.active_producers))
        if not moved:
            break
        snap, pending = conn.read(sorted({t for t, _ in moved})), moved
    return {k: out[k] for k in keys if k in out}


def _by_topic(keys: list[Key]) -> list[dict]:
    topics: dict[str, list[int]] = {}
    for t, p in keys:
        topics.setdefault(t, []).append(p)
    return [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]


# -- find-hanging-transactions -----------------------------------------------------------------


class OpenTransaction(NamedTuple):
    key: Key
    producer: Producer


@dataclass(frozen=True)
class Hanging:
    transactions: list[OpenTransaction]
    searched: int                      # partitions whose producers were read
    failures: list[str]


def find_hanging(conn: ConnectionManager, snap: ClusterSnapshot, keys: list[Key], broker_id: int | None,
                 max_timeout_ms: int) -> Hanging:
    """Kafka's find-hanging: the open transactions of these partitions (at `broker_id`'s replica,
    else the leader) last written longer than `max_timeout_ms` ago are candidates; one whose
    producer id no coordinator lists (ListTransactions by producer id), whose transactional id
    is gone, or whose coordinator does not count the partition in the id's transaction
    (DescribeTransactions) is hanging: no coordinator will ever write its marker."""
    failures: list[str] = []
    now = int(time.time() * 1000)
    candidates: list[OpenTransaction] = []
    for key, found in describe_producers(conn, snap, keys, broker_id).items():
        if found.problem is not None:
            failures.append(found.problem)
            continue
        candidates += [OpenTransaction(key, p) for p in found.producers
                       if p.txn_start_offset is not None and now - p.last_timestamp > max_timeout_ms]
    if not candidates:
        return Hanging([], len(keys), failures)
    pids = sorted({c.producer.producer_id for c in candidates})
    listed = list_transactions(conn, producer_ids=pids)
    if listed.failures:
        # A coordinator that did not answer may hold the id: nothing can be called hanging then.
        raise KafkaCallError("Could not list the transactions of every coordinator, so no transaction can be "
                             "called hanging: " + " ".join(listed.failures))
    ids = {t.producer_id: t.transactional_id for t in listed.transactions if t.producer_id in pids}
    described = describe(conn, sorted(set(ids.values()))) if ids else {}
    hanging = []
    for c in candidates:
        tid = ids.get(c.producer.producer_id)
        d = described.get(tid) if tid is not None else None
        if isinstance(d, Problem) and not d.missing:
            raise KafkaCallError(f"Could not describe the transaction of producer {c.producer.producer_id}: {d.line}")
        if not isinstance(d, Transaction) or c.key not in d.partitions:
            hanging.append(c)
    return Hanging(sorted(hanging), len(keys), failures)


def partitions_to_search(snap: ClusterSnapshot, topic: str | None, partition: int | None,
                         broker_id: int | None) -> list[Key]:
    """Kafka's scope: one partition, a topic's partitions, or every partition with a replica on
    the broker (of the topic when named; of every topic but the internal ones, as Kafka lists them)."""
    if topic is not None and partition is not None:
        return [(topic, partition)]
    names = [topic] if topic is not None else sorted(t.name for t in snap.topics.values() if not t.internal)
    return [(t, p.partition) for t in names if t in snap.topics for p in snap.topics[t].partitions
            if broker_id is None or broker_id in p.replicas]


# -- abort-transaction -------------------------------------------------------------------------


class AbortSpec(NamedTuple):
    key: Key
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int


def abort_spec_at(conn: ConnectionManager, snap: ClusterSnapshot, key: Key, start_offset: int) -> AbortSpec:
    """The producer whose open transaction on `key` starts at `start_offset` (Kafka's tool on
    brokers of 3.0 and later), with the epochs to abort it."""
    found = describe_producers(conn, snap, [key])[key]
    if found.problem is not None:
        raise KafkaCallError(f"Failed to validate producer state for partition {key[0]}-{key[1]}: {found.problem}")
    for p in found.producers:
        if p.txn_start_offset == start_offset:
            return AbortSpec(key, p.producer_id, p.producer_epoch, max(p.coordinator_epoch, 0))
    raise KafkaCallError(f"Could not find any open transactions starting at offset {start_offset} on partition "
                         f"{key[0]}-{key[1]} (describe-producers shows the open ones).")


def abort(conn: ConnectionManager, spec: AbortSpec) -> None:
    """An abort marker for the producer's transaction on the partition (WriteTxnMarkers at its
    leader, as Kafka's Admin.abortTransaction sends it); asked again once where the leader moved."""
    body = {"markers": [{"producer_id": spec.producer_id, "producer_epoch": spec.producer_epoch,
                         "transaction_result": False, "coordinator_epoch": spec.coordinator_epoch,
                         "topics": [{"name": spec.key[0], "partition_indexes": [spec.key[1]]}]}]}
    code = int(Error.not_leader_or_follower)
    for _ in range(2):
        snap = conn.read([spec.key[0]])
        topic = snap.topics.get(spec.key[0])
        if topic is None or not 0 <= spec.key[1] < len(topic.partitions):
            raise response_error(ApiKey.WRITE_TXN_MARKERS, Error.unknown_topic_or_partition, topic=spec.key[0])
        leader = topic.partitions[spec.key[1]].leader
        if leader < 0:
            raise KafkaCallError(partition_line(spec.key, Error.leader_not_available))
        answer = conn.broker_request(leader, ApiKey.WRITE_TXN_MARKERS, body, mutation=True)
        code = int(answer.markers[0].topics[0].partitions[0].error_code)
        if code not in LEADER_MOVED:
            break
    if code == Error.cluster_authorization_failed:
        raise KafkaCallError("Not authorized to write transaction markers: aborting a transaction needs the "
                             "ClusterAction permission on the cluster (ask an administrator).", code=code)
    if code == Error.transaction_coordinator_fenced:
        raise KafkaCallError(f"The coordinator epoch {spec.coordinator_epoch} is fenced by the active coordinator "
                             f"of {spec.key[0]}-{spec.key[1]}: read describe-producers again.", code=code)
    if code:
        raise KafkaCallError(f"Could not abort the transaction of producer {spec.producer_id} on "
                             f"{partition_line(spec.key, code)} ({code_name(code)})", code=code)
