"""Record batch storage of the sandbox's partitions: append, read, timestamps, follower catch-up.

Batches are kept as the raw v2 bytes clients sent, as Kafka keeps them on disk. Appending only
patches the header: the base offset and partition leader epoch sit before the CRC-covered part,
so assigning offsets needs no new CRC; LogAppendTime and recompression change covered fields and
recompute it. Every codec Kafka has is understood (`codecs.py`); a topic's compression.type other
than `producer` recompresses into that codec, as Kafka's LogValidator does.
"""

from __future__ import annotations

import asyncio
import bisect
import struct
from dataclasses import dataclass

from crc32c import crc32c
from kio._kio_native import read_signed_varint, read_signed_varlong
from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import codecs, configs, journal, replication
from kafka_shell.sandbox.model import Batch, Cluster, Partition, now_ms

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
NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE = -1, -1, -1

EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -2, -1, -3, -4


class InvalidBatch(Exception):
    """A batch refused with `code`; `answered`: the message goes into the Produce answer (Kafka
    answers a message only for some errors, e.g. a failed transaction verification)."""

    def __init__(self, code: int, message: str, answered: bool = False):
        super().__init__(message)
        self.code = code
        self.answered = answered


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


def header(batch: bytes | bytearray) -> Header:
    (base_offset, _, _, _, _, attributes, last_delta, _, max_ts, pid, epoch, base_seq, count) = HEADER.unpack_from(batch)
    return Header(base_offset, attributes, last_delta, max_ts, pid, epoch, base_seq, count)


def records_section(batch: bytes | bytearray) -> bytes:
    """The batch's records, decompressed."""
    body = bytes(memoryview(batch)[HEADER_SIZE:])
    try:
        return codecs.decompress(codec_of(batch), body)
    except codecs.CodecError as exc:
        # Kafka fails such a batch with an unexpected exception: UNKNOWN_SERVER_ERROR.
        raise InvalidBatch(ErrorCode.unknown_server_error, str(exc)) from None


@dataclass(frozen=True)
class Record:
    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None


def records(batch: bytes | bytearray) -> list[Record]:
    """The records of a v2 batch (headers skipped)."""
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
        out.append(Record(offset_delta, ts_delta, fields[0], fields[1]))
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


def validate(cluster: Cluster, p: Partition, batches: list[bytearray]) -> list[bytearray]:
    """Check the batches against the topic's configs; recompress as compression.type says."""
    max_bytes = int(configs.topic_value(cluster, p.topic, "max.message.bytes") or 1048588)
    wanted = configs.topic_value(cluster, p.topic, "compression.type") or "producer"
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
        target = codecs.NAMES.get(wanted)
        if target is not None and target != codec_of(b):
            b = recompress(b, target)
        out.append(b)
    return out


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
    body = bytearray()
    for i, (key, value) in enumerate(entries):
        record = b"\x00" + _varint(0) + _varint(i) + _bytes_field(key) + _bytes_field(value) + _varint(0)
        body += _varint(len(record)) + record
    attributes = codec | (TRANSACTIONAL_FLAG if transactional else 0) | (CONTROL_FLAG if control else 0)
    data = codecs.compress(codec, bytes(body))
    out = bytearray(HEADER.pack(0, HEADER_SIZE - LENGTH_PREFIX + len(data), -1, 2, 0, attributes,
                                len(entries) - 1, ts, ts, producer_id, producer_epoch, base_sequence,
                                len(entries)))
    out += data
    set_crc(out)
    return out


def append(cluster: Cluster, p: Partition, batches: list[bytearray]) -> tuple[int, int]:
    """Append validated batches on the leader: assign offsets from its log end, stamp the leader
    epoch (and LogAppendTime when configured). Returns (base offset, log append time or -1)."""
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
        p.batches.append(Batch(next_offset, next_offset + last_delta, max_ts, bytes(b)))
        next_offset += last_delta + 1
    p.leo[p.leader] = next_offset
    p.replica_epoch[p.leader] = p.leader_epoch
    journal.touched(cluster, p)
    return first, append_time


def replicate(cluster: Cluster, p: Partition) -> None:
    """Followers fetch from the leader after a write: in-sync followers catch up at once
    (out-of-sync ones are replication's catch-up ticker's). The one place a produce replicates."""
    if p.leader < 0:
        return
    end = p.leo.get(p.leader, 0)
    for r in p.isr:
        if r != p.leader and cluster.brokers[r].usable:
            p.leo[r] = end
            p.replica_epoch[r] = p.leader_epoch
    replication.update_high_watermark(p, cluster)  # wakes waiting fetches when it moves


# -- long-poll wake-ups --------------------------------------------------------------------


def progress_event(cluster: Cluster) -> asyncio.Event:
    """An event set the next time any high watermark moves (fetch and acks=-1 waits use it)."""
    ev = cluster.extras.get("log_progress")
    if ev is None:
        ev = cluster.extras["log_progress"] = asyncio.Event()
    return ev  # type: ignore[return-value]


def notify_progress(cluster: Cluster) -> None:
    ev = cluster.extras.pop("log_progress", None)
    if ev is not None:
        ev.set()  # type: ignore[attr-defined]


async def wait_progress(event: asyncio.Event, timeout_s: float) -> None:
    try:
        await asyncio.wait_for(event.wait(), max(timeout_s, 0))
    except TimeoutError:
        pass


# -- reading --------------------------------------------------------------------------------


def _index_of(p: Partition, offset: int) -> int:
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
    for b in p.batches[_index_of(p, offset):]:
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
    for b in p.batches[_index_of(p, p.log_start_offset):]:
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
    for b in p.batches[_index_of(p, p.log_start_offset):]:
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
    i = _index_of(p, offset)
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


def delete_before(cluster: Cluster, p: Partition, offset: int) -> None:
    """Move the log start offset up to `offset` (DeleteRecords), dropping batches wholly below."""
    if offset <= p.log_start_offset:
        return
    p.log_start_offset = offset
    p.batches = [b for b in p.batches if b.last_offset >= offset]
    journal.touched(cluster, p)
