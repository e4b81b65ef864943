"""Fault injection (stop/start, controller loss, delay, lag_metadata, fail, set_log_end_offset)
and DescribeQuorum, seen over real sockets."""

from __future__ import annotations

import select
import socket

import pytest

from kafka_shell.protocol import codec
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from tests.sandbox.test_reassignments import wait_until
from tests.sandbox.wire import API_VERSIONS_BODY, request
from tests.conftest import BOTH_MODES, KRAFT_MODE, ZK_MODE

pytestmark = BOTH_MODES  # controller, elections, reassignments and faults: both sandbox modes

METADATA, ELECT, LIST_REASSIGNMENTS, API_VERSIONS, QUORUM = 3, 43, 46, 18, 55
CREATE_TOPICS, DESCRIBE_CONFIGS, DESCRIBE_CLUSTER, DESCRIBE_TOPIC_PARTITIONS = 19, 32, 60, 75
NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, NOT_CONTROLLER, REQUEST_TIMED_OUT = 6, 3, 41, 7
QUORUM_BODY = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}


def test_stop_broker_closes_its_port_and_fences_it(sandbox, admin):
    address = sandbox.address(2)
    sandbox.stop_broker(2)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address, timeout=2).close()
    assert sandbox.cluster.brokers[2].fenced
    assert sorted(admin.list_topics(timeout=5).brokers) == [1, 3]
    sandbox.start_broker(2)
    assert sorted(admin.list_topics(timeout=5).brokers) == [1, 2, 3]
    assert sandbox.cluster.brokers[2].epoch == 2


@ZK_MODE  # KRaft voters: test_kraft.py
def test_old_controller_answers_not_controller_after_losing_the_role(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 2, [[1, 2]])
    old = sandbox.cluster.controller_id
    new = sandbox.kill_controller()
    assert new != old
    elect = {"election_type": 0, "topic_partitions": [{"topic": "t", "partitions": [0]}]}
    assert request(sandbox, old, ELECT, elect)["error_code"] == NOT_CONTROLLER
    assert request(sandbox, old, LIST_REASSIGNMENTS, {"topics": None})["error_code"] == NOT_CONTROLLER
    assert request(sandbox, new, ELECT, elect)["error_code"] == 0
    assert request(sandbox, new, LIST_REASSIGNMENTS, {"topics": None})["error_code"] == 0


def _api_versions_request() -> bytes:
    cls = codec.request_schema(API_VERSIONS, 3)
    entity = codec.build(cls, {"client_software_name": "t", "client_software_version": "1"})
    return codec.encode_request(entity, 7, "test")


def test_a_delayed_broker_answers_later(sandbox):
    sandbox.delay(1, 1000)
    slow = socket.create_connection(sandbox.address(1), timeout=5)
    slow.sendall(_api_versions_request())
    # Broker 2 answers a request sent after the delayed one, while broker 1 has not answered.
    assert request(sandbox, 2, API_VERSIONS, API_VERSIONS_BODY)["error_code"] == 0
    assert select.select([slow], [], [], 0)[0] == []
    slow.settimeout(5)
    assert len(slow.recv(65536)) > 8  # it does answer
    slow.close()
    sandbox.heal()
    assert sandbox.cluster.brokers[1].delay_ms == 0


def test_injected_errors_until_healed(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 1, [[1]])
    sandbox.fail(1, "Metadata", "NOT_CONTROLLER")
    body = {"topics": [{"name": "t"}]}
    assert request(sandbox, 1, METADATA, body)["topics"][0]["error_code"] == NOT_CONTROLLER
    assert request(sandbox, 2, METADATA, body)["topics"][0]["error_code"] == 0
    sandbox.heal()
    assert request(sandbox, 1, METADATA, body)["topics"][0]["error_code"] == 0
    with pytest.raises(ValueError):
        sandbox.fail(1, "NoSuchApi", "NOT_CONTROLLER")
    with pytest.raises(ValueError):
        sandbox.fail(9, "Metadata", "NOT_CONTROLLER")


def test_set_log_end_offset_checks_its_arguments(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 1, [[1]])
    for args in (("t", 0, 2, 5), ("t", 3, 1, 5), ("nope", 0, 1, 5), ("t", 0, 1, -1)):
        with pytest.raises(ValueError):
            sandbox.set_log_end_offset(*args)


@KRAFT_MODE  # zk-mode brokers do not serve DescribeQuorum (test_kraft.py)
def test_describe_quorum_shows_the_controller_as_leader_and_stale_stopped_replicas(sandbox):
    controller = sandbox.active_controller
    sandbox.stop_broker(2)
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 1, [[1]])  # a change
    r = request(sandbox, controller, QUORUM, QUORUM_BODY)  # on the controller listener
    [partition] = r["topics"][0]["partitions"]
    assert partition["error_code"] == 0 and partition["leader_id"] == controller == 100
    assert partition["leader_epoch"] == sandbox.controller_epoch
    voters = {v["replica_id"]: v for v in partition["current_voters"]}
    observers = {v["replica_id"]: v for v in partition["observers"]}
    assert sorted(voters) == [100] and sorted(observers) == [1, 2, 3]
    assert observers[1]["log_end_offset"] == partition["high_watermark"] == voters[100]["log_end_offset"]
    assert observers[2]["log_end_offset"] < partition["high_watermark"]
    assert observers[2]["last_caught_up_timestamp"] <= observers[1]["last_caught_up_timestamp"]
    assert [(n["node_id"], n["listeners"][0]["name"], n["listeners"][0]["port"]) for n in r["nodes"]] == [
        (100, "CONTROLLER", sandbox.address(100)[1])]
    v0 = request(sandbox, 3, QUORUM, QUORUM_BODY, version=0)["topics"][0]["partitions"][0]  # forwarded
    assert v0["leader_id"] == controller and "last_fetch_timestamp" not in v0["current_voters"][0]


@KRAFT_MODE
def test_describe_quorum_of_another_topic(sandbox):
    body = {"topics": [{"topic_name": "other", "partitions": [{"partition_index": 0}]}]}
    [partition] = request(sandbox, 1, QUORUM, body)["topics"][0]["partitions"]
    assert partition["error_code"] == UNKNOWN_TOPIC_OR_PARTITION


def _topic_names(sandbox, broker_id: int) -> list[str]:
    body = {"topics": None, "allow_auto_topic_creation": False}
    return [t["name"] for t in request(sandbox, broker_id, METADATA, body)["topics"]]


def test_a_lagging_brokers_metadata_shows_each_change_later(sandbox):
    """lag_metadata: Metadata, DescribeCluster and DescribeTopicPartitions of the lagging broker
    show the cluster as it was; its other answers (configs) and the other brokers see it as it is."""
    sandbox.lag_metadata(1, 60_000)
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 2, [[2, 3]])
    assert "t" in _topic_names(sandbox, 2) and "t" not in _topic_names(sandbox, 1)
    if sandbox.mode == "kraft":
        described = request(sandbox, 1, DESCRIBE_TOPIC_PARTITIONS, {"topics": [{"name": "t"}], "response_partition_limit": 10})
        assert described["topics"][0]["error_code"] == UNKNOWN_TOPIC_OR_PARTITION
    configs = request(sandbox, 1, DESCRIBE_CONFIGS, {"resources": [{"resource_type": 2, "resource_name": "t"}]})
    assert configs["results"][0]["error_code"] == 0
    sandbox.stop_broker(3)
    assert [b["broker_id"] for b in request(sandbox, 1, DESCRIBE_CLUSTER, {})["brokers"]] == [1, 2, 3]
    assert [b["broker_id"] for b in request(sandbox, 2, DESCRIBE_CLUSTER, {})["brokers"]] == [1, 2]
    assert sandbox.status()["brokers"][0]["metadata_lag_ms"] == 60_000
    sandbox.lag_metadata(1, 200)   # a moment behind: it catches up with each change
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "u", 1, 1, [[2]])
    wait_until(lambda: {"t", "u"} <= set(_topic_names(sandbox, 1)))
    sandbox.heal()
    assert sandbox.status()["brokers"][0]["metadata_lag_ms"] == 0
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "v", 1, 1, [[2]])
    assert "v" in _topic_names(sandbox, 1)


@KRAFT_MODE
def test_a_delayed_active_controller_answers_what_brokers_forward_late(sandbox):
    """Kafka's forwarding: a broker waits for the active controller's answer up to the request's
    own timeout, then answers REQUEST_TIMED_OUT."""
    sandbox.delay(sandbox.active_controller, 60_000)
    body = {"topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            "timeout": 300, "validate_only": False}
    [topic] = request(sandbox, 1, CREATE_TOPICS, body)["topics"]
    assert topic["error_code"] == REQUEST_TIMED_OUT
    assert request(sandbox, 1, METADATA, {"topics": None, "allow_auto_topic_creation": False})["topics"] == []
    sandbox.delay(sandbox.active_controller, 100)
    [topic] = request(sandbox, 1, CREATE_TOPICS, {**body, "timeout": 5000})["topics"]
    assert topic["error_code"] == 0
