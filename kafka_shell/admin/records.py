"""Records: deleting them (DeleteRecords, at each partition's leader), and producing and
consuming them, the one place the shell uses confluent-kafka (its Producer and Consumer, with the
session's settings). Every admin request goes over the shell's own connection; librdkafka only
moves records.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_shell.base.answers import Answers
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.connection.client_config import sasl_mechanism, scrub
from kafka_shell.base.errors import NO_SASL_PROVIDER, KafkaCallError, NotSupported, UsageError, librdkafka_cannot_log_in

from kafka_shell.admin.errors import partition_line
from kafka_shell.admin.offsets import EARLIEST, LATEST, log_offsets

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.connection.metadata import ClusterSnapshot

Key = tuple[str, int]
ANSWER_MARGIN_S = 0.5   # a broker's own operation timeout ends this long before ours: its answer comes back


def _client(kind: type, conn: ConnectionManager, **settings: Any) -> Any:
    """A confluent-kafka Producer or Consumer with the session's settings; a setting librdkafka
    refuses is one line without secrets, and a SASL mechanism its build lacks says so."""
    from confluent_kafka import KafkaException
    try:
        return kind({**conn.client_config(), **settings})
    except KafkaException as exc:
        error = exc.args[0] if exc.args else exc
        text = scrub(error.str() if hasattr(error, "str") else str(error), conn.properties)
        if NO_SASL_PROVIDER in text:
            raise NotSupported(librdkafka_cannot_log_in(sasl_mechanism(conn.properties))) from None
        raise UsageError(f"Invalid client setting: {text}") from None
HIGH_WATERMARK = -1   # DeleteRecords' offset meaning "up to the high watermark"


# -- DeleteRecords -------------------------------------------------------------------------------


def delete_records(conn: ConnectionManager, snap: ClusterSnapshot, wanted: dict[Key, int]) -> Answers[Key, int]:
    """Delete the records of each partition before its offset (HIGH_WATERMARK: all), at its
    leader (in the command's read `snap`; located again where it moved): each partition's log
    start after the deletion (its low watermark). The broker waits for the deletion to reach
    the replicas within what is left of --timeout."""
    deadline = conn.deadline()

    def body(keys: list[Key], version: int) -> dict:
        topics: dict[str, list[dict]] = {}
        for t, p in keys:
            topics.setdefault(t, []).append({"partition_index": p, "offset": wanted[(t, p)]})
        return {"topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                "timeout": max(round((deadline.left() - ANSWER_MARGIN_S) * 1000), 1)}

    def parts(answer: Any) -> Iterator[tuple[Key, Any]]:
        return (((t.name, p.partition_index), p) for t in answer.topics for p in t.partitions)

    found = conn.leader_requests(sorted(wanted), ApiKey.DELETE_RECORDS, body, parts, snap=snap, mutation=True,
                                 deadline=deadline)
    return Answers({k: int(p.low_watermark) for k, p in found.rows.items()}, found.errors)


# -- producing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Produced:
    delivered: list[tuple[int, int, int | None]]   # (record number, partition, offset; None with acks=0)
    failures: list[str]


def produce(conn: ConnectionManager, topic: str, records: list[tuple[bytes | None, bytes | None]],
            acks: str = "all", partition: int | None = None, headers: list[tuple[str, bytes]] | None = None,
            idempotent: bool = True) -> Produced:
    """Send key/value records (a None value: a tombstone) and wait for their acknowledgements,
    up to --timeout; one failure line per record that was not acknowledged."""
    from confluent_kafka import KafkaException, Producer
    producer = _client(Producer, conn, acks=acks, **{"linger.ms": 5, "message.timeout.ms": int(conn.timeout_s * 1000)},
                       **({} if idempotent else {"enable.idempotence": False}))
    outcomes: list[Any] = [None] * len(records)

    def delivered(index: int) -> Callable[[Any, Any], None]:
        def report(err: Any, msg: Any) -> None:
            outcomes[index] = err if err is not None else (msg.partition(), msg.offset())
        return report
    extra: dict[str, Any] = {"partition": partition} if partition is not None else {}
    if headers:
        extra["headers"] = headers
    conn.debug(f"producing {len(records)} record(s) to {topic} (acks={acks})")
    try:
        for i, (key, value) in enumerate(records):
            while True:
                try:
                    producer.produce(topic, value=value, key=key, on_delivery=delivered(i), **extra)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    producer.poll(0.1)
        producer.flush(conn.timeout_s)
    except KeyboardInterrupt:
        producer.flush(1)
        raise
    except KafkaException as exc:
        raise KafkaCallError(f'Writing to "{topic}": {exc.args[0].str()}') from None
    rows, failures = [], []
    for i, outcome in enumerate(outcomes):
        if outcome is None:
            failures.append(f"Record {i + 1}: no acknowledgement within {conn.timeout_s:g} s")
        elif isinstance(outcome, tuple):
            # acks=0: the producer never learns the offset (-1).
            rows.append((i + 1, outcome[0], outcome[1] if outcome[1] >= 0 else None))
        else:
            failures.append(f"Record {i + 1}: {outcome.str()}")
    return Produced(rows, failures)


# -- consuming -----------------------------------------------------------------------------------


class Record(NamedTuple):
    partition: int
    offset: int
    timestamp: int | None
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


@dataclass
class Consumption:
    """A consume under way: iterating it yields each record as it arrives; afterwards `count`,
    `failures` and `stopped` (why it ended: "limit", "end", "idle", "interrupted", "error")."""
    consumer: Any
    topic: str
    limit: int | None
    idle_s: float
    # the partitions still to reach their log end (librdkafka's end-of-partition event, as
    # kcat -e); None: no end, read until the limit or idle time
    todo: set[int] | None
    failures: list[str] = field(default_factory=list)
    count: int = 0
    stopped: str = ""

    def __iter__(self) -> Iterator[Record]:
        from confluent_kafka import KafkaError
        todo = self.todo
        last = time.monotonic()
        try:
            while True:
                if self.limit is not None and self.count >= self.limit:
                    self.stopped = "limit"
                    return
                if todo is not None and not todo:
                    self.stopped = "end"
                    return
                msg = self.consumer.poll(min(0.2, self.idle_s))
                if msg is None:
                    if time.monotonic() - last >= self.idle_s:
                        self.stopped = "idle"
                        return
                    continue
                error = msg.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    if todo is not None:
                        todo.discard(msg.partition())
                    continue
                if error is not None:
                    self.failures.append(f"{self.topic}-{msg.partition()}: {error.str()}")
                    if error.fatal() or not error.retriable():
                        self.stopped = "error"
                        return
                    continue
                last = time.monotonic()
                partition, offset = msg.partition() or 0, msg.offset() or 0
                _, ts = msg.timestamp()
                heads: Any = msg.headers() or []
                self.count += 1
                yield Record(partition, offset, ts if ts >= 0 else None, msg.key(), msg.value(), list(heads))
        except KeyboardInterrupt:
            self.stopped = "interrupted"
        finally:
            self.consumer.close()  # with a group: commits what was consumed and leaves the group


def consume(conn: ConnectionManager, snap: ClusterSnapshot, topic: str, partition: int | None = None,
            group: str | None = None, offset: int | None = None, from_beginning: bool = False,
            limit: int | None = None, idle_s: float | None = None, to_end: bool = False) -> Consumption:
    """Read records of `topic` (one partition, or all: as `group`'s member when one is given,
    committing what it read), from `offset` of the partition, the beginning or the end, until
    `limit` records, `idle_s` seconds without one, or (`to_end`, as kcat -e) the log end of
    every partition. Nothing is read until it is iterated."""
    from confluent_kafka import Consumer, TopicPartition
    idle = idle_s if idle_s is not None else conn.timeout_s
    partitions = [partition] if partition is not None else [p.partition for p in snap.topics[topic].partitions]
    starts = _start_offsets(conn, snap, topic, partitions, group, offset, from_beginning)
    consumer = _client(Consumer, conn, **{"group.id": group or f"kafka-shell-{uuid.uuid4()}",
                                          "enable.auto.commit": bool(group),
                                          "auto.offset.reset": "earliest" if from_beginning else "latest",
                                          "enable.partition.eof": to_end, "fetch.wait.max.ms": 100})
    if group and partition is None:
        consumer.subscribe([topic])
    else:
        consumer.assign([TopicPartition(topic, p, starts[p]) for p in partitions])
    conn.debug(f"consuming {topic} ({'group ' + group if group else 'no group'}, "
               f"stop after {limit or 'no limit'} record(s), {idle:g} s idle{', at the log end' if to_end else ''})")
    return Consumption(consumer, topic, limit, idle, set(partitions) if to_end else None)


def _start_offsets(conn: ConnectionManager, snap: ClusterSnapshot, topic: str, parts: list[int], group: str | None,
                   offset: int | None, from_beginning: bool) -> dict[int, int]:
    """Where each assigned partition starts. Absolute offsets, looked up here, where we can:
    given a logical one (beginning, end), librdkafka waits 500 ms before its first offset query
    when it assigns a partition before it knows the leader."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, OFFSET_STORED
    if offset is not None:
        return dict.fromkeys(parts, offset)
    if group:
        return dict.fromkeys(parts, OFFSET_STORED)
    logical = OFFSET_BEGINNING if from_beginning else OFFSET_END
    found = log_offsets(conn, snap, [(topic, p) for p in parts], EARLIEST if from_beginning else LATEST).rows
    return {p: found[(topic, p)].offset if (topic, p) in found else logical for p in parts}


def read_to_end(conn: ConnectionManager, snap: ClusterSnapshot, topic: str,
                apply: Callable[[bytes | None, bytes | None], None], what: str | None = None) -> None:
    """Every record of `topic`, each partition from its start to its end as read now, handed to
    `apply(key, value)` in offset order (a compacted topic's latest values win). `what` names
    the topic in messages."""
    what = what or f'"{topic}"'
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition
    info = snap.topics.get(topic)
    if info is None:
        return
    consumer = _client(Consumer, conn, **{"group.id": f"kafka-shell-{uuid.uuid4()}", "enable.auto.commit": False,
                                          "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    deadline = conn.deadline()
    try:
        keys = [(topic, p.partition) for p in info.partitions]
        first, last = log_offsets(conn, snap, keys, EARLIEST, deadline), log_offsets(conn, snap, keys, LATEST, deadline)
        bad = next(iter({**first.errors, **last.errors}.items()), None)
        if bad is not None:
            key, error = bad
            raise KafkaCallError(f"Reading {what}: " + (partition_line(key, error.code) if error.code else str(error)),
                                 code=error.code)
        starts, ends = first.rows, last.rows
        todo = {p: ends[(topic, p)].offset for (_, p), start in starts.items() if ends[(topic, p)].offset > start.offset}
        if not todo:
            return
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in todo])
        done: set[int] = set()
        while len(done) < len(todo):
            if deadline.expired:
                raise KafkaCallError(f"Reading {what} took longer than {conn.timeout_s:g} s "
                                     "(raise --timeout if it is just slow).", retriable=True)
            msg = consumer.poll(min(0.2, deadline.left()))
            if msg is None:
                continue
            error, partition, offset = msg.error(), msg.partition() or 0, msg.offset() or 0
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise KafkaCallError(f"Reading {what}: {error.str()}")
                done.add(partition)
                continue
            key, value = msg.key(), msg.value()
            apply(key if isinstance(key, bytes) else None, value if isinstance(value, bytes) else None)
            if offset + 1 >= todo[partition]:
                done.add(partition)
    except KafkaException as exc:
        raise KafkaCallError(f"Reading {what}: {exc.args[0].str()}") from None
    finally:
        consumer.close()
