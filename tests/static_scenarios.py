"""Static membership (KIP-345) as raw classic-group requests, sent alike to any cluster (the
sandbox or real Apache Kafka), answers reduced to what must agree: error codes, generations,
member ids named by the order they first appear ("m1", "m2", ...), assignments and states.
tests/test_static_membership.py runs them on both and compares."""

from __future__ import annotations

import struct
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from kafka_shell.connection.channel import Channel
from kafka_shell.protocol.codes import ApiKey
from tests.txn_scenarios import retry


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0: the topics, no user data."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


class Group:
    """A fresh group on `bootstrap` and a channel to its coordinator; member ids as labels."""

    def __init__(self, bootstrap: str):
        self.group_id = "static-" + uuid.uuid4().hex[:8]
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        any_broker = Channel(host, int(port))
        try:
            found = retry(lambda: any_broker.request(ApiKey.FIND_COORDINATOR, {"key_type": 0, "coordinator_keys": [
                self.group_id]}, 4)["coordinators"][0])
        finally:
            any_broker.close()
        self.address = (found["host"], found["port"])
        self.coordinator = Channel(*self.address)
        self.labels: dict[str, str] = {"": ""}

    def close(self) -> None:
        self.coordinator.close()

    def label(self, member_id: str) -> str:
        return self.labels.setdefault(member_id, f"m{len(self.labels)}")

    def member(self, label: str) -> str:
        return next(m for m, name in self.labels.items() if name == label)

    def join(self, instance: str | None, member: str = "", version: int = 5, session_ms: int = 10000,
             rebalance_ms: int = 10000) -> dict:
        """JoinGroup; on a channel of its own, so that joins waiting for a rebalance can run in threads."""
        channel = Channel(*self.address)
        try:   # retried while a new coordinator loads the group's partition
            a = retry(lambda: channel.request(ApiKey.JOIN_GROUP, {
                "group_id": self.group_id, "session_timeout": session_ms, "rebalance_timeout": rebalance_ms,
                "member_id": self.member(member) if member else "", "group_instance_id": instance,
                "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": subscription("t")}],
                "reason": None}, version))
        finally:
            channel.close()
        out = {"error": a["error_code"], "member": self.label(a["member_id"]), "generation": a["generation_id"],
               "leader": self.label(a["leader"]) if a["leader"] else a["leader"],
               "members": sorted((self.label(m["member_id"]), m["group_instance_id"]) for m in a["members"])}
        if version >= 9:
            out["skip_assignment"] = a["skip_assignment"]
        return out

    def sync(self, member: str, generation: int, instance: str | None, assignments: dict[str, bytes] | None = None) -> tuple:
        a = self.coordinator.request(ApiKey.SYNC_GROUP, {
            "group_id": self.group_id, "generation_id": generation, "member_id": self.member(member),
            "group_instance_id": instance, "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": self.member(m), "assignment": v} for m, v in (assignments or {}).items()]}, 5)
        return a["error_code"], a["assignment"]

    def heartbeat(self, member: str, generation: int, instance: str | None) -> int:
        return self.coordinator.request(ApiKey.HEARTBEAT, {
            "group_id": self.group_id, "generation_id": generation, "member_id": self.member(member),
            "group_instance_id": instance}, 4)["error_code"]

    def commit(self, member: str, generation: int, instance: str | None, topic: str) -> int:
        a = self.coordinator.request(ApiKey.OFFSET_COMMIT, {
            "group_id": self.group_id, "generation_id_or_member_epoch": generation, "member_id": self.member(member),
            "group_instance_id": instance, "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                 "committed_metadata": None}]}]}, 8)
        return a["topics"][0]["partitions"][0]["error_code"]

    def leave(self, *members: tuple[str, str | None], version: int = 5) -> dict:
        a = self.coordinator.request(ApiKey.LEAVE_GROUP, {"group_id": self.group_id, "members": [
            {"member_id": self.member(m) if m else "", "group_instance_id": i, "reason": None} for m, i in members]}, version)
        return {"error": a["error_code"], "members": [(self.label(m["member_id"]), m["group_instance_id"], m["error_code"])
                                                      for m in a["members"]]}

    def describe(self) -> tuple:
        g = self.coordinator.request(ApiKey.DESCRIBE_GROUPS, {"groups": [self.group_id],
                                                              "include_authorized_operations": False}, 5)["groups"][0]
        return g["group_state"], sorted((self.label(m["member_id"]), m["group_instance_id"], m["member_assignment"])
                                        for m in g["members"])


def static_members(bootstrap: str, topic: str) -> dict:
    """Join, replace, fence, leave: each answer of a static member's life in a group."""
    g = Group(bootstrap)
    try:
        out: dict = {}
        first = out["first join"] = g.join("i1")
        gen = first["generation"]
        out["first sync"] = g.sync("m1", gen, "i1", {"m1": b"assignment-1"})
        out["stable"] = g.describe()
        # A new process with the same instance id: takes over m1's place and assignment at once.
        out["replacing join (v5)"] = g.join("i1")
        out["old member's heartbeat"] = g.heartbeat("m1", gen, "i1")
        out["old member's sync"] = g.sync("m1", gen, "i1")
        out["old member's commit"] = g.commit("m1", gen, "i1", topic)
        out["old member's join"] = g.join("i1", member="m1")
        out["new member's heartbeat"] = g.heartbeat("m2", gen, "i1")
        out["new member's sync"] = g.sync("m2", gen, "i1")
        out["new member's commit"] = g.commit("m2", gen, "i1", topic)
        out["unknown instance heartbeat"] = g.heartbeat("m2", gen, "i9")
        out["unknown instance join"] = g.join("i9", member="m2")
        out["replacing join (v9)"] = g.join("i1", version=9)
        out["after replacements"] = g.describe()
        out["leave unknown instance"] = g.leave(("", "i9"))
        out["leave fenced member id"] = g.leave(("m1", "i1"))
        out["leave by instance id"] = g.leave(("", "i1"))
        out["after leaving"] = g.describe()
        return out
    finally:
        g.close()


def absent_static_leader(bootstrap: str) -> dict:
    """A static leader whose process is gone (no LeaveGroup) while a dynamic member joins: the
    rebalance waits for it until the rebalance timeout, then completes without it; it stays a
    member (its session has not ended), the joined member leads, and its later rejoin with its
    member id needs no new rebalance."""
    g = Group(bootstrap)
    try:
        out: dict = {}
        out["static join"] = g.join("l", session_ms=30000, rebalance_ms=2000)
        out["static sync"] = g.sync("m1", 1, "l", {"m1": b"all"})
        out["dynamic: member id required"] = g.join(None, rebalance_ms=2000)
        with ThreadPoolExecutor(1) as pool:   # answered once the join phase ends
            dynamic = pool.submit(g.join, None, member="m2", rebalance_ms=2000)
            wait_state(g, "PreparingRebalance")
            out["static heartbeat meanwhile"] = g.heartbeat("m1", 1, "l")
            out["dynamic join"] = dynamic.result(60)
        out["dynamic sync"] = g.sync("m2", 2, None, {"m1": b"half-1", "m2": b"half-2"})
        out["stable without the static member"] = g.describe()
        out["static heartbeat, old generation"] = g.heartbeat("m1", 1, "l")
        out["static rejoin"] = g.join("l", member="m1", session_ms=30000, rebalance_ms=2000)
        out["static sync after its rejoin"] = g.sync("m1", 2, "l")
        return out
    finally:
        g.close()


def wait_state(g: Group, state: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while g.describe()[0] != state:
        assert time.monotonic() < deadline, f"group not {state}"
        time.sleep(0.05)
