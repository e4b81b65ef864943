"""Message formats v0 and v1 (Kafka's legacy "message sets"), which Kafka 3.9 still takes in
Produce v0-v2 and gives in Fetch v0-v3: the sandbox stores v2 batches only, so it converts as
Kafka 3.9's LogValidator (up) and RecordsUtil.downConvert (down) do.

A message: offset (int64), size (int32), then CRC32 (int32, of what follows), magic (int8),
attributes (int8: the codec in bits 0-2; v1: bit 3 LogAppendTime), v1 only a timestamp (int64),
key and value (int32 length, -1 for null). A compressed message (a wrapper) holds a message set
in its value; in v1 the inner offsets are relative and the wrapper's offset is the last one's.
"""

from __future__ import annotations

import struct
import zlib

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import codecs, log

LOG_OVERHEAD = struct.Struct(">qi")       # offset, size
V0 = struct.Struct(">Ibb")                # crc, magic, attributes
TIMESTAMP = struct.Struct(">q")
NO_TIMESTAMP = -1
V1_LOG_APPEND_TIME = 0x08


def is_message_set(data: bytes) -> bool:
    """Whether a Produce's records are in format v0 or v1 (the magic byte at offset 16)."""
    return len(data) > 16 and data[16] in (0, 1)


def _messages(data: bytes) -> list[tuple[int, int | None, bytes | None, bytes | None]]:
    """(magic, timestamp or None, key, value) of each message, wrappers unwrapped."""
    out: list[tuple[int, int | None, bytes | None, bytes | None]] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < LOG_OVERHEAD.size + V0.size:
            raise log.InvalidBatch(ErrorCode.corrupt_message, "truncated message")
        _, size = LOG_OVERHEAD.unpack_from(data, pos)
        start, end = pos + LOG_OVERHEAD.size, pos + LOG_OVERHEAD.size + size
        if size < V0.size + 8 or end > len(data):
            raise log.InvalidBatch(ErrorCode.corrupt_message, "message size out of bounds")
        crc, magic, attributes = V0.unpack_from(data, start)
        if magic not in (0, 1):
            raise log.InvalidBatch(ErrorCode.invalid_record, "a message set mixes message formats")
        if crc != zlib.crc32(data[start + 4:end]):
            raise log.InvalidBatch(ErrorCode.corrupt_message, "message CRC mismatch")
        at = start + V0.size
        timestamp = None
        if magic == 1:
            (timestamp,) = TIMESTAMP.unpack_from(data, at)
            at += TIMESTAMP.size
        key, at = _bytes(data, at, end)
        value, at = _bytes(data, at, end)
        codec = attributes & log.CODEC_MASK
        if codec == codecs.NONE:
            out.append((magic, timestamp, key, value))
        else:
            try:
                inner = codecs.decompress(codec, value or b"")
            except codecs.CodecError as exc:
                raise log.InvalidBatch(ErrorCode.corrupt_message, str(exc)) from None
            out += _messages(inner)
        pos = end
    return out


def _bytes(data: bytes, at: int, end: int) -> tuple[bytes | None, int]:
    if end - at < 4:
        raise log.InvalidBatch(ErrorCode.corrupt_message, "truncated message")
    (n,) = struct.unpack_from(">i", data, at)
    at += 4
    if n < 0:
        return None, at
    if at + n > end:
        raise log.InvalidBatch(ErrorCode.corrupt_message, "message field out of bounds")
    return bytes(data[at:at + n]), at + n


def to_batch(data: bytes) -> bytearray:
    """A Produce's message set as one v2 batch (Kafka 3.9 up-converts what it stores), records in
    order, their timestamps kept (none in v0: -1), uncompressed (the topic's compression.type
    applies as to any batch)."""
    messages = _messages(data)
    if not messages:
        raise log.InvalidBatch(ErrorCode.invalid_record, "no message in the message set")
    stamps = [ts if ts is not None else NO_TIMESTAMP for _, ts, _, _ in messages]
    base = stamps[0]
    body = b"".join(log.encode_record(i, ts - base, key, value) for i, ((_, _, key, value), ts)
                    in enumerate(zip(messages, stamps)))
    return log.encode_batch(0, 0, len(messages) - 1, base, max(stamps), log.NO_PRODUCER_ID, log.NO_PRODUCER_EPOCH,
                      log.NO_SEQUENCE, len(messages), body)


def from_batches(data: bytes, magic: int) -> bytes:
    """Stored v2 batches as a message set of `magic` (Fetch v0-v1: 0, v2-v3: 1), uncompressed:
    control batches (transaction markers) and headers have no place there and go."""
    out = bytearray()
    pos = 0
    while pos + log.HEADER_SIZE <= len(data):
        end = pos + log.LENGTH_PREFIX + struct.unpack_from(">i", data, pos + 8)[0]
        batch = data[pos:end]
        pos = end
        h = log.header(batch)
        if h.control:
            continue
        append_time = bool(h.attributes & log.LOG_APPEND_TIME_FLAG)
        for r in log.records(batch):
            out += _message(magic, h.base_offset + r.offset_delta, log.record_timestamp(h, r), append_time,
                            r.key, r.value)
    return bytes(out)


def _message(magic: int, offset: int, timestamp: int, append_time: bool, key: bytes | None,
             value: bytes | None) -> bytes:
    attributes = V1_LOG_APPEND_TIME if magic == 1 and append_time else 0
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += TIMESTAMP.pack(timestamp)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    message = struct.pack(">I", zlib.crc32(body)) + body
    return LOG_OVERHEAD.pack(offset, len(message)) + message
