"""Kafka wire codec shared by the sandbox brokers and the shell's direct channel.

Message types come from kio; the two the proposals add (ElectLeaders v3 and GetReplicaLogInfo)
are declared in `kafka_shell.protocol_ext` in kio's own style, so one codec handles all of them.

Handlers and callers work with plain dicts: `build(cls, data)` turns a dict tree into the kio
entity of whatever version was negotiated, dropping keys that version lacks and filling the
ones it needs with Kafka's zero values. That keeps every handler version-agnostic.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import typing
import uuid
from functools import lru_cache, cache

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer, writers
# kio's per-field writers (not exported; kio is pinned) let a cached, pre-encoded field be
# written next to freshly encoded ones.
from kio.serial._introspect import get_field_tag
from kio.serial._serialize import get_field_writer

from kafka_shell import frames, protocol_ext

MAX_FRAME = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
ZERO_UUID = uuid.UUID(int=0)


class ProtocolError(Exception):
    """The peer sent bytes that are not a valid Kafka message."""


# ---------------------------------------------------------------------------------------------
# Schemas by API key and version


@cache
def request_schema(api_key: int, version: int) -> type:
    ext = protocol_ext.REQUESTS.get((api_key, version))
    return ext or load_request_schema(api_key, version)


@cache
def response_schema(api_key: int, version: int) -> type:
    ext = protocol_ext.RESPONSES.get((api_key, version))
    return ext or load_response_schema(api_key, version)


def kio_versions(api_key: int) -> range:
    """The contiguous version range ending at the newest version kio (or our extension) has."""
    versions = set(schema_name_map[api_key_map[api_key]]) if api_key in api_key_map else set()
    versions |= {v for (k, v) in protocol_ext.REQUESTS if k == api_key}
    if not versions:
        return range(0)
    high = max(versions)
    low = high
    while low - 1 in versions:
        low -= 1
    return range(low, high + 1)


def api_name(api_key: int) -> str:
    if api_key in protocol_ext.NAMES:
        return protocol_ext.NAMES[api_key]
    return "".join(p.title() for p in api_key_map.get(api_key, f"api_{api_key}").split("_"))


# ---------------------------------------------------------------------------------------------
# dict <-> entity


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    kafka_type: str | None
    nested: type | None  # entity class for nested structs and arrays of structs
    is_array: bool
    nullable: bool
    default: object


def _unwrap(tp: object) -> tuple[object, bool, bool]:
    """(inner type, is_array, nullable) of an annotation like `tuple[X, ...] | None`."""
    nullable = False
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, __import__("types").UnionType):
        non_none = [a for a in args if a is not type(None)]
        nullable = len(non_none) != len(args)
        tp = non_none[0]
    if typing.get_origin(tp) is tuple:
        return typing.get_args(tp)[0], True, nullable
    return tp, False, nullable


@cache
def _fields(cls: type) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        inner, is_array, nullable = _unwrap(hints[f.name])
        nested = inner if dataclasses.is_dataclass(inner) else None
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = f.default_factory()  # type: ignore[misc]
        else:
            default = dataclasses.MISSING
        out.append(_Field(f.name, f.metadata.get("kafka_type"), nested, is_array, nullable, default))
    return tuple(out)


_ZERO = {
    "bool": False, "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "float64": 0.0,
    "string": "", "bytes": b"", "records": None, "uuid": ZERO_UUID, "error_code": 0,
    "timedelta_i32": 0, "timedelta_i64": 0, "datetime_i64": -1,
}


def _convert(f: _Field, value: object) -> object:
    if value is None or isinstance(value, Encoded):
        return value
    if f.is_array:
        return tuple(_convert_one(f, v) for v in value)  # type: ignore[union-attr]
    return _convert_one(f, value)


def _convert_one(f: _Field, value: object) -> object:
    if f.nested is not None:
        return value if isinstance(value, f.nested) else build(f.nested, value)  # type: ignore[arg-type]
    kt = f.kafka_type
    if kt == "error_code":
        return ErrorCode(int(value))  # type: ignore[call-overload]
    if kt in ("timedelta_i32", "timedelta_i64"):
        return value if isinstance(value, datetime.timedelta) else datetime.timedelta(milliseconds=value)  # type: ignore[arg-type]
    if kt == "datetime_i64":
        if isinstance(value, datetime.datetime) or value is None:
            return value
        if value < 0:  # type: ignore[operator]
            return None
        return datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC)  # type: ignore[operator]
    return value


def build(cls: type, data: dict | object) -> object:
    """Build a kio entity of `cls` from a dict tree (keys the version lacks are ignored)."""
    if isinstance(data, cls):
        return data
    get = data.get if isinstance(data, dict) else lambda k, d=None: getattr(data, k, d)
    kwargs = {}
    for f in _fields(cls):
        value = get(f.name, dataclasses.MISSING)
        if value is dataclasses.MISSING:
            if f.default is not dataclasses.MISSING:
                continue
            value = None if f.nullable else ([] if f.is_array else _ZERO.get(f.kafka_type or "", None))
            if value is None and f.nested is not None and not f.nullable:
                value = {}
        kwargs[f.name] = _convert(f, value)
    return cls(**kwargs)


def to_dict(entity: object) -> object:
    """Plain data from a kio entity: ints for error codes, ms for durations, lists for arrays."""
    if dataclasses.is_dataclass(entity):
        return {f.name: to_dict(getattr(entity, f.name)) for f in dataclasses.fields(entity)}
    if isinstance(entity, tuple):
        return [to_dict(v) for v in entity]
    if isinstance(entity, ErrorCode):
        return int(entity)
    if isinstance(entity, datetime.timedelta):
        return int(entity.total_seconds() * 1000)
    if isinstance(entity, datetime.datetime):
        return int(entity.timestamp() * 1000)
    return entity


# ---------------------------------------------------------------------------------------------
# Framing

_reader_cache: dict[type, typing.Callable] = {}
_writer_cache: dict[type, typing.Callable] = {}


def _reader(cls: type) -> typing.Callable:
    r = _reader_cache.get(cls)
    if r is None:
        r = _reader_cache[cls] = entity_reader(cls)
    return r


def _writer(cls: type) -> typing.Callable:
    w = _writer_cache.get(cls)
    if w is None:
        w = _writer_cache[cls] = entity_writer(cls)
    return w


@dataclasses.dataclass(frozen=True)
class Encoded:
    """A field value already in wire format (see `encode_array`): `build` keeps it and
    `serialize` copies it. Lets a large answer (the topics of a full Metadata response) be
    assembled from encoded pieces kept while the state they describe is unchanged."""
    data: bytes


def element_class(cls: type, name: str) -> type:
    """The entity class of the elements of `cls`'s array-of-structs field `name`."""
    f = next(f for f in _fields(cls) if f.name == name)
    if f.nested is None or not f.is_array:
        raise ValueError(f"{cls.__name__}.{name} is not an array of structs")
    return f.nested


def encode_array(cls: type, name: str, elements: typing.Sequence[bytes]) -> Encoded:
    """Array field `name` of `cls` from its elements, each already encoded (`serialize` of an
    `element_class` entity, or `head + ... + tail` from `encode_around`)."""
    return Encoded(_array_length(cls, name, len(elements)) + b"".join(elements))


@lru_cache(maxsize=1024)
def _array_length(cls: type, name: str, length: int) -> bytes:
    element_class(cls, name)
    _field_writer(cls, next(f for f in dataclasses.fields(cls) if f.name == name))  # not tagged
    buf = io.BytesIO()
    # The length writers of kio's own compact_array_writer / legacy_array_writer.
    (writers.write_compact_array_length if cls.__flexible__ else writers.write_legacy_array_length)(buf, length)
    return buf.getvalue()


def encode_around(cls: type, value: dict, name: str) -> tuple[bytes, bytes]:
    """(head, tail): the wire bytes of the `cls` entity built from `value` before and after its
    field `name`, so that `head + <that field encoded> + tail` is the whole entity. Lets a caller
    keep an element's fixed part and re-encode only the field that changes."""
    head, _, tail = _chunks(build(cls, {**value, name: Encoded(b"")}))
    return head, tail


@cache
def _tagged(field: dataclasses.Field) -> bool:
    return get_field_tag(field) is not None


@cache
def _field_writer(cls: type, field: dataclasses.Field) -> typing.Callable:
    if _tagged(field):
        raise ValueError(f"{cls.__name__}.{field.name} is a tagged field: it cannot be pre-encoded")
    return get_field_writer(field, flexible=cls.__flexible__, is_request_header=False, is_tag=False)


def _chunks(entity: object) -> list[bytes]:
    """An entity holding pre-encoded fields in wire format: the bytes between them, and theirs."""
    cls = type(entity)
    chunks = []
    buf = io.BytesIO()
    for field in dataclasses.fields(entity):  # type: ignore[arg-type]
        value = getattr(entity, field.name)
        if isinstance(value, Encoded):
            chunks += [buf.getvalue(), value.data]
            buf = io.BytesIO()
        elif _tagged(field):
            if value != field.default:
                raise ValueError(f"{cls.__name__}: tagged fields are not written next to pre-encoded ones")
        else:
            _field_writer(cls, field)(buf, value)
    if cls.__flexible__:
        writers.write_empty_tagged_fields(buf)
    chunks.append(buf.getvalue())
    return chunks


def serialize(entity: object) -> bytes:
    if any(isinstance(getattr(entity, f.name), Encoded) for f in dataclasses.fields(entity)):  # type: ignore[arg-type]
        return b"".join(_chunks(entity))
    buf = io.BytesIO()
    _writer(type(entity))(buf, entity)
    return buf.getvalue()


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def peek_header(body: bytes) -> tuple[int, int, int]:
    """api_key, api_version, correlation_id of a request body (before any parsing)."""
    if len(body) < 8:
        raise ProtocolError("request shorter than its header")
    return struct.unpack_from(">hhi", body)


def decode_request(body: bytes) -> tuple[object, object]:
    """(header, request entity) of a framed request's body; raises ProtocolError when invalid."""
    api_key, version, _ = peek_header(body)
    try:
        cls = request_schema(api_key, version)
    except Exception:
        raise ProtocolError(f"unknown {api_name(api_key)} v{version}") from None
    return _decode(cls, body, f"{api_name(api_key)} v{version}")


def _decode(cls: type, body: bytes, what: str) -> tuple[object, object]:
    """(header, entity) of a message body: validated first (see `frames`), so that kio's native
    reader never sees a length the body cannot hold, then read by kio."""
    try:
        used = frames.check(cls.__header_schema__, body, 0)
        frames.check(cls, body, used)
        header, used = _reader(cls.__header_schema__)(body, 0)
        entity, _ = _reader(cls)(body, used)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: B036 - kio raises assorted errors on garbage (a Rust
        # panic arrives as a BaseException); all mean "bad frame"
        raise ProtocolError(f"cannot decode {what}: {str(exc) or type(exc).__name__}") from None
    return header, entity


def encode_response(entity: object, correlation_id: int) -> bytes:
    cls = type(entity)
    header = cls.__header_schema__(correlation_id=correlation_id)
    return frame(serialize(header) + serialize(entity))


def encode_request(entity: object, correlation_id: int, client_id: str | None) -> bytes:
    cls = type(entity)
    header = build(cls.__header_schema__, {
        "request_api_key": cls.__api_key__, "request_api_version": cls.__version__,
        "correlation_id": correlation_id, "client_id": client_id,
    })
    return frame(serialize(header) + serialize(entity))


def decode_response(cls: type, body: bytes) -> tuple[int, object]:
    """(correlation_id, entity) of a response body of the given schema; raises ProtocolError
    when the body is not a valid `cls`."""
    header, entity = _decode(cls, body, cls.__name__)
    return header.correlation_id, entity  # type: ignore[attr-defined]
