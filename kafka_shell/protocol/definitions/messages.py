"""Message versions kio 0.6.5 lacks (the old ones Kafka 3.9 still serves, the newest ones of
4.4), declared at run time as kio declares its own classes, from the schemas tools/
kafka_definitions.py read from Kafka's jars; and Kafka's default of each request field a
version lacks, so that a handler reads any version's request the same way.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import uuid
from functools import cache

from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map
from kio.static.constants import EntityType
from kio.static.primitive import Records, f64, i8, i16, i32, i32Timedelta, i64, i64Timedelta, u16, u32

from kafka_shell.protocol.definitions import read_json

API_VERSIONS_KEY = 18

# kio's Python type of each of its kafka types.
_PYTHON_TYPES: dict[str, object] = {
    "int8": i8, "int16": i16, "int32": i32, "int64": i64, "uint16": u16, "uint32": u32, "float64": f64,
    "bool": bool, "uuid": uuid.UUID, "string": str, "bytes": bytes, "records": Records,
    "error_code": ErrorCode, "timedelta_i32": i32Timedelta, "timedelta_i64": i64Timedelta,
    "datetime_i64": datetime.datetime,
}


@cache
def _schemas(api_key: int) -> dict[tuple[str, int], dict]:
    """(side, version) -> schema of one API (messages/KEY.json: every release's, the newest
    wins; one file per API, so a line reads only the APIs it uses); {} where kio has them all."""
    try:
        data = read_json(f"messages/{api_key}.json")
    except FileNotFoundError:
        return {}
    return {(side, int(version)): schema for side, versions in data.items() for version, schema in versions.items()}


def versions(api_key: int) -> set[int]:
    """The versions of an API declared here (both sides present)."""
    return {v for (side, v) in _schemas(api_key) if side == "request"}


def api_name(api_key: int) -> str | None:
    """Kafka's name of an API kio lacks entirely (LeaderAndIsr), from its declared schemas."""
    name = next((s["name"] for (side, _), s in _schemas(api_key).items() if side == "request"), None)
    return None if name is None else name.removesuffix("Request")


@cache
def schema_class(api_key: int, side: str, version: int) -> type | None:
    """The kio-style entity class of a message version kio lacks, or None."""
    schema = _schemas(api_key).get((side, version))
    if schema is None:
        return None
    # Each header's module is imported as a message needs it (one-shot lines use one or two).
    if side == "request":
        header: type = _header("request", 2 if schema["flexible"] else 1)
        kind = EntityType.request
    else:
        flexible = schema["flexible"] and api_key != API_VERSIONS_KEY  # ApiVersions answers in header v0
        header = _header("response", 1 if flexible else 0)
        kind = EntityType.response
    return _declare(schema, api_key, version, header, kind)


def _header(side: str, version: int) -> type:
    """kio's RequestHeader or ResponseHeader of a version."""
    module = importlib.import_module(f"kio.schema.{side}_header.v{version}.header")
    return getattr(module, f"{side.title()}Header")


def _declare(schema: dict, api_key: int, version: int, header: type, kind: EntityType) -> type:
    fields = []
    for f in schema["fields"]:
        if "struct" in f:
            tp: object = _declare(f["struct"], api_key, version, header, EntityType.nested)
            metadata: dict = {}
        else:
            kafka_type = f["kafka_type"]
            if kafka_type == "error_code" and api_key not in api_key_map:
                # An API kio lacks may answer codes its ErrorCode lacks too (UnregisterController:
                # CONTROLLER_ID_NOT_REGISTERED, 136): read and write them as plain int16.
                kafka_type = "int16"
            tp = _PYTHON_TYPES[kafka_type]
            metadata = {"kafka_type": kafka_type}
        if f["array"]:
            tp = tuple[tp, ...]  # type: ignore[valid-type]
        if f["nullable"]:
            tp = tp | None  # type: ignore[operator]
        spec: dict = {"metadata": metadata}
        if f["tag"] is not None:
            metadata["tag"] = f["tag"]
            spec["default"] = () if f["array"] else None if f["nullable"] else _zero(f.get("kafka_type"))
        fields.append((f["name"], tp, dataclasses.field(**spec)))
    # Tagged fields carry defaults: kw_only lets them sit among the others, as kio's do.
    cls = dataclasses.make_dataclass(schema["name"], fields, frozen=True, slots=True, kw_only=True)
    for name, value in (("__type__", kind), ("__version__", i16(version)), ("__flexible__", schema["flexible"]),
                        ("__api_key__", i16(api_key)), ("__header_schema__", header)):
        setattr(cls, name, value)
    return cls


def _zero(kafka_type: str | None) -> object:
    return {"bool": False, "uuid": uuid.UUID(int=0), "string": "", "bytes": b"", "error_code": ErrorCode.none,
            "timedelta_i32": datetime.timedelta(0), "timedelta_i64": datetime.timedelta(0)}.get(kafka_type or "", 0)


# -- request field defaults ---------------------------------------------------------------------------

@cache
def _request_defaults() -> dict[int, dict[str, dict[str, dict]]]:
    data = read_json("request-defaults.json")
    return {int(k): v for k, v in data.items()}


def request_default(api_key: int, class_name: str, field: str) -> tuple[bool, object]:
    """(known, value): Kafka's default of a request field some version lacks."""
    spec = _request_defaults().get(api_key, {}).get(class_name, {}).get(field)
    return (False, None) if spec is None else (True, _value(spec["type"], spec["value"]))


def add_request_defaults(cls: type, api_key: int) -> None:
    """Give a request class (and its nested structs), as class attributes, Kafka's default of
    each field other versions of the message have and this one lacks: `request.field` then reads
    the schema's default on any version, in every handler alike."""
    defaults = _request_defaults().get(api_key, {})
    seen: set[type] = set()

    def visit(c: type) -> None:
        if c in seen:
            return
        seen.add(c)
        have = {f.name: f for f in dataclasses.fields(c)}
        for name, spec in defaults.get(c.__name__, {}).items():
            if name not in have and not hasattr(c, name):
                setattr(c, name, _value(spec["type"], spec["value"]))
        for f in have.values():
            inner = _nested(f.type)
            if inner is not None:
                visit(inner)

    visit(cls)


def _nested(tp: object) -> type | None:
    import types
    import typing
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        tp = next(a for a in typing.get_args(tp) if a is not type(None))
    if typing.get_origin(tp) is tuple:
        tp = typing.get_args(tp)[0]
    return tp if isinstance(tp, type) and dataclasses.is_dataclass(tp) else None


def _value(kafka_type: str, value: object) -> object:
    """A Java default as kio holds that kind of field."""
    if value is None:
        return None
    if isinstance(value, list):
        return tuple(value)
    if kafka_type == "uuid":
        import base64  # only uuid defaults need it
        return uuid.UUID(bytes=base64.urlsafe_b64decode(str(value) + "=="))
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=int(value))  # type: ignore[call-overload]
    if kafka_type == "error_code":
        return ErrorCode(int(value))  # type: ignore[call-overload]
    return value
