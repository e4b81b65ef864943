"""Full Metadata answers are assembled from cached encoded pieces (handlers/core.py
`EncodedTopics`): after every kind of change they must equal, byte for byte, the answer kio's
own writer gives for the same state built afresh."""

from __future__ import annotations


import pytest

from kafka_shell.protocol import codec
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox import replication
from kafka_shell.sandbox.handlers import core
from tests.sandbox.wire import raw_frame

METADATA = 3


def _full_metadata_frame(sandbox, broker_id: int, version: int, correlation_id: int) -> bytes:
    """The raw answer frame of a full Metadata request sent over a real socket."""
    request_cls = codec.request_schema(METADATA, version)
    topics = [] if version == 0 else None  # v0 asks for every topic with an empty list
    request = codec.build(request_cls, {"topics": topics, "allow_auto_topic_creation": False})
    return raw_frame(sandbox, broker_id, request, correlation_id, "cache-test")


def _fresh_frame(sandbox, frame: bytes, version: int) -> bytes:
    """The same answer with its topics built from the cluster now and written by kio's writer
    (no cached piece): brokers, controller and cluster id are taken from the answer itself."""
    cls = codec.response_schema(METADATA, version)
    correlation_id, entity = codec.decode_response(cls, frame[4:])
    answer = codec.to_dict(entity)

    def build() -> bytes:
        answer["topics"] = [core.topic_metadata(sandbox.cluster, t) for t in sandbox.cluster.topics.values()]
        return codec.encode_response(codec.build(cls, answer), correlation_id)

    return sandbox.call(build)  # type: ignore[return-value]


def _assert_cached_equals_fresh(sandbox, version: int, broker_id: int = 1) -> int:
    frame = _full_metadata_frame(sandbox, broker_id, version, correlation_id=7)
    assert frame == _fresh_frame(sandbox, frame, version)
    _, entity = codec.decode_response(codec.response_schema(METADATA, version), frame[4:])
    return sum(len(t.partitions) for t in entity.topics)


def _set_isr(sandbox, topic: str, index: int, isr: list[int]) -> None:
    def go() -> None:
        replication.set_isr(sandbox.cluster, sandbox.cluster.partition(topic, index), isr)   # by records
    sandbox.call(go)


def _set_alive(sandbox, broker_id: int, alive: bool) -> None:
    def go() -> None:
        sandbox.cluster.brokers[broker_id].alive = alive
        sandbox.cluster.generation += 1   # liveness alone, as no record says it
    sandbox.call(go)


@pytest.mark.parametrize("version", [0, 4, 8, 12, 13])  # 0..8 legacy arrays, 9+ flexible
def test_cached_full_metadata_equals_a_fresh_answer_after_every_change(sandbox, admin, version):
    cluster = sandbox.cluster
    for i in range(6):
        sandbox.call(sandbox_admin.create_topic, cluster, f"t{i}", 4, 1 + i % 3)
    assert codec.response_schema(METADATA, version).__flexible__ == (version >= 9)
    assert _assert_cached_equals_fresh(sandbox, version) == 24
    assert _assert_cached_equals_fresh(sandbox, version) == 24  # repeated: the whole array reused

    sandbox.call(sandbox_admin.create_topic, cluster, "late", 3, 3)
    assert _assert_cached_equals_fresh(sandbox, version) == 27

    sandbox.stop_broker(2)  # leaders move, ISRs shrink, replicas on 2 go offline
    assert _assert_cached_equals_fresh(sandbox, version) == 27
    assert any(p.leader < 0 for t in cluster.topics.values() for p in t.partitions)  # some offline

    sandbox.start_broker(2)
    sandbox.call(replication.elect_all_preferred, sandbox.cluster)
    assert _assert_cached_equals_fresh(sandbox, version, broker_id=2) == 27

    late0 = cluster.partition("late", 0)
    _set_isr(sandbox, "late", 0, [late0.leader])
    assert _assert_cached_equals_fresh(sandbox, version) == 27
    # Only a broker's liveness changes (no partition state does): offline replicas must follow.
    follower = next(r for r in late0.replicas if r != late0.leader)
    state = core.partition_state(late0)
    _set_alive(sandbox, follower, False)
    assert core.partition_state(late0) == state
    assert _assert_cached_equals_fresh(sandbox, version, broker_id=late0.leader) == 27
    _set_alive(sandbox, follower, True)
    assert _assert_cached_equals_fresh(sandbox, version, broker_id=late0.leader) == 27

    sandbox.call(sandbox_admin.delete_topic, cluster, "t0")
    assert _assert_cached_equals_fresh(sandbox, version) == 23

    # A real client reads the same state from the cached answer.
    md = admin.list_topics(timeout=5)
    assert sorted(md.topics) == ["late", "t1", "t2", "t3", "t4", "t5"]
    late0 = md.topics["late"].partitions[0]
    assert late0.isrs == [cluster.partition("late", 0).leader]


def test_one_new_topic_reuses_every_other_topics_encoded_pieces(sandbox):
    cluster = sandbox.cluster
    for i in range(5):
        sandbox.call(sandbox_admin.create_topic, cluster, f"t{i}", 3, 3)
    _assert_cached_equals_fresh(sandbox, 12)
    cache = cluster.runtime.metadata_cache[12]
    before_topics, before_partitions = dict(cache.topics), dict(cache.partitions)
    sandbox.call(sandbox_admin.create_topic, cluster, "new", 3, 3)
    _assert_cached_equals_fresh(sandbox, 12)
    for key, pieces in before_topics.items():
        assert cache.topics[key] is pieces  # kept, not encoded again
    assert {k[0] for k in cache.topics} == {"t0", "t1", "t2", "t3", "t4", "new"}
    assert all(cache.partitions[k] is v for k, v in before_partitions.items() if k in cache.partitions)


@pytest.mark.parametrize("version", [4, 12])
def test_encode_array_and_encode_around_match_kios_writer(version):
    response_cls = codec.response_schema(METADATA, version)
    topic_cls = codec.element_class(response_cls, "topics")
    partition_cls = codec.element_class(topic_cls, "partitions")
    partitions = [{"partition_index": i, "leader_id": 1 + i % 3, "replica_nodes": [1, 2, 3][: 1 + i % 3],
                   "isr_nodes": [1 + i % 3]} for i in range(200)]  # 200: a two-byte compact length
    topic = {"name": "orders", "topic_id": codec.ZERO_UUID, "is_internal": False, "partitions": partitions}
    head, tail = codec.encode_around(topic_cls, topic, "partitions")
    encoded = [codec.serialize(codec.build(partition_cls, p)) for p in partitions]
    assembled = head + codec.encode_array(topic_cls, "partitions", encoded).data + tail
    assert assembled == codec.serialize(codec.build(topic_cls, topic))
    for n in (0, 1, 200):
        whole = codec.serialize(codec.build(response_cls, {"topics": [topic] * n}))
        pieces = codec.build(response_cls, {"topics": codec.encode_array(response_cls, "topics", [assembled] * n)})
        assert codec.serialize(pieces) == whole


@pytest.mark.parametrize("version", [1, 9, 12])
def test_named_topic_answers_equal_a_fresh_answer_after_every_change(sandbox, version):
    """Requests naming topics take each topic's cached element (`EncodedTopics.topic`)."""
    from kio.schema.errors import ErrorCode
    cluster = sandbox.cluster
    names = ["late", "nosuch", "t1"]
    request_cls = codec.request_schema(METADATA, version)
    response_cls = codec.response_schema(METADATA, version)

    def check(broker_id: int = 1) -> None:
        request = codec.build(request_cls, {"topics": [{"name": n} for n in names],
                                               "allow_auto_topic_creation": False})
        frame = raw_frame(sandbox, broker_id, request, 7, "named-test")
        correlation_id, entity = codec.decode_response(response_cls, frame[4:])
        answer = codec.to_dict(entity)

        def fresh() -> bytes:
            answer["topics"] = [core.topic_metadata(cluster, cluster.topics[n]) if n in cluster.topics else
                                {"error_code": ErrorCode.unknown_topic_or_partition, "name": n,
                                 "topic_id": codec.ZERO_UUID, "partitions": []} for n in names]
            return codec.encode_response(codec.build(response_cls, answer), correlation_id)

        assert frame == sandbox.call(fresh)

    sandbox.call(sandbox_admin.create_topic, cluster, "t1", 4, 2)
    sandbox.call(sandbox_admin.create_topic, cluster, "late", 30, 3)
    check()
    check()  # repeated: the cached elements
    sandbox.stop_broker(2)
    check()
    sandbox.start_broker(2)
    check(broker_id=2)
    follower = next(r for r in cluster.partition("late", 0).replicas if r != cluster.partition("late", 0).leader)
    _set_alive(sandbox, follower, False)  # liveness alone: offline replicas must follow
    check(broker_id=cluster.partition("late", 0).leader)
    _set_alive(sandbox, follower, True)
    sandbox.call(sandbox_admin.delete_topic, cluster, "late")
    check()
