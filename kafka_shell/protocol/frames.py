"""Frame validation: every length in a Kafka message is checked against the bytes left in its
frame before kio's native (Rust) reader sees it.

kio's reader bounds-checks strings and bytes, but reserves room for an array before reading
its elements (`Vec::with_capacity(n)`): an array claiming 2^32 elements in a 21-byte frame makes
it ask for 32 GiB, and a failed allocation aborts the whole process, where no `except` can catch
it. So a frame is walked first, field by field, as kio will read it (same field classification,
same nullability rules, the request header's legacy `client_id`), and is refused with
`MalformedFrame` (which `protocol` turns into its ProtocolError) when any length claims more than the bytes left could hold:

- an array of n elements needs n * (the smallest encoding of one element) bytes;
- a string, bytes or records field needs its length in bytes;
- a tagged field needs its declared size, and must fill it exactly (kio reads a known tagged
  field by its type and ignores the size, so a mismatch would make kio read bytes we did not);
- an array or string may be null only where its schema says so (kio would hand a handler None
  where it expects a tuple; Kafka refuses such a message: "non-nullable field topics was
  serialized as null").

A validator is generated as Python source once per class (fixed-size runs folded into one
step, arrays of fixed-size elements skipped in one step, nested structs inlined) and cached.
"""

from __future__ import annotations

import dataclasses
import struct
import typing
from functools import cache

from kio.serial._introspect import (
    EntityField, EntityTupleField, PrimitiveTupleField, classify_field, get_field_tag,
    get_schema_field_type, is_optional,
)

from kafka_shell.base.compiled import compiled

# Wire sizes of the fixed-size kio types.
_FIXED = {
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4,
    "uint32": 4, "timedelta_i32": 4, "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8,
    "datetime_i64": 8, "uuid": 16,
}
_LENGTH_PREFIXED = {"string", "bytes", "records"}

_int16 = struct.Struct(">h").unpack_from
_int32 = struct.Struct(">i").unpack_from

Validator = typing.Callable[[bytes, int, int], int]


_NOT_NULLABLE = "null, which its schema does not allow"


class MalformedFrame(ValueError):
    """A length in the frame claims more than the frame holds, or the frame ends early."""


def check(cls: type, buf: bytes, offset: int = 0) -> int:
    """Walk one `cls` entity in `buf` from `offset` as kio would read it; return where it ends.
    Raises MalformedFrame when a length claims more than the bytes left, or the data ends early."""
    try:
        end = _validator(cls)(buf, offset, len(buf))
    except (IndexError, struct.error):
        raise MalformedFrame(f"{cls.__name__} ends early: the frame is truncated") from None
    if end > len(buf):
        raise MalformedFrame(f"{cls.__name__} ends early: the frame is truncated")
    return end


def _fail(message: str) -> typing.NoReturn:
    raise MalformedFrame(message)


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint as kio reads it (at most 5 bytes), and the position after it."""
    value = 0
    for i in range(5):
        byte = buf[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return value, pos + i + 1
    _fail("a varint is longer than 5 bytes")


def _flexible(cls: type) -> bool:
    """Whether kio's `cls` uses the compact (KIP-482) encoding."""
    return bool(cls.__flexible__)  # type: ignore[attr-defined]


@cache
def _validator(cls: type) -> Validator:
    source = _Generator().function(cls)
    namespace = {"uvarint": _uvarint, "int16": _int16, "int32": _int32, "fail": _fail}
    exec(compiled(source, f"<frame validator {cls.__name__}>"), namespace)  # noqa: S102
    return namespace["check"]  # type: ignore[return-value]


@dataclasses.dataclass(frozen=True)
class _Field:
    """One field as kio's native reader classifies it."""
    name: str
    kafka_type: str | None  # None for structs
    nested: type | None
    is_array: bool
    nullable: bool  # a null (string, bytes, struct or array) is allowed
    tag: int | None


@cache
def _fields(cls: type) -> tuple[_Field, ...]:
    out = []
    is_request_header = cls.__name__ == "RequestHeader"
    for f in dataclasses.fields(cls):
        kind = classify_field(f)
        tag = get_field_tag(f)
        if is_request_header and f.name == "client_id":
            # kio reads the header's client_id as a legacy nullable string, even in header v2.
            out.append(_Field(f.name, "legacy_client_id", None, False, True, tag))
        elif isinstance(kind, (EntityField, EntityTupleField)):
            is_array = isinstance(kind, EntityTupleField)
            out.append(_Field(f.name, None, kind.type_, is_array, is_optional(f), tag))
        else:
            is_array = isinstance(kind, PrimitiveTupleField)
            # kio types every tagged field optional (absent is None): no null is refused there.
            nullable = tag is not None or is_optional(f)
            out.append(_Field(f.name, get_schema_field_type(f), None, is_array, nullable, tag))
    return tuple(out)


@cache
def min_size(cls: type) -> int:
    """The fewest bytes one `cls` entity can take on the wire."""
    size = 1 if _flexible(cls) else 0  # the tagged-field count
    for f in _fields(cls):
        if f.tag is None:
            size += _min_field_size(cls, f)
    return size


def _min_field_size(cls: type, f: _Field) -> int:
    if f.is_array:
        return 1 if _flexible(cls) else 4
    if f.nested is not None:
        return 1 if f.nullable else min_size(f.nested)
    return _min_primitive_size(cls, f.kafka_type or "")


def _min_primitive_size(cls: type, kafka_type: str) -> int:
    if kafka_type in _FIXED:
        return _FIXED[kafka_type]
    if kafka_type == "legacy_client_id":
        return 2
    if _flexible(cls):
        return 1
    return 2 if kafka_type == "string" else 4


class _Generator:
    """Python source of one validator function: `check(buf, pos, end) -> pos`."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names = 0

    def function(self, cls: type) -> str:
        self.lines = ["def check(buf, pos, end):"]
        self.entity(cls, 1, "end", cls.__name__)
        self.emit(1, "return pos")
        return "\n".join(self.lines) + "\n"

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)

    def name(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def varint(self, indent: int, target: str) -> None:
        """target = the unsigned varint at pos (a one-byte fast path inline)."""
        self.emit(indent, f"{target} = buf[pos]")
        self.emit(indent, f"if {target} < 128:")
        self.emit(indent + 1, "pos += 1")
        self.emit(indent, "else:")
        self.emit(indent + 1, f"{target}, pos = uvarint(buf, pos)")

    def entity(self, cls: type, indent: int, end: str, path: str) -> None:
        fixed = 0
        for f in _fields(cls):
            if f.tag is not None:
                continue
            size = None if f.is_array or f.nested is not None else _FIXED.get(f.kafka_type or "")
            if size is not None:
                fixed += size  # fold runs of fixed-size fields into one step
                continue
            if fixed:
                self.emit(indent, f"pos += {fixed}")
                fixed = 0
            self.field(cls, f, indent, end, f"{path}.{f.name}")
        if fixed:
            self.emit(indent, f"pos += {fixed}")
        if _flexible(cls):
            self.tagged_fields(cls, indent, end, path)

    def field(self, cls: type, f: _Field, indent: int, end: str, path: str) -> None:
        if f.is_array:
            self.array(cls, f, indent, end, path)
        elif f.nested is not None:
            self.struct(f.nested, f.nullable, indent, end, path)
        else:
            self.primitive(cls, f.kafka_type or "", f.nullable, indent, end, path)

    def struct(self, nested: type, nullable: bool, indent: int, end: str, path: str) -> None:
        if nullable:
            # kio reads an int8 marker: -1 is null, anything else is followed by the struct.
            self.emit(indent, "pos += 1")
            self.emit(indent, "if buf[pos - 1] != 255:")
            indent += 1
        self.emit(indent, "pass")
        self.entity(nested, indent, end, path)

    def primitive(self, cls: type, kafka_type: str, nullable: bool, indent: int, end: str,
                  path: str) -> None:
        if kafka_type in _FIXED:
            self.emit(indent, f"pos += {_FIXED[kafka_type]}")
            return
        if kafka_type not in _LENGTH_PREFIXED and kafka_type != "legacy_client_id":
            raise TypeError(f"{path}: no frame validation for kafka_type {kafka_type!r}")
        n = self.name("n")
        if _flexible(cls) and kafka_type != "legacy_client_id":
            # Length + 1 as a varint (0: null). kio bounds-checks strings and refuses a null where
            # a value is required; all we need is where the field ends.
            self.emit(indent, f"{n} = buf[pos]")
            if not nullable and kafka_type == "string":
                self.emit(indent, f"if not {n}:")
                self.emit(indent + 1, f"fail('{path}: {_NOT_NULLABLE}')")
            self.emit(indent, f"if {n} < 128:")
            self.emit(indent + 1, f"pos += {n} or 1")
            self.emit(indent, "else:")
            self.emit(indent + 1, f"{n}, pos = uvarint(buf, pos)")
            self.emit(indent + 1, f"pos += {n} - 1")
        else:
            reader, width = ("int16", 2) if kafka_type in ("string", "legacy_client_id") else ("int32", 4)
            self.emit(indent, f"{n} = {reader}(buf, pos)[0]")
            self.emit(indent, f"pos += {width}")
            self.emit(indent, f"if {n} >= 0:")
            self.emit(indent + 1, f"pos += {n}")
            self.emit(indent, f"elif {n} != -1:" if nullable else f"elif {n} == -1:")
            self.emit(indent + 1, f"fail('{path}: length %d' % {n})" if nullable else f"fail('{path}: {_NOT_NULLABLE}')")
            if not nullable:
                self.emit(indent, "else:")
                self.emit(indent + 1, f"fail('{path}: length %d' % {n})")
        self.emit(indent, f"if pos > {end}:")
        self.emit(indent + 1, f"fail('{path}: its length runs past the end of the frame')")

    def array(self, cls: type, f: _Field, indent: int, end: str, path: str) -> None:
        if f.nested is not None:
            element_size = min_size(f.nested)
            fixed = None
        else:
            element_size = _min_primitive_size(cls, f.kafka_type or "")
            fixed = _FIXED.get(f.kafka_type or "")
        n = self.name("n")
        # The check that prevents the huge allocation: n elements of at least element_size bytes
        # each must fit in what is left.
        too_long = (f"if {n} * {max(element_size, 1)} > {end} - pos:",
                    f"fail('{path}: an array of %d elements in %d bytes' % ({n}, {end} - pos))")
        if _flexible(cls):
            # Length + 1 as a varint (0: null). A one-byte varint (under 127 elements) cannot ask
            # for a large allocation: only longer ones are checked.
            self.emit(indent, f"{n} = buf[pos]")
            if not f.nullable:
                self.emit(indent, f"if not {n}:")
                self.emit(indent + 1, f"fail('{path}: {_NOT_NULLABLE}')")
            if fixed is not None:
                self.emit(indent, f"if {n} < 2:")
                self.emit(indent + 1, "pos += 1")
                self.emit(indent, f"elif {n} < 128:")
                self.emit(indent + 1, f"pos += {n} * {fixed} - {fixed - 1}")
            else:
                self.emit(indent, f"if {n} < 128:")
                self.emit(indent + 1, "pos += 1")
                self.emit(indent + 1, f"{n} -= 1")
            self.emit(indent, "else:")
            self.emit(indent + 1, f"{n}, pos = uvarint(buf, pos)")
            self.emit(indent + 1, f"{n} -= 1")
            self.emit(indent + 1, too_long[0])
            self.emit(indent + 2, too_long[1])
            if fixed is not None:
                self.emit(indent + 1, f"pos += {n} * {fixed}")
                return
        else:
            self.emit(indent, f"{n} = int32(buf, pos)[0]")
            self.emit(indent, "pos += 4")
            self.emit(indent, f"if {n} < -1:")
            self.emit(indent + 1, f"fail('{path}: array length %d' % {n})")
            if not f.nullable:
                self.emit(indent, f"if {n} == -1:")
                self.emit(indent + 1, f"fail('{path}: {_NOT_NULLABLE}')")
            self.emit(indent, too_long[0])
            self.emit(indent + 1, too_long[1])
            if fixed is not None:
                self.emit(indent, f"if {n} > 0:")
                self.emit(indent + 1, f"pos += {n} * {fixed}")
                return
        self.emit(indent, f"for _ in range({n}):")  # empty for -1 (null) and 0
        if f.nested is not None:
            self.struct(f.nested, False, indent + 1, end, path + "[]")
        else:
            self.primitive(cls, f.kafka_type or "", False, indent + 1, end, path + "[]")

    def tagged_fields(self, cls: type, indent: int, end: str, path: str) -> None:
        tagged = [f for f in _fields(cls) if f.tag is not None]
        count, tag, size, stop = self.name("count"), self.name("tag"), self.name("size"), self.name("stop")
        self.emit(indent, "if not buf[pos]:")  # almost always: no tagged field
        self.emit(indent + 1, "pos += 1")
        self.emit(indent, "else:")
        indent += 1
        self.emit(indent, f"{count}, pos = uvarint(buf, pos)")
        self.emit(indent, f"if {count} * 2 > {end} - pos:")
        self.emit(indent + 1, f"fail('{path}: %d tagged fields in %d bytes' % ({count}, {end} - pos))")
        self.emit(indent, f"for _ in range({count}):")
        indent += 1
        self.varint(indent, tag)
        self.varint(indent, size)
        self.emit(indent, f"{stop} = pos + {size}")
        self.emit(indent, f"if {stop} > {end}:")
        self.emit(indent + 1, f"fail('{path}: tagged field %d of %d bytes runs past the end' % ({tag}, {size}))")
        for i, f in enumerate(tagged):
            self.emit(indent, f"{'if' if i == 0 else 'elif'} {tag} == {f.tag}:")
            self.field(cls, f, indent + 1, stop, f"{path}.{f.name}")
            self.emit(indent + 1, f"if pos != {stop}:")
            self.emit(indent + 2, f"fail('{path}.{f.name}: its value does not fill its tagged size')")
        if tagged:
            self.emit(indent, "else:")
            self.emit(indent + 1, f"pos = {stop}")
        else:
            self.emit(indent, f"pos = {stop}")
