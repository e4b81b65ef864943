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

An array of structs may also hold an `Encoded` value, its bytes already in wire format (at any
depth; not in an entity kio writes): `packed_array` makes one from columns of fixed-width
values and strings the same in every element (`packed_rows` from rows), without an entity per
element (the 100,000s of partitions of a snapshot's ListOffsets and DescribeLogDirs, the 10,000s
of a group's OffsetFetch).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import struct
import typing

from kio.serial import entity_writer, writers
from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import (
    EntityField, EntityTupleField, PrimitiveField, PrimitiveTupleField, classify_field, get_field_tag,
    get_schema_field_type, is_optional,
)
from kio.serial._serialize import get_field_writer

from kafka_shell.base.compiled import compiled

Writer = typing.Callable[[typing.Any, typing.Any], None]
EntityClass: typing.TypeAlias = type[typing.Any]   # a kio entity class (see protocol.EntityClass)

_LENGTH_PREFIXED = ("string", "bytes", "records")
# struct format of each fixed-width kio type whose value packs as it is.
_PACKED = {"bool": "?", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i",
           "uint32": "I", "int64": "q", "uint64": "Q", "float64": "d"}


_writers: dict[EntityClass, Writer] = {}


@dataclasses.dataclass(frozen=True)
class Encoded:
    """A field value already in wire format: an array of structs with its length (see
    `packed_array` and codec.encode_array). Writers copy it."""
    data: bytes


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


def field_writer(cls: EntityClass, field: dataclasses.Field) -> Writer:
    """The writer of one untagged field of `cls`: kio's, but for struct fields (`writer`) and,
    in flexible versions, strings, bytes and arrays (the same bytes without kio's checked
    varint of each length)."""
    kind = classify_field(field)
    flexible = cls.__flexible__
    if isinstance(kind, EntityField | EntityTupleField):
        inner = writer(kind.type_)
        if kind.is_array:
            return _compact_array(inner) if flexible else _or_encoded(writers.legacy_array_writer(inner))
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
    def write_array(buf: typing.Any, items: typing.Any) -> None:
        if items is None:
            buf.write(b"\x00")
            return
        if items.__class__ is Encoded:
            buf.write(items.data)
            return
        buf.write(_uvarint(len(items) + 1))
        for item in items:
            inner(buf, item)
    return write_array


def _or_encoded(write: Writer) -> Writer:
    def write_array(buf: typing.Any, items: typing.Any) -> None:
        if items.__class__ is Encoded:
            buf.write(items.data)
        else:
            write(buf, items)
    return write_array


def array_length(flexible: bool, length: int) -> bytes:
    """The length of an array of `length` elements as kio writes it (compact in flexible
    versions: length + 1 as a varint)."""
    return _uvarint(length + 1) if flexible else struct.pack(">i", length)


def packed_array(cls: EntityClass, length: int, columns: dict[str, typing.Any]) -> Encoded:
    """An array of `length` `cls` elements given column-wise, written at once without an entity
    each: `columns` maps a field to its `length` values or to one value for all; a field left out
    takes its default (else 0), a name `cls` lacks is ignored (versions differ). For elements of
    fixed-width fields and strings with one value for all (OffsetFetch's empty metadata), none of
    them tagged (ValueError otherwise); the same bytes as `writer(cls)` of each element."""
    fields, codes = _packed_format(cls)
    given: list[typing.Iterable] = []
    fmt = ">"
    for (name, default), code in zip(fields, codes):
        value = columns.get(name, default)
        if code is None:   # a string: its bytes, the same in every element
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{cls.__name__}.{name}: a string packs only as one value for all elements")
            value = _string_bytes(cls.__flexible__, value)
            code = f"{len(value)}s"
        fmt += code
        if isinstance(value, typing.Sequence) and not isinstance(value, bytes):
            if len(value) != length:
                raise ValueError(f"{cls.__name__}.{name}: {len(value)} values for {length} elements")
            given.append(value)
        else:
            given.append(itertools.repeat(value, length))
    element = _struct(fmt + ("x" if cls.__flexible__ else ""))
    data = b"".join(map(element.pack, *given)) if given else element.pack() * length
    return Encoded(array_length(cls.__flexible__, length) + data)


def packed_rows(cls: EntityClass, names: typing.Sequence[str], rows: typing.Sequence[tuple]) -> Encoded:
    """`packed_array` of elements given as rows: values of the fields `names`, in that order."""
    fields, codes = _packed_format(cls)
    if None not in codes and tuple(names) == tuple(name for name, _ in fields):   # as they are (no version lacks one)
        element = _struct(">" + "".join(typing.cast(list[str], codes)) + ("x" if cls.__flexible__ else ""))
        return Encoded(array_length(cls.__flexible__, len(rows)) + b"".join(itertools.starmap(element.pack, rows)))
    return packed_array(cls, len(rows), dict(zip(names, zip(*rows))) if rows else {})


_formats: dict[EntityClass, tuple[tuple[tuple[str, object], ...], tuple[str | None, ...]]] = {}
_struct = functools.lru_cache(maxsize=256)(struct.Struct)


def _packed_format(cls: EntityClass) -> tuple[tuple[tuple[str, object], ...], tuple[str | None, ...]]:
    """((field, default), ...) and the struct code of each field of a `cls` element (None: a
    string). An element ends with an empty tagged-field count, a zero byte, in flexible versions."""
    found = _formats.get(cls)
    if found is None:
        names, codes = [], []
        for f in dataclasses.fields(cls):
            kind = classify_field(f)
            kafka_type = get_schema_field_type(f) if isinstance(kind, PrimitiveField) else None
            code = "h" if kafka_type == "error_code" else _PACKED.get(kafka_type or "")
            if (code is None and kafka_type != "string") or (is_optional(f) and code is not None) \
                    or get_field_tag(f) is not None:
                raise ValueError(f"{cls.__name__}.{f.name} is not a fixed-width field: it cannot be packed")
            names.append((f.name, 0 if f.default is dataclasses.MISSING else f.default))
            codes.append(code)
        found = _formats[cls] = (tuple(names), tuple(codes))
    return found


def _string_bytes(flexible: bool, value: str | None) -> bytes:
    """A string as kio writes it: compact (length + 1 as a varint, 0: null) in flexible
    versions, else an int16 length (-1: null)."""
    if value is None:
        return b"\x00" if flexible else b"\xff\xff"
    data = value.encode()
    return (_uvarint(len(data) + 1) if flexible else struct.pack(">h", len(data))) + data


def _compact_packed_array(fmt: str) -> Writer:
    """A compact array of fixed-width values, packed at once."""
    def write_array(buf: typing.Any, items: typing.Sequence | None) -> None:
        if items is None:
            buf.write(b"\x00")
            return
        buf.write(_uvarint(len(items) + 1) + struct.pack(f">{len(items)}{fmt}", *items))
    return write_array
