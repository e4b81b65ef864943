"""Partition reassignments (Alter/ListPartitionReassignments), replication throttles and
DescribeLogDirs, over real sockets: data written by a real producer, copied at a set rate."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from tests.sandbox.wire import produce, request
from tests.conftest import BOTH_MODES

pytestmark = BOTH_MODES  # controller, elections, reassignments and faults: both sandbox modes

ALTER, LIST, LOG_DIRS = 45, 46, 35
NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICATION_FACTOR = 0, 3, 38
INVALID_REPLICA_ASSIGNMENT, NOT_CONTROLLER, NO_REASSIGNMENT_IN_PROGRESS = 39, 41, 85


@pytest.fixture
def loaded(sandbox):
    """t-0 on [1, 2], led by 1, holding 20 batches of about 1 KB."""
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 2, [[1, 2]])
    produce(sandbox, "t", 0, 20, 1000)
    return sandbox


def controller(sandbox) -> int:
    return sandbox.cluster.controller_id


def alter(sandbox, moves: dict[tuple[str, int], list[int] | None], broker: int | None = None,
          **extra) -> dict:
    topics: dict[str, list] = {}
    for (topic, index), replicas in moves.items():
        topics.setdefault(topic, []).append({"partition_index": index, "replicas": replicas})
    body = {"topics": [{"name": t, "partitions": ps} for t, ps in topics.items()], **extra}
    r = request(sandbox, broker or controller(sandbox), ALTER, body)
    return {(t["name"], p["partition_index"]): p["error_code"] for t in r["responses"] for p in t["partitions"]}


def ongoing(sandbox) -> dict:
    r = request(sandbox, controller(sandbox), LIST, {"topics": None})
    assert r["error_code"] == NONE
    return {(t["name"], p["partition_index"]): (p["replicas"], p["adding_replicas"], p["removing_replicas"])
            for t in r["topics"] for p in t["partitions"]}


def log_dirs(sandbox, broker: int, version: int | None = None) -> dict:
    r = request(sandbox, broker, LOG_DIRS, {"topics": None}, version)
    [result] = r["results"]
    assert result["log_dir"] == f"/sandbox/broker-{broker}/data"
    return {"result": result, "partitions": {(t["name"], p["partition_index"]): p
                                             for t in result["topics"] for p in t["partitions"]}}


def wait_until(condition, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def test_reassignment_copies_at_the_set_rate_then_completes(loaded):
    size = loaded.cluster.partition("t", 0).size_bytes()
    loaded.set_replication_rate(40_000)  # about half a second for ~21 KB
    assert alter(loaded, {("t", 0): [2, 3]}) == {("t", 0): NONE}
    assert ongoing(loaded) == {("t", 0): ([2, 3, 1], [3], [1])}

    seen_partial = False
    deadline = time.monotonic() + 5
    while ongoing(loaded):
        copied = log_dirs(loaded, 3)["partitions"][("t", 0)]["partition_size"]
        seen_partial |= 0 < copied < size
        assert time.monotonic() < deadline, "the move did not complete"
        time.sleep(0.02)
    assert seen_partial, "the copy never showed progress between empty and complete"

    p = loaded.cluster.partition("t", 0)
    assert (p.replicas, sorted(p.isr), p.leader) == ([2, 3], [2, 3], 2)  # leader 1 moved off
    assert log_dirs(loaded, 3)["partitions"][("t", 0)]["partition_size"] == size
    assert ("t", 0) not in log_dirs(loaded, 1)["partitions"]


def test_a_throttled_move_copies_whole_batches_before_it_waits(sandbox):
    """Kafka's replication quota throttles a fetch once the measured rate is over it: the first
    fetch of a throttled replica copies a batch at once, however large (the progress of
    `reassign --wait` moves from the start), and the quota is paid back before the next."""
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "big", 1, 1, [[1]])
    produce(sandbox, "big", 0, 3, 3000)
    size = sandbox.cluster.partition("big", 0).size_bytes()
    sandbox.set_replication_rate(10)  # a batch every 300 s: the first one is copied at once all the same
    assert alter(sandbox, {("big", 0): [1, 2]}) == {("big", 0): NONE}
    wait_until(lambda: log_dirs(sandbox, 2)["partitions"][("big", 0)]["partition_size"] > 0)
    copied = log_dirs(sandbox, 2)["partitions"][("big", 0)]["partition_size"]
    assert 0 < copied < size and ongoing(sandbox)
    sandbox.set_replication_rate(None)
    wait_until(lambda: not ongoing(sandbox))


def test_cancel_reverts_and_cancelling_nothing_is_an_error(loaded):
    loaded.set_replication_rate(10)  # the move cannot finish during the test
    assert alter(loaded, {("t", 0): [1, 3]}) == {("t", 0): NONE}
    assert ongoing(loaded) == {("t", 0): ([1, 3, 2], [3], [2])}
    assert alter(loaded, {("t", 0): None}) == {("t", 0): NONE}
    assert ongoing(loaded) == {}
    p = loaded.cluster.partition("t", 0)
    assert (p.replicas, sorted(p.isr)) == ([1, 2], [1, 2])
    assert alter(loaded, {("t", 0): None}) == {("t", 0): NO_REASSIGNMENT_IN_PROGRESS}


def test_reassignment_validation(loaded):
    assert alter(loaded, {("nope", 0): [1], ("t", 4): [1], ("t", 0): []}) == {
        ("nope", 0): UNKNOWN_TOPIC_OR_PARTITION, ("t", 4): UNKNOWN_TOPIC_OR_PARTITION,
        ("t", 0): INVALID_REPLICA_ASSIGNMENT}
    assert alter(loaded, {("t", 0): [1, 1]}) == {("t", 0): INVALID_REPLICA_ASSIGNMENT}
    assert alter(loaded, {("t", 0): [1, 9]}) == {("t", 0): INVALID_REPLICA_ASSIGNMENT}
    if loaded.mode == "kraft":  # AllowReplicationFactorChange is v1 (Kafka 4.x); zk mode is 3.9's v0
        assert alter(loaded, {("t", 0): [1, 2, 3]}, allow_replication_factor_change=False) == {
            ("t", 0): INVALID_REPLICATION_FACTOR}
    other = next(b for b in (1, 2, 3) if b != controller(loaded))
    if loaded.mode == "zk":
        assert alter(loaded, {("t", 0): [1, 3]}, broker=other) == {("t", 0): NOT_CONTROLLER}
    else:  # a KRaft broker forwards it to the active controller, which validates it
        assert alter(loaded, {("t", 0): [1, 9]}, broker=other) == {("t", 0): INVALID_REPLICA_ASSIGNMENT}
    assert ongoing(loaded) == {}


def test_a_move_onto_a_stopped_broker_waits_for_it(loaded):
    loaded.stop_broker(3)
    assert alter(loaded, {("t", 0): [1, 3]}) == {("t", 0): NONE}  # still registered in KRaft
    assert ongoing(loaded) == {("t", 0): ([1, 3, 2], [3], [2])}
    loaded.start_broker(3)
    wait_until(lambda: not ongoing(loaded))
    assert loaded.cluster.partition("t", 0).replicas == [1, 3]


def alter_configs(admin, kind: ResourceType, name: str, **values: str | None) -> None:
    entries = [ConfigEntry(k.replace("_", "."), v, incremental_operation=(
        AlterConfigOpType.SET if v is not None else AlterConfigOpType.DELETE))
               for k, v in values.items()]
    for future in admin.incremental_alter_configs([ConfigResource(kind, name, incremental_configs=entries)]).values():
        future.result(10)


@pytest.mark.parametrize("side,broker", [("follower", 3), ("leader", 1)])
def test_throttles_slow_a_move_until_lifted(loaded, admin, side, broker):
    alter_configs(admin, ResourceType.BROKER, str(broker), **{f"{side}_replication_throttled_rate": "100"})
    alter_configs(admin, ResourceType.TOPIC, "t", **{f"{side}_replication_throttled_replicas": f"0:{broker}"})
    assert alter(loaded, {("t", 0): [1, 3]}) == {("t", 0): NONE}
    time.sleep(0.2)  # a few replication ticks
    assert ongoing(loaded) == {("t", 0): ([1, 3, 2], [3], [2])}
    assert log_dirs(loaded, 3)["partitions"][("t", 0)]["offset_lag"] > 0
    alter_configs(admin, ResourceType.TOPIC, "t", **{f"{side}_replication_throttled_replicas": None})
    wait_until(lambda: not ongoing(loaded))  # unthrottled: done within a tick or two
    assert loaded.cluster.partition("t", 0).replicas == [1, 3]


def test_describe_log_dirs_per_broker(loaded):
    size = loaded.cluster.partition("t", 0).size_bytes()
    assert size > 20_000
    for broker in (1, 2):
        d = log_dirs(loaded, broker)
        assert d["partitions"] == {("t", 0): {"partition_index": 0, "partition_size": size,
                                              "offset_lag": 0, "is_future_key": False}}
        assert d["result"]["usable_bytes"] == d["result"]["total_bytes"] - size
    assert log_dirs(loaded, 3)["partitions"] == {}
    v1 = log_dirs(loaded, 1, version=1)["result"]
    assert "total_bytes" not in v1  # only from v4
