"""The generated entity writers (kafka_shell/protocol/encoders.py) write exactly kio's bytes: for every
request and response schema of every version, the header schemas and our extension's, on
entities hypothesis draws from the schemas' own types (tagged fields set or not, nulls, empty and
long arrays) and on the zero-valued entity of each class."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.serial import entity_writer
from kio.static.primitive import Records

from kafka_shell.protocol import codec, encoders, frames
from tests import frame_fuzz



def with_nested(cls: type) -> set[type]:
    """`cls` and the classes of its struct fields, all the way down."""
    return {cls}.union(*(with_nested(f.nested) for f in frames._fields(cls) if f.nested is not None))


CLASSES = sorted(set().union(*(with_nested(cls) for k, v in frame_fuzz.all_versions()
                               for cls in (codec.request_schema(k, v), codec.response_schema(k, v))
                               for cls in (cls, cls.__header_schema__))),
                 key=lambda cls: (cls.__module__, cls.__qualname__))
# kio registers strategies for its phantom types but the records field's (any bytes).
st.register_type_strategy(Records, st.binary(max_size=64).map(Records))
API_KEYS = sorted({k for k, _ in frame_fuzz.all_versions()})


def written(write, entity: object) -> bytes | type[BaseException]:
    """The bytes `write` writes, or the type of the error it raises (a value out of its field's
    range, such as a drawn timedelta wider than int32 milliseconds, fails both ways)."""
    buf = io.BytesIO()
    try:
        write(buf, entity)
    except Exception as exc:  # noqa: BLE001 - compared, not swallowed
        return type(exc)
    return buf.getvalue()


def test_every_class_is_covered():
    names = {cls.__name__ for cls in CLASSES}
    assert {"MetadataResponse", "ListOffsetsRequest", "DescribeLogDirsResponse", "RequestHeader",
            "ResponseHeader", "GetReplicaLogInfoRequest", "MetadataResponsePartition"} <= names
    assert len(CLASSES) > 1500


def test_the_zero_entity_of_each_class():
    differ = []
    for cls in CLASSES:
        entity = codec.build(cls, {})
        if written(encoders.writer(cls), entity) != written(entity_writer(cls), entity):
            differ.append(f"{cls.__module__}.{cls.__qualname__}")
    assert not differ


@pytest.mark.parametrize("api_key", API_KEYS)
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_drawn_entities_of_each_api(api_key, data):
    versions = [v for k, v in frame_fuzz.all_versions() if k == api_key]
    version = data.draw(st.sampled_from(versions))
    for cls in (codec.request_schema(api_key, version), codec.response_schema(api_key, version)):
        entity = data.draw(st.from_type(cls))
        assert written(encoders.writer(cls), entity) == written(entity_writer(cls), entity)


# Every array of structs whose elements `codec.pack_array` can pack (all fields fixed-width).
PACKABLE = sorted({(cls, f.name) for cls in CLASSES for f in frames._fields(cls)
                   if f.is_array and f.nested is not None and encoders.fixed_layout(f.nested) is not None},
                  key=lambda pair: (pair[0].__module__, pair[0].__qualname__, pair[1]))
_VALUES = {"?": lambda i: i % 2 == 0, "b": lambda i: i % 256 - 128, "B": lambda i: i % 256,
           "h": lambda i: i * 7 % 65536 - 32768, "H": lambda i: i * 7 % 65536, "i": lambda i: i * 7919 - 2**20,
           "I": lambda i: i * 7919, "q": lambda i: i * 2**33 - 1, "Q": lambda i: i * 2**33, "d": lambda i: i / 3}


def test_packed_arrays_are_the_elements_written_one_by_one():
    assert any(cls.__name__ == "ListOffsetsTopic" for cls, _ in PACKABLE)
    differ = []
    for cls, name in PACKABLE:
        element = codec.element_class(cls, name)
        fmt, names = encoders.fixed_layout(element)
        errors = {f.name for f in frames._fields(element) if f.kafka_type == "error_code"}   # valid codes only
        makers = [(lambda i: i % 4 - 1) if n in errors else _VALUES[code] for n, code in zip(names, fmt.rstrip("x"))]
        rows = [tuple(make(i + j) for j, make in enumerate(makers)) for i in range(300)]
        one_by_one = codec.encode_array(cls, name, [codec.serialize(codec.build(element, dict(zip(names, row))))
                                                     for row in rows])
        # The last field fixed, the others in columns out of order: the same bytes.
        *columns, last = names
        packed = codec.pack_array(cls, name, tuple(reversed(columns)),
                                  [tuple(reversed(row[:-1])) for row in rows], **{last: rows[0][-1]}) if columns else None
        expected = codec.encode_array(cls, name, [codec.serialize(codec.build(element, {**dict(zip(names, row)),
                                                                                         last: rows[0][-1]}))
                                                  for row in rows])
        if codec.pack_array(cls, name, names, rows) != one_by_one or (packed is not None and packed != expected):
            differ.append(f"{cls.__module__}.{cls.__qualname__}.{name}")
    assert not differ


def test_a_packed_element_needs_every_field():
    cls = codec.element_class(codec.request_schema(2, 11), "topics")
    with pytest.raises(ValueError, match="timestamp needs a value"):
        codec.pack_array(cls, "partitions", ("partition_index",), [(0,)])
    with pytest.raises(ValueError, match="variable width"):
        codec.pack_array(codec.request_schema(2, 11), "topics", ("name",), [("t",)])


def test_packed_topics_are_the_request_built_from_dicts():
    """ListOffsets of every version: topics and their partitions packed (`pack_nested`), a topic
    named twice kept twice, are the bytes of the request built from dicts."""
    groups = [("t-a", [(p,) for p in range(300)]), ("t-b", [(0,), (7,)]), ("t-a", [(9,)])]
    for version in codec.kio_versions(2):
        cls = codec.request_schema(2, version)
        packed = codec.pack_nested(cls, "topics", "name", "partitions", groups, ("partition_index",),
                                   timestamp=-2, current_leader_epoch=-1, max_num_offsets=1)
        topics = [{"name": t, "partitions": [{"partition_index": p, "timestamp": -2, "current_leader_epoch": -1,
                                              "max_num_offsets": 1} for (p,) in rows]} for t, rows in groups]
        body = {"replica_id": -1, "isolation_level": 0}
        assert (codec.serialize(codec.build(cls, {**body, "topics": packed}))
                == codec.serialize(codec.build(cls, {**body, "topics": topics}))), version
