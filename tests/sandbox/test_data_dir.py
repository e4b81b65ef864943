"""--data-dir: a sandbox keeps its state across runs, and what it acknowledged across a kill -9.

The crash tests run `kafka-shell sandbox` as a subprocess and SIGKILL it; the in-process ones
copy the data directory while the sandbox runs (what a crash at that moment would leave) and
recover the copy."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_END, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                  NewPartitions, NewTopic)

from kafka_shell.protocol.codes import Error
from kafka_shell.sandbox import topic_lifecycle as sandbox_admin
from kafka_shell.connection import sandbox_client
from kafka_shell.sandbox import directories, journal, log, persist, records, replication
from kafka_shell.sandbox.server import Sandbox
from tests.test_oneshot import SHELL, shell

TOPICS = [f"t{i}" for i in range(10)]
MESSAGES = 5000


def test_topics_and_configs_survive_a_restart(tmp_path):
    with Sandbox(brokers=3, data_dir=str(tmp_path)) as s:
        a = AdminClient({"bootstrap.servers": s.bootstrap})
        a.create_topics([NewTopic("kept", 4, 2, config={"retention.ms": "1000"})])["kept"].result(10)
        cluster_id = s.cluster.cluster_id
    with Sandbox(brokers=3, data_dir=str(tmp_path)) as s:
        a = AdminClient({"bootstrap.servers": s.bootstrap})
        md = a.list_topics(timeout=10)
        assert md.cluster_id == cluster_id
        assert len(md.topics["kept"].partitions) == 4
        res = ConfigResource(ConfigResource.Type.TOPIC, "kept")
        configs = a.describe_configs([res])[res].result(10)
        assert configs["retention.ms"].value == "1000"


# -- helpers ----------------------------------------------------------------------------------


def serve_announced(data_dir: Path, *args: str, env: dict | None = None) -> tuple[subprocess.Popen, dict[str, str]]:
    """Start `kafka-shell sandbox --data-dir`; its announced lines (bootstrap.servers, ...)."""
    proc = subprocess.Popen([*SHELL, "sandbox", "--data-dir", str(data_dir), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    lines = [proc.stdout.readline().strip() for _ in range(3)]
    if not lines[0].startswith("bootstrap.servers="):
        proc.kill()
        pytest.fail(f"the sandbox did not start: {proc.communicate()[1]}")
    return proc, dict(line.split("=", 1) for line in lines)


def serve(data_dir: Path, *args: str, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    proc, announced = serve_announced(data_dir, *args, env=env)
    return proc, announced["bootstrap.servers"]


def kill9(proc: subprocess.Popen) -> None:
    proc.kill()  # SIGKILL: no handler, no save
    proc.wait(10)
    proc.stdout.close()
    proc.stderr.close()


def create_topics(bootstrap: str, names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    futures = admin.create_topics([NewTopic(n, 3, 2) for n in names])
    for f in futures.values():
        f.result(15)


def produce(bootstrap: str, topics: list[str], count: int, first: int = 0,
            partition: int | None = None) -> set[bytes]:
    """Produce `count` messages with acks=all, flushed (to `partition`, or where the partitioner
    puts them); returns the values acknowledged."""
    acked: set[bytes] = set()
    errors: list = []

    def delivered(err, msg) -> None:
        if err is None:
            acked.add(msg.value())
        else:
            errors.append(err)

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "log_level": 3})
    for i in range(first, first + count):
        where = {} if partition is None else {"partition": partition}
        producer.produce(topics[i % len(topics)], value=b"m%06d-" % i + b"x" * 50, on_delivery=delivered,
                         **where)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not errors
    return acked


def read_all(bootstrap: str, topics: list[str]) -> set[bytes]:
    """Every message of the topics, read by offsets from each partition's start to its end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "log_level": 3,
                         "enable.auto.commit": False})
    try:
        md = consumer.list_topics(timeout=10)
        wanted: dict[tuple[str, int], int] = {}
        assign = []
        for t in topics:
            for p in md.topics[t].partitions:
                low, high = consumer.get_watermark_offsets(TopicPartition(t, p), timeout=10)
                if high > low:
                    wanted[(t, p)] = high
                    assign.append(TopicPartition(t, p, low))
        consumer.assign(assign)
        seen: set[bytes] = set()
        deadline = time.monotonic() + 30
        while wanted and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is None or msg.error():
                continue
            seen.add(msg.value())
            if msg.offset() + 1 >= wanted.get((msg.topic(), msg.partition()), -1):
                wanted.pop((msg.topic(), msg.partition()), None)
        assert not wanted, f"partitions not read to their end: {wanted}"
        return seen
    finally:
        consumer.close()


# -- kill -9 ----------------------------------------------------------------------------------


def test_kill_9_keeps_every_acknowledged_create_and_produce(tmp_path):
    proc, bootstrap = serve(tmp_path)
    try:
        create_topics(bootstrap, TOPICS)
        acked = produce(bootstrap, TOPICS, MESSAGES)
    finally:
        kill9(proc)
    assert len(acked) == MESSAGES
    proc, bootstrap = serve(tmp_path)
    try:
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        assert set(TOPICS) <= set(md.topics)
        assert all(len(md.topics[t].partitions) == 3 for t in TOPICS)
        assert read_all(bootstrap, TOPICS) == acked
    finally:
        kill9(proc)


def _shell_ok(bootstrap: str, line: str) -> str:
    p = shell("--bootstrap-server", bootstrap, "--command", line)
    assert p.returncode == 0, p.stderr
    return p.stderr.strip()


def _status(announced: dict[str, str]) -> dict:
    """What the server says of its nodes, through its control endpoint."""
    host, _, port = announced["control"].rpartition(":")
    return sandbox_client.RemoteSandbox((host, int(port))).status()


def _controllers(status: dict) -> list[tuple[int, int, bool]]:
    return [(c["id"], c["port"], c["alive"]) for c in status["controllers"]]


def test_kill_9_keeps_a_kraft_quorum_and_its_active_controller(tmp_path):
    proc, announced = serve_announced(tmp_path, "--brokers", "3", "--controllers", "3")
    bootstrap = announced["bootstrap.servers"]
    try:
        create_topics(bootstrap, TOPICS[:3])
        acked = produce(bootstrap, TOPICS[:3], 300)
        # Each change of the active controller is acknowledged once journaled.
        assert _shell_ok(bootstrap, "sandbox kill-controller").endswith("now 101 (epoch 2).")
        assert _shell_ok(bootstrap, "sandbox stop-controller 101").endswith("now 102 (epoch 3).")
        _shell_ok(bootstrap, "sandbox start-controller 101")  # 102 stays active
        _shell_ok(bootstrap, "alter-configs --entity-type brokers --entity-default "
                             "--add-config preferred.controller.id=101")  # 102 resigns to 101
        before = _status(announced)
        assert (before["active_controller"], before["controller_epoch"]) == (101, 4)
    finally:
        kill9(proc)
    proc, again = serve_announced(tmp_path)
    try:
        assert {k: again[k] for k in ("bootstrap.controllers", "control")} == \
            {k: announced[k] for k in ("bootstrap.controllers", "control")}
        after = _status(again)
        assert (after["mode"], after["active_controller"], after["controller_epoch"]) == ("kraft", 101, 4)
        assert _controllers(after) == _controllers(before)  # ids and ports; all alive again
        assert persist.load(tmp_path).cluster_configs[replication.PREFERRED_CONTROLLER_KEY] == "101"
        assert read_all(again["bootstrap.servers"], TOPICS[:3]) == acked
    finally:
        kill9(proc)


def test_kill_9_keeps_a_zk_mode_cluster_and_its_controller_broker(tmp_path):
    proc, announced = serve_announced(tmp_path, "--brokers", "3", "--mode", "zk")
    bootstrap = announced["bootstrap.servers"]
    try:
        create_topics(bootstrap, TOPICS[:2])
        acked = produce(bootstrap, TOPICS[:2], 200)
        assert _shell_ok(bootstrap, "sandbox kill-controller").endswith("now broker 2 (epoch 2).")
        _shell_ok(bootstrap, "sandbox stop-broker 3")
        acked |= produce(bootstrap, TOPICS[:2], 100, first=200)
    finally:
        kill9(proc)
    assert "--controllers 1 does not match" in _refused(tmp_path, "--controllers", "1")
    proc, again = serve_announced(tmp_path)
    try:
        assert again["bootstrap.controllers"] == ""
        after = _status(again)
        assert (after["mode"], after["active_controller"], after["controller_epoch"]) == ("zk", 2, 2)
        assert after["controllers"] == [] and all(b["alive"] for b in after["brokers"])
        assert read_all(again["bootstrap.servers"], TOPICS[:2]) == acked
    finally:
        kill9(proc)


def test_kill_9_during_compaction_loses_nothing(tmp_path):
    # A small journal makes every few writes compact; the pause holds each compaction between its
    # temp file and its rename, where the kill lands.
    env = {journal.COMPACT_BYTES_ENV: "20000", persist.PAUSE_ENV: "3"}
    proc, bootstrap = serve(tmp_path, env=env)
    try:
        create_topics(bootstrap, TOPICS[:2])
        acked = produce(bootstrap, TOPICS[:2], 500)
        assert _wait_for(lambda: list(tmp_path.glob(".state-*.tmp")))  # a compaction is under way
        acked |= produce(bootstrap, TOPICS[:2], 200, first=500)  # acknowledged during it
        assert list(tmp_path.glob(".state-*.tmp"))  # still under way (the pause is 3 s)
    finally:
        kill9(proc)
    proc, bootstrap = serve(tmp_path)
    try:
        assert not list(tmp_path.glob(".state-*.tmp"))  # the interrupted save's file is gone
        assert read_all(bootstrap, TOPICS[:2]) == acked
    finally:
        kill9(proc)


def _wait_for(check, seconds: float = 10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.01)
    return None


# -- signals ----------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signals_stop_cleanly_and_save(tmp_path, sig):
    proc, bootstrap = serve(tmp_path)
    create_topics(bootstrap, ["kept"])
    proc.send_signal(sig)
    assert proc.wait(15) == 0
    proc.stdout.close()
    proc.stderr.close()
    assert not journal.journal_files(tmp_path)  # all of it is in the state file
    assert "kept" in persist.load(tmp_path).topics


def test_a_second_ctrl_c_waits_for_the_save(tmp_path):
    proc, bootstrap = serve(tmp_path, env={persist.PAUSE_ENV: "1"})
    create_topics(bootstrap, ["kept"])
    proc.send_signal(signal.SIGINT)
    assert _wait_for(lambda: list(tmp_path.glob(".state-*.tmp")))  # the final save is under way
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == 0
    assert f"saving state to {tmp_path}; please wait" in err
    assert "kept" in persist.load(tmp_path).topics


def test_stale_temp_files_are_removed_at_start(tmp_path):
    stale = tmp_path / ".state-abc123.tmp"
    stale.write_bytes(b"\0" * 1000)
    with Sandbox(brokers=1, data_dir=str(tmp_path)):
        assert not stale.exists()


def test_a_data_dir_serves_one_sandbox_at_a_time(tmp_path):
    with Sandbox(brokers=1, data_dir=str(tmp_path)):
        with pytest.raises(persist.StateError, match="in use by another sandbox"):
            Sandbox(brokers=1, data_dir=str(tmp_path)).start()


# -- the state file is checked ----------------------------------------------------------------


def _refused(data_dir: Path, *args: str) -> str:
    p = subprocess.run([*SHELL, "sandbox", "--data-dir", str(data_dir), *args], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Internal error" not in lines[0] and "Traceback" not in p.stderr
    return lines[0]


def _saved(tmp_path: Path, brokers: int = 1, **kwargs: object) -> dict:
    with Sandbox(brokers=brokers, data_dir=str(tmp_path), **kwargs) as s:
        s.call(sandbox_admin.create_topic, s.cluster, "t", 1, 1)
    return json.loads((tmp_path / persist.STATE_FILE).read_text())


@pytest.mark.parametrize("content, expected", [
    (b'{"version":5}', 'mode must be "kraft" or "zk"'),
    (b'{"version":4}', "has format version 4 (an older kafka-shell's); this sandbox reads version 5: serve"),
    (b"\x00\xff\xfe\x89PNG garbage \x01", "is not valid JSON"),
    (b'{"version":7}', "has format version 7"),
    (b"[1, 2]", "must be a JSON object"),
])
def test_an_unreadable_state_file_is_one_line(tmp_path, content, expected):
    (tmp_path / persist.STATE_FILE).write_bytes(content)
    line = _refused(tmp_path)
    assert str(tmp_path / persist.STATE_FILE) in line and expected in line


def _of(state: dict, kind: str) -> list[dict]:
    """The state file's records of one type."""
    return [r for r in state["records"] if r["type"] == kind]


def _without(*kinds: str):
    return lambda state: state.update(records=[r for r in state["records"] if r["type"] not in kinds])


def _setter(kind: str, *path: object, value: object):
    """Set a field of the first record of that type; the record's index goes into the message."""
    def damage(state: dict) -> int:
        record = _of(state, kind)[0]
        _set(record, path, value)
        return state["records"].index(record)
    return damage


def _with_controller(state: dict) -> None:
    state["records"].insert(0, {"type": "RegisterControllerRecord", "controller_id": 100,
                                "end_points": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 0}]})


@pytest.mark.parametrize("mode, damage, expected", [
    ("kraft", _setter("RegisterBrokerRecord", "end_points", 0, "port", value="9092"),
     "records[{i}] (RegisterBrokerRecord).end_points[0].port must be an integer in 0..65535"),
    ("kraft", _setter("PartitionRecord", "leader", value=9), "topic 't' partition 0 leader must be -1 or "
                                                             "one of its replicas ([1])"),
    ("kraft", _setter("PartitionRecord", "replicas", value=[1, 1]), "topic 't' partition 0 replicas "
                                                                    "must be distinct ids of known brokers ([1])"),
    ("kraft", _setter("PartitionRecord", "leader_epoch", value=-1),
     "records[{i}] (PartitionRecord).leader_epoch must be an integer in 0..2147483647"),
    # KRaft: the active controller is a voter, never a broker; voters' ports are checked like brokers'.
    ("kraft", _setter("LeaderChangeMessage", "leader_id", value=1),
     "the active controller (LeaderChangeMessage) must be -1 or one of the voters ([100])"),
    ("kraft", _setter("RegisterControllerRecord", "end_points", 0, "port", value=70000),
     "records[{i}] (RegisterControllerRecord).end_points[0].port must be an integer in 0..65535"),
    ("kraft", _without("RegisterControllerRecord", "VotersRecord"),
     "the controllers must be at least one voter in KRaft mode (RegisterControllerRecord, VotersRecord)"),
    ("kraft", lambda s: _set(s, ("control_port",), -1), "control_port must be an integer in 0..65535"),
    ("kraft", lambda s: _set(s, ("mode",), "combined"), 'mode must be "kraft" or "zk"'),
    ("zk", _setter("LeaderChangeMessage", "leader_id", value=5),
     "the active controller (LeaderChangeMessage) must be -1 or one of the brokers ([1])"),
    ("zk", _with_controller, "the controllers must be none in zk mode (its controller is a broker)"),
])
def test_a_bad_field_is_named(tmp_path, mode, damage, expected):
    state = _saved(tmp_path, mode=mode)
    index = damage(state)
    (tmp_path / persist.STATE_FILE).write_text(json.dumps(state))
    assert _refused(tmp_path) == f"{tmp_path / persist.STATE_FILE}: {expected.format(i=index)}"


def test_two_listeners_on_one_port_or_one_node_id_are_refused(tmp_path):
    state = _saved(tmp_path, brokers=2, controllers=2)
    second = _of(state, "RegisterControllerRecord")[1]
    state["control_port"] = port = second["end_points"][0]["port"]
    (tmp_path / persist.STATE_FILE).write_text(json.dumps(state))
    assert _refused(tmp_path).endswith(f"the control endpoint's port must be a port no other listener has "
                                       f"(controller 101 is on {port} too)")
    state["control_port"] = None
    second["controller_id"] = 2
    (tmp_path / persist.STATE_FILE).write_text(json.dumps(state))
    assert _refused(tmp_path).endswith("(RegisterBrokerRecord) registers broker 2, whose id a controller has")


def test_a_non_loopback_host_needs_listen(tmp_path):
    state = _saved(tmp_path)
    _of(state, "RegisterBrokerRecord")[0]["end_points"][0]["host"] = "0.0.0.0"
    (tmp_path / persist.STATE_FILE).write_text(json.dumps(state))
    line = _refused(tmp_path)
    assert "broker 1 listens on 0.0.0.0, not a loopback address: pass --listen 0.0.0.0" in line
    # --listen puts it where it is told (here back on loopback): the saved host does not win.
    proc, bootstrap = serve(tmp_path, "--listen", "127.0.0.1")
    kill9(proc)
    assert bootstrap.startswith("127.0.0.1:")


def test_brokers_and_port_base_must_match_the_saved_cluster(tmp_path):
    state = _saved(tmp_path, brokers=3)
    ports = [b["end_points"][0]["port"] for b in _of(state, "RegisterBrokerRecord")]
    line = _refused(tmp_path, "--brokers", "5")
    assert line.startswith(f"{tmp_path} holds a 3-broker KRaft cluster with 1 controller on ")
    assert line.endswith("--brokers 5 does not match: drop --brokers or use another --data-dir")
    line = _refused(tmp_path, "--port-base", str(ports[0] + 1))
    assert f"--port-base {ports[0] + 1} does not match: drop --port-base" in line


def test_mode_and_controllers_must_match_the_saved_cluster(tmp_path):
    _saved(tmp_path, brokers=2, controllers=3)
    line = _refused(tmp_path, "--mode", "zk")
    assert line.startswith(f"{tmp_path} holds a 2-broker KRaft cluster with 3 controllers on ")
    assert line.endswith("--mode zk does not match: drop --mode or use another --data-dir")
    line = _refused(tmp_path, "--controllers", "1")
    assert line.endswith("--controllers 1 does not match: drop --controllers or use another --data-dir")
    zk = tmp_path / "zk"
    _saved(zk, brokers=2, mode="zk")
    line = _refused(zk, "--controllers", "1")
    assert line.startswith(f"{zk} holds a 2-broker zk-mode cluster on ")
    assert line.endswith("--controllers 1 does not match: drop --controllers or use another --data-dir")


def test_port_base_places_controllers_and_the_control_endpoint_and_must_match_them(tmp_path):
    port_base = _free_port_run(6)
    proc, _ = serve(tmp_path, "--brokers", "2", "--controllers", "3", "--port-base", str(port_base))
    kill9(proc)
    state = json.loads((tmp_path / persist.STATE_FILE).read_text())
    assert [c["end_points"][0]["port"] for c in _of(state, "RegisterControllerRecord")] == \
        [port_base + 2, port_base + 3, port_base + 4]
    assert state["control_port"] == port_base + 5
    line = _refused(tmp_path, "--port-base", str(port_base + 1))
    assert line.startswith(f"{tmp_path} holds a 2-broker KRaft cluster with 3 controllers on ports "
                           f"{port_base}-{port_base + 5}; --port-base {port_base + 1} does not match")
    # The control endpoint keeps its address across restarts, as the nodes do.
    proc, announced = serve_announced(tmp_path, "--port-base", str(port_base))
    kill9(proc)
    assert announced["control"] == f"127.0.0.1:{port_base + 5}"


def _free_port_run(n: int) -> int:
    """The first of n consecutive free loopback ports (bound for a moment, then released)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            first = probe.getsockname()[1]
        if first + n > 65535:
            continue
        try:
            socks = []
            for port in range(first, first + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    pytest.fail("no run of free ports")


# -- the journal, recovered from a copy taken while the sandbox runs ---------------------------


def _crash_copy(src: Path, dst: Path) -> Path:
    """The data directory as a kill -9 at this moment would leave it."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(journal.LOCK_FILE))
    return dst


def _comparable(cluster) -> dict:
    return persist.state_of(cluster)


def test_the_journal_replays_admin_changes_and_truncations(tmp_path):
    data = tmp_path / "data"
    with Sandbox(brokers=3, data_dir=str(data)) as s:
        a = AdminClient({"bootstrap.servers": s.bootstrap, "log_level": 3})
        create_topics(s.bootstrap, ["a", "b", "gone"])
        produce(s.bootstrap, ["a", "b", "gone"], 300)
        a.create_partitions([NewPartitions("a", 5)])["a"].result(10)
        a.delete_topics(["gone"])["gone"].result(10)
        create_topics(s.bootstrap, ["gone"])  # the same name, a new topic id
        res = ConfigResource(ConfigResource.Type.TOPIC, "b", incremental_configs=[
            ConfigEntry("retention.ms", "5000", incremental_operation=AlterConfigOpType.SET)])
        a.incremental_alter_configs([res])[res].result(10)
        for f in a.delete_records([TopicPartition("b", 0, OFFSET_END)]).values():  # up to the end
            f.result(10)
        # Broker faults change ISRs and leaders; a designated election truncates b-1 to 3.
        p = s.cluster.partition("b", 1)
        leader, follower = p.leader, next(r for r in p.replicas if r != p.leader)
        s.stop_broker(follower)
        s.stop_broker(leader)
        s.set_log_end_offset("b", 1, follower, 3)
        s.start_broker(follower)
        assert s.call(replication.elect_designated, s.cluster, p, follower) == (Error.none, None)
        assert p.high_watermark == 3
        s.start_broker(leader)
        produce(s.bootstrap, ["b"], 30, first=1000, partition=1)
        assert any(b.base_offset == 3 for b in p.batches)
        crashed = _crash_copy(data, tmp_path / "crashed")
        live = s.call(_comparable, s.cluster)
    recovered, _ = journal.recover(crashed)
    assert _comparable(recovered) == live


def test_the_journal_replays_a_quorum_left_without_a_leader(tmp_path):
    data = tmp_path / "data"
    with Sandbox(brokers=2, controllers=2, data_dir=str(data)) as s:
        s.kill_controller()  # 100 -> 101, epoch 2
        s.stop_controller(101)  # -> 100, epoch 3
        s.stop_controller(100)  # no leader: -1, the epoch stays
        assert (s.active_controller, s.controller_epoch) == (-1, 3)
        crashed = _crash_copy(data, tmp_path / "crashed")
        live = s.call(_comparable, s.cluster)
    recovered, _ = journal.recover(crashed)
    assert _comparable(recovered) == live
    assert (recovered.mode, recovered.controller_id, recovered.controller_epoch) == ("kraft", -1, 3)
    with Sandbox(data_dir=str(crashed)) as s:  # every voter is back: one is elected
        assert (s.active_controller, s.controller_epoch) == (100, 4)


def test_answers_wait_for_the_journal(tmp_path, monkeypatch):
    fsync = journal._append

    def slow_fsync(*args) -> None:  # a slow disk: answers sent before the write would show
        time.sleep(0.1)
        fsync(*args)

    monkeypatch.setattr(journal, "_append", slow_fsync)
    data = tmp_path / "data"
    with Sandbox(brokers=1, data_dir=str(data)) as s:
        create_topics_rf1(s.bootstrap, ["a"])
        assert len(produce(s.bootstrap, ["a"], 50)) == 50
        crashed = _crash_copy(data, tmp_path / "crashed")  # right after the last answer
    recovered, _ = journal.recover(crashed)
    assert sum(p.high_watermark for p in recovered.topics["a"].partitions) == 50


def test_a_journal_that_cannot_be_written_acknowledges_nothing(tmp_path, monkeypatch):
    def disk_full(*args) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with Sandbox(brokers=1, data_dir=str(tmp_path)) as s:
        monkeypatch.setattr(journal, "_append", disk_full)
        admin = AdminClient({"bootstrap.servers": s.bootstrap, "log_level": 3})
        with pytest.raises(KafkaException):  # no answer: the broker closes the connection
            admin.create_topics([NewTopic("lost", 1, 1)], request_timeout=1)["lost"].result(10)
        with pytest.raises(journal.JournalError, match="No space left on device"):
            s.stop_broker(1)
    assert "lost" not in persist.load(tmp_path).topics  # nor saved at stop: only what was journaled


@pytest.mark.parametrize("header", [b"kafka-shell journal 3\n", b"kafka-shell journal 2\n", b""])
def test_a_journal_of_an_older_format_is_refused(tmp_path, header):
    """Journals an older kafka-shell left (formats 3 and 2: their header; format 1: none, an 8-byte
    length and CRC per entry) are refused in one line, and left as they are."""
    data = tmp_path / "data"
    with Sandbox(brokers=1, data_dir=str(data)) as s:
        create_topics_rf1(s.bootstrap, ["a"])
        crashed = _crash_copy(data, tmp_path / "crashed")
    from crc32c import crc32c
    (path,) = journal.journal_files(crashed).values()
    payloads = [payload for _, payload in journal.scan(path.read_bytes()).entries]
    old = header + b"".join(journal.FORMAT_1.pack(len(p), crc32c(p)) + p for p in payloads)
    path.write_bytes(old)
    format_ = int(header.split()[-1]) if header else 1
    line = _refused(crashed)
    assert line == (f"{path} is a journal of format {format_} (an older kafka-shell's); this sandbox reads format 4: "
                    f"serve {crashed} with the kafka-shell that wrote it, or move it away to start afresh")
    assert path.read_bytes() == old


def test_a_kill_after_compactions_rename_skips_the_journals_it_holds(tmp_path):
    data = tmp_path / "data"
    with Sandbox(brokers=1, data_dir=str(data)) as s:
        create_topics_rf1(s.bootstrap, ["a"])
        produce(s.bootstrap, ["a"], 100)
    with Sandbox(data_dir=str(data)) as s:  # the journal now appends to batches the state holds
        produce(s.bootstrap, ["a"], 100, first=100)
        crashed = _crash_copy(data, tmp_path / "crashed")
        live = s.call(_comparable, s.cluster)
        compacted = s.call(persist.state_of, s.cluster, s.journal.seq + 1)
    persist.write(compacted, crashed)  # renamed in place; the journal it holds not yet deleted
    assert journal.journal_files(crashed)
    recovered, _ = journal.recover(crashed)
    assert _comparable(recovered) == live  # replaying that journal again would double the records


def create_topics_rf1(bootstrap: str, names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    for f in admin.create_topics([NewTopic(n, 2, 1) for n in names]).values():
        f.result(15)


# -- the state as a whole is checked at start --------------------------------------------------


@pytest.fixture(scope="module")
def saved_with_records(tmp_path_factory) -> dict:
    """The state file of a 2-broker cluster with a topic of 231 records (and its journal folded in)."""
    data = tmp_path_factory.mktemp("saved")
    with Sandbox(brokers=2, data_dir=str(data)) as s:
        create_topics_rf1(s.bootstrap, ["t", "u"])
        for k in range(3):  # three flushes: three batches at least
            produce(s.bootstrap, ["t"], 77, first=77 * k, partition=0)
    return json.loads((data / persist.STATE_FILE).read_text())


def _set(state: dict, path: tuple, value: object) -> None:
    holder = state
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value


def _record(state: dict, kind: str, topic: str = "t", partition: int | None = 0) -> dict:
    """The state file's record of that type about topic t (partition 0 for partition records)."""
    topic_id = next(r["topic_id"] for r in state["records"] if r["type"] == "TopicRecord" and r["name"] == topic)
    return next(r for r in state["records"] if r["type"] == kind and (
        r.get("name") == topic if kind == "TopicRecord" else
        r["topic_id"] == topic_id and r["partition_id"] == partition))


def _batches(state: dict) -> list:
    return _record(state, "PartitionLogs")["batches"]


def _p0(kind: str, key: str, value) -> object:
    return lambda s: _set(_record(s, kind), (key,), value(s) if callable(value) else value)


# (what is damaged, how, what the one line says)
STATE_DAMAGE = [
    ("truncated file", lambda s: "cut", "is not valid JSON"),
    ("not an object", lambda s: [s], "the state must be a JSON object"),
    ("unknown version", lambda s: {**s, "version": 99}, "has format version 99"),
    ("no brokers", _without("RegisterBrokerRecord"), "brokers must be at least one registered broker"),
    ("port as text", _setter("RegisterBrokerRecord", "end_points", 0, "port", value="9092"),
     "(RegisterBrokerRecord).end_points[0].port must be an integer in 0..65535"),
    ("port out of range", _setter("RegisterBrokerRecord", "end_points", 0, "port", value=65536),
     "(RegisterBrokerRecord).end_points[0].port must be an integer"),
    ("negative broker id", _setter("RegisterBrokerRecord", "broker_id", value=-1),
     "(RegisterBrokerRecord).broker_id must be an integer in 0..2147483647"),
    ("broker id past int32", lambda s: _set(_of(s, "RegisterBrokerRecord")[1], ("broker_id",), 2**31),
     "(RegisterBrokerRecord).broker_id must be an integer in 0..2147483647"),
    ("a broker registered twice, the other never", lambda s: _set(_of(s, "RegisterBrokerRecord")[1], ("broker_id",), 1),
     "replicas must be distinct ids of known brokers ([1])"),
    ("leader not a replica", _p0("PartitionRecord", "leader", lambda s: 2 if _record(s, "PartitionRecord")["replicas"] == [1] else 1),
     "topic 't' partition 0 leader must be -1 or one of its replicas"),
    ("replica of no broker", _p0("PartitionRecord", "replicas", [7]), "replicas must be distinct ids of known brokers"),
    ("ISR outside the replicas", _p0("PartitionRecord", "isr", [1, 2]), "isr must be about its replicas"),
    ("controller not a voter", _setter("LeaderChangeMessage", "leader_id", value=1),
     "the active controller (LeaderChangeMessage) must be -1 or one of the voters"),
    ("unknown mode", lambda s: _set(s, ("mode",), "combined"), 'mode must be "kraft" or "zk"'),
    ("two listeners on a port", lambda s: _set(s, ("control_port",), _of(s, "RegisterBrokerRecord")[0]["end_points"][0]["port"]),
     "a port no other listener has"),
    ("garbled batch bytes", lambda s: _set(_batches(s)[0], (3,), "!!not base64!!"), "batches[0] data must be base64"),
    # The one of the 16 that used to start: a high watermark past the log's end.
    ("high watermark past the log", _p0("PartitionLogs", "high_watermark", 10**12),
     "high_watermark must be at most its log end offset 231, not 1000000000000"),
    ("log start past the log", _p0("PartitionLogs", "log_start_offset", 500), "log_start_offset must be at most its log end offset 231"),
    ("log end offsets past int64", _p0("PartitionLogs", "log_end_offsets", [[1, 2**63]]),
     "(PartitionLogs).log_end_offsets[0][1] must be an integer in 0..9223372036854775807"),
    ("batches out of order", lambda s: _set(_record(s, "PartitionLogs"), ("batches",), _batches(s)[::-1]), "after the one before it"),
    ("batch bytes of other offsets", lambda s: _set(_batches(s)[1], (0,), _batches(s)[1][0] + 1),
     "a record batch whose header says offsets"),
    ("leader epoch past int32", _p0("PartitionRecord", "leader_epoch", 2**31), "(PartitionRecord).leader_epoch must be an integer in 0..2147483647"),
    ("illegal topic name", lambda s: _set(_record(s, "TopicRecord", partition=None), ("name",), "a/b"), "must be a valid topic name"),
    ("a topic id twice", lambda s: _set(_record(s, "TopicRecord", "u"), ("topic_id",), _record(s, "TopicRecord")["topic_id"]),
     "(TopicRecord) creates topic 'u'"),
    ("a topic name twice", lambda s: _set(_record(s, "TopicRecord", "u"), ("name",), "t"), "(TopicRecord) creates topic 't'"),
    ("partition index out of place", _p0("PartitionRecord", "partition_id", 3), "creates partition 3 of topic 't', which has 0"),
    ("an unknown record type", _p0("PartitionRecord", "type", "BogusRecord"), ".type must be a record type this sandbox knows"),
    ("a partition of no topic", _p0("PartitionRecord", "topic_id", "00000000-0000-0000-0000-000000000001"),
     "names topic id 00000000-0000-0000-0000-000000000001, which no TopicRecord created"),
]


@pytest.mark.parametrize("kind, damage, expected", STATE_DAMAGE, ids=[k for k, _, _ in STATE_DAMAGE])
def test_state_damage_is_refused_in_one_line(tmp_path, saved_with_records, kind, damage, expected):
    state = json.loads(json.dumps(saved_with_records))
    changed = damage(state)   # a new state, or the state changed in place
    state = changed if isinstance(changed, (dict, list, str)) else state
    path = tmp_path / persist.STATE_FILE
    path.write_text(json.dumps(saved_with_records)[:200] if state == "cut" else json.dumps(state))
    with pytest.raises(persist.StateError) as refused:
        journal.recover(tmp_path)
    line = str(refused.value)
    assert "\n" not in line and line.startswith(str(path)) and expected in line, line


def test_a_high_watermark_past_the_log_refuses_start(tmp_path, saved_with_records):
    """The issue's case, end to end: it used to start and serve get-offsets from it."""
    state = json.loads(json.dumps(saved_with_records))
    _record(state, "PartitionLogs")["high_watermark"] = 10**12
    (tmp_path / persist.STATE_FILE).write_text(json.dumps(state))
    line = _refused(tmp_path)
    assert "partition 0 high_watermark must be at most its log end offset 231" in line


def test_damage_a_journal_brings_is_refused_too(tmp_path):
    data = tmp_path / "data"
    with Sandbox(brokers=1, data_dir=str(data)) as s:
        create_topics_rf1(s.bootstrap, ["a"])
        crashed = _crash_copy(data, tmp_path / "crashed")
        logs = s.call(lambda: log.logs_record(s.cluster, s.cluster.topics["a"].partitions[0], [], False))
    (path,) = journal.journal_files(crashed).values()
    with open(path, "ab") as f:
        f.write(journal._frame(journal.RECORDS, [records.encode(dataclasses.replace(logs, high_watermark=10**12))]))
    with pytest.raises(persist.StateError, match=f"{path}: topic 'a' partition 0 high_watermark must be at most"):
        journal.recover(crashed)


def test_log_dirs_are_kept_and_must_match_the_saved_cluster(tmp_path):
    _saved(tmp_path, brokers=2, log_dirs_per_broker=2)
    line = _refused(tmp_path, "--log-dirs-per-broker", "3")
    assert line.endswith("--log-dirs-per-broker 3 does not match: drop --log-dirs-per-broker or use another --data-dir")
    with Sandbox(data_dir=str(tmp_path)) as s:   # without the option: the kept cluster's dirs
        kept = s.call(lambda: {b.id: list(b.log_dirs) for b in s.cluster.brokers.values()})
        where = s.call(lambda: directories.dir_of(s.cluster, s.cluster.partition("t", 0), 1))
    assert kept == {b: [f"/sandbox/broker-{b}/data-1", f"/sandbox/broker-{b}/data-2"] for b in (1, 2)}
    assert where in kept[1]
