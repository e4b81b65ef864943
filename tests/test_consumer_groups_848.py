"""KIP-848 consumer groups compared with real Apache Kafka 4.4: raw ConsumerGroupHeartbeat /
ConsumerGroupDescribe / OffsetCommit / OffsetFetch / ListGroups / DescribeGroups / DeleteGroups
scenarios (tests/k848_scenarios.py) answer alike, the real confluent-kafka Consumer with
group.protocol=consumer joins, commits and rebalances alike, group configs describe and validate
alike, and --data-dir keeps a consumer group."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.connection.channel import Channel
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.sandbox.server import Sandbox
from tests import k848_scenarios


@pytest.fixture(scope="module")
def sandbox3():
    with Sandbox(brokers=3) as s:
        yield s


def _differences(real: dict, ours: dict) -> dict:
    return {k: (real[k], ours.get(k)) for k in real if real[k] != ours.get(k)}


def test_heartbeats_answer_as_kafka(kafka4, sandbox3):
    """Joining, epochs, the uniform target, revoke-before-assign, fencing, commits and fetches
    with member epochs (KIP-1251 assignment epochs), listing by type, the classic DescribeGroups,
    leaving, deleting."""
    real = k848_scenarios.lifecycle(kafka4.bootstrap)
    ours = k848_scenarios.lifecycle(sandbox3.bootstrap)
    assert ours["m1 joins"]["epoch"] == 2 and ours["m1 joins"]["assignment"] == [0, 1, 2, 3, 4, 5]
    assert ours["m1 told to revoke"]["epoch"] == 2 and ours["describe stable"]["state"] == "Stable"
    assert ours["list"] == [("consumer", "consumer", "Stable")] and ours["list classic"] == []
    assert ours["delete while members"] == 68 and ours["delete"] == 0
    assert _differences(real, ours) == {}


def test_commits_of_consumers_that_assign_as_kafka(kafka4, sandbox3):
    """Kafka takes a commit with generation -1 into an empty (or no) group whatever member id it
    names (librdkafka's KIP-848 consumers send theirs when they assign partitions themselves)."""
    real = k848_scenarios.assigned_commits(kafka4.bootstrap)
    ours = k848_scenarios.assigned_commits(sandbox3.bootstrap)
    assert ours["-1 with a member id, no group"] == 0 and ours["-1 with a member id, empty group"] == 0
    assert _differences(real, ours) == {}


def test_regex_subscriptions_resolve_asynchronously_as_kafka(kafka4, sandbox3):
    real = k848_scenarios.regex_subscription(kafka4.bootstrap)
    ours = k848_scenarios.regex_subscription(sandbox3.bootstrap)
    assert ours["joins by regex"]["assignment"] == [] and ours["resolved"]["assignment"] == [0, 1, 2]
    assert ours["resolved"]["epoch"] > ours["joins by regex"]["epoch"]
    assert _differences(real, ours) == {}


def test_static_members_and_range_as_kafka(kafka4, sandbox3):
    real = k848_scenarios.static_and_range(kafka4.bootstrap)
    ours = k848_scenarios.static_and_range(sandbox3.bootstrap)
    assert ours["c takes a's instance id"]["error"] == 111  # UNRELEASED_INSTANCE_ID
    assert ours["c comes back as i-a"]["error"] == 0
    assert _differences(real, ours) == {}


# -- the real consumer -----------------------------------------------------------------------------


class Member:
    """A confluent-kafka Consumer with group.protocol=consumer, polled until told to stop."""

    def __init__(self, bootstrap: str, group: str, topic: str):
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 0})
        self.consumer.subscribe([topic])
        self.seen = 0

    def poll_until(self, done, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while not done():
            assert time.monotonic() < deadline, "the condition did not come true"
            message = self.consumer.poll(0.2)
            if message is not None and message.error() is None:
                self.seen += 1

    def assigned(self) -> list[int]:
        return sorted(tp.partition for tp in self.consumer.assignment())


def _group_state(bootstrap: str, group: str) -> dict:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    found = admin.describe_consumer_groups([group])[group].result(30)
    return {"state": str(found.state), "type": str(getattr(found, "type", "")),
            "members": sorted(sorted(tp.partition for tp in m.assignment.topic_partitions) for m in found.members)}


def consumers(bootstrap: str) -> dict:
    """Join, consume, commit; a second consumer joins (the partitions split); it leaves (the
    first takes them all back). Partitions per member and the committed offsets."""
    topic, group = "k848c-" + uuid.uuid4().hex[:8], "k848c-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in range(40):
        producer.produce(topic, str(i).encode(), partition=i % 4)
    producer.flush(30)
    out: dict = {}
    first = Member(bootstrap, group, topic)
    try:
        first.poll_until(lambda: first.seen == 40)
        out["alone"] = first.assigned()
        first.consumer.commit(asynchronous=False)
        out["committed"] = [tp.offset for tp in first.consumer.committed(
            [TopicPartition(topic, p) for p in range(4)], timeout=30)]
        out["described alone"] = _group_state(bootstrap, group)
        second = Member(bootstrap, group, topic)
        try:
            both = lambda: len(first.assigned()) == 2 and len(second.assigned()) == 2  # noqa: E731
            deadline = time.monotonic() + 90
            while not both():
                assert time.monotonic() < deadline, (first.assigned(), second.assigned())
                first.consumer.poll(0.1)
                second.consumer.poll(0.1)
            out["split"] = sorted([first.assigned(), second.assigned()])
            out["described split"] = _group_state(bootstrap, group)
        finally:
            second.consumer.close()
        first.poll_until(lambda: len(first.assigned()) == 4, timeout_s=90)
        out["back"] = first.assigned()
    finally:
        first.consumer.close()
    out["described after"] = _group_state(bootstrap, group)
    return out


def test_confluent_consumers_rebalance_as_on_kafka(kafka4, sandbox3):
    real, ours = consumers(kafka4.bootstrap), consumers(sandbox3.bootstrap)
    assert ours["alone"] == [0, 1, 2, 3] and ours["committed"] == [10, 10, 10, 10]
    assert ours["split"] == [[0, 1], [2, 3]] and ours["back"] == [0, 1, 2, 3]
    assert _differences(real, ours) == {}


# -- group configs ------------------------------------------------------------------------------------


def eventually(read, done, timeout_s: float = 30) -> list:
    deadline = time.monotonic() + timeout_s
    while not done(found := read()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def group_configs(bootstrap: str) -> dict:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    c = Channel(host, int(port))
    group = "k848cfg-" + uuid.uuid4().hex[:8]
    try:
        def describe() -> list:
            r = c.request(ApiKey.DESCRIBE_CONFIGS, {"resources": [{"resource_type": 32, "resource_name": group,
                                                                    "configuration_keys": None}],
                                                     "include_synonyms": True, "include_documentation": True}, 4)
            return sorted((e["name"], e["value"], e["config_source"], e["config_type"], e["read_only"],
                           [(s["name"], s["value"], s["source"]) for s in e["synonyms"]], e["documentation"])
                          for e in r["results"][0]["configs"])

        def alter(name: str, op: int, value: str | None, validate: bool = False) -> tuple:
            r = c.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, {"resources": [{
                "resource_type": 32, "resource_name": group,
                "configs": [{"name": name, "config_operation": op, "value": value}]}], "validate_only": validate}, 1)
            return r["responses"][0]["error_code"], r["responses"][0]["error_message"]
        out: dict = {"defaults": describe()}
        for name, value in [("consumer.session.timeout.ms", "5000"), ("consumer.heartbeat.interval.ms", "99999"),
                            ("no.such.key", "1"), ("share.auto.offset.reset", "bogus"),
                            ("consumer.session.timeout.ms", "abc"), ("share.isolation.level", "read_committed"),
                            ("share.auto.offset.reset", "by_duration:PT1H")]:
            out[f"set {name}={value}"] = alter(name, 0, value, validate=True)
        out["append to an int"] = alter("consumer.session.timeout.ms", 2, "1", validate=True)
        out["set"] = alter("consumer.session.timeout.ms", 0, "50000")
        out["after set"] = eventually(describe, lambda d: d != out["defaults"])
        out["delete"] = alter("consumer.session.timeout.ms", 1, None)
        # Kafka's brokers learn of a config change from the controller a little later.
        out["after delete"] = eventually(describe, lambda d: d == out["defaults"]) == out["defaults"]
        return out
    finally:
        c.close()


def test_group_configs_as_kafka(kafka4, sandbox3):
    real, ours = group_configs(kafka4.bootstrap), group_configs(sandbox3.bootstrap)
    assert ours["set consumer.session.timeout.ms=5000"] == (
        40, "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.")
    assert ours["set"] == (0, None) and ours["after delete"] is True
    assert _differences(real, ours) == {}


def test_group_config_times_the_member(tmp_path):
    """consumer.heartbeat.interval.ms set on the group is what its members are told."""
    with Sandbox(brokers=1) as s:
        host, port = s.bootstrap.rsplit(":", 1)
        c = Channel(host, int(port))
        try:
            g = k848_scenarios.Group(s.bootstrap)
            r = c.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, {"resources": [{
                "resource_type": 32, "resource_name": g.group_id, "configs": [
                    {"name": "consumer.heartbeat.interval.ms", "config_operation": 0, "value": "7000"}]}],
                "validate_only": False}, 1)
            assert r["responses"][0]["error_code"] == 0
            assert g.join(g.new_member())["interval"] == 7000
            g.close()
        finally:
            c.close()


def test_data_dir_keeps_a_consumer_group(tmp_path):
    """A consumer group, its epochs, its member's assignment and its offsets come back after a
    restart with --data-dir, and the member goes on heartbeating with its epoch."""
    with Sandbox(brokers=1, data_dir=str(tmp_path)) as s:
        g = k848_scenarios.Group(s.bootstrap)
        m = g.new_member()
        joined = g.join(m)
        assert g.commit(m, joined["epoch"], 0) == 0
        before = g.describe()
        kept = (g.group_id, g.topic, g.topic_id)
        g.close()
    with Sandbox(brokers=1, data_dir=str(tmp_path)) as s:
        host, port = s.bootstrap.rsplit(":", 1)
        g = k848_scenarios.Group.__new__(k848_scenarios.Group)
        g.group_id, g.topic, g.topic_id = kept
        g.channel, g.labels = Channel(host, int(port)), {m: "m1"}
        try:
            assert g.describe() == before and before["state"] == "Stable"
            assert g.fetch(None, -1) == (0, [5, -1])
            again = g.heartbeat(m, joined["epoch"], owned=joined["assignment"])
            assert again["error"] == 0 and again["epoch"] == joined["epoch"]
        finally:
            g.close()
