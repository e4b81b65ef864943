"""The classic group coordinator, seen by real confluent-kafka clients and, for exact error codes,
by hand-made requests on a socket."""

from __future__ import annotations

import socket
import struct
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from kio.schema.errors import ErrorCode

from kafka_shell.protocol import codec
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox import classic_groups as gc
from kafka_shell.sandbox.server import Sandbox

FIND_COORDINATOR, JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE, OFFSET_COMMIT, OFFSET_DELETE = \
    10, 11, 12, 13, 14, 15, 8, 47


class Wire:
    """One connection to one broker, speaking the Kafka protocol through our codec."""

    def __init__(self, sandbox: Sandbox, broker_id: int):
        self.sock = socket.create_connection(sandbox.address(broker_id), timeout=10)
        self.correlation = 0

    def send(self, api_key: int, version: int, data: dict) -> None:
        self.correlation += 1
        entity = codec.build(codec.request_schema(api_key, version), data)
        self.sock.sendall(codec.encode_request(entity, self.correlation, "wire-test"))

    def recv(self, api_key: int, version: int) -> dict:
        (size,) = struct.unpack(">i", self._exactly(4))
        _, entity = codec.decode_response(codec.response_schema(api_key, version), self._exactly(size))
        return codec.to_dict(entity)  # type: ignore[return-value]

    def call(self, api_key: int, version: int, data: dict) -> dict:
        self.send(api_key, version, data)
        return self.recv(api_key, version)

    def _exactly(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            assert chunk, "connection closed"
            buf += chunk
        return buf

    def close(self) -> None:
        self.sock.close()


def coordinator(sandbox: Sandbox, group: str) -> int:
    w = Wire(sandbox, 1)
    r = w.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})
    w.close()
    return r["coordinators"][0]["node_id"]


def _consumer(sandbox: Sandbox, group: str, **extra: object) -> Consumer:
    conf = {"bootstrap.servers": sandbox.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "heartbeat.interval.ms": 100, "log_level": 3}
    conf.update(extra)
    return Consumer(conf)


def _poll_until(consumer: Consumer, condition, what: str, limit_s: float = 20) -> None:
    """Drive the consumer until condition() holds (a wait, not a speed check)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        consumer.poll(0.05)


def _consume(consumer: Consumer, count: int, limit_s: float = 20) -> list:
    """The next `count` messages (a wait bounded by limit_s, not a speed check)."""
    out: list = []
    deadline = time.monotonic() + limit_s
    while len(out) < count:
        assert time.monotonic() < deadline, f"got {len(out)} of {count} messages"
        for m in consumer.consume(count - len(out), 0.1):
            assert not m.error(), m.error()
            out.append(m)
    return out


def _produce(sandbox: Sandbox, topic: str, count: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": sandbox.bootstrap, "linger.ms": 5, "log_level": 3})
    for i in range(count):
        p.produce(topic, value=b"m%d" % i, partition=i % partitions)
    assert p.flush(10) == 0


# -- protocol details ---------------------------------------------------------------------------


def test_java_hash_matches_java_string_hashcode():
    # Values of "...".hashCode() in Java.
    assert gc.java_hash("hello") == 99162322
    assert gc.java_hash("") == 0
    assert gc.java_hash("polygenelubricants") == -2147483648  # Integer.MIN_VALUE: Utils.abs -> 0


def test_find_coordinator_creates_offsets_topic_and_answers_batched_keys(sandbox):
    w = Wire(sandbox, 2)
    r = w.call(FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": ["a", "b", "hello"]})
    w.close()
    offsets = sandbox.cluster.topics[gc.OFFSETS_TOPIC]
    assert offsets.internal and offsets.configs["cleanup.policy"] == "compact"
    assert len(offsets.partitions) == 50 and len(offsets.partitions[0].replicas) == 3
    by_key = {c["key"]: c for c in r["coordinators"]}
    hello = offsets.partitions[99162322 % 50]
    assert by_key["hello"]["error_code"] == 0 and by_key["hello"]["node_id"] == hello.leader
    assert by_key["hello"]["port"] == sandbox.address(hello.leader)[1]
    assert sorted(by_key) == ["a", "b", "hello"]


def test_a_transactional_id_with_a_negative_hash_lives_where_kafka_puts_it(sandbox):
    # "payments-txn".hashCode() is -480581686 in Java: Utils.abs gives partition 36 of 50
    # (masking the sign bit would give 12).
    from kafka_shell.sandbox import transactions
    w = Wire(sandbox, 2)
    r = w.call(FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": ["payments-txn"]})
    w.close()
    assert transactions.partition_for(sandbox.cluster, "payments-txn") == 36
    state = sandbox.cluster.topics[transactions.TXN_TOPIC]
    assert (r["coordinators"][0]["error_code"], r["coordinators"][0]["node_id"]) == (0, state.partitions[36].leader)


def test_coordinator_not_available_and_not_coordinator():
    with Sandbox(brokers=3, configs={"offsets.topic.replication.factor": "1"}) as s:
        node = coordinator(s, "g1")
        other = next(b for b in (1, 2, 3) if b != node)
        w = Wire(s, other)
        r = w.call(HEARTBEAT, 4, {"group_id": "g1", "generation_id": 1, "member_id": "m"})
        assert r["error_code"] == ErrorCode.not_coordinator
        w.close()
        s.stop_broker(node)  # the only replica of the group's offsets partition
        w = Wire(s, other)
        r = w.call(FIND_COORDINATOR, 3, {"key": "g1", "key_type": 0})
        assert r["error_code"] == ErrorCode.coordinator_not_available and r["node_id"] == -1
        w.close()


def _join(w: Wire, group: str, member_id: str = "", version: int = 5, session_ms: int = 10000) -> dict:
    return w.call(JOIN, version, {
        "group_id": group, "session_timeout": session_ms, "rebalance_timeout": 5000,
        "member_id": member_id, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"}]})


def test_two_step_join_sync_heartbeat_errors_and_leave(sandbox):
    w = Wire(sandbox, coordinator(sandbox, "grp"))
    first = _join(w, "grp")
    assert first["error_code"] == ErrorCode.member_id_required and first["member_id"].startswith("wire-test-")
    assert _join(w, "grp", "not-a-member")["error_code"] == ErrorCode.unknown_member_id
    joined = _join(w, "grp", first["member_id"])
    member = first["member_id"]
    assert joined["error_code"] == 0 and joined["leader"] == member and joined["generation_id"] == 1
    assert joined["protocol_name"] == "range" and [m["member_id"] for m in joined["members"]] == [member]
    hb = {"group_id": "grp", "member_id": member}
    assert w.call(HEARTBEAT, 4, {**hb, "generation_id": 1})["error_code"] == 0  # CompletingRebalance
    synced = w.call(SYNC, 5, {**hb, "generation_id": 1, "protocol_type": "consumer",
                              "protocol_name": "range",
                              "assignments": [{"member_id": member, "assignment": b"plan"}]})
    assert synced["error_code"] == 0 and synced["assignment"] == b"plan"
    assert w.call(HEARTBEAT, 4, {**hb, "generation_id": 1})["error_code"] == 0
    assert w.call(HEARTBEAT, 4, {**hb, "generation_id": 7})["error_code"] == ErrorCode.illegal_generation
    assert w.call(HEARTBEAT, 4, {**hb, "member_id": "x", "generation_id": 1})["error_code"] == \
        ErrorCode.unknown_member_id
    d = w.call(DESCRIBE, 5, {"groups": ["grp"]})["groups"][0]
    assert d["group_state"] == "Stable" and d["protocol_data"] == "range"
    assert d["members"][0]["member_assignment"] == b"plan"
    left = w.call(LEAVE, 4, {"group_id": "grp", "members": [{"member_id": member}, {"member_id": "ghost"}]})
    assert [m["error_code"] for m in left["members"]] == [0, ErrorCode.unknown_member_id]
    d = w.call(DESCRIBE, 5, {"groups": ["grp"]})["groups"][0]
    assert d["group_state"] == "Empty" and d["members"] == []
    w.close()


def test_session_timeout_expires_a_silent_member():
    with Sandbox(brokers=1, configs={"group.min.session.timeout.ms": "50"}) as s:
        w = Wire(s, coordinator(s, "quiet"))
        member = _join(w, "quiet")["member_id"]
        assert _join(w, "quiet", member, session_ms=200)["error_code"] == 0
        w.call(SYNC, 5, {"group_id": "quiet", "generation_id": 1, "member_id": member,
                         "assignments": [{"member_id": member, "assignment": b""}]})
        deadline = time.monotonic() + 10
        while w.call(DESCRIBE, 5, {"groups": ["quiet"]})["groups"][0]["group_state"] != "Empty":
            assert time.monotonic() < deadline, "member never expired"
            time.sleep(0.05)
        assert w.call(HEARTBEAT, 4, {"group_id": "quiet", "generation_id": 1, "member_id": member}
                      )["error_code"] == ErrorCode.unknown_member_id
        assert _join(w, "quiet", session_ms=10)["error_code"] == ErrorCode.invalid_session_timeout
        w.close()


# -- real consumers -----------------------------------------------------------------------------


def test_two_consumers_split_the_partitions(sandbox, admin):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "split", 4, 2)
    a, b = _consumer(sandbox, "pair"), _consumer(sandbox, "pair")
    a.subscribe(["split"])
    b.subscribe(["split"])

    def split() -> bool:
        b.poll(0.05)
        pa = {tp.partition for tp in a.assignment()}
        pb = {tp.partition for tp in b.assignment()}
        return len(pa) == 2 and len(pb) == 2 and pa | pb == {0, 1, 2, 3}

    _poll_until(a, split, "both consumers to own two partitions")
    d = admin.describe_consumer_groups(["pair"])["pair"].result()
    assert d.state.name == "STABLE" and len(d.members) == 2
    owned = sorted(tp.partition for m in d.members for tp in m.assignment.topic_partitions)
    assert owned == [0, 1, 2, 3]
    a.close()
    b.close()


def test_group_admin_list_describe_delete_reset(sandbox, admin):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "events", 2, 2)
    _produce(sandbox, "events", 100, 2)
    c = _consumer(sandbox, "readers", **{"client.id": "reader-1"})
    c.subscribe(["events"])
    assert len(_consume(c, 100)) == 100
    c.commit(asynchronous=False)

    groups = admin.list_consumer_groups().result().valid
    assert [(g.group_id, g.state.name) for g in groups] == [("readers", "STABLE")]
    d = admin.describe_consumer_groups(["readers"])["readers"].result()
    assert d.state.name == "STABLE" and d.partition_assignor == "range"
    assert [m.client_id for m in d.members] == ["reader-1"]
    assert sorted(tp.partition for tp in d.members[0].assignment.topic_partitions) == [0, 1]

    refused = admin.delete_consumer_groups(["readers"])["readers"]
    with pytest.raises(Exception) as err:
        refused.result()
    assert "NON_EMPTY_GROUP" in str(err.value)

    c.close()
    groups = admin.list_consumer_groups().result().valid
    assert [(g.group_id, g.state.name) for g in groups] == [("readers", "EMPTY")]
    # Reset to the start of partition 0 (a reset needs an inactive group, as in Kafka's tool).
    reset = ConsumerGroupTopicPartitions("readers", [TopicPartition("events", 0, 10)])
    admin.alter_consumer_group_offsets([reset])["readers"].result()
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("readers")])["readers"].result()
    assert {(tp.partition, tp.offset) for tp in listed.topic_partitions} == {(0, 10), (1, 50)}

    admin.delete_consumer_groups(["readers"])["readers"].result()
    assert admin.list_consumer_groups().result().valid == []


def test_offset_delete_refused_for_a_subscribed_topic(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "subbed", 1, 1)
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "other", 1, 1)
    c = _consumer(sandbox, "od")
    c.subscribe(["subbed"])
    _poll_until(c, lambda: len(c.assignment()) == 1, "an assignment")
    c.commit(offsets=[TopicPartition("subbed", 0, 0)], asynchronous=False)
    node = coordinator(sandbox, "od")
    w = Wire(sandbox, node)
    r = w.call(OFFSET_COMMIT, 2, {"group_id": "od", "generation_id_or_member_epoch": -1, "member_id": "",
                              "topics": [{"name": "other", "partitions": [
                                  {"partition_index": 0, "committed_offset": 0}]}]})
    # A memberless commit into a group with members is refused, as in Kafka.
    assert r["topics"][0]["partitions"][0]["error_code"] == ErrorCode.unknown_member_id
    r = w.call(OFFSET_DELETE, 0, {"group_id": "od", "topics": [
        {"name": "subbed", "partitions": [{"partition_index": 0}]},
        {"name": "other", "partitions": [{"partition_index": 0}]}]})
    codes = {t["name"]: t["partitions"][0]["error_code"] for t in r["topics"]}
    assert codes == {"subbed": ErrorCode.group_subscribed_to_topic, "other": 0}
    w.close()
    w = Wire(sandbox, coordinator(sandbox, "nope"))
    r = w.call(OFFSET_DELETE, 0, {"group_id": "nope", "topics": []})
    assert r["error_code"] == ErrorCode.group_id_not_found
    w.close()
    c.close()
