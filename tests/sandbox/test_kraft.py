"""KRaft mode against ZooKeeper mode, over real sockets: who names the controller, forwarding,
DescribeQuorum and DescribeCluster on both listeners, the controller quorum's faults."""

from __future__ import annotations

import json
import socket

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.protocol.codes import ApiKey, EndpointType, Error
from kafka_shell.sandbox import persist, replication
from kafka_shell.sandbox.server import Sandbox, controller_id_base
from tests.conftest import KRAFT_MODE, ZK_MODE
from tests.sandbox.wire import API_VERSIONS_BODY, CLOSED, create, exchange, produce, request

QUORUM_BODY = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
CREATE_BODY = {"topics": [{"name": "t", "num_partitions": 1, "replication_factor": 1}], "timeout": 5000}


def api_keys(sandbox, node: int) -> set[int]:
    return {k["api_key"] for k in request(sandbox, node, ApiKey.API_VERSIONS, API_VERSIONS_BODY)["api_keys"]}


def closes_connection(sandbox, node: int, api_key: int, version: int, body: dict) -> bool:
    """Send one request; True if the listener closes the connection instead of answering."""
    return exchange(sandbox.address(node), api_key, version, body) == CLOSED


def quorum(sandbox, node: int, version: int = 2) -> dict:
    return request(sandbox, node, ApiKey.DESCRIBE_QUORUM, QUORUM_BODY, version=version)


@pytest.fixture
def three_voters():
    with Sandbox(brokers=3, controllers=3) as s:
        yield s


# -- who is the controller -------------------------------------------------------------------


@KRAFT_MODE
def test_brokers_name_a_random_live_broker_as_controller(sandbox, admin):
    named = {admin.list_topics(timeout=5).controller_id for _ in range(40)}
    assert named <= {1, 2, 3} and len(named) > 1  # drawn per request, never the controller 100
    sandbox.stop_broker(2)
    named = {request(sandbox, 1, ApiKey.DESCRIBE_CLUSTER, {})["controller_id"] for _ in range(20)}
    assert named <= {1, 3}
    assert (sandbox.mode, sandbox.controller_ids, sandbox.active_controller) == ("kraft", [100], 100)


@ZK_MODE
def test_zk_brokers_name_the_controller_broker(sandbox, admin):
    assert {admin.list_topics(timeout=5).controller_id for _ in range(10)} == {sandbox.active_controller}
    assert sandbox.controller_ids == [] and sandbox.bootstrap_controllers == ""


def test_controller_ids_stay_clear_of_broker_ids():
    assert (controller_id_base(3), controller_id_base(99), controller_id_base(100),
            controller_id_base(1000)) == (100, 100, 1000, 10000)


# -- ApiVersions: how clients tell the modes apart ------------------------------------------


@KRAFT_MODE
def test_kraft_listeners_list_their_apis(sandbox):
    broker = api_keys(sandbox, 1)
    assert ApiKey.DESCRIBE_QUORUM in broker and ApiKey.PRODUCE in broker
    controller = api_keys(sandbox, 100)
    assert ApiKey.DESCRIBE_QUORUM in controller and ApiKey.DESCRIBE_CLUSTER in controller
    assert ApiKey.METADATA not in controller and ApiKey.PRODUCE not in controller
    # An API the controller listener does not serve closes the connection, as Kafka does.
    assert closes_connection(sandbox, 100, ApiKey.METADATA, 12, {"topics": None})


@ZK_MODE
def test_zk_brokers_lack_the_kraft_apis(sandbox):
    # Kafka 3.9's brokers in both modes: the KRaft ones add the quorum and its voter changes,
    # broker unregistration, client metrics listing and KIP-966's DescribeTopicPartitions.
    with Sandbox(brokers=1, kafka_version="3.9") as kraft:
        assert api_keys(kraft, 1) - api_keys(sandbox, 1) == {
            ApiKey.DESCRIBE_QUORUM, ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER, ApiKey.UNREGISTER_BROKER,
            ApiKey.LIST_CONFIG_RESOURCES, ApiKey.DESCRIBE_TOPIC_PARTITIONS}
    assert closes_connection(sandbox, 1, ApiKey.DESCRIBE_QUORUM, 0, QUORUM_BODY)


# -- forwarding ------------------------------------------------------------------------------


@KRAFT_MODE
def test_admin_requests_through_any_broker_are_forwarded(sandbox, admin):
    for broker in (1, 2, 3):
        body = {**CREATE_BODY, "topics": [{**CREATE_BODY["topics"][0], "name": f"t{broker}"}]}
        answer = request(sandbox, broker, ApiKey.CREATE_TOPICS, body)
        assert [t["error_code"] for t in answer["topics"]] == [Error.none]
    elect = {"election_type": 0, "topic_partitions": [{"topic": "t1", "partitions": [0]}]}
    assert request(sandbox, 2, ApiKey.ELECT_LEADERS, elect)["error_code"] == Error.none
    assert request(sandbox, 3, ApiKey.LIST_PARTITION_REASSIGNMENTS, {"topics": None})["error_code"] == Error.none
    # A real client, whichever broker it picks.
    assert admin.create_topics([NewTopic("real", 2, 2)])["real"].result(10) is None
    assert {"t1", "t2", "t3", "real"} <= set(sandbox.cluster.topics)


@ZK_MODE
def test_zk_brokers_other_than_the_controller_answer_not_controller(sandbox):
    other = next(b for b in (1, 2, 3) if b != sandbox.active_controller)
    answer = request(sandbox, other, ApiKey.CREATE_TOPICS, CREATE_BODY)
    assert [t["error_code"] for t in answer["topics"]] == [Error.not_controller]
    answer = request(sandbox, sandbox.active_controller, ApiKey.CREATE_TOPICS, CREATE_BODY)
    assert [t["error_code"] for t in answer["topics"]] == [Error.none]


@KRAFT_MODE
def test_without_a_controller_admin_requests_time_out_within_their_timeout(sandbox):
    sandbox.stop_controller(100)
    assert (sandbox.active_controller, sandbox.controller_epoch) == (-1, 1)
    answer = request(sandbox, 1, ApiKey.CREATE_TOPICS, {**CREATE_BODY, "timeout": 300})
    assert [t["error_code"] for t in answer["topics"]] == [Error.request_timed_out]
    assert sandbox.cluster.topics == {}
    alter = {"resources": [{"resource_type": 4, "resource_name": "", "configs": [
        {"name": "min.insync.replicas", "config_operation": 0, "value": "2"}]}]}
    # IncrementalAlterConfigs has no timeout of its own: the socket's 5 s end the wait first.
    sandbox.start_controller(100)
    assert (sandbox.active_controller, sandbox.controller_epoch) == (100, 2)
    assert request(sandbox, 1, ApiKey.INCREMENTAL_ALTER_CONFIGS, alter)["responses"][0]["error_code"] == 0


@KRAFT_MODE
def test_a_forwarded_request_waits_for_a_controller_that_comes_back(sandbox):
    import threading
    sandbox.stop_controller(100)
    threading.Timer(0.2, sandbox.start_controller, (100,)).start()
    answer = request(sandbox, 2, ApiKey.CREATE_TOPICS, {**CREATE_BODY, "timeout": 4000})
    assert [t["error_code"] for t in answer["topics"]] == [Error.none]


# -- DescribeQuorum and DescribeCluster on both listeners -------------------------------------


def test_describe_quorum_tells_the_quorum_through_brokers_and_controllers(three_voters):
    sb = three_voters
    for node in (1, 101):  # forwarded by a broker; on a controller listener (the active one below)
        answer = quorum(sb, node if node != 101 else sb.active_controller)
        [p] = answer["topics"][0]["partitions"]
        assert (p["leader_id"], p["leader_epoch"]) == (sb.active_controller, sb.controller_epoch)
        assert [v["replica_id"] for v in p["current_voters"]] == [100, 101, 102]
        assert [o["replica_id"] for o in p["observers"]] == [1, 2, 3]
        assert [(n["node_id"], n["listeners"][0]["name"], n["listeners"][0]["port"]) for n in answer["nodes"]] == [
            (c, "CONTROLLER", sb.address(c)[1]) for c in (100, 101, 102)]
    standby = quorum(sb, 101)["topics"][0]["partitions"][0]
    assert standby["error_code"] == Error.not_leader_or_follower  # KafkaRaftClient on a follower


def test_describe_cluster_per_listener_and_endpoint_type(three_voters):
    sb = three_voters
    on_controller = request(sb, 102, ApiKey.DESCRIBE_CLUSTER, {"endpoint_type": EndpointType.CONTROLLER})
    assert on_controller["error_code"] == 0 and on_controller["endpoint_type"] == EndpointType.CONTROLLER
    assert [(b["broker_id"], b["port"]) for b in on_controller["brokers"]] == [
        (c, sb.address(c)[1]) for c in (100, 101, 102)]
    assert on_controller["controller_id"] == sb.active_controller == 100  # KIP-919: the active one
    wrong = request(sb, 100, ApiKey.DESCRIBE_CLUSTER, {"endpoint_type": EndpointType.BROKER})
    assert wrong["error_code"] == Error.mismatched_endpoint_type
    wrong = request(sb, 1, ApiKey.DESCRIBE_CLUSTER, {"endpoint_type": EndpointType.CONTROLLER})
    assert wrong["error_code"] == Error.mismatched_endpoint_type
    assert "endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER" in wrong["error_message"]
    on_broker = request(sb, 1, ApiKey.DESCRIBE_CLUSTER, {"endpoint_type": EndpointType.BROKER})
    assert sorted(b["broker_id"] for b in on_broker["brokers"]) == [1, 2, 3]


def test_controller_apis_on_a_standby_voter_answer_not_controller(three_voters):
    sb = three_voters
    answer = request(sb, 101, ApiKey.CREATE_TOPICS, CREATE_BODY)
    assert [t["error_code"] for t in answer["topics"]] == [Error.not_controller]
    alter = {"resources": [{"resource_type": 4, "resource_name": "", "configs": [
        {"name": "min.insync.replicas", "config_operation": 0, "value": "2"}]}]}
    assert request(sb, 101, ApiKey.INCREMENTAL_ALTER_CONFIGS, alter)["responses"][0]["error_code"] == Error.not_controller
    assert request(sb, 100, ApiKey.INCREMENTAL_ALTER_CONFIGS, alter)["responses"][0]["error_code"] == 0
    # Any voter describes configs, its own as a node and the cluster defaults.
    describe = {"resources": [{"resource_type": 4, "resource_name": "101", "configuration_keys": ["node.id"]},
                              {"resource_type": 4, "resource_name": "", "configuration_keys": ["min.insync.replicas"]}],
                "include_synonyms": False}
    results = request(sb, 101, ApiKey.DESCRIBE_CONFIGS, describe)["results"]
    assert [(r["error_code"], [c["value"] for c in r["configs"]]) for r in results] == [(0, ["101"]), (0, ["2"])]


# -- the quorum's faults ---------------------------------------------------------------------


@KRAFT_MODE
def test_kill_controller_with_one_voter_comes_back_with_a_higher_epoch(sandbox):
    assert sandbox.kill_controller() == 100
    assert (sandbox.active_controller, sandbox.controller_epoch) == (100, 2)
    assert quorum(sandbox, 1)["topics"][0]["partitions"][0]["leader_epoch"] == 2


def test_kill_and_stop_controllers_with_three_voters(three_voters):
    sb = three_voters
    assert sb.kill_controller() == 101 and sb.controller_epoch == 2
    sb.stop_controller(101)
    assert (sb.active_controller, sb.controller_epoch) == (102, 3)
    with pytest.raises(OSError):
        socket.create_connection(sb.address(101), timeout=2).close()  # its listener is closed
    sb.stop_controller(100)
    assert sb.active_controller == 102  # a standby stopping changes nothing
    sb.stop_controller(102)
    assert (sb.active_controller, sb.controller_epoch) == (-1, 3)
    with pytest.raises(ValueError, match="no active controller"):
        sb.kill_controller()
    sb.start_controller(100)
    assert (sb.active_controller, sb.controller_epoch) == (100, 4)
    with pytest.raises(ValueError, match="no controller 7"):
        sb.stop_controller(7)


@KRAFT_MODE
def test_without_a_controller_brokers_serve_but_nothing_fails_over(sandbox, admin):
    create(sandbox, "t", [[1, 2]])
    p = sandbox.cluster.partition("t", 0)
    sandbox.stop_controller(100)
    produce(sandbox, "t", 0, 2, 10)  # the leader keeps serving with the quorum down
    assert p.high_watermark == 2
    sandbox.stop_broker(2)
    assert (p.isr, sandbox.cluster.brokers[2].fenced) == ([1, 2], False)  # nobody fences it
    sandbox.stop_broker(1)
    assert p.leader == 1  # no election without a controller
    sandbox.start_broker(1)
    sandbox.start_controller(100)  # the controller fences the stopped follower, shrinks the ISR
    assert (sandbox.cluster.brokers[2].fenced, p.isr, p.leader) == (True, [1], 1)
    assert admin.list_topics(timeout=5).topics["t"].partitions[0].leader == 1


def test_preferred_controller_picks_among_the_voters(three_voters):
    sb = three_voters
    alter = {"resources": [{"resource_type": 4, "resource_name": "", "configs": [
        {"name": replication.PREFERRED_CONTROLLER_KEY, "config_operation": 0, "value": "102"}]}]}
    assert request(sb, 1, ApiKey.INCREMENTAL_ALTER_CONFIGS, alter)["responses"][0]["error_code"] == 0
    assert (sb.active_controller, sb.controller_epoch) == (102, 2)
    alter["resources"][0]["configs"][0]["value"] = "2"  # a broker is no voter
    answer = request(sb, 1, ApiKey.INCREMENTAL_ALTER_CONFIGS, alter)["responses"][0]
    assert answer["error_code"] == Error.invalid_request and "is not a controller" in answer["error_message"]
    sb.stop_controller(102)
    assert sb.active_controller in (100, 101)
    sb.start_controller(102)
    assert sb.active_controller == 102  # it takes the role back
    assert sb.kill_controller() == 102


def test_data_dir_keeps_the_mode_and_the_controllers(tmp_path):
    with Sandbox(brokers=2, controllers=2, data_dir=str(tmp_path)) as sb:
        ports = sb.bootstrap_controllers
    # The kept cluster wins, so arguments that disagree with it are errors, not ignored.
    with pytest.raises(persist.StateError, match="--mode zk does not match: drop --mode"):
        Sandbox(mode="zk", data_dir=str(tmp_path))
    with Sandbox(data_dir=str(tmp_path)) as sb:
        assert (sb.mode, sb.controller_ids, sb.bootstrap_controllers) == ("kraft", [100, 101], ports)
        assert sb.active_controller in (100, 101)
    # A state file an older kafka-shell wrote (here version 1, from before the KRaft mode) is
    # refused in one line that says what to do.
    data = json.loads((tmp_path / persist.STATE_FILE).read_text())
    data.update(version=1)
    (tmp_path / persist.STATE_FILE).write_text(json.dumps(data))
    with pytest.raises(persist.StateError, match=r"has format version 1 \(an older kafka-shell's\); this sandbox "
                                                 r"reads version 5: serve .* with the kafka-shell that wrote it"):
        persist.load(tmp_path)


def test_admin_client_on_a_kraft_sandbox_sees_brokers_only():
    with Sandbox(brokers=3) as sb:
        md = AdminClient({"bootstrap.servers": sb.bootstrap, "log_level": 0}).list_topics(timeout=5)
        assert sorted(md.brokers) == [1, 2, 3]


# -- UnregisterBroker and UpdateFeatures ------------------------------------------------------


def test_unregister_broker_on_the_controller_and_through_brokers(three_voters):
    sb = three_voters
    create(sb, "t", [[1, 2, 3]])
    p = sb.cluster.partition("t", 0)
    sb.stop_broker(3)
    assert request(sb, 101, ApiKey.UNREGISTER_BROKER, {"broker_id": 3})["error_code"] == Error.not_controller
    assert request(sb, 100, ApiKey.UNREGISTER_BROKER, {"broker_id": 3})["error_code"] == Error.none
    again = request(sb, 1, ApiKey.UNREGISTER_BROKER, {"broker_id": 3})  # forwarded
    assert (again["error_code"], again["error_message"]) == (
        Error.broker_id_not_registered, "Broker ID 3 is not currently registered")
    listed = request(sb, 1, ApiKey.DESCRIBE_CLUSTER, {"endpoint_type": 1, "include_fenced_brokers": True})
    assert [b["broker_id"] for b in listed["brokers"]] == [1, 2]
    move = {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": [1, 3]}]}]}
    answer = request(sb, 1, ApiKey.ALTER_PARTITION_REASSIGNMENTS, move)
    assert answer["responses"][0]["partitions"][0]["error_code"] == Error.invalid_replica_assignment
    # A running broker leaves the ISR and its leaderships, then registers again with a new epoch.
    assert p.leader == 1
    assert request(sb, 2, ApiKey.UNREGISTER_BROKER, {"broker_id": 1})["error_code"] == Error.none
    assert p.leader == 2 and sb.cluster.brokers[1].epoch == 2 and not sb.cluster.brokers[1].fenced
    sb.start_broker(3)
    assert [b["broker_id"] for b in request(sb, 1, ApiKey.DESCRIBE_CLUSTER, {})["brokers"]] == [1, 2, 3]


@KRAFT_MODE
def test_features_in_api_versions_and_update_features(sandbox):
    def finalized() -> dict[str, int]:
        answer = request(sandbox, 1, ApiKey.API_VERSIONS, API_VERSIONS_BODY, version=3)
        return {f["name"]: f["max_version_level"] for f in answer["finalized_features"]}

    def update(node: int, feature: str, level: int, upgrade_type: int = 1, **extra) -> dict:
        body = {"timeout": 5000, "feature_updates": [
            {"feature": feature, "max_version_level": level, "upgrade_type": upgrade_type}], **extra}
        return request(sandbox, node, ApiKey.UPDATE_FEATURES, body, version=1)

    # A new Kafka 4.4 cluster's levels (kafka_shell.protocol.definitions, from a real one).
    start = {"metadata.version": 33, "group.version": 1, "transaction.version": 2, "share.version": 2,
             "streams.version": 1, "eligible.leader.replicas.version": 1}
    assert finalized() == start
    assert update(1, "group.version", 0, 2, validate_only=True)["results"][0]["error_code"] == Error.none
    assert finalized() == start
    answer = update(2, "group.version", 0, 2)  # a safe downgrade, forwarded to the controller
    assert (answer["error_code"], [r["feature"] for r in answer["results"]]) == (Error.none, ["group.version"])
    assert finalized() == {k: v for k, v in start.items() if k != "group.version"}  # level 0 is left out
    for feature, level, kind, message in (
            ("group.version", 9, 1, "only supports versions 0-1"),
            ("metadata.version", 32, 2, "might delete metadata information"),
            ("group.version", 0, 7, "does not support the given upgrade type")):
        answer = update(100, feature, level, kind)
        assert answer["error_code"] == Error.invalid_update_version and message in answer["error_message"]
        assert answer["results"] == []
    assert update(100, "group.version", 1)["error_code"] == Error.none
    assert update(100, "group.version", 0)["error_code"] == Error.invalid_update_version  # a downgrade needs its type
    assert finalized() == start


@ZK_MODE
def test_zk_brokers_report_no_features(sandbox):
    answer = request(sandbox, 1, ApiKey.API_VERSIONS, API_VERSIONS_BODY, version=3)
    assert (answer["finalized_features"], answer["finalized_features_epoch"]) == ([], -1)
