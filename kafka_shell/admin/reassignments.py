"""Partition reassignments: the moves in progress (ListPartitionReassignments), starting and
cancelling moves (AlterPartitionReassignments), and a replication factor change planned with
minimal movement (`assignment_plan`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.authorization import is_authorization_error
from kafka_shell.codes import ApiKey
from kafka_shell.errors import KafkaCallError, ShellError, UsageError

from kafka_shell.admin import assignment_plan, cluster, log_dirs, topics
from kafka_shell.admin.errors import error_line, response_error

if TYPE_CHECKING:
    from kafka_shell.connection import ConnectionManager
    from kafka_shell.metadata import ClusterSnapshot, TopicInfo

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


# -- planning ------------------------------------------------------------------------------------


def current_assignment(snap: ClusterSnapshot, keys: Iterable[Key]) -> dict[Key, list[int]]:
    """Replicas of `keys` in the command's read `snap`; unknown topics/partitions are left out."""
    out = {}
    for t, p in keys:
        info = snap.topics.get(t)
        if info is not None and p < len(info.partitions) and info.partitions[p].partition == p:
            out[(t, p)] = list(info.partitions[p].replicas)
    return out


class Proposal(NamedTuple):
    """--generate's plan: the assignment now, the proposed one, the replicas it moves and the
    fewest any balanced plan moves."""
    current: dict[Key, list[int]]
    proposed: dict[Key, list[int]]
    moved: int
    lower_bound: int


def generate(conn: ConnectionManager, names: list[str], brokers: list[int], rack_aware: bool) -> Proposal:
    """Kafka's --generate, with minimal movement: the topics' partitions spread over `brokers`
    (rack-aware unless told not to), from a fresh read."""
    snap = topics.read_for(conn, names)
    missing = [n for n in names if n not in snap.topics]
    if missing:
        raise UsageError(f'Topic "{missing[0]}" does not exist (check the name with list-topics)')
    cluster.require_brokers(conn, brokers)
    current = {(t, p.partition): list(p.replicas) for t in names for p in snap.topics[t].partitions}
    try:
        racks = assignment_plan.rack_map(brokers, {b: i.rack for b, i in snap.brokers.items()}, rack_aware)
        proposed = assignment_plan.plan(current, brokers, racks)
    except assignment_plan.PlanError as exc:
        raise UsageError(str(exc)) from None
    return Proposal(current, proposed, assignment_plan.moved(current, proposed),
                    assignment_plan.lower_bound(current, brokers))


COMPLETED, IN_PROGRESS, MISSING, DIFFERS = "completed", "in progress", "missing", "differs"


class Verified(NamedTuple):
    """--verify of one partition: COMPLETED, IN_PROGRESS, MISSING (no such partition) or
    DIFFERS (no move, but not the replicas asked), with its replicas now."""
    state: str
    replicas: list[int] | None


def verify(conn: ConnectionManager, targets: dict[Key, list[int]]) -> tuple[dict[Key, Move], dict[Key, Verified]]:
    """The moves in progress, and each target partition's state against the assignment asked."""
    moving = ongoing(conn)
    current = current_assignment(topics.read_for(conn, sorted({t for t, _ in targets})), targets)
    out = {}
    for key, want in sorted(targets.items()):
        state = (IN_PROGRESS if key in moving else MISSING if key not in current
                 else COMPLETED if current[key] == want else DIFFERS)
        out[key] = Verified(state, current.get(key))
    return moving, out


def copy_progress(conn: ConnectionManager, moving: dict[Key, Move]) -> tuple[int, int]:
    """(bytes the adding replicas hold, bytes they need): DescribeLogDirs sizes of the adding
    replicas against their leader's, every broker concerned at once. Brokers that do not
    answer count as nothing copied."""
    if not log_dirs.supported(conn):
        return 0, 0
    found = topics.read_for(conn, sorted({t for t, _ in moving})).topics
    leaders = {key: found[key[0]].partitions[key[1]].leader for key in moving
               if key[0] in found and key[1] < len(found[key[0]].partitions)}
    brokers = sorted({b for key, m in moving.items() for b in (leaders.get(key, -1), *m.adding) if b >= 0})
    wanted: dict[str, list[int]] = {}
    for t, p in sorted(moving):
        wanted.setdefault(t, []).append(p)
    sizes = log_dirs.describe(conn, brokers, wanted).sizes(include_future=True) if brokers else {}
    copied = size = 0
    for key, m in moving.items():
        full = sizes.get((*key, leaders.get(key, -1)), (0, 0))[0]
        for a in m.adding:
            size += full
            copied += min(sizes.get((*key, a), (0, 0))[0], full)
    return copied, size


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
