"""Brokers with several log dirs (`sandbox --log-dirs-per-broker 2`): each replica in one dir,
moved between the dirs of its broker by AlterReplicaLogDirs (reassign-partitions' `log_dirs`,
balance's log_dirs goal), checked in the sandbox's own state, with DescribeLogDirs, and with
Kafka 4.4's own kafka-reassign-partitions and kafka-log-dirs (the Java tools) on the sandbox."""

from __future__ import annotations

import json
import signal
import subprocess
from collections import Counter

import pytest

from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox.directories import dir_of
from kafka_shell.sandbox.server import Sandbox
from tests.clients import java_client
from tests.output import json_rows, json_tables
from tests.sandbox.wire import exchange, produce
from tests.test_oneshot import shell
from tests.test_reassign_cmd import popen, wait_until

D1, D2 = "/sandbox/broker-{}/data-1", "/sandbox/broker-{}/data-2"


@pytest.fixture
def env(tmp_path):
    return {"KAFKA_SHELL_DATA_DIR": str(tmp_path / "data")}


@pytest.fixture
def jbod():
    with Sandbox(brokers=3, log_dirs_per_broker=2) as s:
        yield s


def run(sandbox, line: str, env: dict) -> subprocess.CompletedProcess:
    return shell("--bootstrap-server", sandbox.bootstrap, "--command", line, env=env)


def where(sandbox) -> dict[tuple[str, int, int], str]:
    """(topic, partition, broker) -> the dir of the replica, in the sandbox's state."""
    return sandbox.call(lambda: {(t.name, p.index, b): dir_of(sandbox.cluster, p, b)
                                 for t in sandbox.cluster.topics.values() if not t.internal
                                 for p in t.partitions for b in p.replicas})


def futures(sandbox) -> dict[tuple[str, int, int], str]:
    return sandbox.call(lambda: {(t.name, p.index, b): d for t in sandbox.cluster.topics.values()
                                 for p in t.partitions for b, d in p.future_dirs.items()})


def described(sandbox, env) -> tuple[list[dict], list[dict]]:
    p = run(sandbox, "describe-log-dirs -o json", env)
    assert p.returncode == 0, p.stderr
    tables = json_tables(p.stdout)
    return tables["log_dirs"], tables["partitions"]


def plan_file(tmp_path, entries: list[dict]) -> str:
    path = tmp_path / "move.json"
    path.write_text(json.dumps({"version": 1, "partitions": entries}))
    return str(path)


def test_each_replica_is_in_one_dir_new_ones_where_fewest_are_and_describe_log_dirs_agrees(jbod, env):
    jbod.call(sandbox_admin.create_topic, jbod.cluster, "t", 6, 2, None)
    dirs, parts = described(jbod, env)
    assert {(d["broker"], d["log_dir"]) for d in dirs} == {(b, f.format(b)) for b in (1, 2, 3) for f in (D1, D2)}
    assert all(d["total_bytes"] == 100 * 2**30 and d["cordoned"] is False for d in dirs)
    seen = {(r["topic"], r["partition"], r["broker"]): r["log_dir"] for r in parts if r["topic"] == "t"}
    assert seen == where(jbod) and len(seen) == 12   # each replica once, in the dir the state says
    assert not any(r["is_future"] for r in parts)
    per_dir = Counter((b, d) for (_, _, b), d in seen.items())
    for b in (1, 2, 3):   # LogManager's nextLogDirs: the dir with the fewest replicas
        assert abs(per_dir[(b, D1.format(b))] - per_dir[(b, D2.format(b))]) <= 1
    # The broker's static log.dirs lists them, as a Kafka broker's server.properties does.
    p = run(jbod, "describe-configs --broker 2 -o json", env)
    [entry] = [r for r in json_rows(p.stdout) if r["name"] == "log.dirs"]
    assert (entry["value"], entry["source"]) == (f"{D1.format(2)},{D2.format(2)}", "STATIC_BROKER_CONFIG")


def test_reassign_partitions_moves_a_replica_between_dirs_of_its_broker_through_a_future_replica(jbod, env, tmp_path):
    jbod.call(sandbox_admin.create_topic, jbod.cluster, "m", 1, 2, [[1, 2]])
    produce(jbod, "m", 0, 6, 10_000)
    old, other = where(jbod)[("m", 0, 1)], where(jbod)[("m", 0, 2)]
    new = D2.format(1) if old == D1.format(1) else D1.format(1)
    move = plan_file(tmp_path, [{"topic": "m", "partition": 0, "replicas": [1, 2], "log_dirs": [new, "any"]}])
    jbod.set_replication_rate(1_000)   # the future replica copies a batch about every 10 s (until the rate goes)
    done = run(jbod, f"reassign-partitions --execute --reassignment-json-file {move}", env)
    assert done.returncode == 0, done.stderr
    assert f"Successfully started moving log directory to {new} for replica m-0 with broker 1" in done.stderr
    wait_until(lambda: ("m", 0, 1) in futures(jbod))
    _, parts = described(jbod, env)
    rows = {(r["log_dir"], r["is_future"]): r for r in parts if (r["topic"], r["partition"], r["broker"]) == ("m", 0, 1)}
    assert set(rows) == {(old, False), (new, True)}   # the replica and its future, each in its own dir
    assert rows[(new, True)]["offset_lag"] > 0 and rows[(new, True)]["size"] < rows[(old, False)]["size"]
    verify = run(jbod, f"reassign-partitions --verify --reassignment-json-file {move}", env)
    assert verify.returncode == 3, verify.stderr   # still copying
    assert "Reassignment of replica m-0-1 is still in progress." in verify.stdout
    jbod.set_replication_rate(None)
    wait_until(lambda: not futures(jbod))
    assert where(jbod)[("m", 0, 1)] == new and where(jbod)[("m", 0, 2)] == other   # "any": broker 2's stays
    verify = run(jbod, f"reassign-partitions --verify --reassignment-json-file {move} -o json", env)
    assert verify.returncode == 0, verify.stderr
    [row] = json_rows(verify.stdout, "log_dirs")
    assert (row["broker"], row["status"], row["log_dir"], row["target"]) == (1, "completed", new, new)
    _, parts = described(jbod, env)
    [now] = [r for r in parts if (r["topic"], r["partition"], r["broker"]) == ("m", 0, 1)]
    assert now["log_dir"] == new and not now["is_future"] and now["size"] == rows[(old, False)]["size"]


def test_a_replica_moved_to_another_broker_lands_in_the_dir_the_file_names(jbod, env, tmp_path):
    jbod.call(sandbox_admin.create_topic, jbod.cluster, "x", 1, 2, [[1, 2]])
    produce(jbod, "x", 0, 2, 1000)
    target = D2.format(3)
    move = plan_file(tmp_path, [{"topic": "x", "partition": 0, "replicas": [1, 3], "log_dirs": ["any", target]}])
    done = run(jbod, f"reassign-partitions --execute --reassignment-json-file {move} --blocking", env)
    assert done.returncode == 0, done.stderr + done.stdout
    assert where(jbod)[("x", 0, 3)] == target and not futures(jbod)
    assert "Reassignment of replica x-0-3 completed successfully." in done.stdout


def test_a_dir_the_broker_lacks_is_refused_and_changes_nothing(jbod, env, tmp_path):
    jbod.call(sandbox_admin.create_topic, jbod.cluster, "y", 1, 1, [[1]])
    before = where(jbod)
    move = plan_file(tmp_path, [{"topic": "y", "partition": 0, "replicas": [1], "log_dirs": ["/nowhere"]}])
    done = run(jbod, f"reassign-partitions --execute --reassignment-json-file {move}", env)
    assert done.returncode == 1
    assert "Failed to alter dir for y-0-1:" in done.stderr and "Traceback" not in done.stderr
    assert where(jbod) == before and not futures(jbod)
    bad = plan_file(tmp_path, [{"topic": "y", "partition": 0, "replicas": [1], "log_dirs": [7]}])
    refused = run(jbod, f"reassign-partitions --execute --reassignment-json-file {bad}", env)
    assert refused.returncode == 2 and "must be directory paths" in refused.stderr


def test_balance_meets_the_log_dirs_goal_by_moving_replicas_between_dirs(jbod, env, tmp_path):
    jbod.call(sandbox_admin.create_topic, jbod.cluster, "b", 4, 3, [[1, 2, 3]] * 4)
    for p in range(4):
        produce(jbod, "b", p, 12, 100_000)   # ~1.2 MB each
    # Every replica of broker 1 into its first dir: that broker's dirs are as uneven as can be.
    entries = [{"topic": "b", "partition": p, "replicas": [1, 2, 3], "log_dirs": [D1.format(1), "any", "any"]}
               for p in range(4)]
    assert run(jbod, f"reassign-partitions --execute --reassignment-json-file {plan_file(tmp_path, entries)}",
               env).returncode == 0
    wait_until(lambda: not futures(jbod))
    saved = tmp_path / "plan.json"
    planned = run(jbod, f"balance --goals disk,log_dirs --dry-run --save-plan {saved} -o json", env)
    assert planned.returncode == 0, planned.stderr
    tables = json_tables(planned.stdout)
    goal = {g["goal"]: g for g in tables["goals"]}["log_dirs"]
    assert goal["measure"] == "skew (% of the mean)" and goal["met_before"] is False and goal["met_after"] is True
    assert goal["before"] > goal["after"]
    moves = tables["dir_moves"]
    assert moves and all(m["broker"] == 1 and m["log_dir"] == D1.format(1) and m["target"] == D2.format(1)
                         for m in moves if m["broker"] == 1)
    assert not tables["moves"]   # no replica changes broker
    in_file = json.loads(saved.read_text())["partitions"]
    assert {(e["topic"], e["partition"], b, d) for e in in_file for b, d in zip(e["replicas"], e["log_dirs"])
            if d != "any"} == {(m["topic"], m["partition"], m["broker"], m["target"]) for m in moves}
    assert all(where(jbod)[("b", p, 1)] == D1.format(1) for p in range(4))   # planning changes nothing
    done = run(jbod, "balance --goals disk,log_dirs --execute --yes -o json", env)
    assert done.returncode == 0, done.stderr
    now = {g["goal"]: g for g in json_tables(done.stdout)["goals_now"]}["log_dirs"]
    assert now["met"] is True
    assert {where(jbod)[("b", m["partition"], m["broker"])] for m in moves} == {m["target"] for m in moves}
    again = run(jbod, "balance --goals disk,log_dirs -o json", env)
    assert json_tables(again.stdout)["dir_moves"] == []


def test_kafkas_own_tools_move_and_describe_the_sandboxs_log_dirs(jbod, tmp_path):
    jbod.call(sandbox_admin.create_topic, jbod.cluster, "k", 1, 1, [[2]])
    produce(jbod, "k", 0, 3, 1000)
    new = D2.format(2) if where(jbod)[("k", 0, 2)] == D1.format(2) else D1.format(2)
    move = plan_file(tmp_path, [{"topic": "k", "partition": 0, "replicas": [2], "log_dirs": [new]}])
    done = java_client.run("reassign.ReassignPartitionsCommand", "--bootstrap-server", jbod.bootstrap,
                           "--reassignment-json-file", move, "--execute")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Successfully started moving log directory to {new} for replica k-0 with broker 2" in done.stdout
    wait_until(lambda: not futures(jbod))
    verify = java_client.run("reassign.ReassignPartitionsCommand", "--bootstrap-server", jbod.bootstrap,
                             "--reassignment-json-file", move, "--verify")
    assert "Reassignment of replica k-0-2 completed successfully." in verify.stdout, verify.stdout + verify.stderr
    logdirs = java_client.run("LogDirsCommand", "--bootstrap-server", jbod.bootstrap, "--describe",
                              "--broker-list", "2", "--topic-list", "k")
    report = json.loads(next(line for line in logdirs.stdout.splitlines() if line.startswith("{")))
    [broker] = report["brokers"]
    held = {d["logDir"]: [p["partition"] for p in d["partitions"]] for d in broker["logDirs"]}
    assert held == {new: ["k-0"], (D1 if new == D2.format(2) else D2).format(2): []}


def test_a_broker_that_does_not_answer_is_named_and_the_other_moves_start(jbod, env, tmp_path):
    jbod.call(sandbox_admin.create_topic, jbod.cluster, "s", 2, 1, [[1], [3]])
    other = {b: (D2 if where(jbod)[("s", p, b)] == D1.format(b) else D1).format(b) for p, b in ((0, 1), (1, 3))}
    move = plan_file(tmp_path, [{"topic": "s", "partition": 0, "replicas": [1], "log_dirs": [other[1]]},
                                {"topic": "s", "partition": 1, "replicas": [3], "log_dirs": [other[3]]}])
    jbod.delay(3, 60_000)    # broker 3 hangs (the shell bootstraps from broker 1)
    try:
        done = shell("--bootstrap-server", jbod.bootstrap.split(",")[0], "--timeout", "2", "--command",
                     f"reassign-partitions --execute --reassignment-json-file {move}", env=env)
    finally:
        jbod.heal()
    assert done.returncode == 1, done.stderr
    assert "Broker 3 (replica of s-1) did not answer AlterReplicaLogDirs" in done.stderr, done.stderr
    assert f"Successfully started moving log directory to {other[1]} for replica s-0 with broker 1" in done.stderr
    wait_until(lambda: not futures(jbod))
    assert where(jbod)[("s", 0, 1)] == other[1] and where(jbod)[("s", 1, 3)] != other[3]


def test_a_cordoned_dir_takes_no_new_replica_and_no_move(jbod, env, tmp_path):
    cordoned = D1.format(2)
    p = run(jbod, f"cordon --broker 2 --log-dir {cordoned}", env)
    assert p.returncode == 0, p.stderr
    jbod.call(sandbox_admin.create_topic, jbod.cluster, "c", 4, 1, [[2]] * 4)
    assert {where(jbod)[("c", i, 2)] for i in range(4)} == {D2.format(2)}   # LogManager's nextLogDirs skips it
    move = plan_file(tmp_path, [{"topic": "c", "partition": 0, "replicas": [2], "log_dirs": [cordoned]}])
    done = run(jbod, f"reassign-partitions --execute --reassignment-json-file {move}", env)
    assert done.returncode == 1 and "Failed to alter dir for c-0-2:" in done.stderr, done.stderr
    assert where(jbod)[("c", 0, 2)] == D2.format(2) and not futures(jbod)


def broker_config(sandbox, broker: int, key: str) -> str | None:
    return sandbox.call(lambda: sandbox.cluster.brokers[broker].configs.get(key))


def test_the_log_dir_throttle_is_set_while_replicas_move_and_removed_after(jbod, env, tmp_path):
    key = "replica.alter.log.dirs.io.max.bytes.per.second"
    jbod.call(sandbox_admin.create_topic, jbod.cluster, "th", 1, 1, [[1]])
    produce(jbod, "th", 0, 8, 10_000)
    new = D2.format(1) if where(jbod)[("th", 0, 1)] == D1.format(1) else D1.format(1)
    move = plan_file(tmp_path, [{"topic": "th", "partition": 0, "replicas": [1], "log_dirs": [new]}])
    done = run(jbod, f"reassign-partitions --execute --reassignment-json-file {move} "
                     "--replica-alter-log-dirs-throttle 1000", env)
    assert done.returncode == 0, done.stderr
    assert "The replica-alter-dir throttle limit was set to 1000 B/s on broker(s) 1." in done.stderr
    assert broker_config(jbod, 1, key) == "1000" and ("th", 0, 1) in futures(jbod)   # copying, a batch every 10 s
    # The operator raises the throttle; the copy finishes at once.
    raised = run(jbod, f"alter-configs --broker 1 --add-config {key}=100000000", env)
    assert raised.returncode == 0, raised.stderr
    waited = run(jbod, f"reassign-partitions --verify --reassignment-json-file {move} --blocking", env)
    assert waited.returncode == 0, waited.stderr
    assert "Removed the replica-alter-dir throttle kafka-shell set on broker(s) 1." in waited.stderr
    assert broker_config(jbod, 1, key) is None and where(jbod)[("th", 0, 1)] == new
    plain = plan_file(tmp_path, [{"topic": "th", "partition": 0, "replicas": [1]}])
    refused = run(jbod, f"reassign-partitions --execute --reassignment-json-file {plain} "
                        "--replica-alter-log-dirs-throttle 20000", env)
    assert refused.returncode == 2 and "throttles moves between log dirs" in refused.stderr


def test_balance_gives_arriving_replicas_the_dir_it_chose_and_runs_a_saved_plan_with_log_dirs(jbod, env, tmp_path):
    jbod.call(sandbox_admin.create_topic, jbod.cluster, "a", 6, 2, [[1, 2]] * 6)   # broker 3 holds nothing
    for p in range(6):
        produce(jbod, "a", p, 10, 100_000)
    saved = tmp_path / "plan.json"
    planned = run(jbod, f"balance --topic a --goals replicas,disk,log_dirs --save-plan {saved} -o json", env)
    assert planned.returncode == 0, planned.stderr
    tables = json_tables(planned.stdout)
    arriving = {(m["topic"], m["partition"], m["broker"]): m["target"] for m in tables["dir_moves"] if m["kind"] == "place"}
    assert arriving and {b for _, _, b in arriving} == {3}
    assert {(m["topic"], m["partition"]) for m in tables["moves"] if 3 in m["adding"]} == {(t, p) for t, p, _ in arriving}
    assert len(set(arriving.values())) == 2   # spread over both dirs of broker 3
    in_file = json.loads(saved.read_text())["partitions"]
    assert {(e["topic"], e["partition"], b): d for e in in_file for b, d in zip(e["replicas"], e["log_dirs"])
            if d != "any"} == {**arriving, **{(m["topic"], m["partition"], m["broker"]): m["target"]
                                             for m in tables["dir_moves"]}}
    done = run(jbod, f"balance --execute --plan {saved} --yes -o json", env)
    assert done.returncode == 0, done.stderr
    assert all(where(jbod)[k] == d for k, d in arriving.items()) and not futures(jbod)
    assert "Log dirs: " in done.stderr and "in the log dir the plan names" in done.stderr


def test_a_dir_named_before_the_replica_arrives_is_where_the_replica_is_made(jbod, env, tmp_path):
    jbod.call(sandbox_admin.create_topic, jbod.cluster, "pre", 1, 1, [[1]])
    answer = exchange(jbod.address(3), ApiKey.ALTER_REPLICA_LOG_DIRS, 2, {"dirs": [
        {"path": D2.format(3), "topics": [{"name": "pre", "partitions": [0]}]}]})
    assert answer["results"][0]["partitions"][0]["error_code"] == Error.replica_not_available   # type: ignore[index]
    move = plan_file(tmp_path, [{"topic": "pre", "partition": 0, "replicas": [1, 3]}])
    done = run(jbod, f"reassign-partitions --execute --reassignment-json-file {move} --blocking", env)
    assert done.returncode == 0, done.stderr
    # Broker 3 held nothing: by the fewest-replicas rule the replica would be in its first dir.
    assert where(jbod)[("pre", 0, 3)] == D2.format(3)


def test_cancel_sends_a_moving_replica_back_to_its_dir(jbod, env, tmp_path):
    jbod.call(sandbox_admin.create_topic, jbod.cluster, "back", 1, 1, [[1]])
    produce(jbod, "back", 0, 6, 10_000)
    old = where(jbod)[("back", 0, 1)]
    new = D2.format(1) if old == D1.format(1) else D1.format(1)
    move = plan_file(tmp_path, [{"topic": "back", "partition": 0, "replicas": [1], "log_dirs": [new]}])
    jbod.set_replication_rate(1_000)
    try:
        assert run(jbod, f"reassign-partitions --execute --reassignment-json-file {move}", env).returncode == 0
        assert futures(jbod) == {("back", 0, 1): new}
        dry = run(jbod, f"reassign-partitions --cancel --reassignment-json-file {move} --dry-run", env)
        assert dry.returncode == 0 and "the log dir moves of back-0-1 (dry run)" in dry.stderr
        assert futures(jbod) == {("back", 0, 1): new}
        done = run(jbod, f"reassign-partitions --cancel --reassignment-json-file {move}", env)
        assert done.returncode == 0, done.stderr
        assert "Successfully cancelled the log dir move(s) of back-0-1." in done.stderr
        assert not futures(jbod) and where(jbod)[("back", 0, 1)] == old
    finally:
        jbod.set_replication_rate(None)
    again = run(jbod, f"reassign-partitions --cancel --reassignment-json-file {move}", env)
    assert again.returncode == 0 and "None of the specified partition moves are active." in again.stderr


def uneven_broker_one(sandbox, env, tmp_path) -> None:
    """Topic b: 4 partitions of ~1.2 MB on brokers 1, 2 and 3, broker 1's replicas all in its
    first dir (the log_dirs goal moves half of them to the second)."""
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "b", 4, 3, [[1, 2, 3]] * 4)
    for p in range(4):
        produce(sandbox, "b", p, 12, 100_000)
    entries = [{"topic": "b", "partition": p, "replicas": [1, 2, 3], "log_dirs": [D1.format(1), "any", "any"]}
               for p in range(4)]
    assert run(sandbox, f"reassign-partitions --execute --reassignment-json-file {plan_file(tmp_path, entries)}",
               env).returncode == 0
    wait_until(lambda: not futures(sandbox))


DIR_THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"


def test_balance_throttle_limits_the_moves_between_dirs_and_cancel_removes_it(jbod, env, tmp_path):
    uneven_broker_one(jbod, env, tmp_path)
    before = where(jbod)
    proc = popen(jbod, "balance --goals disk,log_dirs --execute --yes --throttle 1000", env)
    try:
        wait_until(lambda: futures(jbod) and broker_config(jbod, 1, DIR_THROTTLE) == "1000", 60)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "The replica-alter-dir throttle limit was set to 1000 B/s on broker(s) 1." in err
    assert futures(jbod) and broker_config(jbod, 1, DIR_THROTTLE) == "1000"   # Ctrl-C leaves the moves going
    cancelled = run(jbod, "balance --cancel", env)
    assert cancelled.returncode == 0, cancelled.stderr
    assert "Successfully cancelled the log dir move(s) of b-" in cancelled.stderr
    assert "Removed the replica-alter-dir throttle kafka-shell set on broker(s) 1." in cancelled.stderr
    assert not futures(jbod) and where(jbod) == before and broker_config(jbod, 1, DIR_THROTTLE) is None


def test_balance_throttle_is_set_while_replicas_move_between_dirs_and_removed_after(jbod, env, tmp_path):
    uneven_broker_one(jbod, env, tmp_path)
    proc = popen(jbod, "balance --goals disk,log_dirs --execute --yes --throttle 1000 -o json", env)
    try:
        wait_until(lambda: futures(jbod) and broker_config(jbod, 1, DIR_THROTTLE) == "1000", 60)
        assert {b for _, _, b in futures(jbod)} == {1} and broker_config(jbod, 2, DIR_THROTTLE) is None
        # The operator raises the throttle; the copies finish at once.
        raised = run(jbod, f"alter-configs --broker 1 --add-config {DIR_THROTTLE}=100000000", env)
        assert raised.returncode == 0, raised.stderr
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "Removed the replica-alter-dir throttle kafka-shell set on broker(s) 1." in err
    assert broker_config(jbod, 1, DIR_THROTTLE) is None and not futures(jbod)
    assert {g["goal"]: g for g in json_tables(out)["goals_now"]}["log_dirs"]["met"] is True


def test_drain_gives_the_replicas_it_moves_the_dir_with_the_most_room(jbod, env, tmp_path):
    # Broker 3's dirs hold one replica each, one of ~1.2 MB and one empty: by count (the broker's
    # own rule) arriving replicas would alternate between them; by bytes they all go to the empty one.
    jbod.call(sandbox_admin.create_topic, jbod.cluster, "big", 2, 1, [[3], [3]])
    full, empty = where(jbod)[("big", 0, 3)], where(jbod)[("big", 1, 3)]
    assert full != empty
    produce(jbod, "big", 0, 12, 100_000)
    jbod.call(sandbox_admin.create_topic, jbod.cluster, "dr", 4, 2, [[1, 2], [2, 1]] * 2)
    for p in range(4):
        produce(jbod, "dr", p, 3, 100_000)
    dry = run(jbod, "drain-broker 1 --replicas --dry-run -o json", env)
    assert dry.returncode == 0, dry.stderr
    tables = json_tables(dry.stdout)
    assert {(m["topic"], m["partition"]) for m in tables["moves"]} == {("dr", p) for p in range(4)}
    placed = {(m["topic"], m["partition"], m["broker"]): m["target"] for m in tables["dir_moves"]}
    assert placed == {("dr", p, 3): empty for p in range(4)}
    assert all(m["kind"] == "place" and m["log_dir"] is None for m in tables["dir_moves"])
    assert "4 of them arrive on brokers with several log dirs" in dry.stderr
    kept = {k: d for k, d in where(jbod).items() if k[2] != 1}
    done = run(jbod, "drain-broker 1 --replicas --yes", env)
    assert done.returncode == 0, done.stderr
    now = where(jbod)
    assert all(now[k] == d for k, d in placed.items()) and not futures(jbod)
    assert all(now[k] == d for k, d in kept.items())   # the replicas the brokers keep stay in their dirs
    assert not any(b == 1 for _, _, b in now)
    assert "Log dirs: 4 of 4 replica(s) in the log dir the plan names." in done.stderr
