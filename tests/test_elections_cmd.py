"""preferred-replica-leader-election and elect-leaders, run as a real process against a sandbox,
checked with the real AdminClient and the sandbox's own state."""

from __future__ import annotations

import json
import subprocess
import threading

import pytest

from confluent_kafka.admin import AdminClient

from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox.server import Sandbox
from tests.conftest import BOTH_MODES
from tests.sandbox.wire import create, produce, stage_offline_partition
from tests.test_oneshot import SHELL, assert_one_line_error, run, shell
from tests.output import json_rows

pytestmark = BOTH_MODES  # elections and reassignments, in KRaft and in ZooKeeper mode

ELECT = "preferred-replica-leader-election"


def leaders(admin, topic: str) -> list[int]:
    parts = admin.list_topics(topic, timeout=5).topics[topic].partitions
    return [parts[i].leader for i in sorted(parts)]


def state(sandbox) -> dict:
    """(topic, partition) -> (leader, leader epoch) from the sandbox itself."""
    return sandbox.call(lambda c: {(t.name, p.index): (p.leader, p.leader_epoch)
                                   for t in c.topics.values() for p in t.partitions}, sandbox.cluster)


def rows(p) -> list[dict]:
    return json_rows(p.stdout)


@pytest.fixture
def moved(sandbox):
    """t-0 prefers broker 1 but is led by 2 after 1 restarted; t-1 is led by its preferred 2."""
    create(sandbox, "t", [[1, 2, 3], [2, 3, 1]])
    sandbox.stop_broker(1)
    sandbox.start_broker(1)
    return sandbox


def test_restart_then_preferred_election_restores_leadership(moved, admin):
    assert leaders(admin, "t") == [2, 2]
    p = run(moved, f"{ELECT} --topic t", "-o", "json")
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines() == [
        "Successfully completed leader election (PREFERRED) for partitions t-0",
        "Valid replica already elected for partitions t-1"]
    assert rows(p) == [{"topic": "t", "partition": 0, "result": "elected", "error": None},
                       {"topic": "t", "partition": 1, "result": "already elected", "error": None}]
    assert leaders(admin, "t") == [1, 2]
    p = run(moved, f"{ELECT} --topic t --partition 0")
    assert p.returncode == 0 and "Valid replica already elected for partitions t-0" in p.stderr


def test_dry_run_lists_what_would_change_and_sends_nothing(moved):
    create(moved, "u", [[3, 1]])
    moved.stop_broker(3)  # u-0 is led by 1, its preferred replica 3 is down
    before = state(moved)
    p = run(moved, f"{ELECT} --all-topic-partitions --dry-run", "-o", "json")
    assert p.returncode == 0, p.stderr
    assert {(r["topic"], r["partition"]): r["result"] for r in rows(p)} == {
        ("t", 0): "would elect", ("t", 1): "already elected", ("u", 0): "would fail"}
    assert p.stderr.splitlines() == [
        "Would elect leaders (PREFERRED) for partitions t-0 (dry run)",
        "Valid replica already elected for partitions t-1",
        "Would fail (PREFERRED) for partition: u-0: preferred replica 3 is not live and in the ISR"]
    assert state(moved) == before


def test_failures_are_reported_one_line_each_and_exit_1(moved, admin):
    create(moved, "u", [[3, 1]])
    moved.stop_broker(3)  # u-0 is led by 1, its preferred replica 3 is down
    p = run(moved, f"{ELECT} --all-topic-partitions")
    assert p.returncode == 1
    lines = p.stderr.splitlines()
    assert "Successfully completed leader election (PREFERRED) for partitions t-0" in lines
    assert ('Error completing leader election (PREFERRED) for partition: u-0 (preferred replica: broker 3): '
            'The preferred leader of "u" is not available: bring that broker back first.') in lines
    assert lines[-1] == "1 partition(s) could not be elected"
    assert leaders(admin, "t")[0] == 1 and leaders(admin, "u") == [1]


def test_unclean_election_refused_without_a_live_replica_then_allowed(sandbox, admin):
    create(sandbox, "t", [[1, 2]])
    produce(sandbox, "t", 0, 2, 10)
    sandbox.stop_broker(2)
    sandbox.stop_broker(1)  # offline: the last ISR member is down
    line = "elect-leaders --election-type unclean --topic t --yes"
    p = run(sandbox, line)
    assert p.returncode == 1
    assert ('Error completing leader election (UNCLEAN) for partition: t-0: No eligible leader for "t": '
            "bring an in-sync replica back first.") in p.stderr
    assert "1 partition(s) could not be elected" in p.stderr
    sandbox.start_broker(2)  # out of sync: not elected by itself (unclean.leader.election.enable=false)
    assert leaders(admin, "t") == [-1]
    p = run(sandbox, line)
    assert p.returncode == 0, p.stderr
    assert "Successfully completed leader election (UNCLEAN) for partitions t-0" in p.stderr
    assert leaders(admin, "t") == [2]
    p = run(sandbox, line)
    assert p.returncode == 0 and "Valid replica already elected for partitions t-0" in p.stderr


@pytest.fixture(params=[True], ids=["seed-apis"])
def offline(request, sandbox_mode):
    """t-0 on [1, 2, 3], offline: 1 (the last ISR member) down, 2 and 3 up but out of sync
    holding 6 and 4 of its 10 records; `online` on [2, 3] has a leader. On a sandbox with the
    seeds' APIs (designated elections need ElectLeaders v3) unless a test asks for a stock one."""
    with Sandbox(brokers=3, mode=sandbox_mode, seed_apis=request.param) as s:
        create(s, "online", [[2, 3]])
        stage_offline_partition(s)
        yield s


def plan(tmp_path, *entries: tuple[str, int, int]) -> str:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"partitions": [{"topic": t, "partition": p, "designatedLeader": d}
                                               for t, p, d in entries]}))
    return str(path)


def test_designated_election_rules_and_success(offline, tmp_path):
    admin = AdminClient({"bootstrap.servers": offline.bootstrap, "log_level": 3})
    line = "elect-leaders --election-type designated --path-to-json-file {} --yes"
    before = state(offline)
    p = run(offline, line.format(plan(tmp_path, ("t", 0, 4))), "-o", "json")
    assert p.returncode == 1
    assert rows(p)[0]["result"] == "failed" and "replica" in rows(p)[0]["error"]
    assert "Error completing leader election (DESIGNATED) for partition: t-0: The cluster rejected" in p.stderr
    p = run(offline, line.format(plan(tmp_path, ("t", 0, 1))))  # broker 1 is down
    assert p.returncode == 1 and 'No eligible leader for "t"' in p.stderr
    p = run(offline, line.format(plan(tmp_path, ("online", 0, 3))))
    assert p.returncode == 0 and "Valid replica already elected for partitions online-0" in p.stderr
    assert state(offline) == before and leaders(admin, "t") == [-1]

    p = run(offline, line.format(plan(tmp_path, ("t", 0, 2))) + " --blocking")
    assert p.returncode == 0, p.stderr
    assert "Successfully completed leader election (DESIGNATED) for partitions t-0" in p.stderr
    assert "All 2 broker(s) show the new leaders of 1 partition(s)" in p.stderr
    assert leaders(admin, "t") == [2]
    assert offline.cluster.partition("t", 0).high_watermark == 6  # broker 2's log


@pytest.mark.parametrize("offline", [False], ids=["stock"], indirect=True)
def test_designated_election_on_a_cluster_without_elect_leaders_v3(offline, tmp_path):
    # ElectLeaders v0-v2 only, as every Apache Kafka release lists it.
    before = state(offline)
    p = run(offline, f"elect-leaders --election-type designated --path-to-json-file {plan(tmp_path, ('t', 0, 2))} --yes")
    assert_one_line_error(p, 1, "Designated elections need ElectLeaders v3", "--election-type unclean")
    assert state(offline) == before


def test_blocking_wait_goes_on_when_the_controller_is_killed(moved, admin):
    controller, epoch = moved.active_controller, moved.controller_epoch
    slow = next(b for b in moved.cluster.brokers if b != controller)
    moved.delay(slow, 1500)  # its metadata answers come late: the wait lasts a while
    proc = subprocess.Popen([*SHELL, "--bootstrap-server", moved.bootstrap, "--command",
                             f"{ELECT} --topic t --blocking"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    killed: dict = {}

    def kill_once_elected() -> None:
        while moved.cluster.partition("t", 0).leader != 1 and proc.poll() is None:
            threading.Event().wait(0.005)
        killed["during_wait"] = proc.poll() is None
        killed["new"] = moved.kill_controller()

    thread = threading.Thread(target=kill_once_elected)
    thread.start()
    out, err = proc.communicate(timeout=60)
    thread.join()
    assert proc.returncode == 0, err
    assert killed["during_wait"] and moved.controller_epoch > epoch
    assert killed["new"] != controller or moved.mode == "kraft"  # a lone KRaft voter comes back itself
    assert "Successfully completed leader election (PREFERRED) for partitions t-0" in err
    assert "All 3 broker(s) show the new leaders of 1 partition(s)" in err
    assert leaders(admin, "t") == [1, 2]


def test_blocking_wait_is_bounded_by_timeout_ms(moved, admin):
    # One broker answers every Metadata with an error: it never shows the new leader.
    stale = next(b for b in moved.cluster.brokers if b != moved.cluster.controller_id)
    moved.fail(stale, "Metadata", "LEADER_NOT_AVAILABLE")
    p = run(moved, f"{ELECT} --topic t --blocking --timeout-ms 300")
    assert p.returncode == 1
    assert "Successfully completed leader election (PREFERRED) for partitions t-0" in p.stderr
    assert ("Timed out after 300 ms waiting for the new leaders: 1 of 1 partition(s) not yet shown "
            "by every broker (first: t-0)") in p.stderr
    moved.heal()
    assert leaders(admin, "t") == [1, 2]  # the election itself took effect


def test_requests_over_1000_partitions_are_split(sandbox, admin):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "big", 2500, 2)
    sandbox.stop_broker(1)
    sandbox.start_broker(1)
    preferred_one = sum(1 for p in sandbox.cluster.topics["big"].partitions if p.replicas[0] == 1)
    assert preferred_one > 0
    p = run(sandbox, f"{ELECT} --all-topic-partitions", "-o", "json", "--debug")
    assert p.returncode == 0, p.stderr[-2000:]
    sent = [ln for ln in p.stderr.splitlines() if ln.startswith("debug: ElectLeaders request ")]
    assert [ln.split(":")[1].split()[2] for ln in sent] == ["1/3", "2/3", "3/3"]
    assert "debug: ElectLeaders: 3 request(s) sent for 2500 partition(s)" in p.stderr
    results = [r["result"] for r in rows(p)]
    assert len(results) == 2500 and results.count("elected") == preferred_one
    md = admin.list_topics("big", timeout=10).topics["big"].partitions
    assert all(pt.leader == pt.replicas[0] for pt in md.values())


def write(tmp_path, text: str) -> str:
    path = tmp_path / "f.json"
    path.write_text(text)
    return str(path)


FILE_ERRORS = [
    # (file text, or None for a missing file; extra options; words of the one-line error)
    (None, "", ["Cannot read --path-to-json-file", "No such file"]),
    ('{"partitions": [', "", ["is not valid JSON", "line 1", '{"partitions":[{"topic":"foo","partition":1}]}']),
    ("[]", "", ['needs a "partitions" list']),
    ('{"partitions": {"topic": "t"}}', "", ['needs a "partitions" list']),
    ('{"partitions": []}', "", ["lists no partitions"]),
    ('{"partitions": [{"topic": "t"}]}', "", ['entry 1 needs "topic"', '"partition"']),
    ('{"partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": -1}]}', "", ["entry 2 needs"]),
    ('{"partitions": [{"topic": "t", "partition": "0"}]}', "", ["entry 1 needs"]),
    ('{"partitions": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 0}]}', "",
     ["partition t-0 more than once"]),
    ('{"partitions": [{"topic": "t", "partition": 0, "designatedLeader": 1}]}', "",
     ['"designatedLeader", which only designated elections use']),
]


@pytest.mark.parametrize("text,extra,needles", FILE_ERRORS, ids=[f"file{i}" for i in range(len(FILE_ERRORS))])
def test_each_malformed_file_has_its_own_error_and_changes_nothing(moved, tmp_path, text, extra, needles):
    path = str(tmp_path / "missing.json") if text is None else write(tmp_path, text)
    before = state(moved)
    assert_one_line_error(run(moved, f"{ELECT} --path-to-json-file {path} {extra}"), 2, *needles)
    assert state(moved) == before


def test_designated_file_needs_a_leader_per_entry(moved, tmp_path):
    path = write(tmp_path, '{"partitions": [{"topic": "t", "partition": 0}]}')
    before = state(moved)
    assert_one_line_error(run(moved, f"elect-leaders --election-type designated --path-to-json-file {path}"), 2,
                          'entry 1 (t-0) needs "designatedLeader"')
    assert state(moved) == before


OPTION_ERRORS = [
    (f"{ELECT}", 2, [f"{ELECT} needs one of --topic, --all-topic-partitions, --path-to-json-file"]),
    (f"{ELECT} --topic t --all-topic-partitions", 2, ["--topic and --all-topic-partitions", "cannot be used together"]),
    (f"{ELECT} --all-topic-partitions --path-to-json-file x.json", 2, ["cannot be used together"]),
    (f"{ELECT} --partition 0", 2, ["--partition needs --topic"]),
    (f"{ELECT} --partition 0 --all-topic-partitions", 2, ["--partition needs --topic"]),
    (f"{ELECT} --topic t --partition -1", 2, ['Invalid value "-1" for --partition']),
    (f"{ELECT} --topic t --timeout-ms 0", 2, ['Invalid value "0" for --timeout-ms']),
    (f"{ELECT} --topic t --election-type unclean", 2, ["Unknown option --election-type"]),
    (f"{ELECT} --zookeeper zk:2181 --topic t", 2, ["--zookeeper was removed (KIP-183)", "drop --zookeeper"]),
    ("elect-leaders --topic t", 2, ["Missing required option --election-type"]),
    ("elect-leaders --election-type sideways --topic t", 2, ["choose one of preferred, unclean, designated"]),
    ("elect-leaders --election-type designated --topic t", 2, ["Designated elections need --path-to-json-file"]),
    (f"{ELECT} --topic nope", 1, ['Topic "nope" does not exist']),
    (f"{ELECT} --topic t --partition 5", 1, ["Partition t-5 does not exist", "t has 2 partition(s)"]),
]


@pytest.mark.parametrize("line,code,needles", OPTION_ERRORS, ids=[o[0][-45:] for o in OPTION_ERRORS])
def test_each_wrong_option_combination_has_its_own_error_and_changes_nothing(moved, line, code, needles):
    before = state(moved)
    assert_one_line_error(run(moved, line), code, *needles)
    assert state(moved) == before


def test_zookeeper_alone_says_to_use_bootstrap_server(moved, tmp_path):
    env = {"KAFKA_SHELL_CONFIG_DIR": str(tmp_path)}  # no saved current cluster
    before = state(moved)
    assert_one_line_error(shell("--command", f"{ELECT} --zookeeper zk:2181 --topic t", env=env), 2,
                          "--zookeeper was removed (KIP-183): use --bootstrap-server HOST:PORT instead")
    assert_one_line_error(shell(f"--{ELECT}", "--zookeeper", "zk:2181", "--all-topic-partitions", env=env), 2,
                          "use --bootstrap-server HOST:PORT instead")
    # KIP-4 flag style with both: refused, nothing done.
    assert_one_line_error(shell(f"--{ELECT}", "--zookeeper", "zk:2181", "--all-topic-partitions",
                                "--bootstrap-server", moved.bootstrap, env=env), 2,
                          "cannot be used with --bootstrap-server")
    assert state(moved) == before


def test_help_explains_the_preferred_replica():
    p = shell("--command", f"{ELECT} --help")
    assert p.returncode == 0
    assert "first replica of its assignment" in p.stdout
    assert "auto.leader.rebalance.enable=true" in p.stdout


@pytest.mark.parametrize("kind, file", [("preferred", None), ("unclean", None), ("designated", (2, 4))])
def test_a_dry_run_predicts_what_the_controller_then_does(offline, tmp_path, kind, file):
    # Kafka's election rule lives once (kafka_shell/protocol/leader_election.py): each partition's
    # predicted outcome is the controller's, online and offline, elected or refused.
    scope = f"--path-to-json-file {plan(tmp_path, ('t', 0, file[0]), ('online', 0, file[1]))}" if file \
        else "--all-topic-partitions"
    line = f"elect-leaders --election-type {kind} {scope} --yes -o json"
    predicted = {(r["topic"], r["partition"]): r["result"] for r in rows(run(offline, line + " --dry-run"))}
    done = {(r["topic"], r["partition"]): r["result"] for r in rows(run(offline, line))}
    wording = {"would elect": "elected", "already elected": "already elected", "would fail": "failed"}
    assert {k: wording[v] for k, v in predicted.items()} == done and done
