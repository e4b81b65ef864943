"""Brokers leaving the cluster on the sandbox and on real Kafka 4.4, with raw requests: a stopped
broker fenced in DescribeCluster v2 (listed only when fenced brokers are asked for),
UnregisterBroker of a stopped broker and of one that is not registered."""

from __future__ import annotations

import time

from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.wire import exchange

WAIT_S = 60.0


def brokers(address, include_fenced: bool) -> list[tuple[int, bool]]:
    answer = exchange(address, ApiKey.DESCRIBE_CLUSTER, 2, {"endpoint_type": 1, "include_fenced_brokers": include_fenced})
    assert isinstance(answer, dict) and answer["error_code"] == 0, answer
    return [(b["broker_id"], b["is_fenced"]) for b in sorted(answer["brokers"], key=lambda b: b["broker_id"])]


def unregister(address, broker_id: int) -> tuple[int, str | None]:
    answer = exchange(address, ApiKey.UNREGISTER_BROKER, 0, {"broker_id": broker_id})
    assert isinstance(answer, dict), answer
    return answer["error_code"], answer["error_message"]


def settled(address, want: list[tuple[int, bool]]) -> list[tuple[int, bool]]:
    """DescribeCluster with fenced brokers once it lists `want` (brokers learn a change from the
    controller a moment later), or what it lists at the deadline."""
    deadline = time.monotonic() + WAIT_S
    while (seen := brokers(address, True)) != want and time.monotonic() < deadline:
        time.sleep(0.2)
    return seen


def membership(address, stop, start) -> list:
    out: list = [brokers(address, False), brokers(address, True)]
    stop(3)
    out += [settled(address, [(1, False), (2, False), (3, True)]), brokers(address, False)]
    out += [unregister(address, 3), settled(address, [(1, False), (2, False)]), unregister(address, 3), unregister(address, 99)]
    start(3)
    out.append(settled(address, [(1, False), (2, False), (3, False)]))
    return out


def test_fenced_and_unregistered_brokers_as_kafka_4_shows_them(kafka4):
    with kafka4.restored():
        theirs = membership(("127.0.0.1", kafka4.brokers[0].port), kafka4.stop_node, lambda i: kafka4.start_node(i))
    with Sandbox(brokers=3) as sb:
        ours = membership(sb.address(1), sb.stop_broker, sb.start_broker)
    assert ours == theirs
    assert theirs[4] == (0, "") and theirs[6] == (Error.broker_id_not_registered, "Broker ID 3 is not currently registered")
