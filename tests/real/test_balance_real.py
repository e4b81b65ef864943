"""balance, drain-broker, undrain-broker, cordon and health on real Apache Kafka 4.4: a cluster of
four brokers on racks a, b, a, b (one module fixture), whose topics sit on brokers 1 and 2 as if 3
and 4 had just been added. balance --execute throttles its moves (the throttles are there while
they run and gone after) and meets every goal; a rolling restart drains each broker, restarts
it, waits with health --exit-when-healthy and brings it back. Kafka's own cordon rules (a
reassignment naming a cordoned broker is refused, a reorder too) are checked beside the sandbox's."""

from __future__ import annotations

import os
import subprocess
import time
from collections import Counter

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from kafka_shell.sandbox.server import Sandbox
from tests.output import json_rows, json_tables
from tests.test_oneshot import ROOT, SHELL, shell

RACKS = {1: "a", 2: "b", 3: "a", 4: "b"}
THROTTLE_KEYS = {"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
WAIT_S = 90.0


@pytest.fixture(scope="module")
def kafka4_racks(tmp_path_factory):
    from tests.real_kafka import KAFKA_4, RealKafka
    with RealKafka(KAFKA_4, controllers=1, brokers=4, racks=["a", "b", "a", "b"],
                   root=tmp_path_factory.mktemp("kafka4-racks")) as cluster:
        yield cluster


@pytest.fixture
def env(tmp_path):
    return {"KAFKA_SHELL_DATA_DIR": str(tmp_path / "data")}


def run(cluster, line: str, env: dict, timeout: str = "30") -> subprocess.CompletedProcess:
    return shell("--bootstrap-server", cluster.bootstrap, "--timeout", timeout, "--command", line, env=env)


def ok(proc) -> dict:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json_tables(proc.stdout) if proc.stdout.lstrip().startswith("{") else {}


def wait_until(check, what: str):
    deadline = time.monotonic() + WAIT_S
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def placement(cluster, env, topic: str) -> dict[int, list[int]]:
    rows = ok(run(cluster, f"describe-topic --topic {topic} -o json", env))["partitions"]
    return {r["Partition"]: r["Replicas"] for r in rows}


def partitions(cluster, env, *topics: str) -> list[dict]:
    return [r for t in topics for r in ok(run(cluster, f"describe-topic --topic {t} -o json", env))["partitions"]]


def broker_overrides(cluster, broker: int, keys: set[str]) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    [future] = admin.describe_configs([ConfigResource(ResourceType.BROKER, str(broker))]).values()
    return {k: e.value for k, e in future.result(20).items() if e.source in (1, 2) and k in keys}


def fill(cluster, topic: str, partitions: int, size: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 20, "acks": "all"})
    value = os.urandom(1000)
    for p in range(partitions):
        for _ in range(size // 1000):
            producer.produce(topic, value, partition=p)
            producer.poll(0)
    assert producer.flush(60) == 0


def test_balance_throttles_its_moves_and_meets_every_goal(kafka4_racks, env):
    cluster = kafka4_racks
    for t in ("orders", "events"):
        ok(run(cluster, f"create-topic --topic {t} --replica-assignment 1:2,2:1,1:2,2:1", env))
        fill(cluster, t, 4, 400_000)
    plan = ok(run(cluster, "balance --topic orders --topic events -o json", env))
    goals = {g["Goal"]: g for g in plan["goals"]}
    assert not goals["replicas"]["MetBefore"] and all(g["MetAfter"] for g in goals.values() if g["MetAfter"] is not None)
    assert all(set(m["Adding"]) <= {3, 4} for m in plan["moves"])

    proc = subprocess.Popen([*SHELL, "--bootstrap-server", cluster.bootstrap, "--timeout", "30", "--command",
                             "balance --topic orders --topic events --execute --max-moves 2 --throttle 400000 -o json"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **env}, cwd=ROOT)
    try:
        # While the moves run, Kafka holds the throttle on the brokers involved.
        wait_until(lambda: broker_overrides(cluster, 3, THROTTLE_KEYS) == {k: "400000" for k in THROTTLE_KEYS},
                   "the throttle on broker 3")
        out, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    done = json_tables(out)
    assert all(r["Status"] == "done" for r in done["status"])
    assert all(g["Met"] for g in done["goals_now"] if g["Met"] is not None), done["goals_now"]
    assert "Removed the replication throttles" in err
    for b in (1, 2, 3, 4):
        assert broker_overrides(cluster, b, THROTTLE_KEYS) == {}
    rows = partitions(cluster, env, "orders", "events")
    held = Counter(b for r in rows for b in r["Replicas"])
    assert sorted(held.values()) == [4, 4, 4, 4]
    assert all(len({RACKS[b] for b in r["Replicas"]}) == 2 for r in rows)
    assert all(r["Leader"] == r["Replicas"][0] for r in rows)
    assert sorted(Counter(r["Leader"] for r in rows).values()) == [2, 2, 2, 2]


def test_kafka_refuses_any_target_naming_a_cordoned_broker_as_the_sandbox_does(kafka4_racks, env, tmp_path):
    cluster = kafka4_racks
    ok(run(cluster, "create-topic --topic pinned --replica-assignment 4:1", env))
    ok(run(cluster, "cordon --broker 4", env))
    try:
        wait_until(lambda: any(d["Cordoned"] for d in ok(run(cluster, "describe-log-dirs --broker-list 4 -o json",
                                                             env))["log_dirs"]), "broker 4's dirs cordoned")
        reorder = tmp_path / "reorder.json"
        reorder.write_text('{"version":1,"partitions":[{"topic":"pinned","partition":0,"replicas":[1,4]}]}')

        def refused():
            p = run(cluster, f"reassign-partitions --execute --reassignment-json-file {reorder}", env)
            return p if p.returncode == 1 else None
        real = wait_until(refused, "the controller to know broker 4 is cordoned").stderr.strip().splitlines()[-1]
        too_many = "create-topic --topic crowded --partitions 1 --replication-factor 4"
        real_placement = run(cluster, too_many, env)
        with Sandbox(brokers=4) as s:
            ok(run(s, "create-topic --topic pinned --replica-assignment 4:1", env))
            ok(run(s, "cordon --broker 4", env))
            copy = tmp_path / "copy.json"
            copy.write_text(reorder.read_text())
            sandbox = run(s, f"reassign-partitions --execute --reassignment-json-file {copy}", env)
            assert sandbox.returncode == 1
            assert sandbox.stderr.strip().splitlines()[-1] == real
            # Placement leaves the cordoned broker out, in the same words.
            placed = run(s, too_many, env)
            assert placed.returncode == real_placement.returncode == 1
            assert placed.stderr == real_placement.stderr and "all their log directories cordoned" in placed.stderr
        assert "but all its log directories are cordoned" in real
        # A new topic lands elsewhere; the balance plan takes nothing there and leaves the pinned partition.
        ok(run(cluster, "create-topic --topic fresh --partitions 4 --replication-factor 2", env))
        assert all(4 not in r for r in placement(cluster, env, "fresh").values())
        plan = ok(run(cluster, "balance -o json", env))
        assert all(4 not in m["Adding"] and m["Topic"] != "pinned" for m in plan["moves"])
    finally:
        ok(run(cluster, "uncordon --broker 4", env))
        ok(run(cluster, "delete-topic --topic pinned --topic fresh --yes", env))


def test_a_rolling_restart_with_drain_health_and_undrain(kafka4_racks, env):
    cluster = kafka4_racks
    ok(run(cluster, "create-topic --topic rolling --partitions 8 --replication-factor 2", env))
    fill(cluster, "rolling", 8, 20_000)
    before = placement(cluster, env, "rolling")
    for broker in (1, 3):
        drained = run(cluster, f"drain-broker {broker} --yes", env, timeout="60")
        assert drained.returncode == 0, drained.stderr
        rows = partitions(cluster, env, "rolling")
        assert all(r["Leader"] != broker for r in rows)
        assert broker_overrides(cluster, broker, {"cordoned.log.dirs"}) == {"cordoned.log.dirs": "*"}
        health = wait_until(lambda broker=broker: next(
            (r for r in json_rows(run(cluster, "health -o json", env).stdout)
             if r["Check"] == f"broker {broker}" and r["Detail"].startswith("drained")), None),
            "health to say the broker is drained")
        assert health["Severity"] == "info"
        cluster.stop_node(broker)
        down = run(cluster, "health -o json", env)
        assert down.returncode == 4   # a broker down is critical; nothing it led went offline
        assert not [r for r in json_rows(down.stdout) if r["Check"] == "offline partitions" and r["Count"]]
        cluster.start_node(broker)
        waited = run(cluster, "health --exit-when-healthy --interval 1s", env, timeout="30")
        assert waited.returncode == 0, waited.stdout[-2000:] + waited.stderr
        back = run(cluster, f"undrain-broker {broker} --yes", env, timeout="60")
        assert back.returncode == 0, back.stderr
        assert broker_overrides(cluster, broker, {"cordoned.log.dirs"}) == {}
    assert placement(cluster, env, "rolling") == before
    final = run(cluster, "health", env)
    assert final.returncode in (0, 1) and "critical" not in final.stdout
