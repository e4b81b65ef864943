"""describe-log-dirs, describe-quorum and describe-controller, run as a real process and checked
against the sandbox's own state (and Tansu, for a cluster lacking the APIs)."""

from __future__ import annotations

import json

import pytest

from kafka_shell.sandbox import admin as sandbox_admin
from kafka_shell.sandbox import replication
from tests.sandbox.wire import produce
from tests.tansu import tansu_broker
from tests.test_oneshot import assert_one_line_error, run, shell
from tests.conftest import KRAFT_MODE, ZK_MODE

# The shell's connection manager still has ZooKeeper-era semantics (the controller is the broker
# Metadata names): run these on a zk-mode sandbox until it is KRaft-aware, then on BOTH_MODES.
pytestmark = ZK_MODE


def out_json(p):
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


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
    sandbox.set_replication_rate(1)   # ...and catches up far too slowly to matter here
    sandbox.start_broker(2)
    data = out_json(run(sandbox, "describe-log-dirs", "-o", "json"))
    expected = sandbox.call(replica_view, sandbox.cluster)
    got = {(r["Broker"], r["Topic"], r["Partition"]): (r["Size"], r["OffsetLag"]) for r in data["partitions"]}
    assert got == expected
    assert got[(2, "t", 0)][1] == 3 and got[(1, "t", 0)] == (expected[(1, "t", 0)][0], 0)
    assert got[(1, "t", 0)][0] > 0
    assert all(r["IsFuture"] is False for r in data["partitions"])
    assert [(d["Broker"], d["LogDir"], d["Error"]) for d in data["log_dirs"]] == [
        (b, f"/sandbox/broker-{b}/data", None) for b in (1, 2, 3)]
    assert data["log_dirs"][0]["UsableBytes"] == data["log_dirs"][0]["TotalBytes"] - expected[(1, "t", 0)][0]

    data = out_json(run(sandbox, "describe-log-dirs --broker-list 2,3 --topic-list t", "-o", "json"))
    assert sorted((r["Broker"], r["Topic"], r["Partition"]) for r in data["partitions"]) == [
        (2, "t", 0), (2, "t", 1), (3, "t", 1)]


@pytest.mark.parametrize("line,code,needles", [
    ("describe-log-dirs --broker-list 9", 2, ["Broker 9 is not in the cluster (live brokers: 1, 2, 3)"]),
    ("describe-log-dirs --broker-list one", 2, ['Invalid value "one" for --broker-list']),
    ("describe-log-dirs --topic-list nope", 1, ['Topic "nope" does not exist']),
    ("describe-quorum --status --replication", 2, ["cannot be used together"]),
])
def test_inspection_bad_input(sandbox, line, code, needles):
    assert_one_line_error(run(sandbox, line), code, *needles)


@KRAFT_MODE  # zk-mode brokers do not serve DescribeQuorum
def test_describe_quorum_status_and_replication(sandbox):
    sandbox.stop_broker(3)
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 1, 1)  # the log moves on without 3
    cluster = sandbox.cluster
    stopped_offset = cluster.extras["stopped_at"][3][0]
    [status] = out_json(run(sandbox, "describe-quorum --status", "-o", "json"))
    host, port = sandbox.address(100)
    assert status == {
        "ClusterId": cluster.cluster_id, "LeaderId": 100,
        "LeaderEpoch": cluster.controller_epoch, "HighWatermark": cluster.generation,
        "MaxFollowerLag": 0,  # over the voters: the lone controller leads
        "MaxFollowerLagTimeMs": status["MaxFollowerLagTimeMs"],
        "CurrentVoters": [f"100@CONTROLLER://{host}:{port}"], "CurrentObservers": ["1", "2", "3"]}
    assert status["MaxFollowerLagTimeMs"] >= 0
    [default] = out_json(run(sandbox, "describe-quorum", "-o", "json"))  # --status is the default
    lag_time = "MaxFollowerLagTimeMs"  # grows while broker 3 stays down
    assert {**default, lag_time: None} == {**status, lag_time: None} and default[lag_time] >= status[lag_time]

    table = out_json(run(sandbox, "describe-quorum --replication", "-o", "json"))
    by_id = {r["NodeId"]: r for r in table}
    leader = cluster.controller_id
    assert table[0]["NodeId"] == leader and table[0]["Status"] == "Leader" and table[0]["Lag"] == 0
    assert {r["Status"] for r in table[1:]} == {"Observer"}  # the brokers
    assert (by_id[3]["LogEndOffset"], by_id[3]["Lag"]) == (stopped_offset, cluster.generation - stopped_offset)
    assert by_id[3]["LastCaughtUpTimestamp"] == cluster.extras["stopped_at"][3][1]
    assert all(r["DirectoryId"] for r in table)


def test_describe_controller_and_the_preferred_controller(sandbox):
    cluster = sandbox.cluster
    [row] = out_json(run(sandbox, "describe-controller", "-o", "json"))
    c = cluster.brokers[cluster.controller_id]
    # A zk-mode cluster has no DescribeQuorum, where the shell reads the epoch.
    assert row == {"Id": c.id, "Host": c.host, "Port": c.port, "Rack": None,
                   "ControllerEpoch": None, "PreferredController": "none"}
    target = next(b for b in cluster.brokers if b != c.id)
    p = run(sandbox, f"alter-configs --entity-type brokers --entity-default --add-config preferred.controller.id={target}")
    assert p.returncode == 0, p.stderr
    [row] = out_json(run(sandbox, "describe-controller", "-o", "json"))
    assert (row["Id"], row["PreferredController"]) == (target, target) == (cluster.controller_id, target)


def test_on_a_cluster_without_the_apis():
    with tansu_broker() as bootstrap:
        for line, api in (("describe-quorum", "DescribeQuorum"), ("describe-log-dirs", "DescribeLogDirs"),
                          ("preferred-replica-leader-election --all-topic-partitions", "ElectLeaders")):
            p = shell("--bootstrap-server", bootstrap, "--command", line)
            assert_one_line_error(p, 1, f"needs the {api} API, which is not supported by this cluster")
        [row] = out_json(shell("--bootstrap-server", bootstrap, "--command", "describe-controller", "-o", "json"))
        assert row["PreferredController"] == "none" and row["ControllerEpoch"] is None
