"""Log directories of brokers (DescribeLogDirs, read here and nowhere else): per directory its
sizes, error and whether it is cordoned (v5, KIP-1066), per replica its size, offset lag and
whether it is a future replica; and the moves of replicas between the log dirs of their broker
(AlterReplicaLogDirs, KIP-113), sent to the broker holding each replica.

One request per broker, all at once; a broker that does not answer has an AdminError beside the
answers of the others (partial failure is a value, not an exception).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.base.answers import BROKER, REPLICA, AdminError, Answers, Target
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.base.errors import kafka_error_message

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
            replicas = tuple(Replica(t.name, p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                             for t in d.topics for p in t.partitions)
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


def not_there_yet(error: AdminError) -> bool:
    """The broker does not hold the replica yet (a reassignment may still bring it): ask again."""
    return error.code == Error.replica_not_available


def _known(value: int | None) -> int | None:
    """None for Kafka's "unknown" -1 and for versions without the field."""
    return None if value is None or value < 0 else value
