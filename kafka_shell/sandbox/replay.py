"""The one place the sandbox's state changes: `apply(cluster, record)`, as Kafka's
QuorumController.replay and the coordinators' replay.

Each subsystem module holds the replay of its record types (its `REPLAY` table) and the records
that make its state again (`snapshot`). `apply` dispatches a record to its subsystem; a metadata
record also moves `ClusterState.generation` (the metadata log's end, which cached Metadata
answers key on), and with `--data-dir` the journal writes every record applied. An operation
returns a `ControllerResult`; `commit` applies its records and gives back its answer. The state
file is `snapshot`'s records, and start-up replays it and the journals through `apply`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar

from kafka_shell.sandbox import records as r
from kafka_shell.sandbox.records import ControllerResult, Record

if TYPE_CHECKING:
    from kafka_shell.sandbox.model import ClusterState

T = TypeVar("T")
Replay = Callable[["ClusterState", Record], None]

_table: dict[type, Replay] = {}


def _dispatch() -> dict[type, Replay]:
    if not _table:
        from kafka_shell.sandbox import (authorizer, client_quotas, configs, directories, group_state, log,
                                         producer_ids, quorum, registrations, replication, security, tokens,
                                         topic_lifecycle, transactions)
        from kafka_shell.sandbox.handlers import features
        for module in (features, registrations, quorum, replication, configs, topic_lifecycle, authorizer, security,
                       client_quotas, producer_ids, tokens, group_state, transactions, log, directories):
            _table.update(module.REPLAY)
        missing = set(r.RECORD_TYPES.values()) - set(_table)
        assert not missing, missing
    return _table


def apply(cluster: ClusterState, record: Record) -> None:
    """Change the state as the record says (and journal it with --data-dir)."""
    replay = _dispatch().get(type(record))
    if replay is None:
        raise TypeError(f"no replay for {type(record).__name__}")
    replay(cluster, record)
    if not isinstance(record, (r.PartitionLogs, r.FutureReplica, r.CoordinatorRecord)):   # none is in the metadata log
        cluster.generation += 1
    journal = cluster.runtime.journal
    if journal is not None:
        journal.append(record)


def commit(cluster: ClusterState, result: ControllerResult[T]) -> T:
    """Apply an operation's records; its answer."""
    for record in result.records:
        apply(cluster, record)
    return result.response


def apply_all(cluster: ClusterState, records: Iterable[Record]) -> None:
    for record in records:
        apply(cluster, record)


def snapshot(cluster: ClusterState) -> Iterator[Record]:
    """Records that make the state again, in an order replay takes them (what a topic's records
    name exists before them)."""
    from kafka_shell.sandbox import (authorizer, client_quotas, configs, directories, group_state, log, producer_ids,
                                     quorum, registrations, replication, security, tokens, topic_lifecycle, transactions)
    from kafka_shell.sandbox.handlers import features
    yield from features.snapshot(cluster)
    yield from registrations.snapshot(cluster)
    yield from quorum.snapshot(cluster)
    yield from replication.snapshot(cluster)
    yield from configs.snapshot(cluster)
    yield from topic_lifecycle.snapshot(cluster)
    yield from authorizer.snapshot(cluster)
    yield from security.snapshot(cluster)
    yield from client_quotas.snapshot(cluster)
    yield from producer_ids.snapshot(cluster)
    yield from tokens.snapshot(cluster)
    yield from group_state.offset_records(cluster)
    yield from group_state.snapshot(cluster)
    yield from transactions.snapshot(cluster)
    yield from log.snapshot(cluster)
    yield from directories.snapshot(cluster)
