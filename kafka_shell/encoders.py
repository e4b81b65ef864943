"""Entity writers: kio's bytes, written faster.

kio's writer costs per entity more than the entity's own bytes: a call and a `struct.pack` per
field, and for a flexible entity a fresh buffer and a checked varint to count its tagged fields.
A large answer (the 100,000s of replicas of DescribeLogDirs, a ListOffsets of 10,000
partitions) is mostly that. So a writer is generated as Python source once per class: a run of
fixed-width fields goes out in one `struct.pack`, struct fields through their own generated
writers, every other field through kio's own field writer, and an entity whose tagged fields all
hold their defaults (nearly all do) ends with the one byte that says none follow. One with a
tagged field set is written by kio's writer, as is the request header (its `client_id` is a
special case in kio). tests/test_encoders.py checks the bytes against kio's for every schema.
"""

from __future__ import annotations

import dataclasses
import struct
import typing

from kio.serial import entity_writer, writers
from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import (
    EntityField, EntityTupleField, PrimitiveField, classify_field, get_field_tag, get_schema_field_type,
    is_optional,
)
from kio.serial._serialize import get_field_writer

Writer = typing.Callable[[typing.Any, typing.Any], None]
EntityClass: typing.TypeAlias = type[typing.Any]   # a kio entity class (see protocol.EntityClass)

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
            run.append(("h", f"e.{f.name}.value"))
        else:
            flush()
            namespace[f"f{len(lines)}"] = field_writer(cls, f)
            lines.append(f"    f{len(lines)}(buf, e.{f.name})")
    flush()
    if cls.__flexible__:
        lines.append("    w(b'\\x00')")
    exec(compile("\n".join(lines), f"<entity writer {cls.__name__}>", "exec"), namespace)  # noqa: S102
    return namespace["write"]  # type: ignore[return-value]


def field_writer(cls: EntityClass, field: dataclasses.Field) -> Writer:
    """kio's writer of one untagged field of `cls`, with `writer` for struct fields."""
    kind = classify_field(field)
    if not isinstance(kind, EntityField | EntityTupleField):
        return get_field_writer(field, flexible=cls.__flexible__, is_request_header=False, is_tag=False)
    inner = writer(kind.type_)
    if kind.is_array:
        return (writers.compact_array_writer if cls.__flexible__ else writers.legacy_array_writer)(inner)
    if not is_optional(field):
        return inner

    def write_nullable(buf: typing.Any, entity: object) -> None:
        if entity is None:
            buf.write(b"\xff")     # KIP-893's marker (kio's NullableEntityMarker.null: int8 -1)
        else:
            buf.write(b"\x01")
            inner(buf, entity)
    return write_nullable
