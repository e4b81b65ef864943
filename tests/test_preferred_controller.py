"""preferred-controller (KAFKA-1778) as a real process on the sandbox, in both modes: the
controller moves to the designated node, the proposal's gotchas (the designated node crashes
right after the old controller resigned; it is down when `set` runs), and clear."""

from __future__ import annotations


import pytest

from kafka_shell.sandbox.server import Sandbox
from tests.conftest import BOTH_MODES
from tests.test_oneshot import assert_one_line_error, run
from tests.output import json_rows

pytestmark = BOTH_MODES

KEY = "preferred.controller.id"


@pytest.fixture
def cluster(sandbox_mode):
    """Three brokers; in KRaft mode three controllers (100, 101, 102) of their own."""
    with Sandbox(brokers=3, mode=sandbox_mode, controllers=3 if sandbox_mode == "kraft" else None) as s:
        yield s


def candidates(sb) -> tuple[int, int]:
    """Two nodes that may hold the role and are not the active controller now."""
    ids = sorted(sb.cluster.controllers) if sb.mode == "kraft" else sorted(sb.cluster.brokers)
    others = [i for i in ids if i != sb.active_controller]
    return others[0], others[1]


def stop(sb, node: int) -> None:
    (sb.stop_controller if sb.mode == "kraft" else sb.stop_broker)(node)


def start(sb, node: int) -> None:
    (sb.start_controller if sb.mode == "kraft" else sb.start_broker)(node)


def test_set_blocking_moves_the_controller_and_show_tells_it(cluster):
    wanted, _ = candidates(cluster)
    p = run(cluster, f"preferred-controller set {wanted} --blocking")
    assert p.returncode == 0, p.stderr
    assert f"{wanted} is the active controller" in p.stderr.splitlines()[-1]
    assert cluster.active_controller == wanted and cluster.cluster.cluster_configs[KEY] == str(wanted)
    shown = json_rows(run(cluster, "preferred-controller show -o json").stdout)
    assert shown[0]["preferred_controller"] == wanted and shown[0]["active_controller"] == wanted
    p = run(cluster, "preferred-controller clear")
    assert p.returncode == 0 and KEY not in cluster.cluster.cluster_configs
    assert json_rows(run(cluster, "preferred-controller show -o json").stdout)[0]["preferred_controller"] is None


def test_the_designated_node_crashing_after_the_resignation_leaves_a_controller(cluster):
    wanted, _ = candidates(cluster)
    assert run(cluster, f"preferred-controller set {wanted} --blocking").returncode == 0
    stop(cluster, wanted)                     # it crashes right after taking over
    assert cluster.active_controller not in (-1, wanted)   # every other candidate stood
    start(cluster, wanted)
    assert cluster.active_controller == wanted  # it takes the role back while designated


def test_set_refuses_a_node_that_is_down_and_changes_nothing(cluster):
    wanted, other = candidates(cluster)
    stop(cluster, wanted)
    before = cluster.active_controller
    p = run(cluster, f"preferred-controller set {wanted}")
    assert_one_line_error(p, 1, str(wanted), "nothing was changed")
    assert KEY not in cluster.cluster.cluster_configs and cluster.active_controller == before
    assert_one_line_error(run(cluster, "preferred-controller set 7777"), 1, "nothing was changed")
    p = run(cluster, f"preferred-controller set {other} --dry-run")
    assert p.returncode == 0 and KEY not in cluster.cluster.cluster_configs


@pytest.mark.parametrize("line, needle", [
    ("preferred-controller set", "takes one node id"),
    ("preferred-controller set x", 'Invalid node id "x"'),
    ("preferred-controller clear 1", "takes no argument"),
    ("preferred-controller show --blocking", "--blocking is for preferred-controller set"),
])
def test_bad_input_is_one_line(cluster, line, needle):
    assert_one_line_error(run(cluster, line), 2, needle)
