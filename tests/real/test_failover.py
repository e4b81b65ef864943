"""Failing over and blaming on real Apache Kafka 4.4: a broker whose JVM is stopped (SIGSTOP: its
port accepts connections, nothing answers) or killed (kill -9), seen by one-shot commands. Every
command ends within --timeout (and a margin for a loaded machine); a hung bootstrap address costs
nothing when another answers.

Each test restores the shared cluster it breaks (`with cluster.restored():`).
"""

from __future__ import annotations

import subprocess

from tests.real_kafka import RealKafka
from tests.test_oneshot import SHELL

TIMEOUT_S = 4
MARGIN_S = 4


def oneshot(cluster: RealKafka, line: str, servers: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SHELL, "--bootstrap-server", servers or cluster.bootstrap, "--timeout", str(TIMEOUT_S),
                           "--command", line], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=TIMEOUT_S + MARGIN_S)


def broker_first(cluster: RealKafka, first: int) -> str:
    """The bootstrap list with broker `first` listed before the others."""
    ports = {n.node_id: n.port for n in cluster.brokers}
    return ",".join(f"127.0.0.1:{ports[b]}" for b in sorted(ports, key=lambda b: b != first))


def test_a_hung_first_bootstrap_broker_costs_nothing(kafka4):
    with kafka4.restored(), kafka4.paused(1):
        p = oneshot(kafka4, "list-topics", broker_first(kafka4, 1))
        assert p.returncode == 0, p.stderr
        assert "Traceback" not in p.stderr


def keyed_topic(cluster: RealKafka, name: str) -> None:
    """Three partitions led by brokers 1, 2 and 3, a record in each."""
    from confluent_kafka import Producer
    created = subprocess.run([*SHELL, "--bootstrap-server", cluster.bootstrap, "--command",
                              f"create-topic --topic {name} --replica-assignment 1:2:3,2:3:1,3:1:2 --blocking"],
                             capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert created.returncode == 0, created.stderr
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    for p in range(3):
        producer.produce(name, value=b"x", partition=p)
    assert producer.flush(30) == 0


def drop_topic(cluster: RealKafka, name: str) -> None:
    deleted = subprocess.run([*SHELL, "--bootstrap-server", cluster.bootstrap, "--command",
                              f"delete-topic --topic {name} --yes"], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=60)
    assert deleted.returncode == 0, deleted.stderr


def test_a_hung_or_killed_leader_is_named_and_the_other_partitions_answer(kafka4):
    topic = "failover-leader"
    keyed_topic(kafka4, topic)
    try:
        with kafka4.restored():
            # Hung (SIGSTOP): asked before the controller fences it (broker.session.timeout.ms 4 s).
            with kafka4.paused(1):
                p = oneshot(kafka4, f"get-offsets --topic {topic}", broker_first(kafka4, 2))
            assert p.returncode == 1, p.stderr
            assert p.stdout.split() == [f"{topic}:1:1", f"{topic}:2:1"]
            assert p.stderr.strip() == f"Broker 1 (leader of {topic}-0) did not answer ListOffsets within {TIMEOUT_S} s"
            # Killed (kill -9): its port refuses at once, and it is named as such.
            kafka4.kill(1)
            p = oneshot(kafka4, f"get-offsets --topic {topic}", broker_first(kafka4, 2))
            if p.returncode == 0:   # the controller had fenced it already: its partition moved
                assert len(p.stdout.split()) == 3
            else:
                assert p.stdout.split() == [f"{topic}:1:1", f"{topic}:2:1"]
                assert p.stderr.strip() == f"Broker 1 (leader of {topic}-0) refused the connection (is it down?)"
    finally:
        drop_topic(kafka4, topic)
