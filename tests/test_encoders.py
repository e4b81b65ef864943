"""The generated entity writers (kafka_shell/protocol/encoders.py) write exactly kio's bytes: for every
request and response schema of every version, the header schemas and our extension's, on
entities hypothesis draws from the schemas' own types (tagged fields set or not, nulls, empty and
long arrays) and on the zero-valued entity of each class. `packed_array` (arrays of fixed-width
elements written column-wise, without an entity each) writes kio's bytes of the same array, at
any depth of the entity that holds it."""

from __future__ import annotations

import dataclasses
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.serial import entity_writer, writers
from kio.static.primitive import Records

from kafka_shell.protocol import codec, encoders, frames
from kafka_shell.admin import offsets
from kafka_shell.protocol.codes import ApiKey
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


def packable(cls: type) -> bool:
    try:
        encoders.packed_array(cls, 0, {})
    except ValueError:
        return False
    return True


PACKABLE = [cls for cls in CLASSES if packable(cls)]


def kio_array(cls: type, entities: list) -> bytes:
    buf = io.BytesIO()
    (writers.compact_array_writer if cls.__flexible__ else writers.legacy_array_writer)(entity_writer(cls))(buf, entities)
    return buf.getvalue()


def test_the_partitions_of_large_answers_are_packable():
    names = {cls.__name__ for cls in PACKABLE}
    assert {"ListOffsetsPartition", "ListOffsetsPartitionResponse", "DescribeLogDirsPartition"} <= names


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_packed_arrays_are_kio_arrays(data):
    cls = data.draw(st.sampled_from(PACKABLE))
    entities = data.draw(st.lists(st.from_type(cls), max_size=6))
    # A string packs as one value for all elements: the first entity's, given to each.
    strings = {f.name for f, code in zip(frames._fields(cls), encoders._packed_format(cls)[1]) if code is None}
    entities = [dataclasses.replace(e, **{n: getattr(entities[0], n) for n in strings}) for e in entities]
    columns = {f.name: getattr(entities[0], f.name) if f.name in strings else [getattr(e, f.name) for e in entities]
               for f in frames._fields(cls) if not (f.name in strings and not entities)}
    expected = written(lambda buf, items: buf.write(kio_array(cls, items)), entities)
    if isinstance(expected, bytes):
        assert encoders.packed_array(cls, len(entities), columns).data == expected
    else:   # a drawn value out of its field's range
        with pytest.raises(Exception):  # noqa: B017, PT011 - kio refuses it too
            encoders.packed_array(cls, len(entities), columns)


def test_a_packed_array_takes_one_value_for_all_and_defaults():
    cls = codec.element_class(codec.element_class(codec.response_schema(ApiKey.LIST_OFFSETS, 9), "topics"), "partitions")
    packed = encoders.packed_array(cls, 3, {"partition_index": [0, 1, 2], "error_code": 0, "not_in_v9": 7})
    made = [codec.build(cls, {"partition_index": i, "error_code": 0}) for i in range(3)]   # timestamps, offsets: -1
    assert packed.data == kio_array(cls, made)
    with pytest.raises(ValueError, match="2 values for 3 elements"):
        encoders.packed_array(cls, 3, {"partition_index": [0, 1]})


def test_packed_rows_in_every_version():
    """Rows of the sandbox's ListOffsets answers: their fields as they are (v4+), or with one the
    version lacks (leader_epoch, v1-v3)."""
    names = ("partition_index", "error_code", "timestamp", "offset", "leader_epoch")
    rows = [(0, 0, -1, 42, 3), (7, 6, -1, -1, -1)]
    for version in range(1, max(codec.kio_versions(ApiKey.LIST_OFFSETS)) + 1):
        cls = codec.element_class(codec.element_class(codec.response_schema(ApiKey.LIST_OFFSETS, version), "topics"),
                                  "partitions")
        made = [codec.build(cls, dict(zip(names, r))) for r in rows]
        assert encoders.packed_rows(cls, names, rows).data == kio_array(cls, made)
        assert encoders.packed_rows(cls, names, []).data == kio_array(cls, [])


def test_offset_fetch_partitions_pack_with_one_metadata_for_all():
    """The sandbox's OffsetFetch answers (a group's 10,000s of partitions): the metadata string,
    the same in each, packed with the numbers, in every version, flexible or not."""
    names = ("partition_index", "committed_offset", "committed_leader_epoch", "error_code")
    rows = [(0, 42, 3, 0), (7, -1, -1, 0)]
    for version in codec.kio_versions(ApiKey.OFFSET_FETCH):
        cls = codec.response_schema(ApiKey.OFFSET_FETCH, version)
        cls = codec.element_class(cls, "groups") if version >= 8 else cls
        cls = codec.element_class(codec.element_class(cls, "topics"), "partitions")
        for metadata in ("", "from a client", None):   # nullable in every version
            columns = {**dict(zip(names, zip(*rows))), "metadata": metadata}
            made = [codec.build(cls, {**dict(zip(names, r)), "metadata": metadata}) for r in rows]
            assert encoders.packed_array(cls, 2, columns).data == kio_array(cls, made)
    with pytest.raises(ValueError, match="one value for all"):
        encoders.packed_array(cls, 2, {"partition_index": [0, 1], "metadata": ["a", "b"]})


def test_nested_packed_arrays_write_as_entities_do():
    """A packed array deep in an answer (DescribeLogDirs' partitions in each dir's topics), in
    flexible and legacy versions."""
    for version in (1, 4):
        response = codec.response_schema(ApiKey.DESCRIBE_LOG_DIRS, version)
        partition = codec.element_class(codec.element_class(codec.element_class(response, "results"), "topics"), "partitions")
        rows = [(0, 10, 0, False), (3, 0, 5, True)]

        def answer(partitions):
            return {"error_code": 0, "results": [{"error_code": 0, "log_dir": "/d", "topics": [
                {"name": "t", "partitions": partitions}, {"name": "u", "partitions": partitions[:0]}]}]}
        names = ("partition_index", "partition_size", "offset_lag", "is_future_key")
        as_dicts = [dict(zip(names, r)) for r in rows]
        packed = codec.packed_array(partition, 2, dict(zip(names, zip(*rows))))
        assert packed.data == kio_array(partition, [codec.build(partition, d) for d in as_dicts])
        with_packed = answer(as_dicts)
        with_packed["results"][0]["topics"] = [{"name": "t", "partitions": packed},
                                               {"name": "u", "partitions": codec.packed_array(partition, 0, {})}]
        assert codec.serialize(codec.build(response, with_packed)) == codec.serialize(codec.build(response, answer(as_dicts)))


def test_list_offsets_requests_are_those_of_entities():
    """The shell's ListOffsets bodies (packed column-wise) in every version, beside the same
    request made of entities."""
    keys = [("a", 0), ("a", 1), ("bb", 3), ("a", 9)]
    for version in codec.kio_versions(ApiKey.LIST_OFFSETS):
        for timestamp, replica in ((offsets.LATEST, -1), (offsets.EARLIEST, -2), (1_700_000_000_000, -1)):
            packed = offsets._list_offsets_body(timestamp, replica)(keys, version)
            topics: dict[str, list[dict]] = {}
            for t, p in keys:
                topics.setdefault(t, []).append({"partition_index": p, "timestamp": timestamp,
                                                 "current_leader_epoch": -1, "max_num_offsets": 1})
            made = {"replica_id": replica, "isolation_level": 0,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
            assert codec.serialize(codec.build_request(ApiKey.LIST_OFFSETS, version, packed)) == \
                codec.serialize(codec.build_request(ApiKey.LIST_OFFSETS, version, made))
