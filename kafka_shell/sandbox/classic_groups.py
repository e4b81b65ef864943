"""The classic group coordinator of the sandbox, after Kafka's ClassicGroup and
GroupMetadataManager: group states, the two-step join, rebalances, session expiry, static
members (KIP-345: a known group.instance.id takes its member's place without a rebalance),
offsets.

Groups live in memory in `ClusterState.groups`, shared by all brokers; which broker
coordinates a group is the leader of its `__consumer_offsets` partition, as in Kafka, so moving
that leader moves the coordinator without losing state. Committed offsets and the groups'
metadata are not written to `__consumer_offsets` but are the records Kafka writes there
(OffsetCommitRecord; GroupMetadataRecord when Kafka stores a group, `_store`: Stable, Empty;
see group_state.py), which --data-dir journals.

Sandbox default that differs from Kafka: group.initial.rebalance.delay.ms is 100 ms (Kafka:
3000 ms) so tests and demos do not wait; set it with the cluster config of that name.
"""

from __future__ import annotations

import asyncio
import struct
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import configs, replay, topic_lifecycle
from kafka_shell.sandbox.model import ClusterState, now_ms
from kafka_shell.sandbox.records import OffsetCommitRecord, OffsetCommitValue

if TYPE_CHECKING:
    from kafka_shell.sandbox.model import AnyGroup

OFFSETS_TOPIC = "__consumer_offsets"

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (
    "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")

# Group settings Kafka has but the shared config table does not; values are Kafka's defaults
# except the initial rebalance delay (see the module doc).
GROUP_DEFAULTS = {
    "group.initial.rebalance.delay.ms": 100,
    "group.min.session.timeout.ms": 6000,
    "group.max.session.timeout.ms": 1800000,
    "offset.metadata.max.bytes": 4096,
}


def setting(cluster: ClusterState, key: str) -> int:
    return configs.broker_int(cluster, key, GROUP_DEFAULTS)


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_future: asyncio.Future | None = None   # a JoinGroup waiting for the rebalance
    sync_future: asyncio.Future | None = None   # a SyncGroup waiting for the leader's assignment
    expiry: asyncio.TimerHandle | None = None

    def metadata(self, protocol: str | None) -> bytes:
        return next((m for name, m in self.protocols if name == protocol), b"")


@dataclass
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp: int


class OffsetHolder(Protocol):
    """A group that keeps committed offsets (classic, consumer and streams groups)."""
    group_id: str
    offsets: dict[tuple[str, int], CommittedOffset]


@dataclass
class Group:
    group_id: str
    group_type = "classic"  # consumer_groups.ConsumerGroup shares the table: "consumer"
    state: str = EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending: dict[str, asyncio.TimerHandle] = field(default_factory=dict)  # MEMBER_ID_REQUIRED
    offsets: dict[tuple[str, int], CommittedOffset] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # group.instance.id -> member id (KIP-345)
    joined: asyncio.Event = field(default_factory=asyncio.Event)  # wakes the join phase
    new_member_added: bool = False
    join_task: asyncio.Task | None = None

    def all_joined(self) -> bool:
        return not self.pending and all(m.join_future is not None for m in self.members.values())

    def awaiting_join(self, m: Member) -> bool:
        return m.join_future is not None and not m.join_future.done()

    def member_error(self, member_id: str, instance_id: str | None) -> int:
        """Kafka's ClassicGroup.validateMember: a static member's instance id must map to this
        member id (else FENCED_INSTANCE_ID: another instance took it over), and the member exist."""
        if instance_id is not None:
            known = self.static_members.get(instance_id)
            if known is None:
                return ErrorCode.unknown_member_id
            if known != member_id:
                return ErrorCode.fenced_instance_id
        return 0 if member_id in self.members else ErrorCode.unknown_member_id

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        sets = [{name for name, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def accepts(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        names = {name for name, _ in protocols}
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol), None when it cannot be told."""
        if self.protocol_type != "consumer" or not self.protocol_name:
            return None if self.members else set()
        topics: set[str] = set()
        for m in self.members.values():
            topics |= consumer_subscription(m.metadata(self.protocol_name))
        return topics


def consumer_subscription(metadata: bytes) -> set[str]:
    """Topic names of a ConsumerProtocolSubscription (version, then an array of strings)."""
    if len(metadata) < 6:
        return set()
    (count,) = struct.unpack_from(">i", metadata, 2)
    pos, out = 6, set()
    for _ in range(max(count, 0)):
        (n,) = struct.unpack_from(">h", metadata, pos)
        out.add(metadata[pos + 2:pos + 2 + n].decode())
        pos += 2 + n
    return out


# -- where groups live --------------------------------------------------------------------------


def all_groups(cluster: ClusterState) -> dict[str, AnyGroup]:
    # Classic groups and consumer_groups.ConsumerGroup (KIP-848) alike: `group_type` tells them apart.
    return cluster.groups


def forget_topic(cluster: ClusterState, topic: str) -> None:
    """A deleted topic's committed offsets go from every group, as Kafka's group coordinator
    drops them (OffsetMetadataManager.onTopicsDeleted, after the topic's deletion)."""
    replay.apply_all(cluster, [offset_record(g.group_id, key, None) for g in all_groups(cluster).values()
                               for key in getattr(g, "offsets", {}) if key[0] == topic])


def java_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, 32-bit signed)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def hash_partition(key: str, count: int) -> int:
    """Kafka's Utils.abs(key.hashCode()) % count: which partition of a coordinator's internal
    topic holds a key."""
    h = java_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % count


def offsets_partition(cluster: ClusterState, group_id: str) -> int:
    return hash_partition(group_id, int(configs.broker_value(cluster, None, "offsets.topic.num.partitions") or 50))


def ensure_offsets_topic(cluster: ClusterState) -> None:
    """Create __consumer_offsets on first use, as Kafka does on the first FindCoordinator."""
    if OFFSETS_TOPIC in cluster.topics or not cluster.live_brokers():
        return
    partitions = int(configs.broker_value(cluster, None, "offsets.topic.num.partitions") or 50)
    rf = int(configs.broker_value(cluster, None, "offsets.topic.replication.factor") or 3)
    topic_lifecycle.create_topic(cluster, OFFSETS_TOPIC, partitions, min(rf, len(cluster.live_brokers())),
                       configs={"cleanup.policy": "compact"})


def coordinator_of(cluster: ClusterState, group_id: str) -> int:
    """The broker coordinating the group, or -1 when its offsets partition has no live leader."""
    return internal_leader(cluster, OFFSETS_TOPIC, offsets_partition(cluster, group_id))


def internal_leader(cluster: ClusterState, topic_name: str, partition: int) -> int:
    """The broker coordinating the keys a partition of a coordinator's internal topic holds: its
    live leader, or -1 without the topic or a live leader."""
    topic = cluster.topics.get(topic_name)
    if topic is None:
        return -1
    p = topic.partitions[partition % len(topic.partitions)]
    return p.leader if p.leader >= 0 and cluster.brokers[p.leader].usable else -1


def offset_record(group_id: str, key: tuple[str, int], o: CommittedOffset | None) -> OffsetCommitRecord:
    """The record of a committed offset (None: its deletion, a tombstone)."""
    value = None if o is None else OffsetCommitValue(o.offset, o.leader_epoch, o.metadata, o.commit_timestamp)
    return OffsetCommitRecord(group_id, key[0], key[1], value)


def record_offsets(cluster: ClusterState, group_id: str, offsets: dict[tuple[str, int], CommittedOffset]) -> None:
    """Offsets become committed (an OffsetCommit, a transaction's commit): their records (a group
    that has none yet is created Empty, as a simple commit does)."""
    replay.apply_all(cluster, [offset_record(group_id, key, o) for key, o in offsets.items()])


# -- the state machine ----------------------------------------------------------------------------


def _error(code: int, **extra: object) -> dict:
    return {"error_code": code, **extra}


class Coordinator:
    """Group operations for one request; `spawn` starts loop tasks the sandbox cancels at stop."""

    def __init__(self, cluster: ClusterState, spawn: Callable):
        self.cluster = cluster
        self.groups = all_groups(cluster)
        self.spawn = spawn

    # JoinGroup ----------------------------------------------------------------------------------

    async def join(self, group_id: str, member_id: str, instance_id: str | None, client_id: str,
                   client_host: str, session_ms: int, rebalance_ms: int, protocol_type: str,
                   protocols: list[tuple[str, bytes]], require_known_member_id: bool,
                   skips_assignment: bool = False) -> dict:
        """JoinGroup. `skips_assignment` (v9+): a static leader replaced while the group is stable
        is told so (KIP-814) rather than to assign again."""
        if not group_id:
            return _error(ErrorCode.invalid_group_id, member_id=member_id)
        if not setting(self.cluster, "group.min.session.timeout.ms") <= session_ms <= \
                setting(self.cluster, "group.max.session.timeout.ms"):
            return _error(ErrorCode.invalid_session_timeout, member_id=member_id)
        found = self.groups.get(group_id)
        if found is not None and found.group_type == "share":   # "Group G is not a classic group."
            return _error(ErrorCode.group_id_not_found, member_id=member_id)
        g = found if isinstance(found, Group) else None
        if found is not None and g is None:
            if found.members:
                # Kafka would let the member join the consumer group with the classic protocol
                # (online migration); the sandbox answers as Kafka does with migration disabled.
                return _error(ErrorCode.group_id_not_found, member_id=member_id)
            # An empty group of another type gives way (its offsets stay): its records' tombstones.
            from kafka_shell.sandbox import group_state  # it imports this module
            replay.apply_all(self.cluster, group_state.changes(self.cluster, found, Group(group_id, offsets=found.offsets)))
            g = self.classic(group_id)
            if member_id:
                return _error(ErrorCode.unknown_member_id, member_id=member_id)
        if g is None:
            if member_id:
                return _error(ErrorCode.unknown_member_id, member_id=member_id)
            g = self.groups[group_id] = Group(group_id)
        if g.state == DEAD:
            return _error(ErrorCode.coordinator_not_available, member_id=member_id)
        if not g.accepts(protocol_type, protocols):
            return _error(ErrorCode.inconsistent_group_protocol, member_id=member_id)
        new = Member(member_id, instance_id, client_id, client_host, session_ms, rebalance_ms, protocols)
        if not member_id:
            new.member_id = f"{instance_id or client_id}-{uuid.uuid4()}"
            if instance_id is not None and instance_id in g.static_members:
                return await self._replace_static_member(g, instance_id, new, skips_assignment)
            if require_known_member_id and instance_id is None:
                # Two-step join (KIP-394): hand out the id; the member must come back with it.
                g.pending[new.member_id] = self._timer(session_ms, self._drop_pending, g, new.member_id)
                return _error(ErrorCode.member_id_required, member_id=new.member_id)
            return await self._add_member(g, new, protocol_type)
        if member_id in g.pending:
            g.pending.pop(member_id).cancel()
            return await self._add_member(g, new, protocol_type)
        err = g.member_error(member_id, instance_id)
        if err:
            return _error(err, member_id=member_id, protocol_name=None)
        m = g.members[member_id]
        changed = m.protocols != protocols
        m.protocols, m.session_timeout_ms, m.rebalance_timeout_ms = protocols, session_ms, rebalance_ms
        self._heartbeat(g, m)
        if g.state == PREPARING:
            return await self._await_join(g, m)
        if g.state == COMPLETING and not changed:
            return self._join_response(g, m)  # the member lost the answer: send it again
        if g.state == STABLE and not changed and m.member_id != g.leader:
            return self._join_response(g, m)
        self._prepare_rebalance(g)
        return await self._await_join(g, m)

    async def _add_member(self, g: Group, m: Member, protocol_type: str) -> dict:
        if not g.members:
            g.protocol_type = protocol_type
        g.members[m.member_id] = m
        if m.group_instance_id is not None:
            g.static_members[m.group_instance_id] = m.member_id
        g.new_member_added = True
        self._heartbeat(g, m)
        if g.state != PREPARING:
            self._prepare_rebalance(g)
        return await self._await_join(g, m)

    async def _replace_static_member(self, g: Group, instance_id: str, new: Member, skips_assignment: bool) -> dict:
        """KIP-345: a known group.instance.id joins with a new member id and takes the old
        member's place (its assignment too); the old id is fenced. A stable group whose protocol
        does not change answers at once, without a rebalance (GroupMetadataManager's
        updateStaticMemberThenRebalanceOrCompleteJoin)."""
        old_id = g.static_members[instance_id]
        old = g.members.pop(old_id)
        if old.expiry is not None:
            old.expiry.cancel()
        self._resolve(old, "join_future", _error(ErrorCode.fenced_instance_id, member_id=old_id, protocol_name=None))
        self._resolve(old, "sync_future", _error(ErrorCode.fenced_instance_id))
        previous_leader = g.leader
        new.client_id, new.client_host, new.assignment = old.client_id, old.client_host, old.assignment
        g.members[new.member_id] = new
        g.static_members[instance_id] = new.member_id
        if g.leader == old_id:
            g.leader = new.member_id
        self._heartbeat(g, new)
        if g.state == STABLE and g.protocol_name == self._select_protocol(g):
            leads = new.member_id == g.leader
            if skips_assignment:
                return {**self._join_response(g, new), "skip_assignment": leads}
            # Older clients would assign again as leaders: they are told the old leader's id.
            return {**self._join_response(g, new), "members": [], "leader": previous_leader}
        if g.state in (STABLE, COMPLETING):
            self._prepare_rebalance(g)
        return await self._await_join(g, new)

    async def _await_join(self, g: Group, m: Member) -> dict:
        if m.join_future is None or m.join_future.done():
            m.join_future = asyncio.get_running_loop().create_future()
        future = m.join_future
        g.joined.set()
        return await asyncio.shield(future)

    def _prepare_rebalance(self, g: Group) -> None:
        if g.state == COMPLETING:
            for m in g.members.values():
                m.assignment = b""
                self._resolve(m, "sync_future", _error(ErrorCode.rebalance_in_progress))
        initial = g.state == EMPTY
        g.state = PREPARING
        g.join_task = self.spawn(self._join_phase(g, initial))

    async def _join_phase(self, g: Group, initial: bool) -> None:
        """Wait for members to (re)join: after a short initial delay for a new group (extended
        while members keep arriving), else until all have rejoined or the rebalance timeout."""
        loop = asyncio.get_running_loop()
        timeout_s = max((m.rebalance_timeout_ms for m in g.members.values()), default=0) / 1000
        deadline = loop.time() + timeout_s
        if initial:
            delay_s = setting(self.cluster, "group.initial.rebalance.delay.ms") / 1000
            while True:
                g.new_member_added = False
                await asyncio.sleep(max(min(delay_s, deadline - loop.time()), 0))
                if not g.new_member_added or loop.time() >= deadline:
                    break
        else:
            while not g.all_joined() and loop.time() < deadline:
                g.joined.clear()
                try:
                    await asyncio.wait_for(g.joined.wait(), deadline - loop.time())
                except TimeoutError:
                    pass
        self._complete_join(g)

    def _complete_join(self, g: Group) -> None:
        if g.state != PREPARING or self.groups.get(g.group_id) is not g:
            return
        for m in [m for m in g.members.values() if m.join_future is None and m.group_instance_id is None]:
            self._remove(g, m, rebalance=False)  # a dynamic member that did not rejoin in time
        if g.members and not self._elect_joined_leader(g):
            # Only static members that did not rejoin: wait another rebalance timeout for them
            # (or for their sessions to end), as Kafka does.
            g.join_task = self.spawn(self._join_phase(g, initial=False))
            return
        g.generation += 1
        if not g.members:
            g.state, g.protocol_name, g.leader = EMPTY, None, None
            self._store(g)
            return
        g.protocol_name = self._select_protocol(g)
        g.state = COMPLETING
        for m in g.members.values():
            self._heartbeat(g, m)
            future, m.join_future = m.join_future, None
            if future is not None and not future.done():
                future.set_result(self._join_response(g, m))

    @staticmethod
    def _elect_joined_leader(g: Group) -> bool:
        """The leader must be a member that rejoined: keep it, else the first that did (Kafka's
        maybeElectNewJoinedLeader). False when none did."""
        leader = g.members.get(g.leader or "")
        if leader is not None and g.awaiting_join(leader):
            return True
        g.leader = next((m.member_id for m in g.members.values() if g.awaiting_join(m)), None)
        return g.leader is not None

    @staticmethod
    def _select_protocol(g: Group) -> str:
        """Each member votes for its most preferred protocol that all support; most votes wins."""
        candidates = g.candidate_protocols()
        votes: dict[str, int] = {}
        for m in g.members.values():
            choice = next(name for name, _ in m.protocols if name in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def _join_response(self, g: Group, m: Member) -> dict:
        members = []
        if m.member_id == g.leader:
            members = [{"member_id": x.member_id, "group_instance_id": x.group_instance_id,
                        "metadata": x.metadata(g.protocol_name)} for x in g.members.values()]
        return {"error_code": 0, "generation_id": g.generation, "protocol_type": g.protocol_type,
                "protocol_name": g.protocol_name, "leader": g.leader, "member_id": m.member_id,
                "members": members}

    # SyncGroup, Heartbeat, LeaveGroup ---------------------------------------------------------

    def classic(self, group_id: str) -> Group | None:
        """The classic group of that id (None: none, or a group of another type)."""
        g = self.groups.get(group_id)
        return g if isinstance(g, Group) else None

    def _member_error(self, g: Group | None, member_id: str, generation: int, instance_id: str | None = None) -> int:
        if g is None or g.state in (EMPTY, DEAD):
            return ErrorCode.unknown_member_id
        err = g.member_error(member_id, instance_id)
        if err:
            return err
        if generation != g.generation:
            return ErrorCode.illegal_generation
        return 0

    async def sync(self, group_id: str, member_id: str, generation: int, protocol_type: str | None,
                   protocol_name: str | None, assignments: dict[str, bytes], instance_id: str | None = None) -> dict:
        g = self.classic(group_id)
        err = self._member_error(g, member_id, generation, instance_id)
        if err:
            return _error(err)
        assert g is not None, "_member_error reports a missing group"
        if (protocol_type and protocol_type != g.protocol_type) or \
                (protocol_name and protocol_name != g.protocol_name):
            return _error(ErrorCode.inconsistent_group_protocol)
        if g.state == PREPARING:
            return _error(ErrorCode.rebalance_in_progress)
        m = g.members[member_id]
        self._heartbeat(g, m)
        if g.state == COMPLETING:
            future = m.sync_future = asyncio.get_running_loop().create_future()
            if member_id == g.leader:
                for x in g.members.values():
                    x.assignment = assignments.get(x.member_id, b"")
                g.state = STABLE
                self._store(g)  # on disk before the members hear of their assignment
                for x in g.members.values():
                    self._resolve(x, "sync_future", self._sync_response(g, x))
            return await asyncio.shield(future)
        return self._sync_response(g, m)

    @staticmethod
    def _sync_response(g: Group, m: Member) -> dict:
        return {"error_code": 0, "protocol_type": g.protocol_type, "protocol_name": g.protocol_name,
                "assignment": m.assignment}

    def heartbeat(self, group_id: str, member_id: str, generation: int, instance_id: str | None = None) -> int:
        g = self.classic(group_id)
        err = self._member_error(g, member_id, generation, instance_id)
        if err:
            return err
        assert g is not None, "_member_error reports a missing group"
        self._heartbeat(g, g.members[member_id])
        return ErrorCode.rebalance_in_progress if g.state == PREPARING else 0

    def leave(self, group_id: str, leaving: list[tuple[str, str | None]]) -> list[tuple[str, int]]:
        """Per leaving (member id, group instance id): the member id answered and NONE,
        UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID. An empty member id with an instance id removes
        that static member (KIP-345's administrative leave, LeaveGroup v3+)."""
        g = self.classic(group_id)
        out: list[tuple[str, int]] = []
        for member_id, instance_id in leaving:
            if g is None:
                out.append((member_id, ErrorCode.unknown_member_id))
            elif not member_id:
                static = g.static_members.get(instance_id) if instance_id is not None else None
                if static is None:
                    out.append((member_id, ErrorCode.unknown_member_id))
                else:
                    self._remove(g, g.members[static], rebalance=True)
                    out.append((member_id, 0))
            elif member_id in g.pending:
                g.pending.pop(member_id).cancel()
                out.append((member_id, 0))
            elif (err := g.member_error(member_id, instance_id)):
                out.append((member_id, err))
            else:
                self._remove(g, g.members[member_id], rebalance=True)
                out.append((member_id, 0))
        return out

    def _remove(self, g: Group, m: Member, rebalance: bool) -> None:
        g.members.pop(m.member_id, None)
        if m.group_instance_id is not None and g.static_members.get(m.group_instance_id) == m.member_id:
            del g.static_members[m.group_instance_id]
        if m.expiry is not None:
            m.expiry.cancel()
        self._resolve(m, "join_future", _error(ErrorCode.unknown_member_id, member_id=m.member_id))
        self._resolve(m, "sync_future", _error(ErrorCode.unknown_member_id))
        if g.leader == m.member_id:
            g.leader = None
        if not rebalance:
            return
        if g.state in (STABLE, COMPLETING):
            self._prepare_rebalance(g)
        elif g.state == PREPARING:
            g.joined.set()

    def _store(self, g: Group) -> None:
        """Kafka's storeGroup: the GroupMetadataRecord of the group as it is now (Stable with its
        members' assignments, or Empty). Kafka's classic groups change in memory and write the
        record without replaying it; replaying it here sets the values the group already has."""
        from kafka_shell.sandbox import group_state  # it imports this module
        replay.apply(self.cluster, group_state.classic_record(g))

    def resume(self) -> None:
        """Start the sessions of members brought back by --data-dir (loop thread, at start)."""
        for g in self.groups.values():
            if isinstance(g, Group):
                for m in g.members.values():
                    self._heartbeat(g, m)

    # timers --------------------------------------------------------------------------------------

    def _timer(self, ms: int, fn: Callable, *args: object) -> asyncio.TimerHandle:
        return asyncio.get_running_loop().call_later(ms / 1000, fn, *args)

    def _heartbeat(self, g: Group, m: Member) -> None:
        """Restart the member's session timer."""
        if m.expiry is not None:
            m.expiry.cancel()
        m.expiry = self._timer(m.session_timeout_ms, self._expire, g, m.member_id)

    def _expire(self, g: Group, member_id: str) -> None:
        m = g.members.get(member_id)
        if m is None:
            return
        if (m.join_future and not m.join_future.done()) or (m.sync_future and not m.sync_future.done()):
            self._heartbeat(g, m)  # Kafka keeps members alive while they wait on the coordinator
            return
        self._remove(g, m, rebalance=True)

    def _drop_pending(self, g: Group, member_id: str) -> None:
        if g.pending.pop(member_id, None) is not None and g.state == PREPARING:
            g.joined.set()

    @staticmethod
    def _resolve(m: Member, attr: str, result: dict) -> None:
        future = getattr(m, attr)
        setattr(m, attr, None)
        if future is not None and not future.done():
            future.set_result(result)

    # offsets and administration ---------------------------------------------------------------

    def commit_error(self, group_id: str, member_id: str, generation: int,
                     instance_id: str | None = None, version: int = 0) -> tuple[AnyGroup | None, int]:
        """The group to commit into or the error, as Kafka 4.4's OffsetMetadataManager and
        ClassicGroup.validateOffsetCommit: a commit with generation -1 (an admin client, a
        consumer that assigns its partitions itself) creates a simple group when there is none
        and goes into an Empty group whatever member id it names."""
        from kafka_shell.sandbox import consumer_groups, share_groups, streams_groups
        found = self.groups.get(group_id)
        if isinstance(found, share_groups.ShareGroup):   # share groups have no committed offsets
            return None, ErrorCode.group_id_not_found
        if isinstance(found, (consumer_groups.ConsumerGroup, streams_groups.StreamsGroup)):
            # A transactional commit into a KIP-848 or streams group (OffsetCommit goes to their modules).
            verdict = (consumer_groups.Coordinator(self.cluster).commit_error(found, member_id, generation, 9, True)
                       if isinstance(found, consumer_groups.ConsumerGroup) else
                       streams_groups.Coordinator(self.cluster).commit_error(found, member_id, generation, 9, True))
            return (found, 0) if callable(verdict) or not verdict else (None, verdict)
        g = found
        if g is None:
            if generation >= 0:
                return None, ErrorCode.group_id_not_found if version >= 9 else ErrorCode.illegal_generation
            self._store(Group(group_id))   # replaying its record makes the group
            g = self.classic(group_id)
            assert g is not None, "a GroupMetadataRecord makes a classic group"
        if g.state == DEAD:
            return None, ErrorCode.coordinator_not_available
        if generation < 0 and g.state == EMPTY:
            return g, 0
        if generation < 0 and not member_id and instance_id is None:
            return None, ErrorCode.unknown_member_id   # only members commit into a group with members
        err = self._member_error(g, member_id, generation, instance_id)
        if err:
            return None, err
        if g.state == COMPLETING:
            return None, ErrorCode.rebalance_in_progress
        self._heartbeat(g, g.members[member_id])
        return g, 0

    def commit(self, g: OffsetHolder, topic: str, partition: int, offset: int, leader_epoch: int,
               metadata: str | None) -> int:
        if metadata and len(metadata.encode()) > setting(self.cluster, "offset.metadata.max.bytes"):
            return ErrorCode.offset_metadata_too_large
        record_offsets(self.cluster, g.group_id,
                       {(topic, partition): CommittedOffset(offset, leader_epoch, metadata, now_ms())})
        return 0

    def delete_offset(self, g: OffsetHolder, topic: str, partition: int) -> None:
        if (topic, partition) in g.offsets:
            replay.apply(self.cluster, offset_record(g.group_id, (topic, partition), None))

    def delete(self, group_id: str) -> int:
        g = self.groups.get(group_id)
        if g is None or g.state == DEAD:
            return ErrorCode.group_id_not_found
        if g.members or g.state != EMPTY:
            return ErrorCode.non_empty_group
        if isinstance(g, Group):
            g.state = DEAD
            for timer in g.pending.values():
                timer.cancel()
        if g.group_type == "share":   # its share-partitions' state goes with it
            from kafka_shell.sandbox import share_groups
            share_groups.Coordinator(self.cluster).delete(group_id)
        # Kafka's tombstones: the group's offsets, then the group's records.
        from kafka_shell.sandbox import group_state  # it imports this module
        replay.apply_all(self.cluster, [offset_record(group_id, key, None) for key in list(getattr(g, "offsets", {}))])
        replay.apply_all(self.cluster, group_state.removal(self.cluster, g))
        return 0

    def delete_offsets_error(self, g: AnyGroup | None) -> int:
        if g is None or g.state == DEAD or g.group_type == "share":
            return ErrorCode.group_id_not_found
        if g.members and g.protocol_type not in ("consumer", "streams"):
            return ErrorCode.non_empty_group
        return 0

    def subscribed_topics(self, g: AnyGroup) -> set[str]:
        """Topics the group's members subscribe to (OffsetDelete keeps their offsets)."""
        if isinstance(g, Group):
            return g.subscribed_topics() or set()
        return g.subscribed_topics(self.cluster)
