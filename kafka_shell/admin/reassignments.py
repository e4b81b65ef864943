"""Partition reassignments: the moves in progress (ListPartitionReassignments), starting and
cancelling moves (AlterPartitionReassignments), waiting for them to end (`wait`), whether the
brokers agree on a move's end (`agreed`), and a replication factor change planned with minimal
movement (`assignment_plan`)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.base.answers import CONTROLLER, AdminError, Answers, Target
from kafka_shell.protocol.authorization import is_authorization_error
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.base.deadline import Deadline
from kafka_shell.base.errors import KafkaCallError, ShellError

from kafka_shell.admin import assignment_plan, log_dirs, topics
from kafka_shell.admin.errors import response_error

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.connection.metadata import ClusterSnapshot, TopicInfo

Key = tuple[str, int]
POLL_S = 0.2
GIVE_UP_S = 60.0        # `wait` stops when the cluster does not answer for this long
RETRY_S = 1.0


class Move(NamedTuple):
    """A reassignment in progress: the replicas now, those being added and those being removed."""
    replicas: list[int]
    adding: list[int]
    removing: list[int]


def timeout_ms(conn: ConnectionManager) -> int:
    """How long the controller may take: the session's --timeout (a broker forwarding to a
    controller that does not answer gives up then, not after Kafka's default 30 s)."""
    return round(conn.timeout_s * 1000)


def supported(conn: ConnectionManager) -> bool:
    return conn.supports(ApiKey.LIST_PARTITION_REASSIGNMENTS)


def supports_alter(conn: ConnectionManager) -> bool:
    return conn.supports(ApiKey.ALTER_PARTITION_REASSIGNMENTS)


def ongoing(conn: ConnectionManager) -> dict[Key, Move]:
    """Reassignments in progress, from the controller."""
    answer = conn.controller_request(ApiKey.LIST_PARTITION_REASSIGNMENTS,
                                     {"topics": None, "timeout": timeout_ms(conn)})
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


def alter(conn: ConnectionManager, moves: Mapping[Key, list[int] | None]) -> Answers[Key, None]:
    """Start (a replica list) or cancel (None) the moves: each partition started, or the
    controller's refusal."""
    topics_: dict[str, list] = {}
    for (t, p), replicas in sorted(moves.items()):
        topics_.setdefault(t, []).append({"partition_index": p, "replicas": replicas})
    body = {"timeout": timeout_ms(conn), "allow_replication_factor_change": True,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics_.items()]}
    conn.require(ApiKey.ALTER_PARTITION_REASSIGNMENTS, "Reassigning partitions")
    answer = conn.controller_request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, body, mutation=True)
    if answer.error_code:
        raise response_error(ApiKey.ALTER_PARTITION_REASSIGNMENTS, answer.error_code, answer.error_message)
    refused = {(t.name, p.partition_index): AdminError(int(p.error_code), Target(CONTROLLER, -1, ((t.name, p.partition_index),)),
                                                       p.error_message or "")
               for t in answer.responses for p in t.partitions if p.error_code}
    return Answers({k: None for k in sorted(moves) if k not in refused}, refused)


# -- planning ------------------------------------------------------------------------------------


def current_assignment(topics_: Mapping[str, TopicInfo], keys: Iterable[Key]) -> dict[Key, list[int]]:
    """Replicas of `keys` in a read's topics (the command's, or one broker's own view);
    unknown topics/partitions are left out."""
    out = {}
    for t, p in keys:
        info = topics_.get(t)
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
    (rack-aware unless told not to), from a fresh read; an assignment_plan.PlanError when it
    cannot be made (a topic the read does not have, among others). The caller checks that the
    brokers are live (cluster.absent)."""
    snap = topics.read_for(conn, names)
    missing = [n for n in names if n not in snap.topics]
    if missing:
        raise assignment_plan.PlanError(assignment_plan.NO_SUCH_TOPIC, missing[0])
    current = {(t, p.partition): list(p.replicas) for t in names for p in snap.topics[t].partitions}
    racks = assignment_plan.rack_map(brokers, {b: i.rack for b, i in snap.brokers.items()}, rack_aware)
    proposed = assignment_plan.plan(current, brokers, racks)
    return Proposal(current, proposed, assignment_plan.moved(current, proposed),
                    assignment_plan.lower_bound(current, brokers))


COMPLETED, IN_PROGRESS, MISSING, DIFFERS = "completed", "in progress", "missing", "differs"


class Verified(NamedTuple):
    """--verify of one partition: COMPLETED, IN_PROGRESS, MISSING (no such partition) or
    DIFFERS (no move, but not the replicas asked), with its replicas now."""
    state: str
    replicas: list[int] | None


def verify(conn: ConnectionManager, targets: dict[Key, list[int]], current: dict[Key, list[int]] | None = None
           ) -> tuple[dict[Key, Move], dict[Key, Verified]]:
    """The moves in progress, and each target partition's state against the assignment asked
    (`current`: the replicas now, as the brokers agree on them; a fresh read when not given)."""
    moving = ongoing(conn)
    if current is None:
        current = current_assignment(topics.read_keys(conn, targets).topics, targets)
    out = {}
    for key, want in sorted(targets.items()):
        state = (IN_PROGRESS if key in moving else MISSING if key not in current
                 else COMPLETED if current[key] == want else DIFFERS)
        out[key] = Verified(state, current.get(key))
    return moving, out


class Agreement(NamedTuple):
    """`agreed`: the replicas of the partitions asked as most brokers that answered show them;
    when they did not all agree in time, the brokers that show other replicas and those that did
    not answer; how long it waited."""
    assignment: dict[Key, list[int]]
    differ: list[int]
    failed: dict[int, AdminError]
    elapsed: float

    @property
    def agreed(self) -> bool:
        return not self.differ and not self.failed


def agreed(conn: ConnectionManager, keys: set[Key], deadline: Deadline, poll_s: float = 0.2,
           targets: Mapping[Key, list[int]] | None = None) -> Agreement:
    """The replicas of `keys` once every live broker's metadata says the same (each learns the
    controller's change a moment after it is made), asked again until `deadline`. With the
    moves' `targets` (moves the controller no longer lists), also until no broker shows one
    still in flight (its target's replicas and more: the ones it removes), which all brokers
    may show alike for a moment after the controller finished it."""
    names = sorted({t for t, _ in keys})
    while True:
        snap = topics.read_keys(conn, keys)
        views = topics.views_by_broker(conn, sorted(snap.brokers), names, deadline)
        seen = {b: current_assignment(view, keys) for b, view in views.rows.items()}
        votes = Counter(tuple(sorted((k, tuple(r)) for k, r in a.items())) for a in seen.values())
        most = {k: list(r) for k, r in votes.most_common(1)[0][0]} if votes else {}
        in_flight = targets is not None and any(set(most.get(k, ())) > set(targets[k]) for k in keys if k in targets)
        if not views.errors and not in_flight and all(assignment == most for assignment in seen.values()):
            return Agreement(most, [], {}, deadline.elapsed())
        if not deadline.pause(poll_s):
            break
    return Agreement(most, sorted(b for b, assignment in seen.items() if assignment != most), dict(views.errors),
                     deadline.elapsed())


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


class Copying(NamedTuple):
    """The moves' progress: partitions done of `total`, bytes copied of `size`."""
    done: int
    total: int
    copied: int
    size: int


class Retrying(NamedTuple):
    """A poll of `wait` failed (`error`): it asks again in RETRY_S."""
    error: ShellError


Report = Callable[[Copying | Retrying], None]


def wait(conn: ConnectionManager, keys: set[Key] | None, report: Report) -> None:
    """Poll the controller until none of `keys` (or nothing at all) is moving, each poll within
    --timeout, its progress `report`ed. A controller change is followed by the connection
    manager; other failures are reported and asked again for GIVE_UP_S, then the last one raised."""
    total = len(keys) if keys is not None else None
    failing: Deadline | None = None   # from the first failure of a run of them
    while True:
        try:
            with conn.budget.of(conn.timeout_s):
                pending = {k: m for k, m in ongoing(conn).items() if keys is None or k in keys}
                if total is None:
                    total = len(pending)
                if not pending:
                    return
                copied, size = copy_progress(conn, pending)
            failing = None
        except ShellError as exc:
            failing = failing or Deadline(GIVE_UP_S)
            if failing.expired:
                raise
            report(Retrying(exc))
            failing.pause(RETRY_S)
            continue
        most = max(total, len(pending))
        report(Copying(most - len(pending), most, copied, size))
        time.sleep(POLL_S)


class FactorChange(NamedTuple):
    """A topic's replication factor change, planned with minimal movement (rack-aware): the
    factor now, the replicas now and proposed, the partitions whose replicas change and the new
    replicas it adds."""
    topic: str
    old: int
    current: dict[Key, list[int]]
    proposed: dict[Key, list[int]]
    changed: dict[Key, list[int]]
    added: int


def plan_replication_factor(snap: ClusterSnapshot, topic: TopicInfo, rf: int) -> FactorChange:
    """The reassignment that gives `topic` `rf` replicas per partition, over the live brokers of
    the command's read `snap` (no change when it has them already); an
    assignment_plan.PlanError when it cannot be made."""
    brokers = sorted(snap.brokers)
    current = {(topic.name, p.partition): list(p.replicas) for p in topic.partitions}
    old = len(topic.partitions[0].replicas) if topic.partitions else 0
    if old == rf and all(len(r) == rf for r in current.values()):
        return FactorChange(topic.name, old, current, current, {}, 0)
    racks = assignment_plan.rack_map(brokers, {b: i.rack for b, i in snap.brokers.items()}, True)
    proposed = assignment_plan.plan(current, brokers, racks, {topic.name: rf})
    return FactorChange(topic.name, old, current, proposed, {k: r for k, r in proposed.items() if r != current[k]},
                        assignment_plan.moved(current, proposed))
