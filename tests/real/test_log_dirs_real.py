"""Moves between the log dirs of one broker on real Apache Kafka 4.4: two brokers with two log dirs
each (log.dirs, JBOD in KRaft). reassign-partitions' `log_dirs` moves a replica to the other dir
of its broker (AlterReplicaLogDirs to that broker; the future replica copies, then replaces it) and
DescribeLogDirs agrees; balance's log_dirs goal, unmet with every replica of broker 1 in one dir,
is met after --execute; a sandbox with two log dirs per broker answers AlterReplicaLogDirs as
Kafka does, dir for dir."""

from __future__ import annotations

import json
import uuid

import pytest

from kafka_shell.admin.throttles import LOG_DIR_RATE_KEY
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.sandbox.server import Sandbox
from tests.output import json_rows, json_tables
from tests.real.test_balance_real import broker_overrides, fill, ok, run, wait_until
from tests.sandbox.test_api_versions import alter_log_dirs, wait_until_known
from tests.sandbox.wire import create, exchange
from tests.test_oneshot import shell


@pytest.fixture(scope="module")
def kafka4_jbod(tmp_path_factory):
    from tests.real_kafka import KAFKA_4, RealKafka
    with RealKafka(KAFKA_4, controllers=1, brokers=2, log_dirs=2,
                   root=tmp_path_factory.mktemp("kafka4-jbod")) as cluster:
        yield cluster


@pytest.fixture
def env(tmp_path):
    return {"KAFKA_SHELL_DATA_DIR": str(tmp_path / "data")}


def where(cluster, env, topic: str) -> dict[tuple[int, int], tuple[str, bool]]:
    """(partition, broker) -> (log dir, is future) of each replica of the topic, as DescribeLogDirs
    says (a replica being moved is listed twice: the future one wins here)."""
    rows = ok(run(cluster, f"describe-log-dirs --topic {topic} -o json", env))["partitions"]
    out: dict[tuple[int, int], tuple[str, bool]] = {}
    for r in sorted(rows, key=lambda r: r["is_future"]):
        out[(r["partition"], r["broker"])] = (r["log_dir"], r["is_future"])
    return out


def settled(cluster, env, topic: str) -> dict[tuple[int, int], str] | None:
    """Each replica's dir once no future replica is left, else None."""
    found = where(cluster, env, topic)
    return None if any(future for _, future in found.values()) else {k: d for k, (d, _) in found.items()}


def move_file(tmp_path, name: str, entries: list[dict]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "partitions": entries}))
    return str(path)


def test_a_replica_moves_between_the_dirs_of_its_broker_and_describe_log_dirs_agrees(kafka4_jbod, env, tmp_path):
    cluster = kafka4_jbod
    dirs = {b: cluster.broker_log_dirs(b) for b in (1, 2)}
    ok(run(cluster, "create-topic --topic jbod-move --replica-assignment 1:2", env))
    fill(cluster, "jbod-move", 1, 300_000)
    before = wait_until(lambda: settled(cluster, env, "jbod-move"), "the replicas of jbod-move")
    old = before[(0, 1)]
    new = next(d for d in dirs[1] if d != old)
    plan = move_file(tmp_path, "move.json", [{"topic": "jbod-move", "partition": 0, "replicas": [1, 2],
                                              "log_dirs": [new, "any"]}])
    done = run(cluster, f"reassign-partitions --execute --reassignment-json-file {plan} "
                        "--replica-alter-log-dirs-throttle 50000000", env)
    assert done.returncode == 0, done.stderr
    assert f"Successfully started moving log directory to {new} for replica jbod-move-0 with broker 1" in done.stderr
    assert "The replica-alter-dir throttle limit was set to 50000000 B/s on broker(s) 1." in done.stderr
    after = wait_until(lambda: (lambda s: s if s and s[(0, 1)] == new else None)(settled(cluster, env, "jbod-move")),
                       "the move of jbod-move-0 on broker 1")
    assert after[(0, 2)] == before[(0, 2)]    # "any": broker 2's replica stays where it was
    verify = run(cluster, f"reassign-partitions --verify --reassignment-json-file {plan} -o json", env)
    assert verify.returncode == 0, verify.stderr
    [row] = json_rows(verify.stdout, "log_dirs")
    assert (row["broker"], row["status"], row["log_dir"]) == (1, "completed", new)
    assert "Removed the replica-alter-dir throttle kafka-shell set on broker(s) 1." in verify.stderr
    # The broker asked may be a moment behind the controller that took the change (Kafka's timing).
    wait_until(lambda: broker_overrides(cluster, 1, {LOG_DIR_RATE_KEY}) == {}, "the throttle gone from broker 1")
    # A dir broker 1 does not have: Kafka's LOG_DIR_NOT_FOUND, one line, nothing changed.
    bad = move_file(tmp_path, "bad.json", [{"topic": "jbod-move", "partition": 0, "replicas": [1, 2],
                                            "log_dirs": ["/no/such/dir", "any"]}])
    refused = run(cluster, f"reassign-partitions --execute --reassignment-json-file {bad}", env)
    assert refused.returncode == 1 and "Failed to alter dir for jbod-move-0-1:" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert settled(cluster, env, "jbod-move") == after


def test_balance_meets_the_log_dirs_goal(kafka4_jbod, env, tmp_path):
    cluster = kafka4_jbod
    first = cluster.broker_log_dirs(1)[0]
    ok(run(cluster, "create-topic --topic jbod-balance --replica-assignment 1:2,2:1,1:2,2:1", env))
    fill(cluster, "jbod-balance", 4, 600_000)
    # Every replica of broker 1 into its first dir.
    plan = move_file(tmp_path, "pile.json", [{"topic": "jbod-balance", "partition": p, "replicas": r,
                                              "log_dirs": [first if b == 1 else "any" for b in r]}
                                             for p, r in enumerate([[1, 2], [2, 1], [1, 2], [2, 1]])])
    assert run(cluster, f"reassign-partitions --execute --reassignment-json-file {plan}", env).returncode == 0
    wait_until(lambda: (lambda s: s if s and all(s[(p, 1)] == first for p in range(4)) else None)(
        settled(cluster, env, "jbod-balance")), "broker 1's replicas in its first dir")
    planned = ok(run(cluster, "balance --topic jbod-balance --goals disk,log_dirs -o json", env))
    goal = {g["goal"]: g for g in planned["goals"]}["log_dirs"]
    assert goal["met_before"] is False and goal["met_after"] is True, planned["goals"]
    assert planned["dir_moves"] and not planned["moves"]
    done = run(cluster, "balance --topic jbod-balance --goals disk,log_dirs --execute --yes -o json", env, "60")
    assert done.returncode == 0, done.stderr
    now = {g["goal"]: g for g in json_tables(done.stdout)["goals_now"]}["log_dirs"]
    assert now["met"] is True, json_tables(done.stdout)["goals_now"]
    placed = settled(cluster, env, "jbod-balance")
    assert placed is not None
    assert {placed[(m["partition"], m["broker"])] for m in planned["dir_moves"]} == \
        {m["target"] for m in planned["dir_moves"]}
    assert {placed[(p, 1)] for p in range(4)} == set(cluster.broker_log_dirs(1))   # both dirs of broker 1 hold some


def test_the_sandbox_answers_alter_replica_log_dirs_as_kafka_does_with_two_dirs(kafka4_jbod, env):
    """The same AlterReplicaLogDirs requests to broker 1 of Kafka 4.4 and of a sandbox, both with
    two log dirs per broker, dir for dir: the answers agree (a move to the other dir, to the dir
    it is in, of a partition the broker does not hold, of an unknown topic, to a dir it lacks, to
    a cordoned dir), and DescribeLogDirs then shows the replica in the same dir of each."""
    cluster = kafka4_jbod
    topic = f"dirs-{uuid.uuid4().hex[:8]}"
    ok(run(cluster, f"create-topic --topic {topic} --replica-assignment 1,2", env))
    theirs = ("127.0.0.1", cluster.brokers[0].port)
    wait_until_known(theirs, topic)
    with Sandbox(brokers=2, log_dirs_per_broker=2) as sandbox:
        create(sandbox, topic, [[1], [2]])
        ours = sandbox.address(1)
        dirs = {ours: sandbox.call(lambda: list(sandbox.cluster.brokers[1].log_dirs)),
                theirs: cluster.broker_log_dirs(1)}

        def held_in(address) -> int:
            """Which of broker 1's dirs (0 or 1) holds its replica of the topic's partition 0."""
            answer = exchange(address, ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": [{"topic": topic, "partitions": [0]}]})
            found = [dirs[address].index(r["log_dir"]) for r in answer["results"]  # type: ignore[index]
                     for t in r["topics"] for p in t["partitions"] if not p["is_future_key"]]
            assert len(found) == 1, answer
            return found[0]

        def ask(address, k: int | None, name: str, partitions: list[int], path: str = "") -> list:
            return alter_log_dirs(address, dirs[address][k] if k is not None else path, name, partitions)

        start = {a: held_in(a) for a in (ours, theirs)}
        for k in (lambda a: start[a], lambda a: 1 - start[a]):   # where it is (nothing to do), then the other dir
            assert ask(ours, k(ours), topic, [0, 1]) == ask(theirs, k(theirs), topic, [0, 1])
        wait_until(lambda: all(held_in(a) == 1 - start[a] for a in (ours, theirs)), "the replica in its new dir")
        assert ask(ours, 0, "missing", [0]) == ask(theirs, 0, "missing", [0])
        assert ask(ours, None, topic, [0], "/no/such/dir") == ask(theirs, None, topic, [0], "/no/such/dir")
        # Kafka 4.3+: a cordoned dir takes no move (INVALID_REPLICA_ASSIGNMENT).
        for address, bootstrap in ((ours, sandbox.bootstrap), (theirs, cluster.bootstrap)):
            p = shell("--bootstrap-server", bootstrap, "--command",
                      f"cordon --broker 1 --log-dir {dirs[address][start[address]]}", env=env)
            assert p.returncode == 0, p.stderr
        try:
            wait_until(lambda: all(d["cordoned"] for d in ok(run(cluster, "describe-log-dirs --broker-list 1 -o json",
                                                                 env))["log_dirs"] if d["log_dir"] ==
                                   dirs[theirs][start[theirs]]), "the dir cordoned on Kafka")
            mine, real = ask(ours, start[ours], topic, [0]), ask(theirs, start[theirs], topic, [0])
            assert mine == real == [(0, Error.invalid_replica_assignment)], (mine, real)
        finally:
            assert run(cluster, "uncordon --broker 1", env).returncode == 0
