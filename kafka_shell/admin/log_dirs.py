"""Log directories of brokers (DescribeLogDirs, read here and nowhere else): per directory its
sizes, error and whether it is cordoned (v5, KIP-1066), per replica its size, offset lag and
whether it is a future replica.

One request per broker, all at once; a broker that does not answer has an AdminError beside the
answers of the others (partial failure is a value, not an exception).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.base.answers import BROKER, AdminError, Answers, Target
from kafka_shell.protocol.codes import ApiKey

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager


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

    def sizes(self, include_future: bool = False) -> dict[tuple[str, int, int], tuple[int, int]]:
        """(topic, partition, broker) -> (size, offset lag) of every replica listed."""
        return {(r.topic, r.partition, d.broker): (r.size, r.offset_lag) for d, r in self.replicas(include_future)}


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


def _known(value: int | None) -> int | None:
    """None for Kafka's "unknown" -1 and for versions without the field."""
    return None if value is None or value < 0 else value
