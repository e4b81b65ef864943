"""KIP-848 consumer groups as raw requests, sent alike to any cluster (the sandbox or real Apache
Kafka 4.4), answers reduced to what must agree: error codes and messages, epochs, states,
assignments as sorted partition lists, member ids named by the order they first appear ("m1",
"m2", ...). tests/test_consumer_groups_848.py runs them on both and compares."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafka_shell.connection.channel import Channel
from kafka_shell.protocol.codes import ApiKey
from tests.txn_scenarios import retry

ASSIGNMENT_INTERVAL_S = 1.2   # Kafka 4.4 computes a group's target at most once a second


def coordinator(bootstrap: str, group_id: str) -> Channel:
    """A channel to the group's coordinator."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    any_broker = Channel(host, int(port))
    try:
        found = retry(lambda: any_broker.request(ApiKey.FIND_COORDINATOR, {"key_type": 0, "coordinator_keys": [
            group_id]}, 4)["coordinators"][0])
    finally:
        any_broker.close()
    return Channel(found["host"], found["port"])


class Group:
    """A fresh topic of `partitions` partitions and a fresh group on `bootstrap`."""

    def __init__(self, bootstrap: str, partitions: int = 6):
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
        self.topic, self.size = "k848-" + uuid.uuid4().hex[:8], partitions
        # KRaft takes at most 10,000 records a request: a larger topic grows in a second step.
        self.admin.create_topics([NewTopic(self.topic, min(partitions, 5000), 1)])[self.topic].result(60)
        if partitions > 5000:
            retry_grow = time.monotonic() + 60
            while True:
                try:
                    self.admin.create_partitions([NewPartitions(self.topic, partitions)])[self.topic].result(60)
                    break
                except KafkaException:
                    assert time.monotonic() < retry_grow, "the topic did not grow"
                    time.sleep(0.5)
        self.group_id = "k848-" + uuid.uuid4().hex[:8]
        self.bootstrap = bootstrap
        self.channel = coordinator(bootstrap, self.group_id)
        self.labels: dict[str, str] = {}
        self.topic_id = self._topic_id()
        self._wait_coordinator_sees_topic()

    def _topic_id(self) -> uuid.UUID:
        deadline = time.monotonic() + 30
        while True:
            md = self.channel.request(ApiKey.METADATA, {"topics": [{"name": self.topic, "topic_id": None}],
                                                        "allow_auto_topic_creation": False,
                                                        "include_topic_authorized_operations": False}, 12)
            t = md["topics"][0]
            if t["error_code"] == 0 and len(t["partitions"]) == self.size:
                return t["topic_id"]
            assert time.monotonic() < deadline, t
            time.sleep(0.1)

    def _wait_coordinator_sees_topic(self) -> None:
        """Kafka's group coordinator learns of a new topic a little after Metadata shows it: a
        member of a throw-away group is assigned its partitions once it does."""
        group_id, self.group_id = self.group_id, self.group_id + "-probe"
        channel, self.channel = self.channel, coordinator(self.bootstrap, self.group_id)
        probe = str(uuid.uuid4())
        deadline = time.monotonic() + 30
        try:
            epoch = 0
            while True:
                a = self.heartbeat(probe, epoch, owned=[] if epoch == 0 else None, topics=[self.topic],
                                   rebalance_ms=30000 if epoch == 0 else -1)
                epoch = a["epoch"]
                if a["assignment"]:
                    break
                assert time.monotonic() < deadline, a
                time.sleep(0.2)
            self.heartbeat(probe, -1)
        finally:
            self.channel.close()
            self.group_id, self.channel = group_id, channel
            self.labels.clear()

    def text(self, message: str | None) -> str | None:
        """A message with the group id and member ids as the labels of this scenario."""
        if message is None:
            return None
        for member_id, label in self.labels.items():
            message = message.replace(member_id, label)
        return message.replace(self.group_id, "G")

    def close(self) -> None:
        self.channel.close()

    def label(self, member_id: str | None) -> str | None:
        if not member_id:
            return member_id
        return self.labels.setdefault(member_id, f"m{len(self.labels) + 1}")

    def new_member(self) -> str:
        member_id = str(uuid.uuid4())
        self.label(member_id)
        return member_id

    def heartbeat(self, member_id: str, epoch: int, *, owned: list[int] | None = None, topics: list[str] | None = None,
                  instance: str | None = None, assignor: str | None = None, rebalance_ms: int = -1,
                  regex: str | None = None) -> dict:
        a = retry(lambda: self.channel.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, {
            "group_id": self.group_id, "member_id": member_id, "member_epoch": epoch, "instance_id": instance,
            "rack_id": None, "rebalance_timeout": rebalance_ms, "subscribed_topic_names": topics,
            "subscribed_topic_regex": regex, "server_assignor": assignor,
            "topic_partitions": None if owned is None else ([{"topic_id": self.topic_id, "partitions": owned}]
                                                            if owned else [])}, 1))
        assignment = a["assignment"]
        return {"error": a["error_code"], "message": self.text(a["error_message"]), "member": self.label(a["member_id"]),
                "epoch": a["member_epoch"], "interval": a["heartbeat_interval"],
                "assignment": None if assignment is None else self.partitions(assignment)}

    def join(self, member_id: str, **kw) -> dict:
        return self.heartbeat(member_id, 0, owned=[], topics=kw.pop("topics", [self.topic]), rebalance_ms=30000, **kw)

    def partitions(self, assignment: dict) -> list[int]:
        return sorted(p for tp in assignment["topic_partitions"] for p in tp["partitions"])

    def describe(self, group_id: str | None = None) -> dict:
        d = self.channel.request(ApiKey.CONSUMER_GROUP_DESCRIBE, {"group_ids": [group_id or self.group_id],
                                                                  "include_authorized_operations": False}, 1)["groups"][0]
        return {"error": d["error_code"], "message": self.text(d["error_message"]), "state": d["group_state"],
                "epoch": d["group_epoch"], "assignment_epoch": d["assignment_epoch"], "assignor": d["assignor_name"],
                "members": sorted([self.label(m["member_id"]), m["instance_id"], m["member_epoch"],
                                   ["T" if t == self.topic else t for t in m["subscribed_topic_names"]],
                                   m["subscribed_topic_regex"],
                                   self.partitions(m["assignment"]), self.partitions(m["target_assignment"]),
                                   m["member_type"]] for m in d["members"])}

    def commit(self, member_id: str, epoch: int, partition: int, version: int = 9) -> int:
        a = self.channel.request(ApiKey.OFFSET_COMMIT, {
            "group_id": self.group_id, "generation_id_or_member_epoch": epoch, "member_id": member_id,
            "group_instance_id": None, "topics": [{"name": self.topic, "partitions": [
                {"partition_index": partition, "committed_offset": 5, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}]}, version)
        return a["topics"][0]["partitions"][0]["error_code"]

    def fetch(self, member_id: str | None, epoch: int) -> tuple[int, list]:
        a = self.channel.request(ApiKey.OFFSET_FETCH, {"groups": [{
            "group_id": self.group_id, "member_id": member_id, "member_epoch": epoch,
            "topics": [{"name": self.topic, "partition_indexes": [0, 1]}]}], "require_stable": False}, 9)["groups"][0]
        return a["error_code"], [p["committed_offset"] for t in a["topics"] for p in t["partitions"]]

    def list_types(self, *types: str) -> list[tuple]:
        a = self.channel.request(ApiKey.LIST_GROUPS, {"states_filter": [], "types_filter": list(types)}, 5)
        return sorted((g["group_type"], g["protocol_type"], g["group_state"]) for g in a["groups"]
                      if g["group_id"] == self.group_id)

    def delete(self) -> int:
        a = self.channel.request(ApiKey.DELETE_GROUPS, {"groups_names": [self.group_id]}, 2)
        return a["results"][0]["error_code"]

    def classic_describe(self, version: int) -> tuple:
        d = self.channel.request(ApiKey.DESCRIBE_GROUPS, {"groups": [self.group_id],
                                                          "include_authorized_operations": False}, version)["groups"][0]
        return d["error_code"], self.text(d.get("error_message")), d["group_state"]


def settle(g: Group, members: dict[str, list], rounds: int = 40) -> dict:
    """Heartbeat each member (id -> [epoch, owned]) as a consumer does, revoking and taking what
    the answers say, until the group is Stable; its description then."""
    for _ in range(rounds):
        for member_id, state in members.items():
            a = g.heartbeat(member_id, state[0], owned=state[1])
            assert a["error"] == 0, a
            state[0] = a["epoch"]
            if a["assignment"] is not None:
                state[1] = a["assignment"]
        d = g.describe()
        if d["state"] == "Stable":
            return d
        time.sleep(0.3)
    raise AssertionError(f"the group did not settle: {g.describe()}")


def lifecycle(bootstrap: str) -> dict:
    """Join, a second member, reconciliation (revoke before assign), commits and fetches with
    member epochs, fencing, leaving, listing, deleting."""
    g = Group(bootstrap)
    out: dict = {}
    try:
        m1, m2 = g.new_member(), g.new_member()
        out["empty member id"] = g.heartbeat("", 0, owned=[], topics=[g.topic], rebalance_ms=30000)
        out["no rebalance timeout"] = g.heartbeat(m1, 0, owned=[], topics=[g.topic])
        out["unknown assignor"] = g.join(m1, assignor="nope")
        out["heartbeat before joining"] = g.heartbeat(m1, 1, owned=[])
        out["describe missing"] = g.describe()
        out["m1 joins"] = g.join(m1)
        out["m1 heartbeat"] = g.heartbeat(m1, 2, owned=list(range(6)))
        out["describe one"] = g.describe()
        out["greater epoch"] = g.heartbeat(m1, 7, owned=list(range(6)))
        out["smaller epoch"] = g.heartbeat(m1, 1, owned=list(range(6)))
        time.sleep(ASSIGNMENT_INTERVAL_S)
        out["m2 joins"] = g.join(m2)
        out["describe reconciling"] = g.describe()
        out["m1 told to revoke"] = g.heartbeat(m1, 2, owned=list(range(6)))
        out["m1 still owns them"] = g.heartbeat(m1, 2, owned=list(range(6)))
        out["m1 revoked"] = g.heartbeat(m1, 2, owned=out["m1 told to revoke"]["assignment"])
        out["m2 takes the rest"] = g.heartbeat(m2, 3, owned=[])
        out["describe stable"] = g.describe()
        epoch1, epoch2 = out["m1 revoked"]["epoch"], out["m2 takes the rest"]["epoch"]
        assigned = {m[0]: m[5] for m in out["describe stable"]["members"]}
        kept, taken = assigned["m1"], assigned["m2"]
        out["commit"] = g.commit(m1, epoch1, kept[0])
        out["commit older epoch, kept partition"] = g.commit(m1, epoch1 - 1, kept[0])
        out["commit older epoch, new partition"] = g.commit(m2, epoch2 - 1, taken[0])
        out["commit newer epoch"] = g.commit(m1, epoch1 + 1, kept[0])
        out["commit unknown member"] = g.commit("nobody", epoch1, kept[0])
        out["commit v8"] = g.commit(m1, epoch1, kept[0], version=8)
        out["commit as admin"] = g.commit("", -1, kept[0])
        out["fetch as member"] = g.fetch(m1, epoch1)
        out["fetch stale"] = g.fetch(m1, epoch1 - 1)
        out["fetch unknown member"] = g.fetch("nobody", 3)
        out["fetch as admin"] = g.fetch(None, -1)
        out["list"] = g.list_types()
        out["list consumer"] = g.list_types("consumer")
        out["list classic"] = g.list_types("classic")
        out["describe as classic v6"] = g.classic_describe(6)
        out["describe as classic v5"] = g.classic_describe(5)
        out["delete while members"] = g.delete()
        out["m2 leaves"] = g.heartbeat(m2, -1)
        out["m2 leaves again"] = g.heartbeat(m2, -1)
        time.sleep(ASSIGNMENT_INTERVAL_S)
        out["m1 alone again"] = settle(g, {m1: [epoch1, kept]})
        out["m1 leaves"] = g.heartbeat(m1, -1)
        out["describe empty"] = g.describe()
        out["list empty"] = g.list_types()
        out["commit into empty"] = g.commit("", -1, 1)
        out["fetch after"] = g.fetch(None, -1)
        out["delete"] = g.delete()
        out["describe deleted"] = g.describe()
        return out
    finally:
        g.close()


def static_and_range(bootstrap: str) -> dict:
    """Static members (instance ids): a -2 leave keeps the place and the target, the instance
    comes back under a new member id; a taken instance id is refused; the range assignor."""
    g = Group(bootstrap, partitions=4)
    out: dict = {}
    try:
        a, b, c = g.new_member(), g.new_member(), g.new_member()
        out["a joins"] = g.join(a, instance="i-a", assignor="range")
        time.sleep(ASSIGNMENT_INTERVAL_S)
        out["b joins"] = g.join(b, instance="i-b", assignor="range")
        time.sleep(ASSIGNMENT_INTERVAL_S)
        members = {a: [out["a joins"]["epoch"], out["a joins"]["assignment"]], b: [out["b joins"]["epoch"], []]}
        out["settled"] = settle(g, members)
        out["c takes a's instance id"] = g.join(c, instance="i-a", assignor="range")
        out["b fenced by instance"] = g.heartbeat(a, members[b][0], owned=members[b][1], instance="i-b")
        out["unknown instance"] = g.heartbeat(c, 1, owned=[], instance="i-zz")
        out["a leaves for a while"] = g.heartbeat(a, -2, instance="i-a")
        out["describe while away"] = g.describe()
        out["c comes back as i-a"] = g.join(c, instance="i-a", assignor="range")
        out["describe after"] = g.describe()
        out["b leaves for good"] = g.heartbeat(b, -1, instance="i-b")
        out["a's old id"] = g.heartbeat(a, members[a][0], owned=members[a][1], instance="i-a")
        return out
    finally:
        g.close()


def assigned_commits(bootstrap: str) -> dict:
    """Commits of consumers that assign their partitions themselves (generation -1; KIP-848
    clients send their own member id all the same): into no group, an empty group, a group with
    members; and a known generation into no group, in OffsetCommit v8 and v9."""
    g = Group(bootstrap, partitions=2)
    out: dict = {}
    try:
        stranger = g.new_member()
        out["-1 with a member id, no group"] = g.commit(stranger, -1, 0)
        out["fetch"] = g.fetch(None, -1)
        out["-1 with a member id, empty group"] = g.commit(stranger, -1, 1)
        out["-1 without a member id, empty group"] = g.commit("", -1, 1)
        member = g.new_member()
        out["joins"] = g.join(member)["error"]
        out["-1 with a member id, group with members"] = g.commit(stranger, -1, 0)
        out["-1 without a member id, group with members"] = g.commit("", -1, 0)
        g.heartbeat(member, -1)
        g.close()
        g.group_id += "-none"
        g.channel = coordinator(bootstrap, g.group_id)
        out["generation 3, no group, v9"] = g.commit(stranger, 3, 0)
        out["generation 3, no group, v8"] = g.commit(stranger, 3, 0, version=8)
    finally:
        g.close()
    return out


def regex_subscription(bootstrap: str) -> dict:
    """A member subscribing by regex: Kafka resolves the regex asynchronously, so the heartbeat
    that brings it is answered with its literal topics only; the regex's topics come at a later
    heartbeat, with a new group epoch."""
    g = Group(bootstrap, partitions=3)
    out: dict = {}
    try:
        m1 = g.new_member()
        out["joins by regex"] = g.heartbeat(m1, 0, owned=[], topics=[], regex=g.topic.replace("-", "."), rebalance_ms=30000)
        epoch, owned = out["joins by regex"]["epoch"], []
        deadline = time.monotonic() + 30
        while True:
            a = g.heartbeat(m1, epoch, owned=owned)
            epoch, owned = a["epoch"], a["assignment"] if a["assignment"] is not None else owned
            if owned:
                break
            assert time.monotonic() < deadline, a
            time.sleep(0.2)
        out["resolved"] = {"epoch": epoch, "assignment": owned}
        described = g.describe()
        described["members"] = [[*m[:4], "<the regex>" if m[4] else m[4], *m[5:]] for m in described["members"]]
        out["describe"] = described
        g.heartbeat(m1, -1)
    finally:
        g.close()
    return out
