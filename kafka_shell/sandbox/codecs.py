"""The four record-batch codecs of Kafka, as its brokers read and write them.

- gzip: the standard library.
- snappy: snappy-java's xerial framing, which Kafka's brokers write (an 8-byte magic, version and
  compatible-version ints, then length-prefixed raw snappy blocks of at most 32 KiB); reading also
  takes a bare raw snappy block, which librdkafka writes and snappy-java falls back to.
- lz4: an LZ4 frame with independent blocks of at most 64 KiB, as Kafka's Lz4BlockOutputStream
  writes it (readers take any standard frame).
- zstd: a zstd frame.
snappy, lz4 and zstd come from cramjam.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import cramjam

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
NAMES = {"uncompressed": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK = 32 * 1024


class CodecError(Exception):
    """The data is not valid for its codec (or the codec is unknown)."""


def decompress(codec: int, data: bytes) -> bytes:
    try:
        if codec == NONE:
            return data
        if codec == GZIP:
            return gzip.decompress(data)
        if codec == SNAPPY:
            return _snappy_decompress(data)
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except (OSError, EOFError, zlib.error, cramjam.DecompressionError, struct.error) as exc:
        raise CodecError(f"bad {name_of(codec)} data: {exc}") from None
    raise CodecError(f"unknown compression codec {codec}")


def compress(codec: int, data: bytes) -> bytes:
    if codec == NONE:
        return data
    if codec == GZIP:
        return gzip.compress(data)
    if codec == SNAPPY:
        blocks = (bytes(cramjam.snappy.compress_raw(data[i:i + XERIAL_BLOCK]))
                  for i in range(0, len(data), XERIAL_BLOCK))
        return XERIAL_HEADER + b"".join(struct.pack(">i", len(b)) + b for b in blocks)
    if codec == LZ4:
        compressor = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
        compressor.compress(data)
        return bytes(compressor.finish())
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise CodecError(f"unknown compression codec {codec}")


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    out = []
    pos = len(XERIAL_HEADER)
    while pos < len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        if size < 0 or pos + 4 + size > len(data):
            raise struct.error("a snappy block runs past the end of the data")
        out.append(bytes(cramjam.snappy.decompress_raw(data[pos + 4:pos + 4 + size])))
        pos += 4 + size
    return b"".join(out)


def name_of(codec: int) -> str:
    return next((n for n, c in NAMES.items() if c == codec), str(codec))
