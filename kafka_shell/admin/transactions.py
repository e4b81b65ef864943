"""Transactions, as Kafka's kafka-transactions tool sees them: the transactional ids each
coordinator holds (ListTransactions, every broker), one id's transaction (DescribeTransactions at
its transaction coordinator), the producers of a partition (DescribeProducers at its leader or
a named replica), hanging transactions (the tool's find-hanging algorithm over those three) and
aborting one (WriteTxnMarkers at the partition's leader, as Kafka's Admin.abortTransaction).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_shell.base.answers import BROKER, AdminError, Answers, Target
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.connection.manager import TRANSACTION_KEY_TYPE
from kafka_shell.base.errors import KafkaCallError, NotSupported

from kafka_shell.admin.errors import code_name, no_such_transactional_id, partition_line, response_error
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


# -- list-transactions ---------------------------------------------------------------------------


class Listing(NamedTuple):
    transactional_id: str
    coordinator: int
    producer_id: int
    state: str


@dataclass(frozen=True)
class Listings(Answers[int, tuple[Listing, ...]]):
    """The transactions each broker coordinates; an AdminError for each broker that did not
    list them."""

    @property
    def transactions(self) -> list[Listing]:
        return sorted(t for listed in self.rows.values() for t in listed)


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
    errors = dict(answers.errors)
    rows: dict[int, tuple[Listing, ...]] = {}
    for broker, answer in sorted(answers.rows.items()):
        if answer.error_code:
            errors[broker] = AdminError(int(answer.error_code), Target(BROKER, broker))
            continue
        rows[broker] = tuple(Listing(t.transactional_id, broker, int(t.producer_id), t.transaction_state)
                             for t in answer.transaction_states)
    return Listings(rows, dict(sorted(errors.items())))


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


def describe(conn: ConnectionManager, transactional_ids: list[str]) -> Answers[str, Transaction]:
    """DescribeTransactions at each id's transaction coordinator: each id's transaction, or its
    error (TRANSACTIONAL_ID_NOT_FOUND: `errors.no_such_transactional_id`)."""
    conn.require(ApiKey.DESCRIBE_TRANSACTIONS, "describe-transaction")
    parts = conn.coordinator_requests(
        transactional_ids, ApiKey.DESCRIBE_TRANSACTIONS, lambda ids, version: {"transactional_ids": ids},
        lambda answer, ids: {t.transactional_id: t for t in answer.transaction_states},
        key_type=TRANSACTION_KEY_TYPE)
    rows: dict[str, Transaction] = {}
    for tid, (t, node) in parts.rows.items():
        start = int(t.transaction_start_time)
        keys = tuple(sorted((topic.topic, int(p)) for topic in t.topics for p in topic.partitions))
        rows[tid] = Transaction(tid, node, int(t.producer_id), int(t.producer_epoch), t.transaction_state,
                                _ms(t.transaction_timeout), start if start >= 0 else None, keys)
    return Answers(rows, parts.errors)


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


def describe_producers(conn: ConnectionManager, snap: ClusterSnapshot, keys: list[Key],
                       broker_id: int | None = None) -> Answers[Key, tuple[Producer, ...]]:
    """DescribeProducers of each partition at its leader (located again where it moved), or at
    `broker_id`'s replica (where a leader-moved answer stands, as Kafka's tool has it), in
    batches of BATCH partitions per broker, all brokers at once."""
    conn.require(ApiKey.DESCRIBE_PRODUCERS, "describe-producers")

    def body(batch: list[Key], version: int) -> dict:
        return {"topics": _by_topic(batch)}

    def parts(answer: Any) -> Iterator[tuple[Key, Any]]:
        return (((t.name, int(p.partition_index)), p) for t in answer.topics for p in t.partitions)

    if broker_id is None:
        found = conn.leader_requests(keys, ApiKey.DESCRIBE_PRODUCERS, body, parts, snap=snap, batch=BATCH)
        at, errors = found.rows, found.errors
    else:
        found_at = conn.replica_requests({broker_id: keys}, ApiKey.DESCRIBE_PRODUCERS, body, parts, batch=BATCH)
        at = {k: p for (_, k), p in found_at.rows.items()}
        errors = {k: e for (_, k), e in found_at.errors.items()}
    rows = {k: tuple(Producer(int(s.producer_id), int(s.producer_epoch), int(s.coordinator_epoch),
                              int(s.last_sequence), int(s.last_timestamp),
                              int(s.current_txn_start_offset) if s.current_txn_start_offset >= 0 else None)
                     for s in p.active_producers) for k, p in at.items()}
    return Answers({k: rows[k] for k in keys if k in rows}, {k: errors[k] for k in keys if k in errors})


def _by_topic(keys: list[Key]) -> list[dict]:
    topics: dict[str, list[int]] = {}
    for t, p in keys:
        topics.setdefault(t, []).append(p)
    return [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]


# -- find-hanging-transactions -----------------------------------------------------------------


@dataclass(frozen=True)
class Hanging(Answers[Key, tuple[Producer, ...]]):
    """Each partition searched: its hanging transactions' producers (often none), or why its
    producers could not be read; and what kept the search from concluding: brokers that did not
    list their transactions (`unlisted`), transactional ids that could not be described."""
    unlisted: dict[int, AdminError] = field(default_factory=dict)
    undescribed: dict[str, AdminError] = field(default_factory=dict)


def find_hanging(conn: ConnectionManager, snap: ClusterSnapshot, keys: list[Key], broker_id: int | None,
                 max_timeout_ms: int) -> Hanging:
    """Kafka's find-hanging: the open transactions of these partitions (at `broker_id`'s replica,
    else the leader) last written longer than `max_timeout_ms` ago are candidates; one whose
    producer id no coordinator lists (ListTransactions by producer id), whose transactional id
    is gone, or whose coordinator does not count the partition in the id's transaction
    (DescribeTransactions) is hanging: no coordinator will ever write its marker. When a
    coordinator cannot tell (`unlisted`, `undescribed`), nothing is called hanging."""
    now = int(time.time() * 1000)
    found = describe_producers(conn, snap, keys, broker_id)
    candidates = {key: [p for p in producers if p.txn_start_offset is not None and now - p.last_timestamp > max_timeout_ms]
                  for key, producers in found.rows.items()}
    pids = sorted({p.producer_id for ps in candidates.values() for p in ps})
    if not pids:
        return Hanging({k: () for k in found.rows}, found.errors)
    listed = list_transactions(conn, producer_ids=pids)
    if listed.errors:   # a coordinator that did not answer may hold the id
        return Hanging({}, found.errors, unlisted=listed.errors)
    ids = {t.producer_id: t.transactional_id for t in listed.transactions if t.producer_id in pids}
    described = describe(conn, sorted(set(ids.values()))) if ids else Answers()
    undescribed = {tid: e for tid, e in described.errors.items() if not no_such_transactional_id(e)}
    if undescribed:
        return Hanging({}, found.errors, undescribed=undescribed)

    def hanging(key: Key, p: Producer) -> bool:
        tid = ids.get(p.producer_id)
        transaction = described.rows.get(tid) if tid is not None else None
        return transaction is None or key not in transaction.partitions
    return Hanging({key: tuple(p for p in ps if hanging(key, p)) for key, ps in candidates.items()}, found.errors)


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
    found = describe_producers(conn, snap, [key])
    if key in found.errors:
        error = found.errors[key]
        why = partition_line(key, error.code) if error.code is not None else str(error)
        raise KafkaCallError(f"Failed to validate producer state for partition {key[0]}-{key[1]}: {why}", code=error.code)
    for p in found.rows[key]:
        if p.txn_start_offset == start_offset:
            return AbortSpec(key, p.producer_id, p.producer_epoch, max(p.coordinator_epoch, 0))
    raise KafkaCallError(f"Could not find any open transactions starting at offset {start_offset} on partition "
                         f"{key[0]}-{key[1]} (describe-producers shows the open ones).")


def abort(conn: ConnectionManager, spec: AbortSpec) -> None:
    """An abort marker for the producer's transaction on the partition (WriteTxnMarkers at its
    leader, as Kafka's Admin.abortTransaction sends it; located again where the leader moved)."""
    body = {"markers": [{"producer_id": spec.producer_id, "producer_epoch": spec.producer_epoch,
                         "transaction_result": False, "coordinator_epoch": spec.coordinator_epoch,
                         "topics": [{"name": spec.key[0], "partition_indexes": [spec.key[1]]}]}]}

    def parts(answer: Any) -> Iterator[tuple[Key, Any]]:
        return (((t.name, int(p.partition_index)), p) for m in answer.markers for t in m.topics for p in t.partitions)

    found = conn.leader_requests([spec.key], ApiKey.WRITE_TXN_MARKERS, lambda keys, version: body, parts,
                                 mutation=True)
    error = found.errors.get(spec.key)
    if error is None:
        return
    code = error.code
    if code is None:
        raise KafkaCallError(str(error), retriable=True)
    if code == Error.unknown_topic_or_partition:
        raise response_error(ApiKey.WRITE_TXN_MARKERS, code, topic=spec.key[0])
    if code == Error.leader_not_available:
        raise KafkaCallError(partition_line(spec.key, code), code=code)
    if code == Error.cluster_authorization_failed:
        raise KafkaCallError("Not authorized to write transaction markers: aborting a transaction needs the "
                             "ClusterAction permission on the cluster (ask an administrator).", code=code)
    if code == Error.transaction_coordinator_fenced:
        raise KafkaCallError(f"The coordinator epoch {spec.coordinator_epoch} is fenced by the active coordinator "
                             f"of {spec.key[0]}-{spec.key[1]}: read describe-producers again.", code=code)
    raise KafkaCallError(f"Could not abort the transaction of producer {spec.producer_id} on "
                         f"{partition_line(spec.key, code)} ({code_name(code)})", code=code)
