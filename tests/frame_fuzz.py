"""Hostile Kafka frames for the fuzz tests and bench/fuzz_long.py: a valid message of each
schema, then mutated (random bodies, truncations, flipped bytes, and length fields set to
extreme values at every place a length could be)."""

from __future__ import annotations

import asyncio
import json
import random
import resource
import struct
import subprocess
import sys
import tempfile
from functools import cache

from kio.schema.index import api_key_map

from kafka_shell.protocol import codec, frames, seed_apis

# Lengths that make an unchecked reader allocate or read far past the frame.
HOSTILE_LENGTHS = [
    struct.pack(">i", 0x7FFFFFFF), struct.pack(">i", -2), struct.pack(">i", -0x80000000),
    struct.pack(">i", 0x10000000), struct.pack(">h", 0x7FFF), struct.pack(">h", -2),
    b"\xff\xff\xff\xff\x0f",  # varint 0xffffffff: a compact array of 2^32 - 2 elements
    b"\xff\xff\xff\xff\x07", b"\x80\x80\x80\x80\x08", b"\xff\xff\xff\x7f", b"\xff\xff\xff\xff\xff",
]

# The 21-byte frame of issue 13: Metadata v12 whose compact topics array claims 2^32 - 2 topics.
METADATA_V12_HOSTILE = b"\x00\x00\x00\x11\x00\x03\x00\x0c\x00\x00\x00\x01\x00\x01x\x00\xff\xff\xff\xff\x0f"


def all_versions() -> list[tuple[int, int]]:
    """(api key, version) of every request kio (or our extension) has."""
    keys = sorted(set(api_key_map) | {k for k, _ in seed_apis.VERSIONS})
    return [(k, v) for k in keys for v in codec.kio_versions(k)]


def _populated(cls: type, depth: int = 0) -> dict:
    """Field values that put one element in every array, so mutations reach nested fields."""
    out: dict = {}
    for f in frames._fields(cls):
        if f.tag is not None:
            continue
        if f.nested is not None:
            value = _populated(f.nested, depth + 1) if depth < 4 else {}
            out[f.name] = [value] if f.is_array else value
        elif f.kafka_type in ("string", "legacy_client_id"):
            out[f.name] = ["x"] if f.is_array else "x"
        elif f.kafka_type in ("bytes", "records"):
            out[f.name] = b"x"
        elif f.kafka_type == "datetime_i64":
            out[f.name] = [0] if f.is_array else 0  # the epoch (the zero value -1 is null)
        elif f.is_array:
            out[f.name] = [1]
    return out


@cache
def sample_request(api_key: int, version: int) -> bytes:
    """A valid request body (header included, frame size excluded)."""
    cls = codec.request_schema(api_key, version)
    try:
        entity = codec.build(cls, _populated(cls))
        return codec.encode_request(entity, 7, "fuzz")[4:]
    except Exception:  # a value kio will not write: fall back to the type's zero values
        return codec.encode_request(codec.build(cls, {}), 7, "fuzz")[4:]


@cache
def sample_response(api_key: int, version: int) -> bytes:
    cls = codec.response_schema(api_key, version)
    try:
        entity = codec.build(cls, _populated(cls))
        return codec.encode_response(entity, 7)[4:]
    except Exception:
        return codec.encode_response(codec.build(cls, {}), 7)[4:]


def mutate(body: bytes, rnd: random.Random, keep: int = 0) -> bytes:
    """One hostile variant of `body`; its first `keep` bytes stay (e.g. a request's api key and
    version, so that the broker does not close at once on an unknown one)."""
    data = bytearray(body)
    pos = rnd.randrange(keep, max(len(data), keep + 1))
    kind = rnd.randrange(6)
    if kind == 0:  # a length field set to an extreme value
        hostile = rnd.choice(HOSTILE_LENGTHS)
        data[pos:pos + len(hostile)] = hostile
    elif kind == 1:  # an extreme length inserted
        data[pos:pos] = rnd.choice(HOSTILE_LENGTHS)
    elif kind == 2:  # truncated
        del data[pos:]
    elif kind == 3:  # a few bytes flipped
        for _ in range(rnd.randrange(1, 4)):
            data[rnd.randrange(keep, max(len(data), keep + 1)) % max(len(data), 1)] ^= 1 << rnd.randrange(8)
    elif kind == 4:  # random body after the kept prefix
        data[keep:] = rnd.randbytes(rnd.randrange(64))
    else:  # all 0xff after a point: every length read there is huge or -1
        data[pos:] = b"\xff" * rnd.randrange(1, 16)
    return bytes(data)


def request_frames(api_key: int, version: int, rnd: random.Random, count: int) -> list[bytes]:
    """`count` hostile request frames (size prefix included) of one API version."""
    base = sample_request(api_key, version)
    return [codec.frame(mutate(base, rnd, keep=4)) for _ in range(count)]


async def _send_one(host: str, port: int, frame: bytes, wait_s: float) -> None:
    """Send one frame on a new connection; wait for the first byte of an answer or the close
    (a valid long-poll may answer late: give up after wait_s)."""
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        return
    try:
        writer.write(frame)
        await asyncio.wait_for(reader.read(1), wait_s)
    except (OSError, TimeoutError):
        pass
    finally:
        writer.transport.abort()


def send_frames(address: str, frames_: list[bytes], concurrency: int = 64, wait_s: float = 1.0) -> None:
    """Send every frame, each on its own connection, `concurrency` at a time."""
    host, port = address.split(",")[0].rsplit(":", 1)

    async def run() -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one(frame: bytes) -> None:
            async with gate:
                await _send_one(host, int(port), frame, wait_s)

        await asyncio.gather(*(one(f) for f in frames_))

    asyncio.run(run())


def spawn_sandbox(brokers: int = 1, configs: dict[str, str] | None = None,
                  fd_limit: int | None = None) -> tuple[subprocess.Popen, str]:
    """A sandbox in a process of its own (so that an abort shows as a dead process), with these
    broker configs (and this many file descriptors at most); returns the process and its
    bootstrap address. Stop it with `stop_sandbox`."""

    def limit_fds() -> None:
        if fd_limit is not None:
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, hard))

    script = ("import json, sys\n"
              "from kafka_shell.sandbox.server import Sandbox\n"
              "with Sandbox(brokers=int(sys.argv[1]), configs=json.loads(sys.argv[2])) as s:\n"
              "    print(s.bootstrap, flush=True)\n"
              "    sys.stdin.read()\n")
    # Its log goes to a file: a pipe nobody drains would block the sandbox once full.
    log = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen([sys.executable, "-c", script, str(brokers), json.dumps(configs or {})],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                            preexec_fn=limit_fds)  # noqa: PLW1509
    proc.log = log  # type: ignore[attr-defined]
    bootstrap = proc.stdout.readline().strip()  # type: ignore[union-attr]
    if not bootstrap:
        raise RuntimeError(f"the sandbox did not start: {stop_sandbox(proc)}")
    return proc, bootstrap


def stop_sandbox(proc: subprocess.Popen) -> str:
    """Stop a spawned sandbox; returns what it wrote on stderr."""
    if proc.poll() is None:
        proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    log = proc.log  # type: ignore[attr-defined]
    log.seek(0)
    text = log.read()
    log.close()
    return text


# -- nulls where the schema has none ---------------------------------------------------------


def _encode(cls: type, null_path: tuple[str, ...], flexible: bool) -> bytes:
    """One `cls` entity with a value in every field and one element in every array (as
    `_populated`), written by hand so that the field at `null_path` (field names, each array
    entered at its one element) can be null where kio would refuse to write one."""
    out = bytearray()
    for f in frames._fields(cls):
        if f.tag is not None:
            continue
        here = null_path[:1] == (f.name,)
        null = here and len(null_path) == 1
        inner = null_path[1:] if here else ()
        if f.is_array:
            if null:
                out += b"\x00" if flexible else struct.pack(">i", -1)
                continue
            out += b"\x02" if flexible else struct.pack(">i", 1)
        if f.nested is not None:
            if f.nullable and not f.is_array:
                out += b"\x01"  # present
            out += _encode(f.nested, inner, flexible)
        else:
            out += _primitive(f.kafka_type or "", null and not f.is_array, flexible)
    if flexible:
        out += b"\x00"  # no tagged fields
    return bytes(out)


def _primitive(kafka_type: str, null: bool, flexible: bool) -> bytes:
    if kafka_type in frames._FIXED:
        return b"\x00" * frames._FIXED[kafka_type]
    if kafka_type == "string":
        if flexible:
            return b"\x00" if null else b"\x02x"
        return struct.pack(">h", -1) if null else struct.pack(">h", 1) + b"x"
    if flexible:  # bytes, records
        return b"\x00" if null else b"\x02x"
    return struct.pack(">i", -1) if null else struct.pack(">i", 1) + b"x"


def non_nullable_paths(cls: type, depth: int = 3) -> list[tuple[str, ...]]:
    """Paths of the arrays and strings that the schema does not let be null."""
    out: list[tuple[str, ...]] = []
    for f in frames._fields(cls):
        if f.tag is not None:
            continue
        if f.is_array and not f.nullable or f.kafka_type == "string" and not f.is_array and not f.nullable:
            out.append((f.name,))
        if f.nested is not None and depth > 1:
            out += [(f.name, *rest) for rest in non_nullable_paths(f.nested, depth - 1)]
    return out


def null_request(api_key: int, version: int, path: tuple[str, ...] = ()) -> bytes:
    """A request body (header included, frame size excluded) with `path` null (none: `()`)."""
    cls = codec.request_schema(api_key, version)
    base = sample_request(api_key, version)
    header_end = frames.check(cls.__header_schema__, base, 0)
    return base[:header_end] + _encode(cls, path, frames._flexible(cls))
