"""Kafka's RPCs between its own nodes (sandbox/handlers/between_nodes.py), sent from outside to
real Kafka and to the sandbox alike: every version each listener kind lists, with the minimal
request, another cluster's id where the request carries one, and the cases that reach further
(the metadata partition named, leader epochs, an unknown topic). The answers must be the same
but for ids, hosts, ports, leader epochs and throttle times. Only requests that cannot change a
real cluster are sent: no registration of a broker, no ControllerRegistration to an active
controller, no FetchSnapshot naming no topic to 3.9 (its controller dies of it), no
ControlledShutdown of a live broker.
"""

from __future__ import annotations

import re
import uuid

import pytest

from kafka_shell.protocol import codec
from kafka_shell.connection.channel import Channel
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.protocol.definitions import BROKER, CONTROLLER, ZK_BROKER, releases
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.wire import exchange

# The inter-node APIs each listener kind answers (and UnregisterController, which brokers forward).
BETWEEN_NODES = {
    CONTROLLER: (ApiKey.FETCH, ApiKey.CONTROLLED_SHUTDOWN, ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH,
                 ApiKey.END_QUORUM_EPOCH, ApiKey.ALTER_PARTITION, ApiKey.ENVELOPE, ApiKey.FETCH_SNAPSHOT,
                 ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT, ApiKey.ALLOCATE_PRODUCER_IDS,
                 ApiKey.CONTROLLER_REGISTRATION, ApiKey.ASSIGN_REPLICAS_TO_DIRS, ApiKey.UPDATE_RAFT_VOTER,
                 ApiKey.UNREGISTER_CONTROLLER),
    BROKER: (ApiKey.UNREGISTER_CONTROLLER,),
    ZK_BROKER: (ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA, ApiKey.CONTROLLED_SHUTDOWN,
                ApiKey.ALTER_PARTITION, ApiKey.ENVELOPE, ApiKey.ALLOCATE_PRODUCER_IDS),
}
ANOTHER_CLUSTER = "AAAAAAAAAAAAAAAAAAAAAA"
METADATA_PARTITION = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
# What differs between any two clusters: who the nodes are, where, and since when.
UNCOMPARED = {"throttle_time", "throttle_time_ms", "leader_id", "leader_epoch", "node_id", "host", "port"}


def bodies(key: int, version: int, release: str, node_id: int, active: bool) -> dict[str, dict]:
    """The requests sent: name -> body (the rest Kafka's defaults)."""
    fields = set(codec.request_schema(key, version).__dataclass_fields__)
    out: dict[str, dict] = {"minimal": {}}
    if "cluster_id" in fields:
        out["another cluster"] = {"cluster_id": ANOTHER_CLUSTER}
    if key in (ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH):
        out["metadata partition"] = METADATA_PARTITION
    if key == ApiKey.FETCH and version >= 13:   # topic ids from v13
        out["metadata partition"] = {"replica_id": -1, "topics": [
            {"topic_id": uuid.UUID(int=1), "partitions": [{"partition": 0}]}]}
    if key == ApiKey.FETCH_SNAPSHOT:
        out["metadata partition"] = {"topics": [{"name": "__cluster_metadata", "partitions": [{"partition": 0}]}]}
    if key == ApiKey.UPDATE_RAFT_VOTER:
        out["a newer epoch"] = {"current_leader_epoch": 1000, "voter_id": 5}
    if key == ApiKey.ALTER_PARTITION:
        out["an unknown topic"] = {"topics": [{"topic_id": uuid.uuid4(), "topic_name": "no-such-topic",
                                               "partitions": [{"partition_index": 0}]}]}
    if key == ApiKey.UNREGISTER_CONTROLLER:
        out["an unknown controller"] = {"controller_id": 4242}
        if active:
            out["the active controller"] = {"controller_id": node_id}
    if key == ApiKey.FETCH_SNAPSHOT and release == "3.9":
        del out["minimal"]      # kills Kafka 3.9's controller (its Raft thread fails)
    if key == ApiKey.CONTROLLER_REGISTRATION and active:
        out = {}                # Kafka's active controller records any registration
    return out


def compared(answer: object) -> object:
    if isinstance(answer, dict):
        return {k: re.sub(r"[0-9]+", "N", v) if k == "error_message" and v else compared(v)  # ids in messages
                for k, v in answer.items() if k not in UNCOMPARED}
    if isinstance(answer, list):
        return [compared(v) for v in answer]
    return answer


def compare(release: str, kind: str, real: tuple[str, int], ours: tuple[str, int], real_id: int, our_id: int,
            active: bool) -> int:
    """Send each inter-node request this kind lists to both; the number of requests compared."""
    listed = releases.release(release).apis[kind]
    sent = 0
    for key in BETWEEN_NODES[kind]:
        for version in listed.get(key, ()):
            for name, body in bodies(key, version, release, real_id, active).items():
                ours_body = {**body, "controller_id": our_id} if name == "the active controller" else body
                theirs, mine = exchange(real, key, version, body), exchange(ours, key, version, ours_body)
                assert compared(mine) == compared(theirs), (
                    f"{release} {kind} {codec.api_name(key)} v{version}, {name}:\n Kafka   {theirs}\n sandbox {mine}")
                sent += 1
    return sent


def quorum_leader(address: tuple[str, int]) -> int:
    answer = exchange(address, ApiKey.DESCRIBE_QUORUM, 2, {"topics": [
        {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]})
    return answer["topics"][0]["partitions"][0]["leader_id"]  # type: ignore[index]


@pytest.mark.parametrize(("cluster", "release"), [("kafka4", "4.4"), ("kafka39", "3.9")])
def test_kraft_nodes_answer_strangers_as_kafka_does(cluster, release, request):
    real = request.getfixturevalue(cluster)
    with Sandbox(brokers=1, kafka_version=release) as sandbox:
        controller = real.controllers[0]
        ours = sandbox.controller_ids[0]
        sent = compare(release, CONTROLLER, ("127.0.0.1", controller.port), sandbox.address(ours), controller.node_id,
                       ours, active=True)
        sent += compare(release, BROKER, ("127.0.0.1", real.brokers[0].port), sandbox.address(1), controller.node_id,
                        ours, active=False)
    assert sent > 50, sent


def test_a_standby_controller_answers_as_kafkas_does(kafka4_quorum):
    leader = quorum_leader(("127.0.0.1", kafka4_quorum.controllers[0].port))
    real_node = next(c for c in kafka4_quorum.controllers if c.node_id != leader)
    with Sandbox(brokers=1, controllers=3) as sandbox:
        ours = next(c for c in sandbox.controller_ids if c != quorum_leader(sandbox.address(c)))
        assert compare("4.4", CONTROLLER, ("127.0.0.1", real_node.port), sandbox.address(ours), real_node.node_id,
                       ours, active=False) > 50
        # ControllerRegistration, safe on a standby: NOT_CONTROLLER.
        for address in (("127.0.0.1", real_node.port), sandbox.address(ours)):
            assert exchange(address, ApiKey.CONTROLLER_REGISTRATION, 0, {})["error_code"] == Error.not_controller  # type: ignore[index]


def zk_controller(address: tuple[str, int]) -> int:
    answer = exchange(address, ApiKey.METADATA, 1, {"topics": []})
    return answer["controller_id"]  # type: ignore[index]


def test_zookeeper_mode_brokers_answer_strangers_as_kafka_39_does(kafka39_zk):
    real_controller = zk_controller(("127.0.0.1", kafka39_zk.brokers[0].port))
    real_other = next(b for b in kafka39_zk.brokers if b.node_id != real_controller)
    with Sandbox(brokers=3, mode="zk") as sandbox:
        ours = sandbox.cluster.controller_id
        other = next(b for b in sandbox.cluster.brokers if b != ours)
        sent = compare("3.9", ZK_BROKER, ("127.0.0.1", kafka39_zk.nodes[real_controller].port), sandbox.address(ours),
                       real_controller, ours, active=True)
        sent += compare("3.9", ZK_BROKER, ("127.0.0.1", real_other.port), sandbox.address(other),
                        real_other.node_id, other, active=False)
    assert sent > 50, sent


def state(sandbox: Sandbox) -> dict:
    """The cluster's state (its runtime aside)."""
    return sandbox.cluster.snapshot()


def test_the_inter_node_requests_change_nothing():
    with Sandbox(brokers=3, mode="zk") as zk, Sandbox(brokers=1) as kraft:
        before = state(zk), state(kraft)
        for sandbox, kind, address, node in ((zk, ZK_BROKER, zk.address(zk.cluster.controller_id), zk.cluster.controller_id),
                                             (kraft, CONTROLLER, kraft.address(kraft.controller_ids[0]), kraft.controller_ids[0])):
            listed = releases.release(sandbox.cluster.kafka_version).apis[kind]
            for key in BETWEEN_NODES[kind]:
                for version in listed.get(key, ()):
                    for body in bodies(key, version, sandbox.cluster.kafka_version, node, active=False).values():
                        exchange(address, key, version, body)
            # What Kafka would act on: a LeaderAndIsr of the current epoch, a broker naming this cluster.
            epoch = sandbox.cluster.controller_epoch
            if kind == ZK_BROKER:
                answer = exchange(address, ApiKey.LEADER_AND_ISR, 7, {"controller_epoch": epoch, "controller_id": node})
                assert answer["error_code"] == Error.stale_controller_epoch  # type: ignore[index]
                answer = exchange(address, ApiKey.CONTROLLED_SHUTDOWN, 3, {"broker_id": 2, "broker_epoch": -1})
                assert answer["error_code"] == Error.stale_broker_epoch  # type: ignore[index]
            else:
                answer = exchange(address, ApiKey.BROKER_REGISTRATION, 4, {"cluster_id": sandbox.cluster.cluster_id,
                                                                           "broker_id": 7})
                assert answer["error_code"] == Error.invalid_registration  # type: ignore[index]
                answer = exchange(address, ApiKey.BROKER_REGISTRATION, 4, {"cluster_id": sandbox.cluster.cluster_id,
                                                                           "broker_id": 1})
                assert answer["error_code"] == Error.duplicate_broker_registration  # type: ignore[index]
        assert (state(zk), state(kraft)) == before


def secured_answers(address: tuple[str, int], props: dict, kind: str) -> dict:
    """Each inter-node API's error code, sent by a client without CLUSTER_ACTION."""
    out = {}
    channel = Channel(*address, props, timeout_s=10)
    try:
        for key in BETWEEN_NODES[kind]:
            versions = releases.release("4.4").apis[kind].get(key)
            if versions is None or key == ApiKey.CONTROLLER_REGISTRATION:
                continue
            version = versions.stop - 1
            body = {"controller_id": 4242} if key == ApiKey.UNREGISTER_CONTROLLER else {}
            out[codec.api_name(key)] = channel.request(key, body, version)["error_code"]
    finally:
        channel.close()
    return out


def test_without_cluster_action_the_answer_is_cluster_authorization_failed(kafka4_secured):
    """alice (no ACLs) on the real secured node's controller listener, an anonymous client on the
    sandbox's with an authorizer: the same refusals."""
    from tests.real_kafka import SECURED_USERS
    node = kafka4_secured.nodes[1]
    alice = {"security.protocol": "sasl_plaintext", "sasl.mechanism": "PLAIN", "sasl.username": "alice",
             "sasl.password": SECURED_USERS["alice"]}
    real = secured_answers(("127.0.0.1", kafka4_secured._controller_port(node)), alice, CONTROLLER)
    with Sandbox(brokers=1, authorizer=True) as sandbox:
        ours = secured_answers(sandbox.address(sandbox.controller_ids[0]), {}, CONTROLLER)
    assert ours == real
    assert set(real.values()) == {Error.cluster_authorization_failed}, real
