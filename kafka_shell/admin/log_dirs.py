"""Log directories of brokers (DescribeLogDirs, read here and nowhere else): per directory its
sizes, error and whether it is cordoned (v5, KIP-1066), per replica its size, offset lag and
whether it is a future replica; and the moves of replicas between the log dirs of their broker
(AlterReplicaLogDirs, KIP-113), sent to the broker holding each replica, started (`start_moves`)
and judged (`move_states`) as Kafka's kafka-reassign-partitions does.

One request per broker, all at once; a broker that does not answer has an AdminError beside the
answers of the others (partial failure is a value, not an exception).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.base.answers import BROKER, REPLICA, AdminError, Answers, Target
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.base.errors import kafka_error_message
from kafka_shell.base.tuples import new_tuple

if TYPE_CHECKING:
    from kafka_shell.base.deadline import Deadline
    from kafka_shell.connection.manager import ConnectionManager

ReplicaKey = tuple[str, int, int]      # (topic, partition, broker)


class Replica(NamedTuple):
    topic: str
    partition: int
    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDir:
    broker: int
    path: str
    error: AdminError | None          # the directory's own error (KAFKA_STORAGE_ERROR...)
    total_bytes: int | None           # None: the broker does not tell (older versions, or -1)
    usable_bytes: int | None
    replicas: tuple[Replica, ...]
    cordoned: bool | None = None      # KIP-1066 (DescribeLogDirs v5, Kafka 4.3+): no new replica lands here; None: not told


@dataclass(frozen=True)
class LogDirs(Answers[int, tuple[LogDir, ...]]):
    """Each broker's log dirs; an AdminError for each broker that did not describe them."""

    @property
    def dirs(self) -> list[LogDir]:
        return [d for dirs in self.rows.values() for d in dirs]

    def replicas(self, include_future: bool = False) -> Iterator[tuple[LogDir, Replica]]:
        """Every replica listed, with its log dir."""
        return ((d, r) for d in self.dirs for r in d.replicas if include_future or not r.is_future)

    def sizes(self, include_future: bool = False) -> dict[ReplicaKey, tuple[int, int]]:
        """(topic, partition, broker) -> (size, offset lag) of every replica listed."""
        return {(r.topic, r.partition, d.broker): (r.size, r.offset_lag) for d, r in self.replicas(include_future)}

    def placement(self) -> dict[ReplicaKey, Placement]:
        """(topic, partition, broker) -> the dir of the replica and of its future replica (None
        when there is none), for every replica listed."""
        current = {(r.topic, r.partition, d.broker): d.path for d, r in self.replicas()}
        future = {(r.topic, r.partition, d.broker): d.path for d, r in self.replicas(True) if r.is_future}
        return {k: Placement(current.get(k), future.get(k)) for k in {**current, **future}}


class Placement(NamedTuple):
    current: str | None     # None: only a future replica was listed (the dir of the replica is offline)
    future: str | None


def supported(conn: ConnectionManager) -> bool:
    return bool(conn.api_versions().get(ApiKey.DESCRIBE_LOG_DIRS))


def describe(conn: ConnectionManager, brokers: list[int],
             topics: dict[str, list[int]] | None = None) -> LogDirs:
    """The log dirs of `brokers` (all partitions, or only `topics`' listed ones)."""
    conn.require(ApiKey.DESCRIBE_LOG_DIRS, "Describing log dirs")
    body = {"topics": None if topics is None else [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
    conn.debug(f"DescribeLogDirs request to broker(s) {', '.join(map(str, brokers))}")
    answers = conn.each_broker(brokers, ApiKey.DESCRIBE_LOG_DIRS, body)
    rows: dict[int, tuple[LogDir, ...]] = {}
    failed = dict(answers.errors)
    for broker, answer in sorted(answers.rows.items()):
        top = int(getattr(answer, "error_code", 0))
        if top and not answer.results:  # the broker refused the request as a whole
            failed[broker] = AdminError(top, Target(BROKER, broker))
            continue
        dirs: list[LogDir] = []
        for d in answer.results:
            code = int(d.error_code) or top
            error = AdminError(code, Target(BROKER, broker)) if code else None
            replicas = tuple([new_tuple(Replica, (t.name, p.partition_index, p.partition_size, p.offset_lag,
                                                  p.is_future_key)) for t in d.topics for p in t.partitions])
            dirs.append(LogDir(broker, d.log_dir, error, _known(getattr(d, "total_bytes", None)),
                               _known(getattr(d, "usable_bytes", None)), replicas, getattr(d, "is_cordoned", None)))
        rows[broker] = tuple(dirs)
    return LogDirs(rows, dict(sorted(failed.items())))


def alter(conn: ConnectionManager, moves: dict[ReplicaKey, str],
          deadline: Deadline | None = None) -> Answers[ReplicaKey, str]:
    """Move each replica (topic, partition, broker) to the log dir given, asking the broker that
    holds it (AlterReplicaLogDirs): the rows are the moves started (or already done), with their
    dir; a replica the broker does not hold yet is REPLICA_NOT_AVAILABLE (Kafka's tool asks
    again once a reassignment has brought it there)."""
    conn.require(ApiKey.ALTER_REPLICA_LOG_DIRS, "Moving replicas between log dirs")
    deadline = deadline or conn.deadline()
    rows: dict[ReplicaKey, str] = {}
    errors: dict[ReplicaKey, AdminError] = {}
    # One route per destination path: the answer names partitions, not dirs, and two brokers
    # may move one partition to dirs of the same name.
    for path in sorted(set(moves.values())):
        wanted: dict[int, list[tuple[str, int]]] = {}
        for (t, p, b), d in moves.items():
            if d == path:
                wanted.setdefault(b, []).append((t, p))

        def body(keys: list[tuple[str, int]], version: int, path: str = path) -> dict:
            topics: dict[str, list[int]] = {}
            for t, p in keys:
                topics.setdefault(t, []).append(p)
            return {"dirs": [{"path": path, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}]}

        def parts(answer: object) -> Iterator[tuple[tuple[str, int], object]]:
            return (((t.topic_name, int(p.partition_index)), p) for t in answer.results  # type: ignore[attr-defined]
                    for p in t.partitions)

        conn.debug(f"AlterReplicaLogDirs request to broker(s) {', '.join(map(str, sorted(wanted)))} for {path}")
        found = conn.replica_requests(wanted, ApiKey.ALTER_REPLICA_LOG_DIRS, body, parts, deadline=deadline)
        for (b, (t, p)), part in found.rows.items():
            code = int(part.error_code)  # type: ignore[attr-defined]
            if code:
                errors[(t, p, b)] = AdminError(code, Target(REPLICA, b, ((t, p),)),
                                               kafka_error_message(code, "", "", entity=f"log dir {path}"))
            else:
                rows[(t, p, b)] = path
        for (b, (t, p)), error in found.errors.items():
            errors[(t, p, b)] = error
    keys = sorted(moves)
    return Answers({k: rows[k] for k in keys if k in rows}, {k: errors[k] for k in keys if k in errors})


class Started(NamedTuple):
    """`start_moves`: the moves started (or already done), with their dir, in the order they
    started; those the brokers refused (or that did not reach them); and the replicas their
    broker still did not hold when the time was up."""
    started: dict[ReplicaKey, str]
    refused: dict[ReplicaKey, AdminError]
    waiting: list[ReplicaKey]


def start_moves(conn: ConnectionManager, moves: dict[ReplicaKey, str], poll_s: float = 0.2) -> Started:
    """`alter`, asked again while a broker does not hold its replica yet (REPLICA_NOT_AVAILABLE:
    a reassignment is still bringing it), within one --timeout, as Kafka's tool does; stops at
    the first refusal."""
    deadline = conn.deadline()
    pending = dict(moves)
    started: dict[ReplicaKey, str] = {}
    while True:
        answers = alter(conn, pending, deadline)
        for key, path in answers.rows.items():
            started[key] = path
            del pending[key]
        refused = {k: e for k, e in answers.errors.items() if not not_there_yet(e)}
        if refused:
            return Started(started, refused, [])
        if not pending or not deadline.pause(poll_s):
            return Started(started, {}, sorted(pending))


# The state of a replica's move between the log dirs of its broker, as Kafka's tool names them.
DONE, MOVING, ELSEWHERE, NOT_MOVING, MISSING = ("completed", "in progress", "moving elsewhere", "not moving", "missing")


class MoveState(NamedTuple):
    """A replica's move to the dir `target`: its state (DONE ... MISSING), the dir it is in (None
    when its broker did not list it) and the dir of its future replica (None when none)."""
    state: str
    current: str | None
    future: str | None
    target: str


class MoveStates(NamedTuple):
    """Each replica move asked, in order, judged by its broker's DescribeLogDirs; an AdminError
    for each broker that did not describe its dirs (its replicas are MISSING)."""
    moves: dict[ReplicaKey, MoveState]
    errors: dict[int, AdminError]

    def moving(self) -> dict[ReplicaKey, str]:
        """The replicas still moving between log dirs (to their target or elsewhere), each with
        the dir it is in."""
        return {k: m.current for k, m in self.moves.items() if m.state in (MOVING, ELSEWHERE) and m.current}


def move_states(conn: ConnectionManager, targets: dict[ReplicaKey, str]) -> MoveStates:
    """Where each replica of `targets` (topic, partition, broker) -> dir stands, read now."""
    found = describe(conn, sorted({b for _, _, b in targets}),
                     {t: sorted({p for tt, p, _ in targets if tt == t}) for t, _, _ in targets})
    where = found.placement()
    moves: dict[ReplicaKey, MoveState] = {}
    for key, target in sorted(targets.items()):
        at = where.get(key)
        if at is None or at.current is None:
            state = MISSING
        elif at.future is not None:
            state = MOVING if at.future == target else ELSEWHERE
        else:
            state = DONE if at.current == target else NOT_MOVING
        moves[key] = MoveState(state, at.current if at else None, at.future if at else None, target)
    return MoveStates(moves, dict(found.errors))


def not_there_yet(error: AdminError) -> bool:
    """The broker does not hold the replica yet (a reassignment may still bring it): ask again."""
    return error.code == Error.replica_not_available


def _known(value: int | None) -> int | None:
    """None for Kafka's "unknown" -1 and for versions without the field."""
    return None if value is None or value < 0 else value


def wait_for_moves(conn: ConnectionManager, targets: dict[ReplicaKey, str], poll_s: float) -> MoveStates:
    """Where the replicas of `targets` stand once none is still moving between its broker's dirs."""
    while True:
        states = move_states(conn, targets)
        if not any(m.state == MOVING for m in states.moves.values()):
            return states
        time.sleep(poll_s)
