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
