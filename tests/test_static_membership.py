"""Static membership (KIP-345) compared with real Apache Kafka 4.x: raw group requests
(tests/static_scenarios.py) and real consumers (confluent-kafka with group.instance.id) get the
same answers and the same assignments from the sandbox as from Kafka."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_shell.sandbox.server import Sandbox
from tests import static_scenarios, txn_scenarios

SESSION_MS = 6000   # Kafka's group.min.session.timeout.ms


@pytest.fixture(scope="module")
def sandbox3():
    with Sandbox(brokers=3) as s:
        yield s


def _both(kafka4, sandbox, scenario) -> tuple[dict, dict]:
    return scenario(kafka4.bootstrap), scenario(sandbox.bootstrap)


def _differences(real: dict, ours: dict) -> dict:
    return {k: (real[k], ours.get(k)) for k in real if real[k] != ours.get(k)}


def test_static_member_requests_answer_as_kafka(kafka4, sandbox3):
    """Replacement without a rebalance (v5: the old leader's id; v9: skip_assignment), the old
    member id fenced in Heartbeat, SyncGroup, OffsetCommit and JoinGroup, unknown instance ids,
    LeaveGroup v3+ by instance id."""
    def scenario(bootstrap: str) -> dict:
        c = txn_scenarios.Cluster(bootstrap)
        try:
            return static_scenarios.static_members(bootstrap, c.topic)
        finally:
            c.close()
    real, ours = _both(kafka4, sandbox3, scenario)
    assert ours["replacing join (v5)"]["generation"] == ours["first join"]["generation"]
    assert ours["new member's sync"] == (0, b"assignment-1") and ours["old member's heartbeat"] == 82
    assert _differences(real, ours) == {}


def test_an_absent_static_leader_as_kafka(kafka4, sandbox3):
    """A rebalance waits for an absent static member until the rebalance timeout, then completes
    without it: it stays a member and the member that joined leads."""
    real, ours = _both(kafka4, sandbox3, static_scenarios.absent_static_leader)
    assert ours["dynamic join"]["leader"] == "m2" and len(ours["stable without the static member"][1]) == 2
    assert _differences(real, ours) == {}


class Member:
    """A consumer of the group, its assignment history and the error it saw."""

    def __init__(self, bootstrap: str, group: str, topic: str, instance: str):
        self.events: list[tuple[str, list[int]]] = []
        self.error: int | None = None
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": instance,
                                  "session.timeout.ms": SESSION_MS, "partition.assignment.strategy": "range",
                                  "enable.auto.commit": False, "log_level": 0})
        self.consumer.subscribe([topic], on_assign=self._on("assign"), on_revoke=self._on("revoke"))

    def _on(self, kind: str):
        return lambda consumer, partitions: self.events.append((kind, sorted(p.partition for p in partitions)))

    @property
    def assigned(self) -> list[int] | None:
        return next((ps for kind, ps in reversed(self.events) if kind == "assign"), None)

    def poll(self) -> None:
        try:
            m = self.consumer.poll(0.05)
        except KafkaException as exc:
            self.error = exc.args[0].code()
            return
        if m is not None and m.error() is not None and m.error().code() != KafkaError._PARTITION_EOF:
            self.error = m.error().code()


def _poll_until(members: list[Member], condition, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout_s:.0f} s: {what}"
        for m in members:
            m.poll()


def consumers(bootstrap: str) -> dict:
    """Two static consumers; one restarts within its session (no rebalance: the other sees no
    callback and it gets its partitions back), then goes for good (the other gets everything,
    not before the session timeout); a second process with a live member's instance id fences
    the first."""
    topic, group = "static-" + uuid.uuid4().hex[:8], "g-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(30)
    out: dict = {}
    a, b = Member(bootstrap, group, topic, "a"), Member(bootstrap, group, topic, "b")
    _poll_until([a, b], lambda: a.assigned is not None and b.assigned is not None
                and sorted(a.assigned + b.assigned) == [0, 1, 2, 3], "both consumers assigned")
    out["first assignment"] = (a.assigned, b.assigned)
    seen_by_b = list(b.events)
    a.consumer.close()   # a static member leaves no LeaveGroup behind
    restarted = Member(bootstrap, group, topic, "a")
    _poll_until([restarted, b], lambda: restarted.assigned is not None, "the restarted consumer assigned")
    out["restarted"] = (restarted.assigned, b.events == seen_by_b)
    restarted.consumer.close()
    gone = time.monotonic()
    _poll_until([b], lambda: b.assigned == [0, 1, 2, 3], "the other consumer given every partition")
    out["after the session ended"] = (b.events[len(seen_by_b):], time.monotonic() - gone >= SESSION_MS / 1000 - 0.5)
    twin = Member(bootstrap, group, topic, "b")
    _poll_until([twin, b], lambda: b.error is not None and twin.assigned is not None, "the first 'b' fenced")
    out["fenced"] = (b.error, twin.assigned)
    for m in (b, twin):
        m.consumer.close()
    return out


def test_static_consumers_as_kafka(kafka4, sandbox3):
    real, ours = _both(kafka4, sandbox3, consumers)
    assert ours["restarted"] == ([0, 1], True) and ours["fenced"][0] == KafkaError._FATAL   # "Static consumer fenced by other consumer"
    assert _differences(real, ours) == {}
