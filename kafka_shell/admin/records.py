"""Records: deleting them (DeleteRecords, at each partition's leader), and producing and
consuming them, the one place the shell uses confluent-kafka (its Producer and Consumer, with the
session's settings). Every admin request goes over the shell's own connection; librdkafka only
moves records.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_shell.base.answers import Answers
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.connection.client_config import sasl_mechanism, scrub
from kafka_shell.base.limits import INT64_MAX
from kafka_shell.base.errors import NO_SASL_PROVIDER, KafkaCallError, NotSupported, UsageError, librdkafka_cannot_log_in

from kafka_shell.admin.errors import partition_line
from kafka_shell.admin.offsets import EARLIEST, LATEST, LogOffset, log_offsets

if TYPE_CHECKING:
    from kafka_shell.base.deadline import Deadline
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


class ReadError(NamedTuple):
    """What the client said went wrong reading a partition (librdkafka's words)."""
    partition: int
    message: str


class Unacked(NamedTuple):
    """Records of one partition (None: never assigned one) not acknowledged, for one reason."""
    partition: int | None
    records: list[int]    # their numbers, from 1
    reason: str


@dataclass(frozen=True)
class Produced:
    delivered: list[tuple[int, int, int | None]]   # (record number, partition, offset; None with acks=0)
    unacked: list[Unacked]


Header = tuple[str, bytes | None]
# Java's default partitioner for keyed records (murmur2 of the key), which librdkafka calls
# murmur2_random (records without a key: a random partition); librdkafka's own default is crc32.
JAVA_PARTITIONER = "murmur2_random"
# A record to send: (key, value), or (key, value, its own headers).
Outgoing = tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, list[Header]]
COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")


def produce(conn: ConnectionManager, topic: str, records: Sequence[Outgoing], acks: str = "all",
            partition: int | None = None,
            headers: list[Header] | None = None, idempotent: bool = True, compression: str | None = None,
            rate: float | None = None) -> Produced:
    """Send key/value records (a None value: a tombstone; a third item: that record's own
    headers, after `headers`, which every record gets) and wait for their acknowledgements, up
    to --timeout; one failure line per record that was not acknowledged. Keyed records go where
    Java's producer puts them (murmur2) unless the session's settings name a partitioner;
    `rate`: at most that many records a second."""
    from confluent_kafka import KafkaException, Producer
    settings: dict[str, Any] = {"linger.ms": 5, "message.timeout.ms": int(conn.timeout_s * 1000)}
    if "partitioner" not in conn.client_config():
        settings["partitioner"] = JAVA_PARTITIONER
    if compression is not None:
        settings["compression.type"] = compression
    # Retries never write a record twice (as Java's producer, idempotent by default with acks=all).
    if "enable.idempotence" not in conn.client_config():
        settings["enable.idempotence"] = idempotent and acks in ("all", "-1")
    producer = _client(Producer, conn, acks=acks, **settings)
    outcomes: list[Any] = [None] * len(records)

    def delivered(index: int) -> Callable[[Any, Any], None]:
        def report(err: Any, msg: Any) -> None:
            outcomes[index] = (msg.partition(), msg.offset(), err)
        return report
    extra: dict[str, Any] = {"partition": partition} if partition is not None else {}
    conn.debug(f"producing {len(records)} record(s) to {topic} (acks={acks}"
               f"{f', compression {compression}' if compression else ''}{f', {rate:g}/s' if rate else ''})")
    began = time.monotonic()
    try:
        for i, (key, value, *own) in enumerate(records):
            if rate is not None:   # record i goes out no sooner than i / rate seconds after the first
                while (wait := began + i / rate - time.monotonic()) > 0:
                    producer.poll(min(wait, 0.1))
            heads = [*(headers or ()), *(own[0] if own else [])]
            while True:
                try:
                    producer.produce(topic, value=value, key=key, on_delivery=delivered(i),
                                     **({"headers": heads} if heads else {}), **extra)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    producer.poll(0.1)
        producer.flush(conn.timeout_s)
    except KeyboardInterrupt:
        producer.flush(1)
        raise
    except KafkaException as exc:
        raise KafkaCallError(f'Writing to "{topic}": {exc.args[0].str()}') from None
    rows: list[tuple[int, int, int | None]] = []
    unacked: dict[tuple[int | None, str], list[int]] = {}
    for i, outcome in enumerate(outcomes):
        part, offset, err = outcome if outcome is not None else (partition, None, None)
        part = part if part is not None and part >= 0 else None
        if outcome is None or err is not None:
            reason = err.str() if err is not None else \
                f"no acknowledgement within {conn.timeout_s:g} s (they may be written yet: consume shows it)"
            unacked.setdefault((part, reason), []).append(i + 1)
        else:   # acks=0: the producer never learns the offset (-1, or None)
            rows.append((i + 1, part or 0, offset if offset is not None and offset >= 0 else None))
    return Produced(rows, [Unacked(p, numbers, reason) for (p, reason), numbers in unacked.items()])


# -- consuming -----------------------------------------------------------------------------------


class Record(NamedTuple):
    partition: int
    offset: int
    timestamp: int | None
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


# Where a read starts in each partition (Start.kind); a group's committed offsets come first.
NEW, BEGINNING, AT_OFFSET, LAST, AT_TIME = "new", "beginning", "offset", "last", "time"
# What a read does when its position is outside the log (an offset reset): stop, or go on from
# one end of the log.
RESET_STOP, RESET_EARLIEST, RESET_LATEST = "stop", "earliest", "latest"
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")


class Start(NamedTuple):
    kind: str = NEW      # NEW (the log end: only new records), BEGINNING, AT_OFFSET, LAST (the last
    value: int = 0       # `value` records), AT_TIME (the first record at or after `value` ms)


NEW_RECORDS = Start()


class Reset(NamedTuple):
    """The read's position in a partition was outside its log (truncated, deleted, or an offset
    beyond it)."""
    partition: int
    position: int        # the offset the read was at
    log_start: int       # the log as it was then (-1: unknown)
    log_end: int
    to: int | None       # where the read went on; None: it stopped there


class Unread(NamedTuple):
    """A partition the read did not finish: nothing came from its leader, or it stopped short
    of the log end it was to reach."""
    partition: int
    leader: int          # in the read's metadata (-1: none)
    position: int | None  # the next offset to read; None when its leader answered nothing
    end: int | None      # the log end it was to reach (reads to the end)


@dataclass
class Consumption:
    """A consume under way: iterating it yields each record as it arrives; afterwards `count`,
    `stopped` (why it ended: "limit", "end", "idle", "interrupted", "error", "reset"), and what
    went wrong: `errors` (the client's, per partition), `resets`, `unread` partitions (when it stopped idle), and
    `short`: partitions a read_committed read to the end left before the end it was to reach
    (at an open transaction: the last stable offset)."""
    conn: Any
    snap: Any
    consumer: Any
    topic: str
    limit: int | None
    idle_s: float
    on_reset: str
    starts: dict[int, int]          # each partition's start, as assigned (absolute or logical)
    # Reads to the end (as kcat -e): the log end of each partition to read, taken when the read
    # began (a partition is done at it, or at librdkafka's end-of-partition event, whichever
    # comes first); None: no end, read until the limit or idle time.
    ends: dict[int, int] | None
    assigned: set[int] | None       # the partitions read (a group member's: None until assigned)
    first_wait_s: float = 0.0       # how long the first record may take (what is left of idle_s)
    coordinator: int = -1           # the group's coordinator as found when the read began (-1: not found)
    errors: list[ReadError] = field(default_factory=list)
    resets: list[Reset] = field(default_factory=list)
    unread: list[Unread] = field(default_factory=list)
    short: dict[int, int] = field(default_factory=dict)
    count: int = 0
    stopped: str = ""
    _positions: dict[int, int] = field(default_factory=dict)   # the next offset to read, per partition
    _highest: dict[int, int] = field(default_factory=dict)     # the next offset never read yet
    _todo: set[int] = field(default_factory=set)

    def __iter__(self) -> Iterator[Record]:
        from confluent_kafka import KafkaError
        self._todo = set(self.ends or ())
        # When progress was last made (a record not read before; for a read to the end, per
        # partition, where an end-of-partition event counts too), as if the read began
        # `first_wait_s` before idle_s runs out: the offset lookups spent the rest.
        began = time.monotonic() - (self.idle_s - self.first_wait_s)
        last: dict[int | None, float] = {None: began, **dict.fromkeys(self._todo, began)}
        try:
            while True:
                if self.limit is not None and self.count >= self.limit:
                    self.stopped = "limit"
                    return
                if self.ends is not None and not self._todo:
                    self.stopped = "end"
                    return
                msg = self.consumer.poll(min(0.2, self.idle_s))
                if self._idle(last):
                    self.stopped = "idle"
                    self.unread = self._unread()
                    return
                if msg is None:
                    continue
                error, partition, offset = msg.error(), msg.partition() or 0, msg.offset()
                if error is not None:
                    code = error.code()
                    if code == KafkaError._PARTITION_EOF:
                        self._positions[partition] = offset
                        self._done(partition, offset)
                    elif code == KafkaError._AUTO_OFFSET_RESET:
                        if not self._reset(partition, offset):
                            self.stopped = "reset"
                            return
                    else:
                        self.errors.append(ReadError(partition, error.str()))
                        if error.fatal() or not error.retriable():
                            self.stopped = "error"
                            return
                    continue
                if self.ends is not None and (partition not in self._todo or offset >= self.ends[partition]):
                    self._done(partition, offset)   # past the end it was to reach: not shown
                    continue
                self._positions[partition] = offset + 1
                if offset >= self._highest.get(partition, -1):   # a record read again after a reset is no progress
                    self._highest[partition] = offset + 1
                    last[None] = last[partition] = time.monotonic()
                _, ts = msg.timestamp()
                heads: Any = msg.headers() or []
                self.count += 1
                yield Record(partition, offset, ts if ts >= 0 else None, msg.key(), msg.value(), list(heads))
                if self.ends is not None and offset + 1 >= self.ends[partition]:
                    self._done(partition, offset + 1)
        except KeyboardInterrupt:
            self.stopped = "interrupted"
        finally:
            self.consumer.close()  # with a group: commits what was consumed and leaves the group

    def _idle(self, last: dict[int | None, float]) -> bool:
        """Whether the read has waited long enough: no new record for idle_s, or in a read to the
        end, every partition still to finish silent that long (a slow leader does not hold up
        the others)."""
        now = time.monotonic()
        if self.ends is None:
            return now - last[None] >= self.idle_s
        return all(now - last.get(p, last[None]) >= self.idle_s for p in self._todo)

    def _done(self, partition: int, at: int) -> None:
        """A read to the end has reached it in `partition` (at offset `at`): fetch no more."""
        if partition not in self._todo:
            return
        from confluent_kafka import TopicPartition
        self._todo.discard(partition)
        if self.ends is not None and at < self.ends[partition]:
            self.short[partition] = at
        self.consumer.pause([TopicPartition(self.topic, partition)])

    def _reset(self, partition: int, position: int) -> bool:
        """The position in `partition` is outside its log: note it once, and go on from the log's
        start or end if so asked (True), else the read stops (False)."""
        from confluent_kafka import TopicPartition
        key = (self.topic, partition)
        start, end = (_offset(log_offsets(self.conn, self.snap, [key], when), key) for when in (EARLIEST, LATEST))
        to = None if self.on_reset == RESET_STOP else start if self.on_reset == RESET_EARLIEST else end
        reset = Reset(partition, position, start, end, to)
        if reset not in self.resets:
            self.resets.append(reset)
        if to is None or to < 0:
            return False
        self._positions[partition] = to
        # librdkafka no longer fetches the partition (it refuses a seek): assign it again at
        # `to`, the others where they are (assign: a group member's assignment is eager).
        places = {p: self._positions.get(p, self.starts.get(p, to)) for p in sorted(self.assigned or ())}
        self.consumer.assign([TopicPartition(self.topic, p, at) for p, at in places.items()])
        return True

    def _unread(self) -> list[Unread]:
        """The partitions whose leader never answered a fetch (librdkafka knows no watermark of
        them), and those of a read to the end that did not reach it."""
        from confluent_kafka import KafkaException, TopicPartition
        parts = self.snap.topics[self.topic].partitions
        out = []
        for p in sorted(self.assigned or ()):
            try:
                high = self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), cached=True)[1]
            except KafkaException:   # librdkafka knows nothing of it: not answered
                high = -1
            answered = high >= 0 or p in self._positions
            if p in self._todo or not answered:
                out.append(Unread(p, parts[p].leader if p < len(parts) else -1,
                                  self._positions.get(p) if answered else None,
                                  self.ends.get(p) if self.ends is not None else None))
        return out


def consume(conn: ConnectionManager, snap: ClusterSnapshot, topic: str, partition: int | None = None,
            group: str | None = None, start: Start = NEW_RECORDS, limit: int | None = None,
            idle_s: float | None = None, to_end: bool = False, isolation: str = "read_uncommitted",
            on_reset: str = RESET_STOP) -> Consumption:
    """Read records of `topic` (one partition, or all: as `group`'s member when one is given,
    committing what it read), from `start` (with a group: its committed offsets first), until
    `limit` records, `idle_s` seconds without a new one (the offset lookups before the read
    count), or (`to_end`, as kcat -e) the log end of every partition as it was when the read
    began. A position outside the log stops the read (`on_reset` RESET_STOP) or goes on from
    the log's start or end. Nothing is read until it is iterated."""
    from confluent_kafka import Consumer, TopicPartition
    began = time.monotonic()
    idle = idle_s if idle_s is not None else conn.timeout_s
    # The lookups before the read get half of it: a silent leader is found out (its partitions
    # then start and end where librdkafka finds them) with time left to read the others.
    lookups = conn.deadline().within(idle / 2)
    subscribe = bool(group) and partition is None
    # Whom to name if the group gives no partitions (librdkafka does not say); asked first, of
    # a broker that answered already.
    coordinator = conn.coordinator_of(group, lookups) if group and subscribe else -1
    partitions = [partition] if partition is not None else [p.partition for p in snap.topics[topic].partitions]
    keys = [(topic, p) for p in partitions]
    starts, failed = _start_offsets(conn, snap, keys, group, start, lookups)
    ends = None
    if to_end:
        # A partition whose leader did not tell its start is not asked again: its end is
        # librdkafka's end-of-partition event.
        found = log_offsets(conn, snap, [k for k in keys if k[1] not in failed], LATEST, lookups)
        ends = {p: found.rows[(topic, p)].offset if (topic, p) in found.rows else INT64_MAX for p in partitions}
        ends = {p: end for p, end in ends.items() if starts[p] != end}   # starting at the end: nothing to read
    consumer = _client(Consumer, conn, **{"group.id": group or f"kafka-shell-{uuid.uuid4()}",
                                          "enable.auto.commit": bool(group), "auto.offset.reset": "error",
                                          "isolation.level": isolation, "enable.partition.eof": to_end,
                                          "fetch.wait.max.ms": 100})
    assigned = None if subscribe else [p for p in partitions if ends is None or p in ends]
    first_wait = max(idle - (time.monotonic() - began), min(idle, 1.0))
    reading = Consumption(conn, snap, consumer, topic, limit, idle, on_reset, starts, ends,
                          None if assigned is None else set(assigned), first_wait, coordinator)
    if assigned is None:
        consumer.subscribe([topic], on_assign=functools.partial(_assign_committed, reading, start.kind == BEGINNING))
    else:
        consumer.assign([TopicPartition(topic, p, starts[p]) for p in assigned])
    conn.debug(f"consuming {topic} ({'group ' + group if group else 'no group'}, {isolation}, "
               f"stop after {limit or 'no limit'} record(s), {idle:g} s idle{', at the log end' if to_end else ''})")
    return reading


def _assign_committed(reading: Consumption, from_beginning: bool, consumer: Any, partitions: list[Any]) -> None:
    """A group member's partitions start at the group's committed offsets, the others at the log's
    start (from the beginning) or end, as Kafka's console consumer does; a committed offset
    outside the log is an offset reset like any other."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END
    committed = consumer.committed(partitions, reading.conn.timeout_s)
    for tp in committed:
        if tp.offset < 0:
            tp.offset = OFFSET_BEGINNING if from_beginning else OFFSET_END
        reading.starts[tp.partition] = tp.offset
    reading.assigned = {tp.partition for tp in committed}
    if reading.ends is not None:
        reading._todo &= reading.assigned
    consumer.assign(committed)


def _offset(found: Answers[Key, LogOffset], key: Key) -> int:
    """A partition's offset from a log_offsets answer; -1 when it could not be read."""
    row = found.rows.get(key)
    return row.offset if row is not None else -1


def _start_offsets(conn: ConnectionManager, snap: ClusterSnapshot, keys: list[Key], group: str | None,
                   start: Start, deadline: Deadline) -> tuple[dict[int, int], set[int]]:
    """Where each partition starts, and the partitions whose start could not be looked up (they
    start at a logical offset, which librdkafka looks up). Absolute offsets where we can: given
    a logical one, librdkafka waits 500 ms before its first offset query when it assigns a
    partition before it knows the leader."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, OFFSET_STORED
    if start.kind == AT_OFFSET:
        return {p: start.value for _, p in keys}, set()
    if group:
        return {p: OFFSET_STORED for _, p in keys}, set()
    when = {NEW: LATEST, BEGINNING: EARLIEST, LAST: LATEST, AT_TIME: start.value}[start.kind]
    found = log_offsets(conn, snap, keys, when, deadline)
    failed = {p for t, p in keys if (t, p) in found.errors}
    starts = {p: OFFSET_BEGINNING if start.kind == BEGINNING else OFFSET_END for p in failed}
    asked = [(t, p) for t, p in keys if p not in failed]
    if start.kind == LAST:   # the last N records: N before the end, not before the log's start
        first = log_offsets(conn, snap, asked, EARLIEST, deadline).rows
        for key in asked:
            end = found.rows[key].offset
            starts[key[1]] = max(end - start.value, first[key].offset) if key in first else end
    elif start.kind == AT_TIME:   # a partition without a record at or after that time starts at its end
        none_after = [k for k in asked if found.rows[k].offset < 0]
        ends = log_offsets(conn, snap, none_after, LATEST, deadline) if none_after else None
        for key in asked:
            if ends is not None and key in none_after:
                starts[key[1]] = ends.rows[key].offset if key in ends.rows else OFFSET_END
            else:
                starts[key[1]] = found.rows[key].offset
    else:
        starts.update({p: found.rows[(t, p)].offset for t, p in asked})
    return starts, failed


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
