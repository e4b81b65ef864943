"""The shell against real Apache Kafka: the clusters of tests/real_kafka.py start, and the shell
finds the controller by Kafka's own rules on each (KRaft 4.x, a dynamic quorum, ZooKeeper 3.9)."""

from __future__ import annotations

from tests.output import json_rows
from tests.test_oneshot import shell


def test_kraft_4x_active_controller_is_the_quorum_leader(kafka4):
    p = shell("--bootstrap-server", kafka4.bootstrap, "--output", "json", "--command", "describe-controller")
    assert p.returncode == 0, p.stderr
    [row] = json_rows(p.stdout)
    assert (row["id"], row["mode"]) == (100, "KRaft")


def test_zookeeper_39_controller_is_a_broker(kafka39_zk):
    p = shell("--bootstrap-server", kafka39_zk.bootstrap, "--output", "json", "--command", "describe-controller")
    assert p.returncode == 0, p.stderr
    [row] = json_rows(p.stdout)
    assert row["mode"] == "ZooKeeper" and row["id"] in (1, 2, 3)


def test_dynamic_quorum_lists_three_voters(kafka4_quorum):
    p = shell("--bootstrap-server", kafka4_quorum.bootstrap, "--output", "json", "--command", "describe-quorum")
    assert p.returncode == 0, p.stderr
    assert "100" in p.stdout and "101" in p.stdout and "102" in p.stdout
