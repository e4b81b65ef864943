"""A dynamic controller quorum (KIP-853) on the sandbox and on real Kafka 4.4, with raw requests:
DescribeQuorum v2, AddRaftVoter of a new controller, RemoveRaftVoter by id and directory id,
Kafka's refusals, kraft.version; then what only the sandbox can stage (a change left pending)
and what --data-dir keeps."""

from __future__ import annotations

import re
import subprocess
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.sandbox import quorum
from kafka_shell.sandbox.server import Sandbox
from tests.sandbox.wire import API_VERSIONS_BODY, exchange

QUORUM_BODY = {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]}
NEW_CONTROLLER = 103
WAIT_S = 60.0


@dataclass
class Side:
    """One cluster under test: a broker's address, the controllers' and how to start and stop one."""
    broker: tuple[str, int]
    controllers: Callable[[], dict[int, tuple[str, int]]]
    cluster_id: str
    add_controller: Callable[[int], tuple[uuid.UUID, tuple[str, int]]]   # -> directory id, address
    stop_controller: Callable[[int], None]


def describe(side: Side, version: int = 2) -> dict:
    answer = exchange(side.broker, ApiKey.DESCRIBE_QUORUM, version, QUORUM_BODY)
    assert isinstance(answer, dict) and answer["error_code"] == 0, answer
    return answer


def partition(answer: dict) -> dict:
    return answer["topics"][0]["partitions"][0]


def shape(answer: dict) -> dict:
    """What must be the same on both clusters: who votes and observes, with which ids known."""
    p = partition(answer)

    def ids(replicas) -> list:
        """Which initial controller leads is the quorum's choice: named by role."""
        def role(i: int) -> int | str:
            return "leader" if i == p["leader_id"] else "controller" if 100 <= i < NEW_CONTROLLER else i
        return sorted((role(i) for i in replicas), key=str)

    return {"error_message": (answer.get("error_message"), p.get("error_message")),
            "voters": ids(v["replica_id"] for v in p["current_voters"]),
            "voter_directories_known": all(v["replica_directory_id"] not in (None, quorum.NO_DIRECTORY)
                                           for v in p["current_voters"]),
            # Controllers other tests added to the shared Kafka cluster and stopped stay in its
            # observer list for minutes (the leader's observer session): not this scenario's.
            "observers": ids(o["replica_id"] for o in p["observers"] if o["replica_id"] <= NEW_CONTROLLER),
            "nodes": [(i, ["CONTROLLER"]) for i in ids(n["node_id"] for n in answer["nodes"] if n["listeners"][0]["name"] == "CONTROLLER")],
            "leader_votes": p["leader_id"] in [v["replica_id"] for v in p["current_voters"]],
            "caught_up": all(v["log_end_offset"] <= p["high_watermark"] + 5 for v in p["current_voters"])}


def replicas(answer: dict, kind: str) -> list[int]:
    return [r["replica_id"] for r in partition(answer)[kind]]


def caught_up(answer: dict, node_id: int) -> bool:
    """The node observes the quorum and has fetched up to its high watermark: Kafka refuses to add
    a voter that lags ("... since it is lagging behind"), which a loaded machine makes likely."""
    p = partition(answer)
    return any(r["replica_id"] == node_id and r["log_end_offset"] >= p["high_watermark"] for r in p["observers"])


def directory(answer: dict, node_id: int) -> uuid.UUID:
    p = partition(answer)
    return next(r["replica_directory_id"] for r in p["current_voters"] + p["observers"] if r["replica_id"] == node_id)


def wait_for(side: Side, done: Callable[[dict], bool]) -> dict:
    deadline = time.monotonic() + WAIT_S
    while True:
        answer = describe(side)
        if done(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def normalised(answer: object, side: Side) -> tuple[int, str | None]:
    """(error code, message) with directory ids, the cluster id and ports replaced, and the voter
    sets Kafka prints from a hash set sorted."""
    assert isinstance(answer, dict), answer
    message = answer["error_message"]
    if message:
        message = message.replace(side.cluster_id, "<cluster>")
        message = re.sub(r"directoryId=[A-Za-z0-9_-]{22}", "directoryId=<dir>", message)
        message = re.sub(r"id=10[0-2],", "id=<initial controller>,", message)   # which one leads is the quorum's choice
        message = re.sub(r":\d+\b", ":<port>", message)
        message = re.sub(r"\[([^\]]*)\]", lambda m: "[" + ", ".join(sorted(m.group(1).split(", "))) + "]", message)
    return answer["error_code"], message


def add(side: Side, voter: int, directory_id: uuid.UUID, address: tuple[str, int], listener: str = "CONTROLLER",
        cluster_id: str | None = None) -> object:
    return exchange(side.broker, ApiKey.ADD_RAFT_VOTER, 1, {
        "cluster_id": cluster_id, "timeout": 30000, "voter_id": voter, "voter_directory_id": directory_id,
        "listeners": [{"name": listener, "host": address[0], "port": address[1]}], "ack_when_committed": True})


def remove(side: Side, voter: int, directory_id: uuid.UUID, cluster_id: str | None = None) -> object:
    return exchange(side.broker, ApiKey.REMOVE_RAFT_VOTER, 0, {
        "cluster_id": cluster_id, "voter_id": voter, "voter_directory_id": directory_id})


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def voter_changes(side: Side) -> list:
    """The scenario, run alike on both sides: each step's normalised outcome."""
    out: list = []
    start = describe(side)
    out.append(("start", shape(start)))
    versions = exchange(side.broker, ApiKey.API_VERSIONS, 3, API_VERSIONS_BODY)
    out.append(("kraft.version", [(f["name"], f["max_version_level"]) for f in versions["finalized_features"]  # type: ignore[index]
                                  if f["name"] == "kraft.version"]))
    voters = sorted(v["replica_id"] for v in partition(start)["current_voters"])
    leader = partition(start)["leader_id"]
    first = voters[0]
    first_dir = directory(start, first)
    nowhere = ("127.0.0.1", closed_port())
    out.append(("v1 has no directories", sorted(partition(describe(side, 1))["current_voters"][0])))
    standby = next(i for i in voters if i != leader)
    on_standby = exchange(side.controllers()[standby], ApiKey.ADD_RAFT_VOTER, 1, {
        "cluster_id": None, "timeout": 1000, "voter_id": 7, "voter_directory_id": uuid.uuid4(), "listeners": [],
        "ack_when_committed": True})
    out.append(("on a standby voter", normalised(on_standby, side)))
    for name, answer in (
            ("remove with another directory", remove(side, first, uuid.uuid4())),
            ("remove without a directory", remove(side, first, quorum.NO_DIRECTORY)),
            ("remove an unknown voter", remove(side, 7, uuid.uuid4())),
            ("remove in another cluster", remove(side, first, first_dir, cluster_id="other")),
            ("add a voter again", add(side, first, first_dir, side.controllers()[first])),
            ("add nothing listening", add(side, 105, uuid.uuid4(), nowhere)),
            ("add without its listener", add(side, 105, uuid.uuid4(), nowhere, listener="OTHER")),
            ("add without a directory", add(side, 105, quorum.NO_DIRECTORY, nowhere))):
        out.append((name, normalised(answer, side)))
    new_dir, new_address = side.add_controller(NEW_CONTROLLER)
    observed = wait_for(side, lambda a: caught_up(a, NEW_CONTROLLER))
    out.append(("a new controller observes", shape(observed), directory(observed, NEW_CONTROLLER) == new_dir))
    try:
        out.append(("add with another directory", normalised(add(side, NEW_CONTROLLER, uuid.uuid4(), new_address), side)))
        out.append(("add it", normalised(add(side, NEW_CONTROLLER, new_dir, new_address), side)))
        added = describe(side)
        out.append(("it votes", shape(added), directory(added, NEW_CONTROLLER) == new_dir))
        out.append(("remove it", normalised(remove(side, NEW_CONTROLLER, new_dir), side)))
        out.append(("it observes again", shape(wait_for(side, lambda a: NEW_CONTROLLER not in replicas(a, "current_voters")))))
    finally:
        side.stop_controller(NEW_CONTROLLER)
    # Down to the last voter and back: the others stay up as observers and are added again.
    others = [i for i in voters if i != leader]
    dirs = {i: directory(start, i) for i in voters}
    try:
        for i in others:
            out.append((f"remove a standby voter ({len(out)})", normalised(remove(side, i, dirs[i]), side)))
        out.append(("one voter left", shape(describe(side))))
        out.append(("remove the last voter", normalised(remove(side, leader, dirs[leader]), side)))
    finally:
        for i in others:
            wait_for(side, lambda a, i=i: i in replicas(a, "observers") + replicas(a, "current_voters"))
            answer = add(side, i, dirs[i], side.controllers()[i])
            out.append((f"add a voter back ({len(out)})", normalised(answer, side)))
    back = wait_for(side, lambda a: sorted(replicas(a, "current_voters")) == voters)
    out.append(("the quorum as it was", sorted(replicas(back, "current_voters"))))
    downgrade = exchange(side.broker, ApiKey.UPDATE_FEATURES, 1, {"timeout": 5000, "validate_only": True, "feature_updates": [
        {"feature": "kraft.version", "max_version_level": 0, "upgrade_type": 2}]})
    out.append(("kraft.version stays", normalised(downgrade, side), downgrade["results"]))  # type: ignore[index]
    return out


def kafka_uuid(text: str) -> uuid.UUID:
    return quorum.parse_directory_id(text)


def real_side(cluster) -> Side:
    def add_controller(node_id: int) -> tuple[uuid.UUID, tuple[str, int]]:
        node = cluster.add_controller(node_id)
        return kafka_uuid(node.directory_id), ("127.0.0.1", node.port)

    return Side(("127.0.0.1", cluster.brokers[0].port),
                lambda: {n.node_id: ("127.0.0.1", n.port) for n in cluster.controllers},
                cluster.cluster_id, add_controller, cluster.forget)


def sandbox_side(sb: Sandbox) -> Side:
    def add_controller(node_id: int) -> tuple[uuid.UUID, tuple[str, int]]:
        info = sb.add_controller(node_id)
        return kafka_uuid(info["directory_id"]), (info["host"], info["port"])

    return Side(sb.address(1), lambda: {i: sb.address(i) for i in sb.controller_ids}, sb.cluster.cluster_id,
                add_controller, sb.stop_controller)


def test_voters_change_as_kafka_4_changes_them(kafka4_quorum):
    theirs = voter_changes(real_side(kafka4_quorum))
    with Sandbox(brokers=2, controllers=3, dynamic_quorum=True) as sb:
        ours = voter_changes(sandbox_side(sb))
    assert [step for step in ours if step not in theirs] == [step for step in theirs if step not in ours]
    assert ours == theirs
    outcomes = {step[0]: step[1] for step in ours}
    assert outcomes["add it"] == outcomes["remove it"] == (Error.none, None)
    assert outcomes["remove the last voter"][0] == Error.voter_not_found


# -- the sandbox alone ---------------------------------------------------------------------------


def finalized(sb: Sandbox) -> dict[str, int]:
    answer = exchange(sb.address(1), ApiKey.API_VERSIONS, 3, API_VERSIONS_BODY)
    return {f["name"]: f["max_version_level"] for f in answer["finalized_features"]}  # type: ignore[index]


def test_a_static_quorum_upgrades_to_kraft_version_1_and_then_changes():
    with Sandbox(brokers=1) as sb:
        side = sandbox_side(sb)
        assert "kraft.version" not in finalized(sb) and not shape(describe(side))["voter_directories_known"]
        new_dir, address = side.add_controller(101)
        assert normalised(add(side, 101, new_dir, address), side) == (
            Error.unsupported_version, "Cluster doesn't support adding voter because the kraft.version feature is 0")
        upgrade = exchange(side.broker, ApiKey.UPDATE_FEATURES, 1, {"timeout": 5000, "validate_only": False, "feature_updates": [
            {"feature": "kraft.version", "max_version_level": 1, "upgrade_type": 1}]})
        assert upgrade == {"throttle_time": 0, "error_code": 0, "error_message": None,
                           "results": [{"feature": "kraft.version", "error_code": 0, "error_message": "NONE"}]}
        assert finalized(sb)["kraft.version"] == 1 and shape(describe(side))["voter_directories_known"]
        assert normalised(add(side, 101, new_dir, address), side) == (Error.none, None)
        assert sorted(replicas(describe(side), "current_voters")) == [100, 101]


def test_a_change_without_a_live_majority_stays_pending():
    """Kafka's leader cannot commit a voter change that a majority of the new voters does not
    acknowledge; meanwhile it refuses the next one. The sandbox's voters acknowledge while alive."""
    with Sandbox(brokers=1, controllers=3, dynamic_quorum=True) as sb:
        side = sandbox_side(sb)
        dirs = {i: directory(describe(side), i) for i in (100, 101, 102)}
        sb.stop_controller(101)
        sb.stop_controller(102)
        assert normalised(remove(side, 101, dirs[101]), side) == (Error.request_timed_out, "The request timed out.")
        assert normalised(remove(side, 102, dirs[102]), side) == (
            Error.request_timed_out, "Request timed out waiting for leader to handle previous voter change request")
        sb.start_controller(102)   # 100 and 102 of the new voters: a majority, the change commits
        assert sorted(replicas(describe(side), "current_voters")) == [100, 102]
        assert normalised(remove(side, 102, dirs[102]), side) == (Error.none, None)


def test_removing_the_leader_hands_its_role_on():
    with Sandbox(brokers=1, controllers=2, dynamic_quorum=True) as sb:
        side = sandbox_side(sb)
        before = partition(describe(side))
        assert normalised(remove(side, 100, directory(describe(side), 100)), side) == (Error.none, None)
        after = partition(describe(side))
        assert (after["leader_id"], after["leader_epoch"]) == (101, before["leader_epoch"] + 1)
        assert [o["replica_id"] for o in after["observers"]] == [100, 1]


def test_data_dir_keeps_the_voters_and_observers(tmp_path):
    with Sandbox(brokers=1, dynamic_quorum=True, data_dir=str(tmp_path)) as sb:
        info = sb.add_controller(directory_id="AAAAAAAAAAAAAAAAAAAAAQ")
        assert info["directory_id"] == "AAAAAAAAAAAAAAAAAAAAAQ"
        side = sandbox_side(sb)
        assert normalised(add(side, 101, kafka_uuid(info["directory_id"]), (info["host"], info["port"])), side)[0] == 0
        sb.add_controller(102)
        kept = describe(side)
    with Sandbox(data_dir=str(tmp_path)) as sb:
        again = describe(sandbox_side(sb))
        assert shape(again) == shape(kept) and finalized(sb)["kraft.version"] == 1
        assert [v["replica_directory_id"] for v in partition(again)["current_voters"]] == \
            [v["replica_directory_id"] for v in partition(kept)["current_voters"]]


def test_add_controller_refuses_a_taken_id_or_directory():
    with Sandbox(brokers=1, dynamic_quorum=True) as sb:
        taken = sb.add_controller()["directory_id"]
        with pytest.raises(ValueError, match="the id is taken"):
            sb.add_controller(1)
        with pytest.raises(ValueError, match="is taken"):
            sb.add_controller(None, taken)
        with pytest.raises(ValueError, match="bad directory id"):
            sb.add_controller(None, "nope")
    with Sandbox(brokers=1, mode="zk") as zk, pytest.raises(ValueError, match="no controller quorum"):
        zk.add_controller()


def test_the_control_endpoint_starts_and_stops_a_new_controller():
    from kafka_shell.connection.sandbox_client import RemoteSandbox
    with Sandbox(brokers=1, dynamic_quorum=True, serve_control=True) as sb:
        host, port = sb.control_address.rsplit(":", 1)  # type: ignore[union-attr]
        remote = RemoteSandbox((host, int(port)))
        info = remote.add_controller(None, None)
        assert (info["id"], info["voter"], info["alive"]) == (101, False, True)
        side = sandbox_side(sb)
        assert normalised(add(side, 101, kafka_uuid(info["directory_id"]), (info["host"], info["port"])), side) == (0, None)
        remote.stop_controller(101)
        status = remote.status()
        assert [(c["id"], c["voter"], c["alive"]) for c in status["controllers"]] == [(100, True, True), (101, True, False)]
        assert status["kraft_version"] == 1
        with pytest.raises(ValueError, match="the id is taken"):
            remote.add_controller(100)


def test_kafka_shell_sandbox_starts_a_dynamic_quorum_when_asked():
    from tests.test_oneshot import SHELL
    from tests.test_sandbox_cli import serve_all, stop
    proc, announced = serve_all("--brokers", "1", "--dynamic-quorum")
    try:
        host, port = announced["bootstrap.controllers"].split(",")[0].rsplit(":", 1)
        answer = exchange((host, int(port)), ApiKey.DESCRIBE_QUORUM, 2, QUORUM_BODY)
        assert shape(answer)["voter_directories_known"]   # type: ignore[arg-type]
    finally:
        assert stop(proc) == 0
    refused = subprocess.run([*SHELL, "sandbox", "--mode", "zk", "--dynamic-quorum"], capture_output=True, text=True,
                             timeout=30)
    assert (refused.returncode, refused.stderr.strip()) == (2, "--dynamic-quorum needs --mode kraft (a zk-mode controller is a broker)")
