"""Leader elections (ElectLeaders v0-v3), GetReplicaLogInfo and the preferred controller, over
real sockets: the AdminClient where it has the API, the shell's direct channel otherwise."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_shell.protocol.seed_apis import GET_REPLICA_LOG_INFO_KEY
from kafka_shell.sandbox import replication
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.wire import create, produce, request, stage_offline_partition
from tests.conftest import BOTH_MODES, ZK_MODE

pytestmark = BOTH_MODES  # controller, elections, reassignments and faults: both sandbox modes

ELECT = 43
NONE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER = 0, 3, 6
NOT_CONTROLLER, INVALID_REQUEST, UNKNOWN_TOPIC_ID = 41, 42, 100
PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE, ELECTION_NOT_NEEDED = 80, 83, 84


def leader(admin, topic: str, partition: int = 0) -> int:
    return admin.list_topics(topic, timeout=5).topics[topic].partitions[partition].leader


def elect(admin, kind: ElectionType, *partitions: tuple[str, int]) -> dict:
    """Partition -> error code (0 for success) of an AdminClient election."""
    result = admin.elect_leaders(kind, [TopicPartition(t, p) for t, p in partitions]).result(10)
    return {(tp.topic, tp.partition): (err.code() if err else 0) for tp, err in result.items()}


def elect_raw(sandbox, broker: int, kind: int, topics: list[dict], version: int = 3) -> dict:
    return request(sandbox, broker, ELECT, {"election_type": kind, "topic_partitions": topics,
                                            "timeout": 5000}, version)


def codes(response: dict) -> dict:
    return {(t["topic"], r["partition_id"]): r["error_code"]
            for t in response["replica_election_results"] for r in t["partition_result"]}


def test_preferred_election_restores_the_preferred_leader_after_a_restart(sandbox, admin):
    create(sandbox, "t", [[1, 2, 3]])
    epoch = sandbox.cluster.partition("t", 0).leader_epoch
    sandbox.stop_broker(1)
    assert leader(admin, "t") == 2
    sandbox.start_broker(1)
    assert leader(admin, "t") == 2  # no auto rebalance by default
    assert elect(admin, ElectionType.PREFERRED, ("t", 0)) == {("t", 0): NONE}
    assert leader(admin, "t") == 1
    assert sandbox.cluster.partition("t", 0).leader_epoch == epoch + 2
    assert elect(admin, ElectionType.PREFERRED, ("t", 0)) == {("t", 0): ELECTION_NOT_NEEDED}


def test_preferred_election_errors(sandbox, admin):
    create(sandbox, "t", [[1, 2]])
    sandbox.stop_broker(1)
    assert elect(admin, ElectionType.PREFERRED, ("t", 0), ("t", 7)) == {
        ("t", 0): PREFERRED_LEADER_NOT_AVAILABLE, ("t", 7): UNKNOWN_TOPIC_OR_PARTITION}


def test_election_over_all_partitions_reports_only_those_that_needed_one(sandbox):
    create(sandbox, "a", [[1, 2], [2, 1]])
    sandbox.stop_broker(1)
    sandbox.start_broker(1)
    response = request(sandbox, sandbox.cluster.controller_id, ELECT,
                       {"election_type": 0, "topic_partitions": None}, 2)
    assert codes(response) == {("a", 0): NONE}
    assert sandbox.cluster.partition("a", 0).leader == 1


def test_unclean_election_needs_a_request_or_the_topic_config(sandbox, admin):
    create(sandbox, "t", [[1, 2]])
    produce(sandbox, "t", 0, 3, 100)
    sandbox.stop_broker(2)
    produce(sandbox, "t", 0, 2, 100)  # only broker 1 has offsets 3 and 4
    sandbox.stop_broker(1)
    sandbox.start_broker(2)
    assert leader(admin, "t") == -1  # unclean.leader.election.enable=false: stays offline
    assert elect(admin, ElectionType.UNCLEAN, ("t", 0)) == {("t", 0): NONE}
    assert leader(admin, "t") == 2
    p = sandbox.cluster.partition("t", 0)
    assert (p.leo[2], p.high_watermark) == (3, 3)  # the log is what broker 2 held
    assert elect(admin, ElectionType.UNCLEAN, ("t", 0)) == {("t", 0): ELECTION_NOT_NEEDED}

    create(sandbox, "u", [[1, 3]], **{"unclean.leader.election.enable": "true"})
    sandbox.start_broker(1)
    sandbox.stop_broker(3)
    sandbox.stop_broker(1)
    sandbox.start_broker(3)
    assert leader(admin, "u") == 3  # elected without a request


def test_unclean_election_without_a_live_replica(sandbox):
    create(sandbox, "t", [[1, 2]])
    sandbox.stop_broker(1)
    sandbox.stop_broker(2)
    response = elect_raw(sandbox, sandbox.cluster.controller_id, 1, [{"topic": "t", "partitions": [0]}], 2)
    assert codes(response) == {("t", 0): ELIGIBLE_LEADERS_NOT_AVAILABLE}


def test_eligible_leader_replica_leads_again_when_it_returns(sandbox, admin):
    create(sandbox, "t", [[1, 2, 3]], **{"min.insync.replicas": "2"})
    sandbox.stop_broker(1)
    sandbox.stop_broker(2)  # ISR [3] is below min ISR: 2 is kept as an eligible leader
    p = sandbox.cluster.partition("t", 0)
    assert (p.isr, p.elr) == ([3], [2])
    sandbox.stop_broker(3)
    assert (p.isr, sorted(p.elr), p.leader) == ([], [2, 3], -1)
    sandbox.start_broker(2)
    assert leader(admin, "t") == 2


@ZK_MODE  # KRaft brokers forward it to the controller (test_kraft.py)
def test_elect_leaders_on_a_broker_that_is_not_the_controller(sandbox):
    create(sandbox, "t", [[1, 2]])
    other = next(b for b in sandbox.cluster.brokers if b != sandbox.cluster.controller_id)
    v2 = elect_raw(sandbox, other, 0, [{"topic": "t", "partitions": [0]}], 2)
    assert v2["error_code"] == NOT_CONTROLLER and codes(v2) == {("t", 0): NOT_CONTROLLER}
    v0 = elect_raw(sandbox, other, 0, [{"topic": "t", "partitions": [0]}], 0)
    assert codes(v0) == {("t", 0): NOT_CONTROLLER}


@pytest.fixture
def seeded(sandbox_mode):
    """A sandbox that also serves the seeds' APIs (KAFKA-20098's GetReplicaLogInfo and
    designated ElectLeaders v3), which no Kafka release has."""
    with Sandbox(brokers=3, mode=sandbox_mode, seed_apis=True) as s:
        yield s


@pytest.fixture
def offline(seeded):
    """t-0 offline, its live replicas out of sync (see stage_offline_partition)."""
    stage_offline_partition(seeded)
    assert seeded.cluster.partition("t", 0).leader == -1
    return seeded


def designate(sandbox, partitions: list[int], leaders: list[int] | None, topic: str = "t") -> dict:
    return codes(elect_raw(sandbox, sandbox.cluster.controller_id, 2,
                           [{"topic": topic, "partitions": partitions, "designated_leaders": leaders}]))


def test_replica_log_info_reports_each_replica_log(offline):
    tid = offline.cluster.topics["t"].id
    body = {"topic_partitions": [{"topic_id": tid, "partitions": [0, 1]}]}
    answers = {}
    for b in (2, 3):
        r = request(offline, b, GET_REPLICA_LOG_INFO_KEY, body)
        assert r["broker_epoch"] == 2 and r["has_more_data"] is False  # restarted once
        answers[b] = r["topic_partition_log_info_list"][0]["partition_log_info"]
    assert answers[2][0] == {"partition": 0, "partition_leader_epoch": 0, "log_end_offset": 6,
                             "error_code": NONE}
    assert answers[3][0]["log_end_offset"] == 4
    assert answers[2][1]["error_code"] == UNKNOWN_TOPIC_OR_PARTITION


def test_designated_election_rules(offline):
    create(offline, "online", [[2, 3]])
    assert designate(offline, [0], [2], "online") == {("online", 0): ELECTION_NOT_NEEDED}
    assert designate(offline, [0], [4]) == {("t", 0): INVALID_REQUEST}  # not a replica
    assert designate(offline, [0], [1]) == {("t", 0): ELIGIBLE_LEADERS_NOT_AVAILABLE}  # fenced
    assert designate(offline, [0], []) == {("t", 0): INVALID_REQUEST}  # lengths differ
    assert designate(offline, [0], None) == {("t", 0): INVALID_REQUEST}
    assert designate(offline, [5], [2]) == {("t", 5): UNKNOWN_TOPIC_OR_PARTITION}
    assert offline.cluster.partition("t", 0).leader == -1


def test_designated_election_elects_and_truncates(offline):
    admin = AdminClient({"bootstrap.servers": offline.bootstrap, "log_level": 3})
    epoch = offline.cluster.partition("t", 0).leader_epoch
    assert designate(offline, [0], [2]) == {("t", 0): NONE}
    assert leader(admin, "t") == 2
    p = offline.cluster.partition("t", 0)
    assert p.leader_epoch == epoch + 1
    assert p.high_watermark == 6 and p.batches[-1].last_offset == 5  # records 6-9 are lost
    assert p.leo[3] == 6 and sorted(p.isr) == [2, 3]  # 3 truncated, then caught up from 2
    offline.start_broker(1)
    assert p.leo[1] == 6  # the old leader truncates its diverging log
    assert designate(offline, [0], [3]) == {("t", 0): ELECTION_NOT_NEEDED}


def test_designated_election_serves_the_first_1000_partitions(seeded):
    response = designate(seeded, list(range(1005)), [1] * 1005, topic="missing")
    assert len(response) == 1000
    assert set(response.values()) == {UNKNOWN_TOPIC_OR_PARTITION}


def test_designated_election_needs_v3(sandbox):
    create(sandbox, "t", [[1]])
    response = elect_raw(sandbox, sandbox.cluster.controller_id, 2, [{"topic": "t", "partitions": [0]}], 2)
    assert response["error_code"] == INVALID_REQUEST


def test_replica_log_info_errors_and_the_1000_partition_limit(seeded):
    create(seeded, "big", [[1]] * 1003)
    create(seeded, "small", [[2]])
    big, small = seeded.cluster.topics["big"].id, seeded.cluster.topics["small"].id
    unknown = seeded.cluster.topics["big"].id.__class__(int=7)
    r = request(seeded, 1, GET_REPLICA_LOG_INFO_KEY, {"topic_partitions": [
        {"topic_id": small, "partitions": [0]}, {"topic_id": unknown, "partitions": [0]},
        {"topic_id": big, "partitions": list(range(1003))}]})
    assert r["has_more_data"] is True and r["broker_epoch"] == 1
    infos = [i for t in r["topic_partition_log_info_list"] for i in t["partition_log_info"]]
    assert len(infos) == 1000
    assert infos[0]["error_code"] == NOT_LEADER_OR_FOLLOWER  # broker 1 holds no replica of small
    assert infos[1]["error_code"] == UNKNOWN_TOPIC_ID
    assert {i["error_code"] for i in infos[2:]} == {NONE}


def set_cluster_config(sandbox, key: str, value: str) -> None:
    """IncrementalAlterConfigs on the cluster default (librdkafka refuses the empty name)."""
    r = request(sandbox, 1, 44, {"resources": [{"resource_type": 4, "resource_name": "", "configs": [
        {"name": key, "config_operation": 0, "value": value}]}]})
    assert [x["error_code"] for x in r["responses"]] == [NONE]


def wait_controller(admin, wanted: int) -> None:
    deadline = time.monotonic() + 2
    while admin.list_topics(timeout=2).controller_id != wanted:
        assert time.monotonic() < deadline, f"controller did not become {wanted}"
        time.sleep(0.05)


@ZK_MODE  # KRaft: the voters' version is in test_kraft.py
def test_preferred_controller_takes_over_and_returns_after_a_restart(sandbox, admin):
    target = next(b for b in (3, 2, 1) if b != sandbox.cluster.controller_id)
    set_cluster_config(sandbox, replication.PREFERRED_CONTROLLER_KEY, str(target))
    wait_controller(admin, target)
    sandbox.stop_broker(target)
    stand_in = sandbox.cluster.controller_id
    assert stand_in not in (-1, target)  # the others stand while it is down
    sandbox.start_broker(target)
    wait_controller(admin, target)
    assert sandbox.kill_controller() == target  # a resignation re-elects the designated broker


def test_auto_leader_rebalance_moves_leadership_back():
    # A static broker config in Kafka (not dynamically alterable), so set at start.
    with Sandbox(brokers=2, configs={"auto.leader.rebalance.enable": "true"}) as sandbox:
        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 3})
        create(sandbox, "t", [[1, 2]])
        sandbox.stop_broker(1)
        assert leader(admin, "t") == 2
        sandbox.start_broker(1)
        assert leader(admin, "t") == 1
