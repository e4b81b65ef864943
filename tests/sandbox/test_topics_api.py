"""Topic APIs of the sandbox (CreateTopics, DeleteTopics, CreatePartitions, auto-creation,
DescribeCluster, DescribeTopicPartitions) and --data-dir persistence, seen by real clients."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafka_shell.protocol import codec
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox import log, persist
from kafka_shell.sandbox.model import Batch
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.wire import raw_frame
from tests.conftest import ZK_MODE

NONE, UNKNOWN_TOPIC, INVALID_TOPIC, TOPIC_EXISTS = 0, 3, 17, 36
INVALID_PARTITIONS, INVALID_RF, INVALID_ASSIGNMENT, INVALID_CONFIG = 37, 38, 39, 40
NOT_CONTROLLER, INVALID_REQUEST, POLICY_VIOLATION, UNKNOWN_TOPIC_ID = 41, 42, 44, 100


def raw_request(sandbox, broker_id: int, api_key: int, version: int, body: dict) -> dict:
    """One request over a real socket to one broker, encoded and decoded with `protocol`."""
    entity = codec.build(codec.request_schema(api_key, version), body)
    frame = raw_frame(sandbox, broker_id, entity, 7)
    corr, answer = codec.decode_response(codec.response_schema(api_key, version), frame[4:])
    assert corr == 7
    return codec.to_dict(answer)  # type: ignore[return-value]


def create(admin, *topics: NewTopic, **kwargs) -> dict[str, object]:
    """topic -> None on success, else the KafkaError code."""
    out = {}
    for name, f in admin.create_topics(list(topics), request_timeout=10, **kwargs).items():
        exc = f.exception()
        out[name] = None if exc is None else exc.args[0]
    return out


def topic_layout(admin, name: str) -> list[list[int]]:
    md = admin.list_topics(name, timeout=5).topics[name]
    return [md.partitions[i].replicas for i in sorted(md.partitions)]


# -- CreateTopics ----------------------------------------------------------------------------


def test_create_topics_batched_with_counts_assignment_and_configs(admin):
    errors = create(admin,
                    NewTopic("counts", 6, 3),
                    NewTopic("assigned", 3, replica_assignment=[[1, 2], [2, 3], [3, 1]]),
                    NewTopic("configured", 1, 1, config={"retention.ms": "1000", "cleanup.policy": "compact"}))
    assert errors == {"counts": None, "assigned": None, "configured": None}

    layout = topic_layout(admin, "counts")
    assert len(layout) == 6 and all(sorted(r) == [1, 2, 3] for r in layout)
    assert Counter(r[0] for r in layout) == {1: 2, 2: 2, 3: 2}  # leaders spread evenly
    assert topic_layout(admin, "assigned") == [[1, 2], [2, 3], [3, 1]]
    md = admin.list_topics(timeout=5)
    assert all(p.leader == p.replicas[0] and p.isrs == p.replicas
               for p in md.topics["assigned"].partitions.values())


def test_create_topics_v7_answer_reports_defaults_counts_and_configs():
    with Sandbox(brokers=3, configs={"num.partitions": "4", "default.replication.factor": "2"}) as sandbox:
        answer = raw_request(sandbox, sandbox.cluster.controller_id, 19, 7, {"topics": [
            {"name": "defaults", "num_partitions": -1, "replication_factor": -1,
             "configs": [{"name": "min.insync.replicas", "value": "2"}]}], "timeout": 5000})
        (t,) = answer["topics"]
        assert (t["error_code"], t["num_partitions"], t["replication_factor"]) == (NONE, 4, 2)
        assert t["topic_id"] == sandbox.cluster.topics["defaults"].id
        configs = {c["name"]: (c["value"], c["config_source"]) for c in t["configs"]}
        assert configs["min.insync.replicas"] == ("2", 1)  # DYNAMIC_TOPIC_CONFIG
        assert configs["retention.ms"] == ("604800000", 5)  # DEFAULT_CONFIG
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
        layout = topic_layout(admin, "defaults")
        assert len(layout) == 4 and all(len(r) == 2 for r in layout)


def test_validate_only_reports_success_and_creates_nothing(admin):
    assert create(admin, NewTopic("dry", 3, 2), validate_only=True) == {"dry": None}
    assert "dry" not in admin.list_topics(timeout=5).topics
    assert create(admin, NewTopic("dry", 3, 4), validate_only=True)["dry"].code() == INVALID_RF


def test_create_topic_errors_carry_kafkas_codes_and_messages(admin):
    assert create(admin, NewTopic("exists", 1, 1)) == {"exists": None}
    errors = create(admin,
                    NewTopic("exists", 1, 1),
                    NewTopic("bad name", 1, 1),
                    NewTopic("..", 1, 1),
                    NewTopic("x" * 250, 1, 1),
                    NewTopic("no-partitions", 0, 1),
                    NewTopic("rf-too-big", 1, 4),
                    NewTopic("dup-broker", 1, replica_assignment=[[1, 1]]),
                    NewTopic("unknown-broker", 1, replica_assignment=[[1, 9]]),
                    NewTopic("uneven", 2, replica_assignment=[[1, 2], [3]]),
                    NewTopic("unknown-config", 1, 1, config={"retention.mss": "1"}),
                    NewTopic("bad-value", 1, 1, config={"retention.ms": "soon"}),
                    NewTopic("bad-choice", 1, 1, config={"cleanup.policy": "forever"}))
    codes = {name: (e.code(), e.str()) for name, e in errors.items()}
    assert codes["exists"] == (TOPIC_EXISTS, "Topic 'exists' already exists.")
    assert codes["bad name"][0] == codes[".."][0] == codes["x" * 250][0] == INVALID_TOPIC
    assert codes["no-partitions"] == (INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    assert codes["rf-too-big"] == (INVALID_RF, "Unable to replicate the partition 4 time(s): The target replication "
                                               "factor of 4 cannot be reached because only 3 broker(s) are registered "
                                               "or some brokers have all their log directories cordoned.")   # Kafka 4.4
    assert codes["dup-broker"] == (INVALID_ASSIGNMENT, "The manual partition assignment includes the broker 1 more than once.")
    assert codes["unknown-broker"] == (INVALID_ASSIGNMENT, "The manual partition assignment includes broker 9, but no such broker is registered.")
    assert codes["uneven"][0] == INVALID_ASSIGNMENT and "consistent with previous partitions" in codes["uneven"][1]
    assert codes["unknown-config"] == (INVALID_CONFIG, "Unknown topic config name: retention.mss")
    assert codes["bad-value"] == (INVALID_CONFIG, "Invalid value soon for configuration retention.ms: Not a number of type LONG")
    assert codes["bad-choice"][0] == INVALID_CONFIG
    assert set(admin.list_topics(timeout=5).topics) == {"exists"}


def test_absurd_partition_counts_are_refused_for_the_whole_request(sandbox, admin):
    # librdkafka itself refuses more than 100,000 partitions per topic: ask over the wire.
    answer = raw_request(sandbox, sandbox.cluster.controller_id, 19, 7, {"topics": [
        {"name": "huge", "num_partitions": 1_000_000, "replication_factor": 1},
        {"name": "small", "num_partitions": 1, "replication_factor": 1}], "timeout": 5000})
    assert [(t["name"], t["error_code"], t["error_message"]) for t in answer["topics"]] == [
        (n, POLICY_VIOLATION, "Excessively large number of partitions per request.") for n in ("huge", "small")]
    # KRaft's cap counts the partitions of the whole request.
    errors = create(admin, NewTopic("half1", 6000, 1), NewTopic("half2", 6000, 1))
    assert {e.code() for e in errors.values()} == {POLICY_VIOLATION}
    assert sandbox.cluster.topics == {}


@pytest.mark.modes("kraft", "zk")
def test_kraft_bounds_a_request_to_ten_thousand_metadata_records(sandbox, admin, sandbox_mode):
    """KRaft writes a topic, each partition and each config as one record, at most 10,000 per
    request (checked on Kafka 4.4: 10,000 partitions in one topic are refused); ZooKeeper-mode
    Kafka has no such bound."""
    errors = create(admin, NewTopic("full", 9998, 1, config={"retention.ms": "1000"}))   # 10,000 records
    assert errors == {"full": None}
    errors = create(admin, NewTopic("over", 5000, 1), NewTopic("over2", 4999, 1, config={"retention.ms": "1"}))
    if sandbox_mode == "zk":
        assert errors == {"over": None, "over2": None}
        return
    assert {n: (e.code(), e.str()) for n, e in errors.items()} == {
        n: (POLICY_VIOLATION, "Unable to perform excessively large batch operation.") for n in ("over", "over2")}
    assert set(sandbox.cluster.topics) == {"full"}


@ZK_MODE  # KRaft brokers forward it (test_kraft.py)
def test_create_topics_on_a_non_controller_answers_not_controller(sandbox, admin):
    old = sandbox.cluster.controller_id
    new = sandbox.kill_controller()
    assert new != old
    answer = raw_request(sandbox, old, 19, 7, {"topics": [
        {"name": "a", "num_partitions": 1, "replication_factor": 1},
        {"name": "b", "num_partitions": 1, "replication_factor": 1}], "timeout": 5000})
    assert [t["error_code"] for t in answer["topics"]] == [NOT_CONTROLLER, NOT_CONTROLLER]
    assert sandbox.cluster.topics == {}
    # A real client follows the controller move (it refreshes metadata and retries).
    assert create(admin, NewTopic("a", 1, 1)) == {"a": None}


def test_placement_puts_each_partitions_replicas_on_distinct_racks():
    with Sandbox(brokers=6, racks=["a", "b", "c", "a", "b", "c"]) as sandbox:
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
        assert create(admin, NewTopic("racked", 12, 3)) == {"racked": None}
        rack = {b.id: b.rack for b in sandbox.cluster.brokers.values()}
        layout = topic_layout(admin, "racked")
        assert all(len({rack[r] for r in replicas}) == 3 for replicas in layout)
        assert Counter(r[0] for r in layout) == {b: 2 for b in range(1, 7)}
        assert Counter(r for replicas in layout for r in replicas) == {b: 6 for b in range(1, 7)}


# -- DeleteTopics ----------------------------------------------------------------------------


def test_delete_topics_by_name_and_by_id(sandbox, admin):
    assert create(admin, NewTopic("one", 1, 1), NewTopic("two", 1, 1)) == {"one": None, "two": None}
    futures = admin.delete_topics(["one", "missing"], request_timeout=10)
    assert futures["one"].result() is None
    assert futures["missing"].exception().args[0].code() == UNKNOWN_TOPIC
    two_id = sandbox.cluster.topics["two"].id
    controller = sandbox.cluster.controller_id
    answer = raw_request(sandbox, controller, 20, 6, {"topics": [
        {"name": None, "topic_id": two_id}, {"name": None, "topic_id": uuid.uuid4()}], "timeout": 5000})
    assert [(r["name"], r["error_code"]) for r in answer["responses"]] == [("two", NONE), (None, UNKNOWN_TOPIC_ID)]
    assert set(admin.list_topics(timeout=5).topics) == set()


def test_delete_topics_refused_when_deletion_is_disabled():
    with Sandbox(brokers=1, configs={"delete.topic.enable": "false"}) as sandbox:
        sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "kept", 1, 1)
        answer = raw_request(sandbox, 1, 20, 5, {"topic_names": ["kept"], "timeout": 5000})
        assert answer["responses"][0]["error_code"] == 73  # TOPIC_DELETION_DISABLED
        assert "kept" in sandbox.cluster.topics


# -- CreatePartitions ------------------------------------------------------------------------


def test_create_partitions_increases_with_placement_or_assignment(admin):
    assert create(admin, NewTopic("grow", 2, 2), NewTopic("pinned", 1, replica_assignment=[[1, 2]])) == \
        {"grow": None, "pinned": None}
    futures = admin.create_partitions([NewPartitions("grow", 5),
                                       NewPartitions("pinned", 3, replica_assignment=[[2, 3], [3, 1]])])
    assert all(f.result() is None for f in futures.values())
    layout = topic_layout(admin, "grow")
    assert len(layout) == 5 and all(len(set(r)) == 2 for r in layout)
    assert topic_layout(admin, "pinned") == [[1, 2], [2, 3], [3, 1]]


def test_create_partitions_errors_and_validate_only(admin):
    assert create(admin, NewTopic("fixed", 3, 1)) == {"fixed": None}

    def error(new: NewPartitions, **kwargs):
        exc = admin.create_partitions([new], request_timeout=10, **kwargs)[new.topic].exception()
        return None if exc is None else (exc.args[0].code(), exc.args[0].str())

    assert error(NewPartitions("fixed", 3)) == (INVALID_PARTITIONS, "Topic already has 3 partition(s).")
    assert error(NewPartitions("fixed", 2)) == (
        INVALID_PARTITIONS, "The topic fixed currently has 3 partition(s); 2 would not be an increase.")
    assert error(NewPartitions("fixed", 5, replica_assignment=[[1]])) == (
        INVALID_ASSIGNMENT, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.")
    assert error(NewPartitions("fixed", 4, replica_assignment=[[1, 2]]))[0] == INVALID_ASSIGNMENT
    assert error(NewPartitions("nope", 4))[0] == UNKNOWN_TOPIC
    assert error(NewPartitions("fixed", 6), validate_only=True) is None
    assert len(topic_layout(admin, "fixed")) == 3


# -- Metadata auto-creation ------------------------------------------------------------------


def _metadata(sandbox, name: str, allow: bool) -> dict:
    answer = raw_request(sandbox, 1, 3, 12, {"topics": [{"name": name, "topic_id": codec.ZERO_UUID}],
                                             "allow_auto_topic_creation": allow})
    return answer["topics"][0]


def test_metadata_auto_creates_topics_with_broker_defaults(sandbox):
    assert _metadata(sandbox, "quiet", allow=False)["error_code"] == UNKNOWN_TOPIC
    created = _metadata(sandbox, "auto", allow=True)
    assert created["error_code"] == NONE and len(created["partitions"]) == 1
    assert len(sandbox.cluster.topics["auto"].partitions[0].replicas) == 1
    assert _metadata(sandbox, "bad name", allow=True)["error_code"] == INVALID_TOPIC
    assert set(sandbox.cluster.topics) == {"auto"}


def test_metadata_does_not_auto_create_when_disabled():
    with Sandbox(brokers=1, configs={"auto.create.topics.enable": "false"}) as sandbox:
        assert _metadata(sandbox, "auto", allow=True)["error_code"] == UNKNOWN_TOPIC
        assert sandbox.cluster.topics == {}


# -- DescribeCluster and DescribeTopicPartitions ---------------------------------------------


@pytest.mark.parametrize("mode", ["kraft", "zk"])
def test_describe_cluster_lists_brokers_controller_and_fenced_brokers(mode):
    with Sandbox(brokers=3, racks=["r1", "r2", "r3"], mode=mode) as sandbox:
        sandbox.stop_broker(3)
        v0 = raw_request(sandbox, 1, 60, 0, {"include_cluster_authorized_operations": False})
        assert v0["cluster_id"] == sandbox.cluster.cluster_id
        # zk: the controller broker; KRaft: a random live broker (never the controller, 100)
        assert v0["controller_id"] in ((sandbox.cluster.controller_id,) if mode == "zk" else (1, 2))
        assert [(b["broker_id"], b["port"], b["rack"]) for b in v0["brokers"]] == \
            [(i, sandbox.address(i)[1], f"r{i}") for i in (1, 2)]
        if mode == "kraft":  # v2 (fenced brokers) is Kafka 4.x's; zk mode follows 3.9 (v0-v1)
            v2 = raw_request(sandbox, 2, 60, 2, {"endpoint_type": 1, "include_fenced_brokers": True})
            assert v2["endpoint_type"] == 1
            assert [(b["broker_id"], b["is_fenced"]) for b in v2["brokers"]] == [(1, False), (2, False), (3, True)]
        wrong = raw_request(sandbox, 1, 60, 1, {"endpoint_type": 2})
        assert wrong["error_code"] == 114  # MISMATCHED_ENDPOINT_TYPE


def test_describe_topic_partitions_pages_with_a_cursor(sandbox):
    for name, count in (("alpha", 3), ("beta", 2), ("gamma", 1)):
        sandbox.call(sandbox_admin.create_topic, sandbox.cluster, name, count, 2)
    p = sandbox.cluster.topics["alpha"].partitions[0]
    sandbox.call(setattr, p, "elr", [p.replicas[1]])

    seen, cursors, request = [], [], {"topics": [], "response_partition_limit": 2}
    while True:
        answer = raw_request(sandbox, 1, 75, 0, request)
        seen += [(t["name"], q["partition_index"]) for t in answer["topics"] for q in t["partitions"]]
        if answer["next_cursor"] is None:
            break
        cursors.append((answer["next_cursor"]["topic_name"], answer["next_cursor"]["partition_index"]))
        request["cursor"] = answer["next_cursor"]
    assert seen == [("alpha", 0), ("alpha", 1), ("alpha", 2), ("beta", 0), ("beta", 1), ("gamma", 0)]
    assert cursors == [("alpha", 2), ("beta", 1)]
    # A page that ends exactly at a topic's end points at the next topic's start.
    first = raw_request(sandbox, 1, 75, 0, {"topics": [], "response_partition_limit": 3})
    assert first["next_cursor"] == {"topic_name": "beta", "partition_index": 0}

    answer = raw_request(sandbox, 1, 75, 0, {"topics": [{"name": "alpha"}, {"name": "missing"}],
                                             "response_partition_limit": 100})
    alpha, missing = answer["topics"]
    assert alpha["partitions"][0]["eligible_leader_replicas"] == [p.replicas[1]]
    assert missing["error_code"] == UNKNOWN_TOPIC


# -- persistence -----------------------------------------------------------------------------


def _comparable(cluster) -> dict:
    state = cluster.snapshot()
    for b in state["brokers"].values():
        b.pop("epoch")
    return {k: state[k] for k in ("cluster_id", "controller_id", "brokers", "topics", "cluster_configs")}


def stored_batch(base: int, last: int, records: bytes, max_timestamp: int = 0) -> Batch:
    """A batch as the log keeps one: a v2 header naming its offsets (as the state file's check
    wants), then `records`."""
    length = log.HEADER_SIZE + len(records) - log.LENGTH_PREFIX
    header = log.HEADER.pack(base, length, 0, 2, 0, 0, last - base, 0, max_timestamp, -1, -1, -1, last - base + 1)
    return Batch(base, last, max_timestamp, header + records)


def test_persistence_round_trip_keeps_topics_partitions_configs_and_brokers(tmp_path):
    with Sandbox(brokers=3, racks=["a", "b", "c"]) as sandbox:
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
        assert create(admin, NewTopic("kept", 3, 2, config={"retention.ms": "5000"})) == {"kept": None}
        part = sandbox.cluster.topics["kept"].partitions[1]
        sandbox.call(part.batches.append, stored_batch(0, 1, b"\x00\x01raw", max_timestamp=123))
        sandbox.call(persist.save, sandbox.cluster, tmp_path)
        saved = _comparable(sandbox.cluster)
    loaded = persist.load(tmp_path)
    assert _comparable(loaded) == saved
    assert all(b.alive and not b.fenced for b in loaded.brokers.values())
    assert persist.load(tmp_path / "empty") is None


def test_persistence_keeps_only_the_newest_record_bytes_of_a_large_partition(tmp_path, sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "big", 1, 1)
    p = sandbox.cluster.topics["big"].partitions[0]
    chunk = log.KEEP_BYTES // 2
    batches = [stored_batch(i, i, bytes([i]) * (chunk - log.HEADER_SIZE)) for i in range(3)]
    sandbox.call(p.batches.extend, batches)
    persist.save(sandbox.cluster, tmp_path)
    (kept,) = persist.load(tmp_path).topics["big"].partitions
    assert [b.base_offset for b in kept.batches] == [1, 2] and kept.batches[1].data == batches[2].data
    assert kept.log_start_offset == 1


@pytest.mark.parametrize("broken", ["{not json", '{"version": 99}'])
def test_persistence_refuses_unreadable_state(tmp_path, broken):
    (tmp_path / persist.STATE_FILE).write_text(broken)
    with pytest.raises(persist.StateError):
        persist.load(tmp_path)
