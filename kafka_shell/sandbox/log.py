"""Record batch storage of the sandbox's partitions: append, read, timestamps, follower catch-up.

The log state of a partition (its batches, log start, high watermark, segments, cleaner
checkpoint, and each replica's log end and last epoch) changes here only, in the functions under
"changing the logs": each tells the journal (`--data-dir`) that the partition's logs changed, and
the journal writes them (`PartitionLogs`) at its next write, as Kafka's log appends reach its log
segments. The partition's replicas, leader and ISR are metadata (`replay`).

Batches are kept as the raw v2 bytes clients sent, as Kafka keeps them on disk. Appending only
patches the header: the base offset and partition leader epoch sit before the CRC-covered part,
so assigning offsets needs no new CRC; LogAppendTime and recompression change covered fields and
recompute it. Every codec Kafka has is understood (`codecs.py`); a topic's compression.type other
than `producer` recompresses into that codec, as Kafka's LogValidator does.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import random
import struct
from dataclasses import dataclass
from typing import NamedTuple

from crc32c import crc32c
from kio._kio_native import read_signed_varint, read_signed_varlong
from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import codecs, configs
from kafka_shell.sandbox import records as rec
from kafka_shell.sandbox.model import Batch, ClusterState, Partition, now_ms

# v2 batch header: baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes,
# lastOffsetDelta, baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, count.
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LENGTH_PREFIX = 12          # baseOffset + batchLength: not counted in batchLength
CRC_AT, ATTRIBUTES_AT, MAX_TIMESTAMP_AT, CRC_FROM = 17, 21, 35, 21

CODEC_MASK = 0x07
NONE, GZIP = codecs.NONE, codecs.GZIP
LOG_APPEND_TIME_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40   # KIP-534: the base timestamp is the cleaner's delete horizon
NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE = -1, -1, -1

EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -2, -1, -3, -4


class InvalidBatch(Exception):
    """A batch refused with `code`; `answered`: the message goes into the Produce answer (Kafka
    answers a message only for some errors, e.g. a failed transaction verification);
    `record_errors`: (index in the batch, message) of each refused record (Kafka's
    RecordValidationException)."""

    def __init__(self, code: int, message: str, answered: bool = False,
                 record_errors: list[tuple[int, str]] | None = None):
        super().__init__(message)
        self.code = code
        self.answered = answered
        self.record_errors = record_errors or []


# -- parsing --------------------------------------------------------------------------------


def split_batches(data: bytes) -> list[bytearray]:
    """The record batches of a produce request's records, each checked (magic, length, CRC)."""
    view = memoryview(data)
    out = []
    pos = 0
    while pos < len(view):
        if len(view) - pos < HEADER_SIZE:
            raise InvalidBatch(ErrorCode.corrupt_message, "truncated record batch header")
        length = struct.unpack_from(">i", view, pos + 8)[0]
        end = pos + LENGTH_PREFIX + length
        if length < HEADER_SIZE - LENGTH_PREFIX or end > len(view):
            raise InvalidBatch(ErrorCode.corrupt_message, "record batch length out of bounds")
        if view[pos + 16] != 2:
            # Produce v3+ carries only magic 2 batches (Kafka: InvalidRecordException).
            raise InvalidBatch(ErrorCode.invalid_record, "produce v3+ needs magic 2 record batches")
        batch = bytearray(view[pos:end])
        if struct.unpack_from(">I", batch, CRC_AT)[0] != crc32c(memoryview(batch)[CRC_FROM:]):
            raise InvalidBatch(ErrorCode.corrupt_message, "record batch CRC mismatch")
        out.append(batch)
        pos = end
    if not out:
        raise InvalidBatch(ErrorCode.invalid_record, "no record batch in the request")
    return out


def codec_of(batch: bytes | bytearray) -> int:
    return struct.unpack_from(">h", batch, ATTRIBUTES_AT)[0] & CODEC_MASK


@dataclass(frozen=True)
class Header:
    """The fields of a v2 batch header that producer state and transactions read."""
    base_offset: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def last_sequence(self) -> int:
        """Kafka's DefaultRecordBatch.lastSequence: wraps past Integer.MAX_VALUE."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)

    @property
    def transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def delete_horizon(self) -> int | None:
        """When the cleaner may drop the batch's tombstones (or its marker), once it set it."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_FLAG else None


def header(batch: bytes | bytearray) -> Header:
    (base_offset, _, _, _, _, attributes, last_delta, base_ts, max_ts, pid, epoch, base_seq, count) = HEADER.unpack_from(batch)
    return Header(base_offset, attributes, last_delta, base_ts, max_ts, pid, epoch, base_seq, count)


def records_section(batch: bytes | bytearray) -> bytes:
    """The batch's records, decompressed."""
    body = bytes(memoryview(batch)[HEADER_SIZE:])
    try:
        return codecs.decompress(codec_of(batch), body)
    except codecs.CodecError as exc:
        # Kafka fails such a batch with an unexpected exception: UNKNOWN_SERVER_ERROR.
        raise InvalidBatch(ErrorCode.unknown_server_error, str(exc)) from None


class Record(NamedTuple):   # a tuple: the cleaner makes one per record it reads
    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: bytes = b"\x00"   # the record's headers as written: a count, then each header


def records(batch: bytes | bytearray) -> list[Record]:
    """The records of a v2 batch."""
    count = HEADER.unpack_from(batch)[-1]
    body = records_section(batch)
    out = []
    pos = 0
    for _ in range(count):
        length, size = read_signed_varint(body, pos)
        start = pos = pos + size
        pos += 1                                       # attributes
        ts_delta, size = read_signed_varlong(body, pos)
        pos += size
        offset_delta, size = read_signed_varint(body, pos)
        pos += size
        fields: list[bytes | None] = []
        for _field in range(2):                        # key, value
            n, size = read_signed_varint(body, pos)
            pos += size
            fields.append(None if n < 0 else bytes(body[pos:pos + n]))
            pos += max(n, 0)
        out.append(Record(offset_delta, ts_delta, fields[0], fields[1], bytes(body[pos:start + length])))
        pos = start + length
    return out


def record_timestamps(batch: bytes) -> list[tuple[int, int]]:
    """(offset, timestamp) of every record in a stored batch (LogAppendTime: the batch's)."""
    (base_offset, _, _, _, _, attributes, _, base_ts, max_ts, _, _, _, count) = HEADER.unpack_from(batch)
    body = records_section(batch)
    out = []
    pos = 0
    for _ in range(count):
        length, size = read_signed_varint(body, pos)
        start = pos + size
        ts_delta, ts_size = read_signed_varlong(body, start + 1)  # after the attributes byte
        offset_delta, _ = read_signed_varint(body, start + 1 + ts_size)
        ts = max_ts if attributes & LOG_APPEND_TIME_FLAG else base_ts + ts_delta
        out.append((base_offset + offset_delta, ts))
        pos = start + length
    return out


def batch_leader_epoch(batch: Batch) -> int:
    return struct.unpack_from(">i", batch.data, 12)[0]


# -- writing --------------------------------------------------------------------------------


def set_crc(batch: bytearray) -> None:
    struct.pack_into(">I", batch, CRC_AT, crc32c(memoryview(batch)[CRC_FROM:]))


def recompress(batch: bytearray, codec: int) -> bytearray:
    """The batch with its records re-encoded in `codec`, as a topic's compression.type asks."""
    out = bytearray(batch[:HEADER_SIZE]) + codecs.compress(codec, records_section(batch))
    attributes = struct.unpack_from(">h", out, ATTRIBUTES_AT)[0]
    struct.pack_into(">h", out, ATTRIBUTES_AT, (attributes & ~CODEC_MASK) | codec)
    struct.pack_into(">i", out, 8, len(out) - LENGTH_PREFIX)
    set_crc(out)
    return out


def compacted(cluster: ClusterState, topic: str) -> bool:
    return "compact" in configs.split_list(configs.topic_value(cluster, topic, "cleanup.policy"))


def validate(cluster: ClusterState, p: Partition, batches: list[bytearray]) -> list[bytearray]:
    """Check the batches against the topic's configs; recompress as compression.type says."""
    max_bytes = int(configs.topic_value(cluster, p.topic, "max.message.bytes") or 1048588)
    wanted = configs.topic_value(cluster, p.topic, "compression.type") or "producer"
    keyed = compacted(cluster, p.topic)
    out = []
    for b in batches:
        h = header(b)
        if h.control:   # Kafka's LogValidator, for batches from clients
            raise InvalidBatch(ErrorCode.invalid_record, "Clients are not allowed to write control records")
        if h.has_producer_id and h.base_sequence < 0:
            raise InvalidBatch(ErrorCode.invalid_record, f"Invalid sequence number {h.base_sequence} in record "
                               f"batch with producerId {h.producer_id}")
        if len(b) > max_bytes:
            raise InvalidBatch(ErrorCode.message_too_large,
                               f"batch of {len(b)} bytes exceeds max.message.bytes={max_bytes}")
        records_section(b)  # decompresses: refuses unknown codecs and corrupt data
        if keyed:
            _check_keys(p, b)
        target = codecs.NAMES.get(wanted)
        if target is not None and target != codec_of(b):
            b = recompress(b, target)
        out.append(b)
    return out


def _check_keys(p: Partition, batch: bytearray) -> None:
    """Kafka's LogValidator.validateKey: a compacted topic refuses records without a key, each
    one named in the answer's record errors."""
    message = f"Compacted topic cannot accept message without key in topic partition {p.topic}-{p.index}"
    errors = [(i, message) for i, r in enumerate(records(batch)) if r.key is None]
    if errors:
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
        raise InvalidBatch(ErrorCode.invalid_record, f"One or more records have been rejected due to {len(errors)} "
                           f"record errors in total, and only showing the first three errors at most: [{shown}]",
                           answered=True, record_errors=errors)


def uvarint(n: int) -> bytes:
    """An unsigned varint (Kafka's ByteUtils.writeUnsignedVarint)."""
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _varint(n: int) -> bytes:
    """A zigzag varint (Kafka's ByteUtils.writeVarlong)."""
    return uvarint((n << 1) ^ (n >> 63))


def _bytes_field(data: bytes | None) -> bytes:
    return _varint(-1) if data is None else _varint(len(data)) + data


def build_batch(entries: list[tuple[bytes | None, bytes | None]], *, timestamp: int | None = None,
                producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
                base_sequence: int = NO_SEQUENCE, transactional: bool = False, control: bool = False,
                codec: int = NONE) -> bytearray:
    """A v2 batch of (key, value) records at offset 0 (`append` assigns the real one): what the
    sandbox writes itself (transaction markers, the transaction log) and tests send."""
    ts = now_ms() if timestamp is None else timestamp
    body = b"".join(encode_record(i, 0, key, value) for i, (key, value) in enumerate(entries))
    attributes = codec | (TRANSACTIONAL_FLAG if transactional else 0) | (CONTROL_FLAG if control else 0)
    return encode_batch(0, attributes, len(entries) - 1, ts, ts, producer_id, producer_epoch, base_sequence,
                  len(entries), codecs.compress(codec, body))


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
            headers: bytes = b"\x00") -> bytes:
    record = b"\x00" + _varint(timestamp_delta) + _varint(offset_delta) + _bytes_field(key) + _bytes_field(value) + headers
    return _varint(len(record)) + record


def encode_batch(base_offset: int, attributes: int, last_offset_delta: int, base_timestamp: int, max_timestamp: int,
           producer_id: int, producer_epoch: int, base_sequence: int, count: int, data: bytes,
           leader_epoch: int = -1) -> bytearray:
    out = bytearray(HEADER.pack(base_offset, HEADER_SIZE - LENGTH_PREFIX + len(data), leader_epoch, 2, 0, attributes,
                                last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
                                base_sequence, count))
    out += data
    set_crc(out)
    return out


def record_timestamp(h: Header, r: Record) -> int:
    """A record's timestamp: the batch's (LogAppendTime), else base timestamp plus its delta."""
    return h.max_timestamp if h.attributes & LOG_APPEND_TIME_FLAG else h.base_timestamp + r.timestamp_delta


def rebuild(batch: bytes, kept: list[Record], delete_horizon: int | None) -> bytes:
    """The batch with only the `kept` records, as Kafka's cleaner rewrites it
    (MemoryRecords.buildRetainedRecordsInto): same offsets (its last offset too, for the
    producer's sequence), producer fields, flags and codec; the base timestamp is the delete
    horizon once the cleaner set one."""
    h = header(batch)
    stamps = [record_timestamp(h, r) for r in kept]
    base_ts = delete_horizon if delete_horizon is not None else stamps[0]
    max_ts = h.max_timestamp if h.attributes & LOG_APPEND_TIME_FLAG else max(stamps)
    body = b"".join(encode_record(r.offset_delta, ts - base_ts, r.key, r.value, r.headers) for r, ts in zip(kept, stamps))
    attributes = (h.attributes & ~DELETE_HORIZON_FLAG) | (DELETE_HORIZON_FLAG if delete_horizon is not None else 0)
    return bytes(encode_batch(h.base_offset, attributes, h.last_offset_delta, base_ts, max_ts, h.producer_id, h.producer_epoch,
                        h.base_sequence, len(kept), codecs.compress(h.attributes & CODEC_MASK, body),
                        struct.unpack_from(">i", batch, 12)[0]))


def empty_batch(batch: bytes) -> bytes:
    """The batch's header with no records (Kafka's DefaultRecordBatch.writeEmptyHeader): what the
    cleaner keeps of a producer's last batch, for the producer's sequence and epoch."""
    h = header(batch)
    attributes = h.attributes & (LOG_APPEND_TIME_FLAG | TRANSACTIONAL_FLAG | CONTROL_FLAG)
    return bytes(encode_batch(h.base_offset, attributes, h.last_offset_delta, -1, h.max_timestamp, h.producer_id,
                        h.producer_epoch, h.base_sequence, 0, b"", struct.unpack_from(">i", batch, 12)[0]))


def append(cluster: ClusterState, p: Partition, batches: list[bytearray]) -> tuple[int, int]:
    """Append validated batches on the leader: assign offsets from its log end, stamp the leader
    epoch (and LogAppendTime when configured), rolling segments as Kafka does. Returns (base
    offset, log append time or -1)."""
    append_time = -1
    if configs.topic_value(cluster, p.topic, "message.timestamp.type") == "LogAppendTime":
        append_time = now_ms()
    first = p.leo.get(p.leader, 0)
    next_offset = first
    for b in batches:
        last_delta = struct.unpack_from(">i", b, 23)[0]
        struct.pack_into(">q", b, 0, next_offset)
        struct.pack_into(">i", b, 12, p.leader_epoch)
        if append_time >= 0:
            attributes = struct.unpack_from(">h", b, ATTRIBUTES_AT)[0]
            struct.pack_into(">h", b, ATTRIBUTES_AT, attributes | LOG_APPEND_TIME_FLAG)
            struct.pack_into(">q", b, MAX_TIMESTAMP_AT, append_time)
            set_crc(b)
        max_ts = struct.unpack_from(">q", b, MAX_TIMESTAMP_AT)[0]
        batch = Batch(next_offset, next_offset + last_delta, max_ts, bytes(b))
        _maybe_roll(cluster, p, batch)
        p.batches.append(batch)
        next_offset += last_delta + 1
    p.leo[p.leader] = next_offset
    p.replica_epoch[p.leader] = p.leader_epoch
    _changed(cluster, p)
    return first, append_time


def replicate(cluster: ClusterState, p: Partition) -> None:
    """Followers fetch from the leader after a write: in-sync followers catch up at once
    (out-of-sync ones are replication's catch-up ticker's). The one place a produce replicates."""
    if p.leader < 0:
        return
    end = p.leo.get(p.leader, 0)
    for r in p.isr:
        if r != p.leader and cluster.brokers[r].usable:
            p.leo[r] = end
            p.replica_epoch[r] = p.leader_epoch
    _changed(cluster, p)
    update_high_watermark(cluster, p)  # wakes waiting fetches when it moves


# -- segments -------------------------------------------------------------------------------
# A partition's log is a list of segments (`Partition.segments`: their base offsets); the last
# one, the active segment, takes the appends and is never cleaned. An append rolls a new one as
# Kafka's LogSegment.shouldRoll says: when the batch would take the segment past segment.bytes,
# or when its timestamp is more than segment.ms (less a jitter) after the segment's first batch.


def log_end(p: Partition) -> int:
    """The leader's log end offset (without a leader, the end of the stored batches)."""
    if p.leader in p.leo:
        return p.leo[p.leader]
    return p.batches[-1].last_offset + 1 if p.batches else p.log_start_offset


def segments(p: Partition) -> list[int]:
    """The segments' base offsets, oldest first, less those a truncation or the log start left
    behind (kept in `p.segments`)."""
    end = max(log_end(p), p.batches[-1].last_offset + 1 if p.batches else 0)  # mid-append too
    bases = [b for b in p.segments if b <= end] or [min(p.log_start_offset, end)]
    while len(bases) > 1 and bases[1] <= p.log_start_offset:
        bases.pop(0)
    if bases != p.segments:
        p.segments = bases
    return bases


@dataclass
class Segment:
    """One segment's place in the log: its base offset, the base of the next (the log end for
    the active one) and the index range of its batches in `p.batches`."""
    base: int
    end: int
    first: int
    stop: int

    def batches(self, p: Partition) -> list[Batch]:
        return p.batches[self.first:self.stop]

    def size(self, p: Partition) -> int:
        return sum(len(b.data) for b in self.batches(p))

    def largest_timestamp(self, p: Partition) -> int:
        return max((b.max_timestamp for b in self.batches(p)), default=-1)

    def first_timestamp(self, p: Partition) -> int | None:
        """The first batch's max timestamp (Kafka's rollingBasedTimestamp), None when empty."""
        return p.batches[self.first].max_timestamp if self.stop > self.first else None


def segment_list(p: Partition) -> list[Segment]:
    bases = segments(p)
    ends = bases[1:] + [log_end(p)]
    starts = [bisect.bisect_left(p.batches, base, key=lambda b: b.base_offset) for base in bases]
    return [Segment(base, end, first, stop) for base, end, first, stop in zip(bases, ends, starts, starts[1:] + [len(p.batches)])]


@dataclass
class _Active:
    """What rolling needs of the active segment, kept up to date by appends (summing the segment
    at every append would make appends quadratic)."""
    base: int
    size: int
    first_timestamp: int | None
    created_ms: int
    last: Batch | None


def _active(cluster: ClusterState, p: Partition) -> _Active:
    cache = cluster.runtime.active_segments
    t = cluster.topics.get(p.topic)
    key = (t.id if t is not None else p.topic, p.index)
    base = segments(p)[-1]
    a = cache.get(key)
    last = p.batches[-1] if p.batches else None
    if a is None or a.base != base or a.last is not last:
        seg = segment_list(p)[-1]
        a = cache[key] = _Active(base, seg.size(p), seg.first_timestamp(p), a.created_ms if a and a.base == base else now_ms(),
                                 last)
    return a


def max_segment_ms(cluster: ClusterState, topic: str) -> int:
    """segment.ms, or max.compaction.lag.ms when shorter on a compacted topic (LogConfig.maxSegmentMs)."""
    segment_ms = int(configs.topic_value(cluster, topic, "segment.ms") or 604800000)
    lag = int(configs.topic_value(cluster, topic, "max.compaction.lag.ms") or 0)
    return min(lag, segment_ms) if compacted(cluster, topic) and lag > 0 else segment_ms


def _roll_jitter(cluster: ClusterState, topic: str, base: int) -> int:
    """The segment's random roll jitter (LogConfig.randomSegmentJitter), drawn once per segment:
    here from its base offset, so it needs no keeping."""
    jitter = int(configs.topic_value(cluster, topic, "segment.jitter.ms") or 0)
    return random.Random(base).randrange(min(jitter, int(configs.topic_value(cluster, topic, "segment.ms") or 1))) \
        if jitter > 0 else 0


def _maybe_roll(cluster: ClusterState, p: Partition, batch: Batch) -> None:
    """Roll a new active segment at the batch when Kafka would, then count the batch into it."""
    a = _active(cluster, p)
    now = now_ms()
    segment_bytes = int(configs.topic_value(cluster, p.topic, "segment.bytes") or 1073741824)
    waited = batch.max_timestamp - a.first_timestamp if a.first_timestamp is not None and a.first_timestamp >= 0 \
        else now - a.created_ms
    if a.size > segment_bytes - len(batch.data) or \
            (a.size > 0 and waited > max_segment_ms(cluster, p.topic) - _roll_jitter(cluster, p.topic, a.base)):
        p.segments.append(batch.base_offset)
        a.base, a.size, a.first_timestamp, a.created_ms = batch.base_offset, 0, None, now
    a.size += len(batch.data)
    if a.first_timestamp is None:
        a.first_timestamp = batch.max_timestamp
    a.last = batch


def roll(cluster: ClusterState, p: Partition) -> None:
    """Start a new, empty active segment at the log end (retention deleting every segment)."""
    end = log_end(p)
    if segments(p)[-1] != end:
        p.segments.append(end)
        _changed(cluster, p)


# -- long-poll wake-ups --------------------------------------------------------------------


def progress_event(cluster: ClusterState) -> asyncio.Event:
    """An event set the next time any high watermark moves (fetch and acks=-1 waits use it)."""
    ev = cluster.runtime.log_progress
    if ev is None:
        ev = cluster.runtime.log_progress = asyncio.Event()
    return ev


def notify_progress(cluster: ClusterState) -> None:
    ev, cluster.runtime.log_progress = cluster.runtime.log_progress, None
    if ev is not None:
        ev.set()


async def wait_progress(event: asyncio.Event, timeout_s: float) -> None:
    try:
        await asyncio.wait_for(event.wait(), max(timeout_s, 0))
    except TimeoutError:
        pass


# -- reading --------------------------------------------------------------------------------


def batch_index(p: Partition, offset: int) -> int:
    """Index of the first batch holding `offset` or later."""
    i = bisect.bisect_right(p.batches, offset, key=lambda b: b.base_offset) - 1
    if i < 0:
        return 0
    return i if p.batches[i].last_offset >= offset else i + 1


def read(p: Partition, offset: int, upper: int, max_bytes: int, at_least_one: bool) -> bytes:
    """Whole batches from the one holding `offset`, below `upper` (the high watermark), within
    max_bytes; with at_least_one a first batch larger than max_bytes is still returned."""
    out: list[bytes] = []
    size = 0
    for b in p.batches[batch_index(p, offset):]:
        if b.last_offset >= upper:
            break
        if size + len(b.data) > max_bytes and (out or not at_least_one):
            break
        out.append(b.data)
        size += len(b.data)
    return b"".join(out)


def headers_in(data: bytes) -> list[Header]:
    """The headers of the batches of `read`'s answer."""
    out, pos = [], 0
    while pos + HEADER_SIZE <= len(data):
        out.append(header(data[pos:pos + HEADER_SIZE]))
        pos += LENGTH_PREFIX + struct.unpack_from(">i", data, pos + 8)[0]
    return out


def offset_for_time(p: Partition, timestamp: int, upper: int) -> tuple[int, int, int] | None:
    """(offset, timestamp, leader epoch) of the first record at or after `timestamp`, below
    upper; None when there is none (Kafka answers offset -1)."""
    for b in p.batches[batch_index(p, p.log_start_offset):]:
        if b.base_offset >= upper:
            break
        if b.max_timestamp < timestamp:
            continue
        for off, ts in record_timestamps(b.data):
            if off >= p.log_start_offset and ts >= timestamp and off < upper:
                return off, ts, batch_leader_epoch(b)
    return None


def max_timestamp(p: Partition, upper: int) -> tuple[int, int, int] | None:
    """(offset, timestamp, epoch) of the first record with the largest timestamp (KIP-734)."""
    best: Batch | None = None
    for b in p.batches[batch_index(p, p.log_start_offset):]:
        if b.base_offset >= upper:
            break
        if best is None or b.max_timestamp > best.max_timestamp:
            best = b
    if best is None:
        return None
    for off, ts in record_timestamps(best.data):
        if ts == best.max_timestamp and off >= p.log_start_offset:
            return off, ts, batch_leader_epoch(best)
    return None


def epoch_at(p: Partition, offset: int) -> int:
    """Leader epoch of the batch holding `offset` (the current epoch past the end)."""
    if not p.batches:
        return p.leader_epoch
    i = batch_index(p, offset)
    if i < len(p.batches) and p.batches[i].base_offset <= offset:
        return batch_leader_epoch(p.batches[i])
    return p.leader_epoch


def end_offset_for_epoch(p: Partition, epoch: int) -> tuple[int, int]:
    """(epoch, end offset) as Kafka's LeaderEpochFileCache.endOffsetFor answers it, from the
    epochs stamped on the batches plus the current leader epoch starting at the log end."""
    leo = p.leo.get(p.leader, 0)
    starts: dict[int, int] = {}
    for b in p.batches:
        starts.setdefault(batch_leader_epoch(b), b.base_offset)
    starts.setdefault(p.leader_epoch, leo)
    latest = max(starts)
    if epoch < 0:
        return -1, -1
    if epoch == latest:
        return epoch, leo
    higher = [e for e in starts if e > epoch]
    if not higher:
        return -1, -1
    end = starts[min(higher)]
    floor = [e for e in starts if e <= epoch]
    return (max(floor) if floor else epoch), end


def delete_before(cluster: ClusterState, p: Partition, offset: int) -> None:
    """Move the log start offset up to `offset` (DeleteRecords), dropping batches wholly below."""
    if offset <= p.log_start_offset:
        return
    p.log_start_offset = offset
    p.batches = [b for b in p.batches if b.last_offset >= offset]
    _changed(cluster, p)


def update_high_watermark(cluster: ClusterState, p: Partition) -> None:
    """Advance the high watermark to the smallest log end in the ISR, waking waiting fetches
    when it moves."""
    if p.leader < 0 or not p.isr:
        return
    hw = max(p.high_watermark, min(p.leo.get(r, 0) for r in p.isr))
    if hw != p.high_watermark:
        p.high_watermark = hw
        _changed(cluster, p)
        notify_progress(cluster)


def truncate_to(cluster: ClusterState, p: Partition, end: int) -> None:
    """The log is the new leader's, which ends at `end`: what it lacks goes (only a replica that
    lost its disk, or an unclean election, holds less than the log). A log emptied below its
    start begins again at `end`, as a new log does; the other replicas truncate to it."""
    if p.batches and p.batches[-1].last_offset < end and p.high_watermark <= end:
        return
    p.batches = [b for b in p.batches if b.last_offset < end]
    p.log_start_offset = min(p.log_start_offset, end)
    p.high_watermark = min(p.high_watermark, end)
    p.cleaner_checkpoint = min(p.cleaner_checkpoint, end)
    for r in p.replicas:
        p.leo[r] = min(p.leo.get(r, 0), end)
    _changed(cluster, p)


def lead_uncleanly(cluster: ClusterState, p: Partition, leader: int) -> None:
    """An out-of-sync replica became leader: the log is truncated to what it holds, and its end
    is the high watermark."""
    end = p.leo.get(leader, 0)
    truncate_to(cluster, p, end)
    p.high_watermark = end
    p.replica_epoch[leader] = p.leader_epoch
    _changed(cluster, p)


def add_replicas(cluster: ClusterState, p: Partition, added: list[int]) -> None:
    """Replicas a reassignment adds start with empty logs."""
    for r in added:
        p.leo[r], p.replica_epoch[r] = 0, 0
    _changed(cluster, p)


def drop_replicas(cluster: ClusterState, p: Partition, gone: list[int]) -> None:
    """Replicas a reassignment removed (or reverted) delete their logs."""
    for r in gone:
        p.leo.pop(r, None)
        p.replica_epoch.pop(r, None)
    _changed(cluster, p)


def empty_replica(cluster: ClusterState, p: Partition, broker_id: int) -> None:
    """A replica on a disk that was lost holds nothing (it catches up from the leader)."""
    p.leo[broker_id], p.replica_epoch[broker_id] = 0, 0
    _changed(cluster, p)


def set_replica_end(cluster: ClusterState, p: Partition, broker_id: int, offset: int, epoch: int | None) -> None:
    """One replica's log end (and the epoch of its last write): fault injection."""
    p.leo[broker_id] = offset
    if epoch is not None:
        p.replica_epoch[broker_id] = epoch
    _changed(cluster, p)


def copy_to_follower(cluster: ClusterState, p: Partition, replica: int, credit: float) -> float:
    """Copy the leader's batches to `replica` while the quota is not exceeded (`credit` > 0),
    whole batches as a fetch returns them, so the last one may overdraw it; returns what is
    left (a debt the coming ticks pay back first, as Kafka's ReplicationQuotaManager throttles
    a fetch only once the measured rate is over the quota). Offsets without stored batches
    (set by fault injection) cost nothing."""
    end = p.leo[p.leader]
    start = p.leo[replica]
    throttled = False
    for b in p.batches:
        if b.last_offset < p.leo[replica]:
            continue
        if b.base_offset >= end:
            break
        if credit <= 0:
            p.leo[replica] = max(p.leo[replica], b.base_offset)
            throttled = True
            break
        credit -= len(b.data)
        p.leo[replica] = b.last_offset + 1
    if not throttled:
        p.leo[replica] = end
    if p.leo[replica] != start:
        _changed(cluster, p)
    return credit


def follower_truncate(cluster: ClusterState, p: Partition, replica: int, end: int) -> None:
    """A follower ahead of the leader (it diverged) truncates to the leader's log end."""
    p.leo[replica] = end
    _changed(cluster, p)


def follower_caught_up(cluster: ClusterState, p: Partition, replica: int) -> None:
    """A follower that reached the leader's log end wrote its last batch in the leader's epoch."""
    epoch = p.replica_epoch.get(p.leader, p.leader_epoch)
    if p.replica_epoch.get(replica) != epoch:
        p.replica_epoch[replica] = epoch
        _changed(cluster, p)


def delete_segments(cluster: ClusterState, p: Partition, count: int) -> None:
    """Retention deletes the oldest `count` segments (never every one: a log always has one)."""
    if count == len(segments(p)):
        roll(cluster, p)   # a log always has a segment: a new one at the log end
    bases = segments(p)
    delete_before(cluster, p, bases[count])
    p.segments = bases[count:]
    _changed(cluster, p)


def replace_cleaned(cluster: ClusterState, p: Partition, first: int, stop: int, cleaned: list[Batch],
                    segment_bases: list[int], checkpoint: int) -> None:
    """The cleaner's output replaces the batches p.batches[first:stop], with the segments it made,
    and its checkpoint moves."""
    p.batches = p.batches[:first] + cleaned + p.batches[stop:]
    p.segments = segment_bases
    p.cleaner_checkpoint = checkpoint
    _changed(cluster, p, rewrite=True)


def _changed(cluster: ClusterState, p: Partition, rewrite: bool = False) -> None:
    """The partition's logs changed: with --data-dir the journal writes them at its next write
    (every batch when `rewrite`: older ones were replaced)."""
    journal = cluster.runtime.journal
    if journal is not None:
        journal.logs_changed(p, rewrite)


# -- what --data-dir keeps ----------------------------------------------------------------------

KEEP_BYTES = 1024 * 1024   # the newest batches of each partition the state file keeps


def logs_record(cluster: ClusterState, p: Partition, batches: list[Batch], rewrite: bool) -> rec.PartitionLogs:
    t = cluster.topics[p.topic]
    return rec.PartitionLogs(
        t.id, p.index, p.log_start_offset, p.high_watermark, tuple(p.segments), p.cleaner_checkpoint,
        tuple(sorted(p.leo.items())), tuple(sorted(p.replica_epoch.items())), rewrite,
        tuple(rec.Batch(b.base_offset, b.last_offset, b.max_timestamp, b.data) for b in batches))


def snapshot(cluster: ClusterState) -> list[rec.Record]:
    """Every partition's logs, with the newest KEEP_BYTES of its batches: older ones are dropped
    and the log start moves past them, as retention would."""
    out: list[rec.Record] = []
    for t in cluster.topics.values():
        for p in t.partitions:
            kept = _newest_batches(p)
            record = logs_record(cluster, p, kept, rewrite=True)
            if len(kept) < len(p.batches):
                first = kept[0].base_offset if kept else p.high_watermark
                record = dataclasses.replace(record, log_start_offset=max(first, p.log_start_offset))
            out.append(record)
    return out


def _newest_batches(p: Partition) -> list[Batch]:
    kept: list[Batch] = []
    size = 0
    for b in reversed(p.batches):
        size += len(b.data)
        if size > KEEP_BYTES:
            break
        kept.append(b)
    kept.reverse()
    return kept


def replay_logs(cluster: ClusterState, record: rec.PartitionLogs) -> None:
    """A partition's logs as the record says (its batches after those it had, or instead)."""
    from kafka_shell.sandbox.topic_lifecycle import partition_by_id
    p = partition_by_id(cluster, record.topic_id, record.partition_id)
    p.log_start_offset = max(record.log_start_offset, p.log_start_offset)
    p.high_watermark = record.high_watermark
    p.segments = list(record.segments) or [0]
    p.cleaner_checkpoint = record.cleaner_checkpoint
    p.leo = dict(record.log_end_offsets)
    p.replica_epoch = dict(record.replica_epochs)
    if record.rewrite:
        p.batches = []
    p.batches.extend(Batch(b.base_offset, b.last_offset, b.max_timestamp, b.data) for b in record.batches)
    p.batches = [b for b in p.batches if b.last_offset >= p.log_start_offset]


REPLAY = {rec.PartitionLogs: replay_logs}
