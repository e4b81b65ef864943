"""Entity writers: kio's bytes, written faster.

kio's writer costs per entity more than the entity's own bytes: a call and a `struct.pack` per
field, a checked (phantom-typed) varint for each compact length, and for a flexible entity a
fresh buffer to count its tagged fields. A large answer (the 100,000s of replicas of
DescribeLogDirs, a ListOffsets of 10,000 partitions) is mostly that. So a writer is generated as
Python source once per class: a run of fixed-width fields goes out in one `struct.pack`, struct
fields through their own generated writers, compact strings and arrays with plain varints, the
rest (legacy strings, uuids, durations, times) through kio's own field writers; an entity whose
tagged fields all hold their defaults (nearly all do) ends with the one byte that says none
follow. One with a tagged field set is written by kio's writer, as is the request header (its
`client_id` is a special case in kio). tests/test_encoders.py checks the bytes against kio's
for every schema.
"""

from __future__ import annotations

import dataclasses
import struct
import typing

from kio.serial import entity_writer, writers
from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import (
    EntityField, EntityTupleField, PrimitiveField, PrimitiveTupleField, classify_field, get_field_tag,
    get_schema_field_type, is_optional,
)
from kio.serial._serialize import get_field_writer

from kafka_shell.protocol.compiled import compiled

Writer = typing.Callable[[typing.Any, typing.Any], None]
EntityClass: typing.TypeAlias = type[typing.Any]   # a kio entity class (see protocol.EntityClass)

_LENGTH_PREFIXED = ("string", "bytes", "records")
# struct format of each fixed-width kio type whose value packs as it is.
_PACKED = {"bool": "?", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i",
           "uint32": "I", "int64": "q", "uint64": "Q", "float64": "d"}


_writers: dict[EntityClass, Writer] = {}


def writer(cls: EntityClass) -> Writer:
    """A writer of `cls` entities: `writer(cls)(buffer, entity)`, as kio's `entity_writer`."""
    w = _writers.get(cls)
    if w is None:
        w = _writers[cls] = _generated(cls)
    return w


def _generated(cls: EntityClass) -> Writer:
    if cls.__name__ == "RequestHeader":
        return entity_writer(cls)
    namespace: dict[str, object] = {"MISSING": dataclasses.MISSING, "kio_writer": entity_writer(cls)}
    lines = ["def write(buf, e):"]
    tags = 0
    for f in dataclasses.fields(cls):
        if get_field_tag(f) is None:
            continue
        default, implicit = f.default, get_tagged_field_default(f)
        namespace[f"d{tags}"] = implicit if default is dataclasses.MISSING else default
        # kio leaves a tagged field out when it equals its default (or, without one, the implicit one).
        lines.append(f"    if e.{f.name} != d{tags}: return kio_writer(buf, e)")
        tags += 1
    lines.append("    w = buf.write")
    run: list[tuple[str, str]] = []    # (format, value expression) of fixed-width fields in a row

    def flush() -> None:
        if run:
            namespace[f"p{len(lines)}"] = struct.Struct(">" + "".join(fmt for fmt, _ in run)).pack
            lines.append(f"    w(p{len(lines)}({', '.join(value for _, value in run)}))")
            run.clear()

    for f in dataclasses.fields(cls):
        if get_field_tag(f) is not None:
            continue
        kind = classify_field(f)
        kafka_type = get_schema_field_type(f) if isinstance(kind, PrimitiveField) else None
        if kafka_type in _PACKED and not is_optional(f):
            run.append((_PACKED[kafka_type], f"e.{f.name}"))
        elif kafka_type == "error_code":
            run.append(("h", f"e.{f.name}"))     # an IntEnum: packs as its value
        else:
            flush()
            namespace[f"f{len(lines)}"] = field_writer(cls, f)
            lines.append(f"    f{len(lines)}(buf, e.{f.name})")
    flush()
    if cls.__flexible__:
        lines.append("    w(b'\\x00')")
    exec(compiled("\n".join(lines), f"<entity writer {cls.__name__}>"), namespace)  # noqa: S102
    return namespace["write"]  # type: ignore[return-value]


_layouts: dict[EntityClass, tuple[str, tuple[str, ...]] | None] = {}


def fixed_layout(cls: EntityClass) -> tuple[str, tuple[str, ...]] | None:
    """(struct format, field names) of a `cls` entity whose untagged fields are all fixed-width,
    written with its tagged fields at their defaults (flexible: the one byte saying none follow,
    a pad byte); None for a class with any other field."""
    if cls not in _layouts:
        _layouts[cls] = _fixed_layout(cls)
    return _layouts[cls]


def _fixed_layout(cls: EntityClass) -> tuple[str, tuple[str, ...]] | None:
    fmt, names = "", []
    for f in dataclasses.fields(cls):
        if get_field_tag(f) is not None:
            continue
        kind = classify_field(f)
        kafka_type = get_schema_field_type(f) if isinstance(kind, PrimitiveField) else None
        if kafka_type == "error_code":
            fmt += "h"
        elif kafka_type in _PACKED and not is_optional(f):
            fmt += _PACKED[kafka_type]
        else:
            return None
        names.append(f.name)
    return fmt + ("x" if cls.__flexible__ else ""), tuple(names)


def field_writer(cls: EntityClass, field: dataclasses.Field) -> Writer:
    """The writer of one untagged field of `cls`: kio's, but for struct fields (`writer`) and,
    in flexible versions, strings, bytes and arrays (the same bytes without kio's checked
    varint of each length)."""
    kind = classify_field(field)
    flexible = cls.__flexible__
    if isinstance(kind, EntityField | EntityTupleField):
        inner = writer(kind.type_)
        if kind.is_array:
            return _compact_array(inner) if flexible else writers.legacy_array_writer(inner)
        return _nullable(inner) if is_optional(field) else inner
    kafka_type = get_schema_field_type(field)
    if flexible and kafka_type in _LENGTH_PREFIXED:
        if isinstance(kind, PrimitiveField):
            return _compact_nullable_string if is_optional(field) else _compact_string
        return _compact_array(_compact_string)
    if flexible and isinstance(kind, PrimitiveTupleField) and kafka_type in _PACKED:
        return _compact_packed_array(_PACKED[kafka_type])
    return get_field_writer(field, flexible=flexible, is_request_header=False, is_tag=False)


def _nullable(inner: Writer) -> Writer:
    def write_nullable(buf: typing.Any, entity: object) -> None:
        if entity is None:
            buf.write(b"\xff")     # KIP-893's marker (kio's NullableEntityMarker.null: int8 -1)
        else:
            buf.write(b"\x01")
            inner(buf, entity)
    return write_nullable


_SMALL = [bytes((n,)) for n in range(128)]


def _uvarint(n: int) -> bytes:
    if n < 128:
        return _SMALL[n]
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _compact_nullable_string(buf: typing.Any, value: str | bytes | None) -> None:
    """kio's write_nullable_compact_string: length + 1 as a varint (0: null), then the bytes."""
    if value is None:
        buf.write(b"\x00")
        return
    if isinstance(value, str):
        value = value.encode()
    buf.write(_uvarint(len(value) + 1) + value)


def _compact_string(buf: typing.Any, value: str | bytes) -> None:
    if value is None:
        raise TypeError("Unexpectedly received None value")
    _compact_nullable_string(buf, value)


def _compact_array(inner: Writer) -> Writer:
    """kio's compact_array_writer: length + 1 as a varint (0: null), then each element."""
    def write_array(buf: typing.Any, items: typing.Sequence | None) -> None:
        if items is None:
            buf.write(b"\x00")
            return
        buf.write(_uvarint(len(items) + 1))
        for item in items:
            inner(buf, item)
    return write_array


def _compact_packed_array(fmt: str) -> Writer:
    """A compact array of fixed-width values, packed at once."""
    def write_array(buf: typing.Any, items: typing.Sequence | None) -> None:
        if items is None:
            buf.write(b"\x00")
            return
        buf.write(_uvarint(len(items) + 1) + struct.pack(f">{len(items)}{fmt}", *items))
    return write_array
