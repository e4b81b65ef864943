"""describe-log-dirs, describe-quorum and describe-controller, run as a real process and checked
against the sandbox's own state (and Tansu, for a cluster lacking the APIs)."""

from __future__ import annotations


import pytest

from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox.server import Sandbox
from tests.conftest import BOTH_MODES, KRAFT_MODE, ZK_MODE
from kafka_shell.sandbox import replication
from tests.sandbox.wire import produce
from tests.tansu import tansu_broker
from tests.test_oneshot import assert_one_line_error, run, shell
from tests.output import json_data


def out_json(p):
    assert p.returncode == 0, p.stderr
    return json_data(p.stdout)


def replica_view(cluster) -> dict:
    """(broker, topic, partition) -> (size, offset lag) for every live broker's replicas."""
    return {(b, t.name, p.index): (replication.replica_size(p, b), max(p.high_watermark - p.leo.get(b, 0), 0))
            for t in cluster.topics.values() for p in t.partitions for b in p.replicas
            if cluster.brokers[b].alive}


def test_describe_log_dirs_matches_the_replicas_and_their_lag(sandbox):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 2, 2, [[1, 2], [2, 3]])
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "other", 1, 1, [[3]])
    produce(sandbox, "t", 0, 2, 100)
    sandbox.stop_broker(2)
    produce(sandbox, "t", 0, 3, 100)  # broker 2 misses three batches
    sandbox.set_replication_rate(1)   # ...copies one at its first fetch, the rest far too slowly to matter here
    sandbox.start_broker(2)
    data = out_json(run(sandbox, "describe-log-dirs", "-o", "json"))
    expected = sandbox.call(replica_view, sandbox.cluster)
    got = {(r["broker"], r["topic"], r["partition"]): (r["size"], r["offset_lag"]) for r in data["partitions"]}
    assert got == expected
    assert got[(2, "t", 0)][1] == 2 and got[(1, "t", 0)] == (expected[(1, "t", 0)][0], 0)
    assert got[(1, "t", 0)][0] > 0
    assert all(r["is_future"] is False for r in data["partitions"])
    assert [(d["broker"], d["log_dir"], d["error"]) for d in data["log_dirs"]] == [
        (b, f"/sandbox/broker-{b}/data", None) for b in (1, 2, 3)]
    assert data["log_dirs"][0]["usable_bytes"] == data["log_dirs"][0]["total_bytes"] - expected[(1, "t", 0)][0]

    data = out_json(run(sandbox, "describe-log-dirs --broker-list 2,3 --topic-list t", "-o", "json"))
    assert sorted((r["broker"], r["topic"], r["partition"]) for r in data["partitions"]) == [
        (2, "t", 0), (2, "t", 1), (3, "t", 1)]


@pytest.mark.parametrize("line,code,needles", [
    ("describe-log-dirs --broker-list 9", 2, ["Broker 9 is not in the cluster (brokers: 1, 2, 3)"]),
    ("describe-log-dirs --broker-list one", 2, ['Invalid value "one" for --broker-list']),
    ("describe-log-dirs --topic-list nope", 1, ['Topic "nope" does not exist']),
    ("describe-quorum --status --replication", 2, ["cannot be used together"]),
])
def test_inspection_bad_input(sandbox, line, code, needles):
    assert_one_line_error(run(sandbox, line), code, *needles)


@KRAFT_MODE
def test_a_stopped_broker_named_by_id_is_not_live_rather_than_unknown(sandbox):
    """KRaft keeps a stopped broker registered (fenced): naming it is no usage error but the
    cluster's state (exit 1); an id the cluster never had stays a usage error."""
    sandbox.stop_broker(3)
    for line in ("describe-log-dirs --broker-list 3", "describe-configs --broker 3", "api-versions --broker 3"):
        assert_one_line_error(run(sandbox, line), 1, "Broker 3 is not live: registered but fenced",
                              "live brokers: 1, 2")
    assert_one_line_error(run(sandbox, "describe-configs --broker 9"), 2, "Broker 9 is not in the cluster")


@KRAFT_MODE
def test_reads_under_a_controller_that_does_not_answer_keep_what_the_brokers_told(sandbox):
    """The active controller hung (issue 31): what needs it says so, names what it asked, and
    exits 1 with the rest of the answer; what does not need it is whole."""
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 2, 2, [[1, 2], [2, 3]])
    sandbox.delay(sandbox.active_controller, 60_000)
    p = run(sandbox, "list-brokers", "--timeout", "2")
    assert p.returncode == 0 and len(p.stdout.splitlines()) == 5, p.stderr
    p = run(sandbox, "describe-cluster", "--timeout", "2")
    assert p.returncode == 1 and "DescribeQuorum" in p.stderr and "127.0.0.1" in p.stdout, p.stderr
    p = run(sandbox, "describe-topic --topic t", "--timeout", "2")
    assert p.returncode == 1 and "t        1            2" in p.stdout
    # The broker's REQUEST_TIMED_OUT, or the shell's own wait ending first: either names the request.
    assert p.stderr.startswith("Replicas being added or removed are not shown: ")
    assert "ListPartitionReassignments" in p.stderr
    p = run(sandbox, "controller-history", "--timeout", "2")
    assert p.returncode == 1 and "The active controller is not shown" in p.stderr


@pytest.fixture
def quorum3(sandbox_mode):
    """Three KRaft voters (100-102) and brokers 1-3, or in zk mode a 3-broker cluster."""
    with Sandbox(brokers=3, mode=sandbox_mode, serve_control=True,
                 **({"controllers": 3} if sandbox_mode == "kraft" else {})) as sb:
        yield sb


@KRAFT_MODE
def test_describe_quorum_status_and_replication(quorum3):
    sandbox, cluster = quorum3, quorum3.cluster
    leader = sandbox.active_controller
    follower = next(c for c in sandbox.controller_ids if c != leader)
    sandbox.stop_controller(follower)
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 1)  # the log moves on without it
    stopped_offset = cluster.runtime.stopped_at[follower][0]
    [status] = out_json(run(sandbox, "describe-quorum --status", "-o", "json"))
    voters = [f"{c}@CONTROLLER://{h}:{p}" for c in sandbox.controller_ids for h, p in [sandbox.address(c)]]
    assert status == {
        "cluster_id": cluster.cluster_id, "leader_id": leader,
        "leader_epoch": sandbox.controller_epoch, "high_watermark": cluster.generation,
        "max_follower_lag": cluster.generation - stopped_offset,
        "max_follower_lag_time_ms": status["max_follower_lag_time_ms"],
        "current_voters": voters, "current_observers": ["1", "2", "3"],  # brokers observe the quorum
        "kraft_version": 0}  # a static quorum
    assert status["max_follower_lag_time_ms"] >= 0
    [default] = out_json(run(sandbox, "describe-quorum", "-o", "json"))  # --status is the default
    lag_time = "max_follower_lag_time_ms"  # grows while the follower stays down
    assert {**default, lag_time: None} == {**status, lag_time: None} and default[lag_time] >= status[lag_time]

    table = out_json(run(sandbox, "describe-quorum --replication", "-o", "json"))
    by_id = {r["node_id"]: r for r in table}
    assert table[0]["node_id"] == leader and table[0]["status"] == "Leader" and table[0]["lag"] == 0
    assert [r["status"] for r in table[1:]] == ["Follower", "Follower", "Observer", "Observer", "Observer"]
    assert (by_id[follower]["log_end_offset"], by_id[follower]["lag"]) == (stopped_offset, cluster.generation - stopped_offset)
    assert by_id[follower]["last_caught_up_timestamp"] == cluster.runtime.stopped_at[follower][1]
    # A static quorum's voters have no directory id (as on Kafka); brokers have their log dir's.
    assert [bool(r["directory_id"]) for r in table] == [False, False, False, True, True, True]


@ZK_MODE
def test_describe_quorum_on_a_zookeeper_mode_cluster(sandbox):
    assert_one_line_error(run(sandbox, "describe-quorum"), 1,
                          "needs the DescribeQuorum API, which is not supported by this cluster")


@BOTH_MODES
def test_describe_controller_and_the_preferred_controller(quorum3):
    sandbox = quorum3
    [row] = out_json(run(sandbox, "describe-controller", "-o", "json"))
    active = sandbox.active_controller
    host, port = sandbox.address(active)
    kraft = sandbox.mode == "kraft"
    held, seen, voters = row.pop("held_since"), row.pop("seen_since"), row.pop("voters")
    assert row == {"id": active, "host": host, "port": port, "rack": None, "mode": "KRaft" if kraft else "ZooKeeper",
                   "controller_epoch": sandbox.controller_epoch if kraft else None, "preferred_controller": None}
    # Since when it holds the role, from the cluster's own record (the sandbox keeps one), and
    # since when this shell has seen it hold it (controller-history): epoch ms, the first earlier.
    took = [e for e in sandbox.status()["controller_changes"] if e["to"] == active]
    assert held == round(took[-1]["time"] * 1000) and held <= seen
    assert voters == ([f"{c} (lag 0)" for c in sandbox.controller_ids] if kraft else None)
    # KAFKA-1778: the preferred controller is one of the voters in KRaft mode, a broker in zk mode.
    target = next(c for c in (sandbox.controller_ids if kraft else [1, 2, 3]) if c != active)
    p = run(sandbox, f"alter-configs --entity-type brokers --entity-default --add-config preferred.controller.id={target}")
    assert p.returncode == 0, p.stderr
    [row] = out_json(run(sandbox, "describe-controller", "-o", "json"))
    assert (row["id"], row["preferred_controller"]) == (target, target) == (sandbox.active_controller, target)
    assert row["controller_epoch"] == (sandbox.controller_epoch if kraft else None)


def test_on_a_cluster_without_the_apis():
    with tansu_broker() as bootstrap:
        for line, api in (("describe-quorum", "DescribeQuorum"), ("describe-log-dirs", "DescribeLogDirs"),
                          ("preferred-replica-leader-election --all-topic-partitions", "ElectLeaders")):
            p = shell("--bootstrap-server", bootstrap, "--command", line)
            assert_one_line_error(p, 1, f"needs the {api} API, which is not supported by this cluster")
        [row] = out_json(shell("--bootstrap-server", bootstrap, "--command", "describe-controller", "-o", "json"))
        assert row["preferred_controller"] is None and row["controller_epoch"] is None
