"""Partition reassignments: the moves in progress (ListPartitionReassignments), starting and
cancelling moves (AlterPartitionReassignments), and a replication factor change planned with
minimal movement (`assignment_plan`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.protocol.authorization import is_authorization_error
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.base.errors import KafkaCallError, ShellError, UsageError

from kafka_shell.admin import assignment_plan
from kafka_shell.admin.errors import error_line, response_error

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.connection.metadata import ClusterSnapshot, TopicInfo

Key = tuple[str, int]
TIMEOUT_MS = 30000


class Move(NamedTuple):
    """A reassignment in progress: the replicas now, those being added and those being removed."""
    replicas: list[int]
    adding: list[int]
    removing: list[int]


def supported(conn: ConnectionManager) -> bool:
    return conn.supports(ApiKey.LIST_PARTITION_REASSIGNMENTS)


def supports_alter(conn: ConnectionManager) -> bool:
    return conn.supports(ApiKey.ALTER_PARTITION_REASSIGNMENTS)


def ongoing(conn: ConnectionManager) -> dict[Key, Move]:
    """Reassignments in progress, from the controller."""
    answer = conn.controller_request(ApiKey.LIST_PARTITION_REASSIGNMENTS, {"topics": None, "timeout": TIMEOUT_MS})
    if answer.error_code:
        raise response_error(ApiKey.LIST_PARTITION_REASSIGNMENTS, answer.error_code, answer.error_message)
    return {(t.name, p.partition_index): Move(list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in answer.topics for p in t.partitions}


def moving(conn: ConnectionManager) -> dict[Key, Move]:
    """The moves in progress where the cluster can tell them (Metadata does not carry them;
    Kafka's describe shows them): empty when the cluster lacks the API or refuses it, as
    kafka-topics ignores that too."""
    if not supported(conn):
        return {}
    try:
        return ongoing(conn)
    except KafkaCallError as exc:
        if exc.code is not None and is_authorization_error(exc.code):
            return {}
        raise


def alter(conn: ConnectionManager, moves: Mapping[Key, list[int] | None]) -> dict[Key, str]:
    """Start (a replica list) or cancel (None) the moves; the line of each partition refused."""
    topics: dict[str, list] = {}
    for (t, p), replicas in sorted(moves.items()):
        topics.setdefault(t, []).append({"partition_index": p, "replicas": replicas})
    body = {"timeout": TIMEOUT_MS, "allow_replication_factor_change": True,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
    conn.require(ApiKey.ALTER_PARTITION_REASSIGNMENTS, "Reassigning partitions")
    answer = conn.controller_request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, body, mutation=True)
    if answer.error_code:
        raise response_error(ApiKey.ALTER_PARTITION_REASSIGNMENTS, answer.error_code, answer.error_message)
    return {(t.name, p.partition_index): error_line(ApiKey.ALTER_PARTITION_REASSIGNMENTS, p.error_code, p.error_message,
                                                    topic=t.name, entity=f"{t.name}-{p.partition_index}")
            for t in answer.responses for p in t.partitions if p.error_code}


def refusals(errors: dict[Key, str]) -> list[str]:
    """`topic-3: why` per refused partition, in order."""
    return [f"{t}-{p}: {why}" for (t, p), why in sorted(errors.items())]


def change_replication_factor(conn: ConnectionManager, snap: ClusterSnapshot, topics: list[TopicInfo], rf: int,
                              dry_run: bool) -> list[str]:
    """Plan (minimal movement, rack-aware) from the command's read `snap`, and start the
    reassignment that gives `topics` `rf` replicas per partition; one line per topic."""
    brokers = sorted(snap.brokers)
    messages = []
    for topic in topics:
        current = {(topic.name, p.partition): list(p.replicas) for p in topic.partitions}
        old = len(topic.partitions[0].replicas) if topic.partitions else 0
        if old == rf and all(len(r) == rf for r in current.values()):
            messages.append(f'Topic "{topic.name}" already has replication factor {rf}: nothing to change.')
            continue
        try:
            racks = assignment_plan.rack_map(brokers, {b: i.rack for b, i in snap.brokers.items()}, True)
            proposed = assignment_plan.plan(current, brokers, racks, {topic.name: rf})
        except assignment_plan.PlanError as exc:
            raise UsageError(str(exc)) from None
        changed = {k: r for k, r in proposed.items() if r != current[k]}
        if dry_run:
            messages.append(f'Topic "{topic.name}" would go from replication factor {old} to {rf}, '
                            f"{assignment_plan.moved(current, proposed)} new replica(s) (dry run).")
            continue
        if ongoing(conn):
            raise ShellError("A partition reassignment is in progress: wait for it (reassign-partitions "
                             "--blocking) or cancel it, then retry")
        errors = alter(conn, changed)
        if errors:
            raise KafkaCallError(" ".join(messages + refusals(errors)))
        messages.append(f'Topic "{topic.name}": replication factor {old} -> {rf} started '
                        f"({len(changed)} partition(s), {assignment_plan.moved(current, proposed)} new replica(s)); "
                        "wait for it with reassign-partitions --blocking.")
    return messages
