"""balance, drain-broker, undrain-broker, cordon, uncordon and health, run as the real program
against a sandbox (KRaft, Kafka 4.4's cordons); what they change is checked in the sandbox's own
state and with the real confluent-kafka client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox.server import Sandbox
from tests.output import json_rows, json_tables
from tests.sandbox.wire import produce
from tests.test_oneshot import ROOT, SHELL, assert_one_line_error, shell
from tests.test_reassign_cmd import REPLICA_KEYS, THROTTLE_KEYS, popen, wait_until


@pytest.fixture
def env(tmp_path):
    return {"KAFKA_SHELL_DATA_DIR": str(tmp_path / "data")}


@pytest.fixture
def cluster():
    """4 brokers on racks a,b,a,b; three topics of 6 partitions on brokers 1 and 2 only (as if 3
    and 4 were just added), ~20 KB each."""
    with Sandbox(brokers=4, racks=["a", "b", "a", "b"]) as s:
        for t in range(3):
            s.call(sandbox_admin.create_topic, s.cluster, f"t{t}", 6, 2, [[1, 2], [2, 1]] * 3)
            for p in range(6):
                produce(s, f"t{t}", p, 20, 1000)
        yield s


def run(sandbox, line: str, env: dict, *extra: str) -> subprocess.CompletedProcess:
    return shell("--bootstrap-server", sandbox.bootstrap, *extra, "--command", line, env=env)


def replicas(sandbox) -> dict:
    return sandbox.call(lambda: {(t.name, p.index): list(p.replicas) for t in sandbox.cluster.topics.values()
                                 for p in t.partitions if not t.internal})


def leaders(sandbox) -> Counter:
    return sandbox.call(lambda: Counter(p.leader for t in sandbox.cluster.topics.values() for p in t.partitions
                                        if not t.internal))


def moving(sandbox) -> set:
    return sandbox.call(lambda: {(p.topic, p.index) for t in sandbox.cluster.topics.values() for p in t.partitions
                                 if p.adding or p.removing})


def overrides(sandbox, kind, name: str, keys: set[str]) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": sandbox.bootstrap, "log_level": 0})
    [future] = admin.describe_configs([ConfigResource(kind, name)]).values()
    return {k: e.value for k, e in future.result(10).items() if e.source in (1, 2) and k in keys}


def rack_ok(assignment: dict) -> bool:
    racks = {1: "a", 2: "b", 3: "a", 4: "b"}
    return all(len({racks[b] for b in r}) == len(r) for r in assignment.values())


# -- balance ------------------------------------------------------------------------------------


def test_the_plan_shows_each_goal_the_moves_and_the_bound_and_saves_kafkas_json(cluster, env, tmp_path):
    before = replicas(cluster)
    plan_file = tmp_path / "plan.json"
    p = run(cluster, f"balance --save-plan {plan_file} -o json", env)
    assert p.returncode == 0, p.stderr
    tables = json_tables(p.stdout)
    goals = {g["goal"]: g for g in tables["goals"]}
    assert list(goals) == ["rack", "replicas", "leaders", "disk", "log_dirs", "bytes_in", "topics"]   # in priority order
    assert goals["bytes_in"]["measure"].startswith("not judged: no rates") and goals["bytes_in"]["before"] is None
    assert goals["log_dirs"]["measure"].startswith("not judged: no broker has two or more log dirs")
    assert not goals["replicas"]["met_before"] and goals["replicas"]["met_after"] and goals["replicas"]["before"] == 100.0
    assert all(g["met_after"] for name, g in goals.items() if name not in ("bytes_in", "log_dirs"))
    moves = tables["moves"]
    assert len(moves) == 9 and all(set(m["adding"]) <= {3, 4} for m in moves)
    assert "18 replica move(s)" in p.stderr and "the lower bound: 18 replica(s)" in p.stderr
    assert replicas(cluster) == before   # planning changes nothing
    saved = json.loads(plan_file.read_text())
    assert saved["version"] == 1 and len(saved["partitions"]) == 9
    assert {(e["topic"], e["partition"]): e["replicas"] for e in saved["partitions"]} == \
        {(m["topic"], m["partition"]): m["target"] for m in moves}
    assert rack_ok({(m["topic"], m["partition"]): m["target"] for m in moves})
    # A plan file is never overwritten.
    again = run(cluster, f"balance --save-plan {plan_file}", env)
    assert again.returncode == 2 and str(plan_file) in again.stderr


def test_execute_throttles_moves_in_batches_and_meets_every_goal(cluster, env):
    cluster.set_replication_rate(20_000)   # slow enough to see the throttles while it runs
    proc = popen(cluster, "balance --execute --max-moves 3 --throttle 9000000 -o json", env)
    try:
        wait_until(lambda: moving(cluster))
        assert len(moving(cluster)) <= 3
        assert overrides(cluster, ResourceType.BROKER, "3", THROTTLE_KEYS) == {k: "9000000" for k in THROTTLE_KEYS}
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    tables = json_tables(out)
    assert all(r["status"] == "done" for r in tables["status"])
    assert all(g["met"] for g in tables["goals_now"] if g["met"] is not None)
    assert "Progress" not in err and "partitions," in err and "copied" in err
    assert "Removed the replication throttles" in err
    for b in ("1", "2", "3", "4"):
        assert overrides(cluster, ResourceType.BROKER, b, THROTTLE_KEYS) == {}
    for t in ("t0", "t1", "t2"):
        assert overrides(cluster, ResourceType.TOPIC, t, REPLICA_KEYS) == {}
    now = replicas(cluster)
    held = Counter(b for r in now.values() for b in r)
    assert set(held.values()) == {9} and rack_ok(now)
    assert set(leaders(cluster).values()) <= {4, 5}   # 18 partitions over 4 brokers, by preferred election
    # Nothing is left to do, and the run is forgotten.
    p = run(cluster, "balance -o json", env)
    assert json_rows(p.stdout, "moves") == [] and "Nothing to change" in p.stderr
    assert not os.path.exists(os.path.join(env["KAFKA_SHELL_DATA_DIR"], "balance-runs.json")) or \
        json.load(open(os.path.join(env["KAFKA_SHELL_DATA_DIR"], "balance-runs.json"))) == {}


def test_ctrl_c_leaves_the_moves_going_and_resume_finishes_the_run(cluster, env):
    cluster.set_replication_rate(2_000)
    proc = popen(cluster, "balance --execute --max-moves 2 --throttle 9000000", env)
    try:
        wait_until(lambda: moving(cluster))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "balance --resume" in err and "balance --cancel" in err
    assert moving(cluster)   # what was started goes on
    assert overrides(cluster, ResourceType.BROKER, "1", THROTTLE_KEYS)   # and stays throttled
    # Another session sees the run; --resume with planning options is refused.
    refused = run(cluster, "balance --resume --goals rack", env)
    assert refused.returncode == 2 and "--resume" in refused.stderr
    cluster.set_replication_rate(None)
    p = run(cluster, "balance --resume -o json", env)
    assert p.returncode == 0, p.stderr
    assert "Resuming" in p.stderr and all(r["status"] == "done" for r in json_rows(p.stdout, "status"))
    assert overrides(cluster, ResourceType.BROKER, "1", THROTTLE_KEYS) == {}
    assert set(Counter(b for r in replicas(cluster).values() for b in r).values()) == {9}
    nothing = run(cluster, "balance --resume", env)
    assert nothing.returncode == 1 and "nothing to resume" in nothing.stderr


def test_cancel_stops_the_moves_and_removes_the_throttles(cluster, env):
    cluster.set_replication_rate(1)
    proc = popen(cluster, "balance --execute --max-moves 2 --throttle 5000000", env)
    try:
        wait_until(lambda: len(moving(cluster)) == 2)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    p = run(cluster, "balance --cancel", env)
    assert p.returncode == 0, p.stderr
    assert "Cancelled the reassignment of 2 partition(s)" in p.stderr
    assert moving(cluster) == set()
    assert overrides(cluster, ResourceType.BROKER, "1", THROTTLE_KEYS) == {}
    assert "nothing to cancel" in run(cluster, "balance --cancel", env).stderr


def test_leaders_only_reorders_and_elects_without_moving_data(env):
    with Sandbox(brokers=3) as s:
        s.call(sandbox_admin.create_topic, s.cluster, "t", 6, 3, [[1, 2, 3]] * 6)
        before = {k: set(r) for k, r in replicas(s).items()}
        assert leaders(s) == Counter({1: 6})
        p = run(s, "balance --leaders-only --execute -o json", env)
        assert p.returncode == 0, p.stderr
        assert {k: set(r) for k, r in replicas(s).items()} == before
        assert leaders(s) == Counter({1: 2, 2: 2, 3: 2})
        assert all(m["kind"] == "reorder" for m in json_rows(p.stdout, "moves"))
        assert "0 replica move(s)" in p.stderr


def test_execute_a_saved_plan_skips_what_is_in_place(cluster, env, tmp_path):
    plan_file = tmp_path / "plan.json"
    assert run(cluster, f"balance --save-plan {plan_file}", env).returncode == 0
    first = json.loads(plan_file.read_text())["partitions"][0]
    move = tmp_path / "one.json"
    move.write_text(json.dumps({"version": 1, "partitions": [first]}))
    assert run(cluster, f"reassign-partitions --execute --reassignment-json-file {move} --blocking", env).returncode == 0
    p = run(cluster, f"balance --execute --plan {plan_file} -o json", env)
    assert p.returncode == 0, p.stderr
    assert "1 of 9 partition(s) of the plan are in place already" in p.stderr
    assert {(e["topic"], e["partition"]): e["replicas"] for e in json.loads(plan_file.read_text())["partitions"]}.items() \
        <= replicas(cluster).items()


@pytest.mark.parametrize("line, needle", [
    ("balance --plan plan.json", "--plan runs a saved plan: add --execute"),
    ("balance --execute --plan plan.json --goals rack", "can't be used with --plan"),
    ("balance --resume --throttle 1000", "can't be used with --resume"),
    ("balance --goals rack,speed", "goals"),
    ("balance --execute --resume", "--execute"),
    ("balance --leaders-only --goals rack", "--leaders-only"),
    ("balance --disk-threshold 10x", "percentage"),
    ("balance --max-bytes-in-flight lots", "size"),
    ("balance --sample 30s --snapshots /tmp", "--sample"),
    ("balance --topic nope", "No topic matches nope"),
    ("balance --execute --plan /no/such/plan.json", "/no/such/plan.json"),
])
def test_bad_input_is_one_line_and_changes_nothing(cluster, env, line, needle):
    before = replicas(cluster)
    p = run(cluster, line, env)
    assert_one_line_error(p, 2)
    assert needle in p.stderr
    assert replicas(cluster) == before


def test_a_broker_that_does_not_describe_its_log_dirs_makes_the_plan_partial(cluster, env):
    cluster.fail(3, "DescribeLogDirs", "KAFKA_STORAGE_ERROR")
    p = run(cluster, "balance", env)
    assert p.returncode == 1 and "Broker 3 did not describe its log dirs" in p.stderr
    refused = run(cluster, "balance --execute", env)
    assert refused.returncode == 1 and "Not executing: broker(s) 3" in refused.stderr
    assert moving(cluster) == set()


def test_balance_keeps_off_a_cordoned_broker(cluster, env):
    assert run(cluster, "cordon --broker 3", env).returncode == 0
    p = run(cluster, "balance --execute -o json", env)
    assert p.returncode == 0, p.stderr
    held = Counter(b for r in replicas(cluster).values() for b in r)
    assert held[3] == 0 and held[4] > 0


# -- drain-broker, undrain-broker, cordon, uncordon, health ------------------------------------------


def test_drain_takes_leadership_off_cordons_and_undrain_gives_it_back(env):
    with Sandbox(brokers=3) as s:
        s.call(sandbox_admin.create_topic, s.cluster, "t", 6, 3, [[1, 2, 3], [2, 3, 1], [3, 1, 2]] * 2)
        before = replicas(s)
        dry = run(s, "drain-broker 1 --dry-run", env)
        assert dry.returncode == 0 and "2 get another first replica" in dry.stderr and replicas(s) == before
        refused = run(s, "drain-broker 1", env)
        assert refused.returncode == 2 and "--yes" in refused.stderr
        p = run(s, "drain-broker 1 --yes", env)
        assert p.returncode == 0, p.stderr
        assert leaders(s)[1] == 0 and "Broker 1 is drained" in p.stderr
        assert overrides(s, ResourceType.BROKER, "1", {"cordoned.log.dirs"}) == {"cordoned.log.dirs": "*"}
        health = run(s, "health -o json", env)
        line = next(r for r in json_rows(health.stdout) if r["check"] == "broker 1")
        assert line["severity"] == "info" and line["detail"].startswith("drained: cordoned, leads 0")
        assert line["look_closer"] == "undrain-broker 1"
        # Nothing new lands on it.
        assert run(s, "create-topic --topic new --partitions 3 --replication-factor 2", env).returncode == 0
        assert all(1 not in r for (t, _), r in replicas(s).items() if t == "new")
        back = run(s, "undrain-broker 1 --yes", env)
        assert back.returncode == 0, back.stderr
        assert {k: r for k, r in replicas(s).items() if k[0] == "t"} == before
        assert leaders(s)[1] == 2
        assert overrides(s, ResourceType.BROKER, "1", {"cordoned.log.dirs"}) == {}


def test_drain_with_replicas_empties_the_broker(env):
    with Sandbox(brokers=4) as s:
        s.call(sandbox_admin.create_topic, s.cluster, "t", 8, 2, [[1, 2], [2, 3], [3, 4], [4, 1]] * 2)
        p = run(s, "drain-broker 4 --replicas --yes -o json", env)
        assert p.returncode == 0, p.stderr
        held = Counter(b for r in replicas(s).values() for b in r)
        assert held[4] == 0 and sorted(held.values()) == [5, 5, 6]
        assert overrides(s, ResourceType.BROKER, "4", {"cordoned.log.dirs"}) == {"cordoned.log.dirs": "*"}


def test_draining_the_last_broker_says_why_it_cannot(env):
    """One broker: each partition it leads says why it stays led by it, and its replicas have
    nowhere to go (one line, nothing changed)."""
    with Sandbox(brokers=1) as s:
        s.call(sandbox_admin.create_topic, s.cluster, "t", 2, 1, [[1], [1]])
        before = replicas(s)
        dry = run(s, "drain-broker 1 --dry-run", env)
        assert dry.returncode == 0, dry.stderr
        assert "t-1 stays led by broker 1: no other replica is in sync and may lead." in dry.stderr.splitlines()
        p = run(s, "drain-broker 1 --replicas --yes", env)
        assert_one_line_error(p, 1, "No broker may hold replicas (every one is down or drained)")
        assert "Internal error" not in p.stderr and replicas(s) == before
        assert overrides(s, ResourceType.BROKER, "1", {"cordoned.log.dirs"}) == {}


def test_cordon_and_uncordon_a_broker_and_its_log_dir(env):
    with Sandbox(brokers=2) as s:
        dry = run(s, "cordon --broker 2 --dry-run", env)
        assert dry.returncode == 0 and "dry run" in dry.stderr
        assert overrides(s, ResourceType.BROKER, "2", {"cordoned.log.dirs"}) == {}
        p = run(s, "cordon --broker 2 --log-dir /sandbox/broker-2/data -o json", env)
        assert p.returncode == 0, p.stderr
        assert json_rows(p.stdout) == [{"broker": 2, "cordoned_before": None, "cordoned": "/sandbox/broker-2/data"}]
        dirs = json_rows(run(s, "describe-log-dirs -o json", env).stdout, "log_dirs")
        assert {d["broker"]: d["cordoned"] for d in dirs} == {1: False, 2: True}
        bad = run(s, "cordon --broker 2 --log-dir /data/other", env)
        assert_one_line_error(bad, 2)
        assert "Broker 2 has no log dir /data/other" in bad.stderr
        assert run(s, "uncordon --broker 2", env).returncode == 0
        assert overrides(s, ResourceType.BROKER, "2", {"cordoned.log.dirs"}) == {}


def test_cordon_needs_kafka_4_3(env):
    with Sandbox(brokers=1, mode="zk") as s:
        p = run(s, "cordon --broker 1", env)
        assert p.returncode == 1 and "Kafka 4.3 or later" in p.stderr


def test_health_exit_codes_follow_severity_and_exit_when_healthy_waits_for_it(env):
    with Sandbox(brokers=3) as s:
        s.call(sandbox_admin.create_topic, s.cluster, "t", 3, 3, [[1, 2, 3], [2, 3, 1], [3, 1, 2]])
        ok = run(s, "health", env)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert "The cluster is healthy." in ok.stderr
        s.stop_broker(3)
        down = run(s, "health -o json", env)
        assert down.returncode == 4
        rows = {r["check"]: r for r in json_rows(down.stdout)}
        assert rows["brokers"]["severity"] == "critical" and "fenced: 3" in rows["brokers"]["detail"]
        assert rows["under-replicated partitions"]["severity"] == "warning"
        assert rows["under-replicated partitions"]["look_closer"] == "describe-topic --under-replicated-partitions"
        proc = subprocess.Popen([*SHELL, "--bootstrap-server", s.bootstrap, "--command",
                                 "health --exit-when-healthy --interval 200ms"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env},
                                cwd=ROOT)
        try:
            time.sleep(1.0)
            assert proc.poll() is None   # still watching: broker 3 is down
            s.start_broker(3)
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        assert proc.returncode == 0, err
        assert "round" in out and "Healthy after" in err


def test_health_names_a_broker_that_does_not_answer_and_says_it_is_partial(env):
    with Sandbox(brokers=3) as s:
        s.fail(2, "DescribeLogDirs", "KAFKA_STORAGE_ERROR")
        p = run(s, "health -o json", env)
        assert p.returncode == 1, p.stdout + p.stderr
        unknown = [r for r in json_rows(p.stdout) if r["severity"] == "unknown"]
        assert [r["check"] for r in unknown] == ["balance"] and "Broker 2" in unknown[0]["detail"]
        assert "partial" in p.stderr


class Writer:
    """A real producer writing to one partition until stopped (bytes in, lag that grows)."""

    def __init__(self, sandbox, topic: str, partition: int, size: int = 2000):
        import threading
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(sandbox, topic, partition, size), daemon=True)
        self.thread.start()

    def _run(self, sandbox, topic: str, partition: int, size: int) -> None:
        from confluent_kafka import Producer
        producer = Producer({"bootstrap.servers": sandbox.bootstrap, "linger.ms": 5, "log_level": 0})
        while not self.stop.is_set():
            producer.produce(topic, b"x" * size, partition=partition)
            producer.poll(0)
            time.sleep(0.005)
        producer.flush(10)

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(30)


def test_sampled_bytes_in_is_a_goal_of_its_own(cluster, env):
    with Writer(cluster, "t0", 0):
        p = run(cluster, "balance --sample 2s -o json", env)
    assert p.returncode == 0, p.stderr
    assert "Sampling log end offsets for 2 s" in p.stderr
    goals = {g["goal"]: g for g in json_rows(p.stdout, "goals")}
    assert goals["bytes_in"]["measure"] == "skew (% of the mean)" and goals["bytes_in"]["before"] > 0
    assert goals["bytes_in"]["met_after"] in (True, False)


def test_bytes_in_from_two_snapshots(cluster, env, tmp_path):
    snapshots = tmp_path / "snapshots"
    assert run(cluster, f"snapshot --output-dir {snapshots}", env).returncode == 0
    produce(cluster, "t1", 0, 40, 1000)
    assert run(cluster, f"snapshot --output-dir {snapshots}", env).returncode == 0
    p = run(cluster, f"balance --snapshots {snapshots} -o json", env)
    assert p.returncode == 0, p.stderr
    goals = {g["goal"]: g for g in json_rows(p.stdout, "goals")}
    assert goals["bytes_in"]["measure"] == "skew (% of the mean)" and goals["bytes_in"]["before"] > 0
    one = tmp_path / "one"
    assert run(cluster, f"snapshot --output-dir {one}", env).returncode == 0
    short = run(cluster, f"balance --snapshots {one}", env)
    assert_one_line_error(short, 2)
    assert "two are needed" in short.stderr


def test_health_sees_a_groups_lag_grow(env):
    with Sandbox(brokers=3) as s:
        s.call(sandbox_admin.create_topic, s.cluster, "t", 1, 3, [[1, 2, 3]])
        produce(s, "t", 0, 5, 100)
        from tests.test_groups_cmd import commit
        commit(s, "stalled", "t", {0: 1})
        with Writer(s, "t", 0, 100):
            p = run(s, "health --lag-window 2s -o json", env)
        rows = {r["check"]: r for r in json_rows(p.stdout)}
        assert p.returncode == 3, p.stdout + p.stderr
        assert rows["consumer lag"]["severity"] == "warning" and "stalled" in rows["consumer lag"]["detail"]
        assert rows["consumer lag"]["look_closer"] == "describe-group stalled"
