"""The controller is whoever Kafka says it is, by Kafka's own rules, in KRaft and in ZooKeeper
mode; what commands show is read when they run, never the cache; messages about the controller
come once per real change.

Sessions run in-process against the sandbox (the same Session, runner and connection manager
as the shell's modes), with the sandbox's fault injection as `sandbox ...` lines."""

from __future__ import annotations

import io

import pytest

from kafka_shell.protocol.codes import ApiKey
from kafka_shell.declarations.registry import load_commands
from kafka_shell.face.runner import run_line
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.sandbox.server import Sandbox
from kafka_shell.connection.session import Session, Target
from tests.conftest import BOTH_MODES, KRAFT_MODE
from tests.output import json_data, json_rows

pytestmark = BOTH_MODES
NOTICES = ("Controller moved", "Active controller changed", "Controller 100 was elected again")
QUORUM = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}


class Shell:
    """A session as the REPL or a replay file drives it: one line at a time."""

    def __init__(self, sandbox: Sandbox, **target: object):
        load_commands()
        self.session = Session(target=Target(sandbox.bootstrap, **target), sandbox=sandbox,  # type: ignore[arg-type]
                               stdout=io.StringIO(), stderr=io.StringIO(), output="json")
        self.session.refresh_after_mutation = True  # as the REPL does

    def run(self, line: str) -> tuple[int, object, str]:
        self.session.stdout, self.session.stderr = io.StringIO(), io.StringIO()
        code = run_line(self.session, line)
        out = self.session.stdout.getvalue()
        return code, (json_data(out) if out.strip() else None), self.session.stderr.getvalue()

    def ok(self, line: str) -> object:
        code, out, err = self.run(line)
        assert code == 0, err
        return out

    def close(self) -> None:
        self.session.close()


@pytest.fixture
def shell(sandbox):
    s = Shell(sandbox)
    yield s
    s.close()


def quorum_leader(sandbox) -> tuple[int, int]:
    """(leader id, epoch) as DescribeQuorum tells it (KRaft), through a broker."""
    from kafka_shell.connection.channel import Channel
    ch = Channel(*sandbox.address(1))
    try:
        part = ch.request(ApiKey.DESCRIBE_QUORUM, QUORUM)["topics"][0]["partitions"][0]
    finally:
        ch.close()
    return part["leader_id"], part["leader_epoch"]


def test_describe_controller_is_the_true_controller_every_time(sandbox, shell):
    rows = [shell.ok("describe-controller")[0] for _ in range(6)]
    if sandbox.mode == "kraft":
        leader, epoch = quorum_leader(sandbox)
        assert leader == sandbox.active_controller == 100  # a controller node, not a broker
        assert {(r["id"], r["controller_epoch"], r["mode"]) for r in rows} == {(leader, epoch, "KRaft")}
        assert (rows[0]["host"], rows[0]["port"]) == sandbox.address(100)
    else:
        assert {(r["id"], r["mode"]) for r in rows} == {(sandbox.active_controller, "ZooKeeper")}
        assert sandbox.active_controller in (1, 2, 3)


def test_describe_cluster_and_list_brokers_name_the_true_controller(sandbox, shell):
    for _ in range(4):
        cluster = shell.ok("describe-cluster")["cluster"][0]
        assert cluster["controller"] == sandbox.active_controller
    roles = {r["id"]: r["role"] for r in shell.ok("list-brokers")}
    if sandbox.mode == "kraft":
        assert set(roles.values()) == {"broker"}  # the controller is no broker
    else:
        assert roles[sandbox.active_controller] == "controller"


def test_no_controller_message_when_nothing_moved(sandbox, shell):
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 3, 3)
    messages = ""
    for line in ["describe-cluster", "describe-controller", "list-brokers", "describe-topic --topic t",
                 "elect-leaders --election-type preferred --all-topic-partitions", "refresh",
                 "describe-cluster", "create-topic --topic u", "describe-controller"] * 2:
        messages += shell.run(line)[2]
    assert "moved" not in messages and "changed" not in messages and "elected again" not in messages


def test_one_message_after_kill_controller(sandbox, shell):
    before = shell.ok("describe-controller")[0]
    code, _, kill_err = shell.run("sandbox kill-controller")  # the REPL's cache refresh notices
    assert code == 0, kill_err
    code, rows, err = shell.run("describe-controller")
    assert code == 0, err
    after = rows[0]
    if sandbox.mode == "kraft":  # one voter: it comes back at once, with a higher epoch
        assert after["id"] == before["id"] == 100 and after["controller_epoch"] == before["controller_epoch"] + 1
        assert after["controller_epoch"] == sandbox.controller_epoch
    else:
        assert after["id"] == sandbox.active_controller != before["id"]
    later = "".join(shell.run(line)[2] for line in ["describe-cluster", "describe-controller", "list-brokers"])
    said = kill_err + err + later
    changes = [line for line in said.splitlines() if line.startswith(NOTICES)]
    assert len(changes) == 1, said
    if sandbox.mode == "kraft":
        assert changes[0] == f"Controller 100 was elected again (epoch {before['controller_epoch']} -> " \
                             f"{after['controller_epoch']})."
    else:
        assert changes[0] == f"Controller moved from broker {before['id']} to broker {after['id']}."


@KRAFT_MODE  # a ZooKeeper-mode cluster has no controller quorum (its case is the test above)
def test_three_voters_stop_the_active_controller(sandbox_mode):
    with Sandbox(brokers=3, controllers=3) as sb:
        shell = Shell(sb)
        try:
            first = shell.ok("describe-controller")[0]
            code, _, stop_err = shell.run(f"sandbox stop-controller {first['id']}")
            assert code == 0, stop_err
            code, rows, err = shell.run("describe-controller")
            err = stop_err + err
            assert code == 0, err
            new = rows[0]
            assert new["id"] != first["id"] and new["id"] in sb.controller_ids
            assert new["controller_epoch"] > first["controller_epoch"]
            assert (new["id"], new["controller_epoch"]) == quorum_leader(sb)
            assert err.count("Active controller changed") == 1, err
            assert f"Active controller changed from {first['id']} to {new['id']}" in err
            # Admin requests go on through the brokers (forwarded to the new controller).
            shell.ok("create-topic --topic after-failover --partitions 2")
            assert "after-failover" in sb.cluster.topics
        finally:
            shell.close()


@KRAFT_MODE  # --bootstrap-controller names KRaft controller listeners; zk clusters have none
def test_bootstrap_controller_serves_the_quorum_from_the_active_controller(sandbox_mode):
    with Sandbox(brokers=3, controllers=3) as sb:
        shell = Shell(sb, bootstrap_controllers=sb.bootstrap_controllers)
        try:
            leader = shell.ok("describe-controller")[0]
            assert (leader["id"], leader["controller_epoch"]) == quorum_leader(sb)
            status = shell.ok("describe-quorum --status")[0]
            assert status["leader_id"] == leader["id"]
            # The request went to the active controller's own listener.
            channel = shell.session.conn.router.controller_channel(ApiKey.DESCRIBE_QUORUM, QUORUM, 1e12)
            assert (channel.host, channel.port) == sb.address(leader["id"])
        finally:
            shell.close()


def test_reads_follow_changes_made_behind_the_shells_back(sandbox, shell, admin):
    from confluent_kafka.admin import NewTopic
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 2, 3, [[1, 2, 3], [2, 3, 1]])
    shell.ok("list-topics")  # the cache now holds t alone
    admin.create_topics([NewTopic("made-elsewhere", 1, 1)])["made-elsewhere"].result(10)
    assert "made-elsewhere" in {r["topic"] for r in shell.ok("list-topics")}
    sandbox.stop_broker(2)
    parts = shell.ok("describe-topic --topic t")["partitions"]
    assert all(2 not in p["isr"] and p["leader"] != 2 for p in parts)
    assert {p["offline"] and 2 in p["offline"] for p in parts} == {True}
    brokers = shell.ok("describe-cluster")["brokers"]
    assert {b["id"]: b["status"] for b in brokers} == {1: "online", 2: "offline", 3: "online"}
    sandbox.stop_broker(3)
    sandbox.stop_broker(1)
    code, _, err = shell.run("describe-topic --topic t")
    assert code == 1 and err.startswith("Cannot reach any broker of"), err
    assert shell.session.conn.unreachable_since is not None


class _Hooked(io.StringIO):
    """A replay's stderr that runs `hooks[n]` when line n is echoed, just before it runs: the
    cluster changes behind the shell's back between two lines, deterministically."""

    def __init__(self, hooks: dict[int, object]):
        super().__init__()
        self.hooks = hooks

    def write(self, text: str) -> int:
        number = text.split(">", 1)[0]
        if number.isdigit() and int(number) in self.hooks:
            self.hooks.pop(int(number))()  # type: ignore[operator]
        return super().write(text)


def test_replay_reads_what_changed_between_lines(sandbox, admin, tmp_path):
    from confluent_kafka.admin import NewTopic

    from kafka_shell.face import modes
    sandbox.call(sandbox_admin.create_topic, sandbox.cluster, "t", 2, 3, [[1, 2, 3], [2, 3, 1]])
    script = tmp_path / "s.ksh"
    script.write_text("list-topics -o csv\nlist-topics -o csv\ndescribe-topic --topic t -o json\n")
    stderr = _Hooked({
        2: lambda: admin.create_topics([NewTopic("made-elsewhere", 1, 1)])["made-elsewhere"].result(10),
        3: lambda: sandbox.stop_broker(2),
    })
    load_commands()
    session = Session(target=Target(sandbox.bootstrap), stdout=io.StringIO(), stderr=stderr)
    try:
        assert modes.replay(session, str(script)) == 0, stderr.getvalue()
    finally:
        session.close()
    out = session.stdout.getvalue()
    blocks = out[:out.index("{")].split("topic,partitions,replication_factor\n")
    assert "made-elsewhere" not in blocks[1] and "made-elsewhere" in blocks[2]
    partitions = json_rows(out[out.index("{"):], "partitions")
    assert all(p["leader"] != 2 and p["offline"] == [2] for p in partitions)
