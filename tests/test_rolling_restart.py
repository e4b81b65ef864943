"""rolling-restart-plan on the sandbox: a rolling restart that follows it moves the controller at
most once in zk mode and never in KRaft mode (separate controllers), and no partition loses
more than one replica at a time."""

from __future__ import annotations


import pytest

from kafka_shell.sandbox.server import Sandbox
from tests.conftest import BOTH_MODES
from tests.sandbox.wire import create
from tests.test_oneshot import assert_one_line_error, run
from tests.output import json_rows

pytestmark = BOTH_MODES


@pytest.fixture
def cluster(sandbox_mode):
    with Sandbox(brokers=5, mode=sandbox_mode) as s:
        create(s, "t", [[1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 1], [5, 1, 2]])
        create(s, "pairs", [[1, 3], [2, 5], [4, 1]])
        yield s


def test_following_the_plan_moves_the_controller_at_most_once(cluster):
    p = run(cluster, "rolling-restart-plan -o json")
    assert p.returncode == 0, p.stderr
    steps = json_rows(p.stdout)
    broker_steps = [s["nodes"] for s in steps if s["role"].startswith("broker")]
    assert sorted(b for nodes in broker_steps for b in nodes) == [1, 2, 3, 4, 5]
    replicas = cluster.call(lambda c: [set(q.replicas) for t in c.topics.values() for q in t.partitions],
                            cluster.cluster)
    controller, moves = cluster.active_controller, 0
    for nodes in broker_steps:
        assert all(len(r & set(nodes)) <= 1 for r in replicas)  # one replica of a partition at a time
        for b in nodes:
            cluster.stop_broker(b)
            moves += cluster.active_controller != controller
            controller = cluster.active_controller
        for b in nodes:
            cluster.start_broker(b)
            moves += cluster.active_controller != controller
            controller = cluster.active_controller
        offline = cluster.call(lambda c: [q for t in c.topics.values() for q in t.partitions if q.leader < 0],
                               cluster.cluster)
        assert offline == []
    if cluster.mode == "zk":
        assert moves == 1 and steps[-1]["role"] == "broker (controller)"
    else:
        assert moves == 0
    # In KRaft mode the moving restart is the active controller's own, the plan's last step.
    assert "the controller moves 1 time(s)" in p.stderr


def test_brokers_option_and_bad_ids(cluster):
    steps = json_rows(run(cluster, "rolling-restart-plan --brokers 1,2 -o json").stdout)
    assert [s["nodes"] for s in steps] == [[1], [2]] or [s["nodes"] for s in steps] == [[2], [1]]
    assert_one_line_error(run(cluster, "rolling-restart-plan --brokers 1,9"), 2, "9 not live")
    assert_one_line_error(run(cluster, "rolling-restart-plan --brokers x"), 2, "broker ids")
