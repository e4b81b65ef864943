"""Share groups (KIP-932, "queues for Kafka") of the sandbox, after Kafka 4.4's GroupMetadataManager
(share group heartbeats), SimpleAssignor, SharePartition and SharePartitionManager (share sessions)
and the share coordinator (the state of each share-partition).

Membership: a member heartbeats (ShareGroupHeartbeat) with its subscribed topic names; a change of
a subscription or of the subscribed topics' partitions bumps the group epoch and the simple
assignor gives every member its partitions at once (share groups revoke nothing: several members
may share one partition, each record going to one of them). Members that stop heartbeating
expire after `share.session.timeout.ms`; their acquired records go back to the others.

Delivery: each (group, topic, partition) is a share-partition with a start offset (the SPSO:
every record below it is done with) and the in-flight records above it, each ACQUIRED (locked by
one member for `share.record.lock.duration.ms`), AVAILABLE (to be delivered again),
ACKNOWLEDGED or ARCHIVED, with its delivery count. A record released, or whose lock expires,
becomes AVAILABLE again unless it was delivered `share.delivery.count.limit` times: then it is
ARCHIVED. The SPSO moves past every leading ACKNOWLEDGED or ARCHIVED record. A new
share-partition starts where `share.auto.offset.reset` says (latest by default).

Share groups live in `groups.all_groups(cluster)` beside classic and consumer groups (one group
id, one type); the share-partitions in `ClusterState.share_partitions`.
"""

from __future__ import annotations

import asyncio
import base64
import math
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import (configs, group_configs, log, modern_groups, producer_state, quorum, records, replay,
                                 topic_lifecycle)
from kafka_shell.sandbox import classic_groups as classic
from kafka_shell.sandbox.modern_groups import GroupError
from kafka_shell.sandbox.model import Batch, ClusterState, Partition, now_ms
from kafka_shell.sandbox.records import ControllerResult

EMPTY, STABLE, DEAD = "Empty", "Stable", "Dead"
LEAVE_EPOCH = -1
ASSIGNOR = "simple"
# Kafka's RecordState ids and AcknowledgeType ids.
AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
ACK_STATE = {GAP: ARCHIVED, ACCEPT: ACKNOWLEDGED, RELEASE: AVAILABLE, REJECT: ARCHIVED}
RECORD_LIMIT_MODE = 1  # ShareFetch's share_acquire_mode: 0 batch_optimized, 1 record_limit

TopicPartitions = dict[uuid.UUID, set[int]]


@dataclass
class Member:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    topic_names: tuple[str, ...] = ()
    epoch: int = 0
    previous_epoch: int = 0
    assigned: TopicPartitions = field(default_factory=dict)


@dataclass
class ShareGroup:
    group_id: str
    epoch: int = 1            # Kafka 4.4 starts a group at epoch 1; the first join makes it 2
    assignment_epoch: int = 0
    assignment_time_ms: int = 0
    members: dict[str, Member] = field(default_factory=dict)
    targets: dict[str, TopicPartitions] = field(default_factory=dict)
    metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    offsets: dict = field(default_factory=dict)     # the table's committed offsets: none for share groups

    group_type = "share"
    protocol_type = "share"

    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def subscribed_topics(self, cluster: ClusterState | None = None) -> set[str]:
        return {t for m in self.members.values() for t in m.topic_names}


# -- the simple assignor ------------------------------------------------------------------------------


def simple_assign(members: dict[str, Member], eligible: dict[str, list[tuple[uuid.UUID, int]]],
                  current: dict[str, TopicPartitions]) -> dict[str, TopicPartitions]:
    """Kafka's SimpleAssignor: every partition goes to ceil(members / partitions) members (so
    with more members than partitions, partitions are shared), each member gets its share of the
    assignments, and what a member already has it keeps while that stays within both bounds."""
    ids = list(members)
    targets = sorted({tp for tps in eligible.values() for tp in tps}, key=lambda tp: (str(tp[0]), tp[1]))
    out: dict[str, TopicPartitions] = {i: {} for i in ids}
    if not ids or not targets:
        return out
    sharing = -(-len(ids) // len(targets))
    precise = sharing * len(targets) / len(ids)
    desired = {i: math.ceil(precise * (k + 1)) - math.ceil(precise * k) for k, i in enumerate(ids)}
    holders: dict[tuple[uuid.UUID, int], list[str]] = {tp: [] for tp in targets}
    count = {i: 0 for i in ids}
    for i in ids:   # keep what each has, within its quota and the partition's sharing
        allowed = set(eligible.get(i, ()))
        for t, ps in sorted(current.get(i, {}).items(), key=lambda kv: str(kv[0])):
            for p in sorted(ps):
                tp = (t, p)
                if tp in allowed and count[i] < desired[i] and len(holders[tp]) < sharing:
                    holders[tp].append(i)
                    out[i].setdefault(t, set()).add(p)
                    count[i] += 1
    for tp in targets:   # hand out the rest, round robin over the members still short
        for i in sorted(ids, key=lambda m: (count[m] >= desired[m], count[m], ids.index(m))):
            if len(holders[tp]) >= sharing:
                break
            if i not in holders[tp] and tp in eligible.get(i, ()) and count[i] < desired[i]:
                holders[tp].append(i)
                out[i].setdefault(tp[0], set()).add(tp[1])
                count[i] += 1
    for tp in targets:   # heterogeneous subscriptions: nobody left under quota, still give it out
        if not holders[tp]:
            takers = [i for i in ids if tp in eligible.get(i, ())]
            if takers:
                i = min(takers, key=lambda m: (count[m], ids.index(m)))
                holders[tp].append(i)
                out[i].setdefault(tp[0], set()).add(tp[1])
                count[i] += 1
    return out


# -- share-partitions ------------------------------------------------------------------------------


@dataclass
class InFlight:
    state: int
    delivery_count: int = 0
    member_id: str | None = None
    lock: asyncio.TimerHandle | None = field(default=None, compare=False, repr=False)


@dataclass
class SharePartition:
    group_id: str
    topic_id: uuid.UUID
    partition: int
    start_offset: int = -1        # the SPSO; -1: not initialized yet
    next_offset: int = -1         # the first offset never acquired
    state_epoch: int = 0
    leader_epoch: int = 0
    records: dict[int, InFlight] = field(default_factory=dict)
    # What the share coordinator last had written (ReadShareGroupStateSummary, and so
    # DescribeShareGroupOffsets): Kafka's SharePartition writes the new record states with its
    # start offset as it was before they moved it, and moves it only once written.
    # Only replay sets these and the epochs (group_state.replay_share_snapshot; `write_state`
    # writes the records).
    written_start: int = -1
    written_done: int = -1
    written_batches: list[dict] = field(default_factory=list)
    updates: int = 0   # ShareUpdateRecords written since the last ShareSnapshotRecord

    def advance(self) -> None:
        """Move the SPSO past every leading record done with."""
        while True:
            r = self.records.get(self.start_offset)
            if r is None or r.state not in (ACKNOWLEDGED, ARCHIVED):
                break
            del self.records[self.start_offset]
            self.start_offset += 1
        if self.start_offset > self.next_offset:
            self.next_offset = self.start_offset

    def put_states(self, first: int, last: int, state: int, count: int, end: int) -> None:
        """Records [first, last] as the share coordinator has them written, one InFlight per
        offset below `end` (the partition's high watermark): no share-partition leader writes
        the state of a record it could not fetch, and a stranger's range of 2^63 offsets must
        not take the process' memory. An acquired record keeps its lock."""
        kept = AVAILABLE if state == ACQUIRED else state   # a lock does not survive its leader
        for offset in range(max(first, self.start_offset, 0), min(last + 1, end)):
            r = self.records.get(offset)
            if r is None:
                self.records[offset] = InFlight(kept, count)
            elif r.state != ACQUIRED:
                r.state, r.delivery_count = kept, count
        self.next_offset = max(self.next_offset, min(last + 1, end))

    def state_batches(self) -> list[dict]:
        """The in-flight records as the share coordinator stores them: ranges of one state and
        delivery count (an acquired record is stored as available: its lock does not survive)."""
        out: list[dict] = []
        for offset in sorted(self.records):
            r = self.records[offset]
            state = AVAILABLE if r.state == ACQUIRED else r.state
            last = out[-1] if out else None
            if last and last["last_offset"] == offset - 1 and last["delivery_state"] == state \
                    and last["delivery_count"] == r.delivery_count:
                last["last_offset"] = offset
            else:
                out.append({"first_offset": offset, "last_offset": offset, "delivery_state": state,
                            "delivery_count": r.delivery_count})
        return out


def share_partitions(cluster: ClusterState) -> dict[tuple[str, uuid.UUID, int], SharePartition]:
    return cluster.share_partitions


# -- the share coordinator: where a share-partition's state lives ------------------------------------

STATE_TOPIC = "__share_group_state"
INT32 = re.compile(r"[+-]?[0-9]+")


def parse_state_key(key: str) -> tuple[str, uuid.UUID, int] | None:
    """A share coordinator key, groupId:topicId:partition, read as Kafka's SharePartitionKey
    reads it (from the right: a group id may hold colons); None where Kafka refuses it."""
    tokens = key.split(":")
    while tokens and tokens[-1] == "":
        tokens.pop()   # Java's String.split drops trailing empty strings
    if len(tokens) < 3 or not ":".join(tokens[:-2]).strip():
        return None
    try:
        raw = base64.urlsafe_b64decode(tokens[-2] + "==") if len(tokens[-2]) <= 24 else b""
    except ValueError:
        raw = b""
    if len(raw) != 16 or not INT32.fullmatch(tokens[-1]) or not -(1 << 31) <= int(tokens[-1]) < 1 << 31:
        return None
    return ":".join(tokens[:-2]), uuid.UUID(bytes=raw), int(tokens[-1])


def ensure_state_topic(cluster: ClusterState) -> None:
    """Create __share_group_state on first use, as Kafka's auto topic creation does on the first
    FindCoordinator of a share coordinator (with at most as many replicas as live brokers, like
    the sandbox's other internal topics)."""
    if STATE_TOPIC in cluster.topics or not cluster.live_brokers():
        return

    def setting(name: str) -> int:
        return int(configs.broker_value(cluster, None, f"share.coordinator.state.topic.{name}") or 0)
    rf = min(setting("replication.factor"), len(cluster.live_brokers()))
    topic_lifecycle.create_topic(cluster, STATE_TOPIC, setting("num.partitions"), rf, configs={
        "cleanup.policy": "delete", "compression.type": "producer", "segment.bytes": str(setting("segment.bytes")),
        "min.insync.replicas": str(min(setting("min.isr"), rf)), "retention.ms": "-1"})


def state_coordinator_of(cluster: ClusterState, group_id: str, topic_id: uuid.UUID, partition: int) -> int:
    """The broker coordinating a share-partition's state (the live leader of its
    __share_group_state partition, by the hash of the key as Kafka words it), or -1."""
    count = int(configs.broker_value(cluster, None, "share.coordinator.state.topic.num.partitions") or 50)
    key = f"{group_id}:{quorum.kafka_uuid(topic_id)}:{partition}"
    return classic.internal_leader(cluster, STATE_TOPIC, classic.hash_partition(key, count))


def high_watermark(cluster: ClusterState, topic_id: uuid.UUID, partition: int) -> int:
    """The partition's high watermark; 0 for a topic or partition the cluster does not have."""
    t = cluster.topic_by_id(topic_id)
    p = t.partition(partition) if t is not None else None
    return p.high_watermark if p is not None else 0


def initial_offset(cluster: ClusterState, group_id: str, p: Partition) -> int:
    """Where a new share-partition starts: share.auto.offset.reset (earliest, latest, or
    by_duration:<ISO-8601 duration>: the first record at most that old)."""
    reset = (group_configs.overrides(cluster, group_id).get("share.auto.offset.reset")
             or group_configs.default(cluster, "share.auto.offset.reset")).strip().lower()
    if reset == "earliest":
        return p.log_start_offset
    if reset.startswith("by_duration:"):
        found = log.offset_for_time(p, now_ms() - _duration_ms(reset.split(":", 1)[1]), p.high_watermark)
        return found[0] if found else p.high_watermark
    return p.high_watermark


def _duration_ms(text: str) -> int:
    m = re.fullmatch(r"p(?:(\d+)d)?(?:t(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?)?", text.strip().lower())
    if m is None:
        return 0
    d, h, mi, s = (float(x) if x else 0.0 for x in m.groups())
    return int((((d * 24 + h) * 60 + mi) * 60 + s) * 1000)


class Partitions:
    """Acquiring and acknowledging records of share-partitions (SharePartition)."""

    def __init__(self, cluster: ClusterState):
        self.cluster = cluster
        self.table = share_partitions(cluster)

    def get(self, group_id: str, topic_id: uuid.UUID, partition: int, create: bool = True) -> SharePartition | None:
        key = (group_id, topic_id, partition)
        sp = self.table.get(key)
        if sp is None and create:
            sp = self.table[key] = SharePartition(group_id, topic_id, partition)
        return sp

    def _initialized(self, sp: SharePartition, p: Partition) -> SharePartition:
        if sp.start_offset < 0:
            sp.start_offset = sp.next_offset = initial_offset(self.cluster, sp.group_id, p)
        if sp.start_offset < p.log_start_offset:   # retention deleted what was not yet done with
            for offset in [o for o in sp.records if o < p.log_start_offset]:
                self.unlock(sp.records.pop(offset))
            sp.start_offset = p.log_start_offset
            sp.next_offset = max(sp.next_offset, sp.start_offset)
        return sp

    def _write(self, sp: SharePartition) -> None:
        """The leader writes the state with its partition's leader epoch."""
        t = self.cluster.topic_by_id(sp.topic_id)
        p = t.partition(sp.partition) if t is not None else None
        write_state(self.cluster, sp, leader_epoch=p.leader_epoch if p is not None else None)

    def reset(self, sp: SharePartition, offset: int, state_epoch: int) -> None:
        """An administrative start offset (AlterShareGroupOffsets, InitializeShareGroupState):
        nothing in flight, the state written afresh at `state_epoch`."""
        for r in sp.records.values():
            self.unlock(r)
        sp.records.clear()
        sp.start_offset = sp.next_offset = offset
        write_state(self.cluster, sp, state_epoch=state_epoch)

    def acquire(self, sp: SharePartition, p: Partition, member_id: str, max_records: int,
                strict: bool, max_bytes: int = 2**31 - 1) -> list[tuple[int, int, int]]:
        """Lock for the member up to max_records records of the batches that fit in max_bytes
        (at least one batch), as Kafka acquires only what the fetch returns: AVAILABLE ones
        first, then new ones (whole batches unless `strict`); (first, last, delivery count)
        ranges. Under read_committed, records of aborted transactions are archived, never
        delivered (SharePartition's filterAbortedTransactionalAcquiredRecords)."""
        self._initialized(sp, p)
        gid = sp.group_id
        max_locks = group_configs.value(self.cluster, gid, "share.partition.max.record.locks")
        read_committed = group_configs.overrides(self.cluster, gid).get(
            "share.isolation.level", group_configs.default(self.cluster, "share.isolation.level")) == "read_committed"
        upper = producer_state.last_stable_offset(self.cluster, p) if read_committed else p.high_watermark
        batches: set[int] = set()   # the base offsets of the batches the fetch returns
        size = 0

        def fits(b: Batch) -> bool:
            nonlocal size
            if b.base_offset in batches:
                return True
            if batches and size + len(b.data) > max_bytes:
                return False
            batches.add(b.base_offset)
            size += len(b.data)
            return True

        taken: list[int] = []
        for offset in sorted(o for o, r in sp.records.items() if r.state == AVAILABLE):
            if len(taken) >= max_records or not fits(p.batches[log.batch_index(p, offset)]):
                break
            taken.append(offset)
        aborted = producer_state.aborted_between(self.cluster, p, sp.next_offset, upper) if read_committed else []
        if len(taken) < max_records:
            for b in p.batches[log.batch_index(p, sp.next_offset):]:
                if b.last_offset >= upper or len(taken) >= max_records \
                        or sp.next_offset - sp.start_offset >= max_locks:
                    break
                first = max(b.base_offset, sp.next_offset)
                h = log.header(b.data)
                if h.control or (h.transactional and any(a.producer_id == h.producer_id and a.first_offset
                                                         <= b.base_offset <= a.last_offset for a in aborted)):
                    for offset in range(first, b.last_offset + 1):   # markers, aborted records: never delivered
                        sp.records[offset] = InFlight(ARCHIVED)
                    sp.next_offset = b.last_offset + 1
                    continue
                if not fits(b):
                    break
                last = b.last_offset if not strict else min(b.last_offset, first + max_records - len(taken) - 1)
                for offset in range(first, last + 1):
                    sp.records[offset] = InFlight(AVAILABLE)
                    taken.append(offset)
                sp.next_offset = last + 1
        lock_ms = group_configs.value(self.cluster, gid, "share.record.lock.duration.ms")
        loop = asyncio.get_running_loop()
        ranges: list[tuple[int, int, int]] = []
        for offset in sorted(taken):
            r = sp.records[offset]
            r.state, r.member_id = ACQUIRED, member_id
            r.delivery_count += 1
            r.lock = loop.call_later(lock_ms / 1000, self._lock_expired, sp, offset, r.delivery_count)
            if ranges and ranges[-1][1] == offset - 1 and ranges[-1][2] == r.delivery_count:
                ranges[-1] = (ranges[-1][0], offset, r.delivery_count)
            else:
                ranges.append((offset, offset, r.delivery_count))
        sp.advance()
        return ranges

    def _lock_expired(self, sp: SharePartition, offset: int, delivery_count: int) -> None:
        r = sp.records.get(offset)
        if r is None or r.state != ACQUIRED or r.delivery_count != delivery_count:
            return
        r.lock = None
        self._release(sp, r)
        self._write(sp)
        sp.advance()
        log.notify_progress(self.cluster)   # a waiting ShareFetch may take it now

    def _release(self, sp: SharePartition, r: InFlight) -> None:
        limit = group_configs.value(self.cluster, sp.group_id, "share.delivery.count.limit")
        self.unlock(r)
        r.state = ARCHIVED if r.delivery_count >= limit else AVAILABLE
        r.member_id = None

    @staticmethod
    def unlock(r: InFlight) -> None:
        if r.lock is not None:
            r.lock.cancel()
            r.lock = None

    def acknowledge(self, sp: SharePartition, member_id: str, batches: list[tuple[int, int, list[int]]]) -> int:
        """Apply a member's acknowledgements (first, last, types: one for all or one per offset);
        INVALID_RECORD_STATE when a record is not acquired by this member (nothing applied)."""
        changes: list[tuple[InFlight, int]] = []
        for first, last, types in batches:
            if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
                return ErrorCode.invalid_request
            for k, offset in enumerate(range(first, last + 1)):
                ack = types[0] if len(types) == 1 else types[k]
                r = sp.records.get(offset)
                if ack not in (*ACK_STATE, RENEW):
                    return ErrorCode.invalid_request
                if r is None or r.state != ACQUIRED or r.member_id != member_id:
                    return ErrorCode.invalid_record_state
                changes.append((r, ack))
        lock_ms = group_configs.value(self.cluster, sp.group_id, "share.record.lock.duration.ms")
        for r, ack in changes:
            if ack == RENEW:    # KIP-1222: keep the record, lock it afresh
                self.unlock(r)
                offset = next(o for o, x in sp.records.items() if x is r)
                r.lock = asyncio.get_running_loop().call_later(lock_ms / 1000, self._lock_expired, sp, offset,
                                                               r.delivery_count)
            elif ack == RELEASE:
                self._release(sp, r)
            else:
                self.unlock(r)
                r.state, r.member_id = ACK_STATE[ack], None
        self._write(sp)
        sp.advance()
        if any(ack == RELEASE for _, ack in changes):
            log.notify_progress(self.cluster)
        return 0

    def release_member(self, group_id: str, member_id: str,
                       partitions: list[tuple[uuid.UUID, int]] | None = None) -> None:
        """A member left (every partition) or closed its share session on one broker (that
        session's partitions): its acquired records there go back."""
        released = False
        wanted = None if partitions is None else set(partitions)
        for (gid, tid, index), sp in self.table.items():
            if gid != group_id or (wanted is not None and (tid, index) not in wanted):
                continue
            mine = [r for r in sp.records.values() if r.state == ACQUIRED and r.member_id == member_id]
            for r in mine:
                self._release(sp, r)
            if mine:
                released = True
                self._write(sp)
                sp.advance()
        if released:
            log.notify_progress(self.cluster)

    def read(self, p: Partition, ranges: list[tuple[int, int, int]], max_bytes: int) -> bytes:
        """The whole batches holding the acquired offsets, each once, in offset order."""
        out: list[bytes] = []
        seen: set[int] = set()
        size = 0
        for first, last, _ in ranges:
            for b in p.batches[log.batch_index(p, first):]:
                if b.base_offset > last:
                    break
                if b.base_offset not in seen and (size + len(b.data) <= max_bytes or not out):
                    seen.add(b.base_offset)
                    out.append(b.data)
                    size += len(b.data)
        return b"".join(out)

    def delete_group(self, group_id: str, topic_ids: set[uuid.UUID] | None = None) -> None:
        """The share-partitions' state deleted: their tombstones (replay drops them)."""
        replay.apply_all(self.cluster, [records.ShareSnapshotRecord(*key, None) for key in self.table
                                        if key[0] == group_id and (topic_ids is None or key[1] in topic_ids)])

    @staticmethod
    def lag(sp: SharePartition, p: Partition) -> int:
        """Kafka's share lag, from the written state: the high watermark less the start offset
        less the records above it done with; -1 before any state was written."""
        if sp.written_start < 0 or sp.written_done < 0:
            return -1
        return p.high_watermark - sp.written_start - sp.written_done


# -- the group coordinator's part ------------------------------------------------------------------


class Coordinator(modern_groups.Coordinator):
    """Share group operations for one request, as the consumer coordinator's: each computes the
    group's next state on a copy and returns the records that make it (or writes them itself,
    from a timer); the group changes only when they are replayed. Timers run on the loop."""

    kind = "share"
    group_class = ShareGroup

    def _group_to_join(self, group_id: str) -> ShareGroup:
        """A copy of the group to join, or a new one."""
        g = self.groups.get(group_id)
        if isinstance(g, ShareGroup):
            return self._draft(g)
        if g is not None:
            raise GroupError(ErrorCode.group_id_not_found, f"Group {group_id} is not a share group.")
        return ShareGroup(group_id)

    def existing_or_new(self, group_id: str) -> ShareGroup:
        """The group, written first when there is none (AlterShareGroupOffsets makes one)."""
        self._write(self.groups.get(group_id), self._group_to_join(group_id))
        return self.group(group_id)

    def heartbeat(self, group_id: str, member_id: str, epoch: int, rack_id: str | None, client_id: str,
                  client_host: str, names: list[str] | None) -> ControllerResult[dict]:
        if epoch == LEAVE_EPOCH:
            live = self.group(group_id)
            gone = live.members.get(member_id)
            if gone is None:
                raise GroupError(ErrorCode.unknown_member_id,
                                 f"Member {member_id} is not a member of group {group_id}.")
            return ControllerResult(self._fenced(live, gone),
                                    {"error_code": 0, "member_id": member_id, "member_epoch": LEAVE_EPOCH})
        g = self._group_to_join(group_id) if epoch == 0 else self._draft(self.group(group_id))
        max_size = int(configs.broker_value(self.cluster, None, "group.share.max.size") or 200)
        if len(g.members) >= max_size and member_id not in g.members:
            raise GroupError(ErrorCode.group_max_size_reached,
                             f"The share group has reached its maximum capacity of {max_size} members.")
        m = g.members.get(member_id)
        if m is None:
            if epoch != 0:
                raise GroupError(ErrorCode.unknown_member_id,
                                 f"Member {member_id} is not a member of group {group_id}.")
            m = Member(member_id)
        elif epoch > m.epoch or (0 < epoch < m.epoch and epoch != m.previous_epoch):
            which = "greater" if epoch > m.epoch else "smaller"
            raise GroupError(ErrorCode.fenced_member_epoch,
                             f"The share group member has a {which} member epoch ({epoch}) than the one known by "
                             f"the group coordinator ({m.epoch}). The member must abandon all its partitions and rejoin.")
        before = m.topic_names
        if rack_id is not None:
            m.rack_id = rack_id
        if names is not None:
            m.topic_names = tuple(sorted(names))
        m.client_id, m.client_host = client_id, client_host
        old = {t: set(ps) for t, ps in m.assigned.items()}
        if member_id not in g.members:
            g.members[member_id] = m
        metadata = self._metadata(g)
        if m.topic_names != before or metadata != g.metadata or epoch == 0 and m.epoch == 0 \
                or (g.assignment_epoch >= g.epoch and self._initialized_unassigned(g)):
            g.epoch += 1
            g.metadata = metadata
        self._maybe_assign(g)
        self._reconcile(g, m)
        self._schedule_session(g, m)
        self._maybe_initialize(g)
        answer: dict = {"error_code": 0, "member_id": m.member_id, "member_epoch": m.epoch,
                        "heartbeat_interval": group_configs.value(self.cluster, group_id, "share.heartbeat.interval.ms")}
        if epoch == 0 or names is not None or old != m.assigned:
            answer["assignment"] = {"topic_partitions": [
                {"topic_id": t, "partitions": sorted(ps)} for t, ps in m.assigned.items()]}
        return ControllerResult(self._changes(self.groups.get(group_id), g), answer)

    def _assign(self, g: ShareGroup) -> None:
        """The simple assignor over the partitions whose share state is initialized."""
        ready = self.initialized(g.group_id)
        eligible = {i: [(g.metadata[t][0], p) for t in m.topic_names if t in g.metadata
                        for p in range(g.metadata[t][1]) if p in ready.get(g.metadata[t][0], ())]
                    for i, m in g.members.items()}
        g.targets = simple_assign(g.members, eligible, {i: g.targets.get(i, {}) for i in g.members})
        g.targets = {i: {t: ps for t, ps in tps.items() if ps} for i, tps in g.targets.items()}
        g.assignment_epoch, g.assignment_time_ms = g.epoch, now_ms()

    # the share state of subscribed topics ---------------------------------------------------------

    def initialized(self, group_id: str) -> dict[uuid.UUID, set[int]]:
        """The partitions whose share state the share coordinator holds, by topic id."""
        out: dict[uuid.UUID, set[int]] = {}
        for gid, tid, p in share_partitions(self.cluster):
            if gid == group_id:
                out.setdefault(tid, set()).add(p)
        return out

    def _initialized_unassigned(self, g: ShareGroup) -> bool:
        """Kafka's initializedAssignmentPending: a subscribed topic's initialized partitions are
        not what the target assignment gives out."""
        if not g.members:
            return False
        assigned: dict[uuid.UUID, set[int]] = {}
        for tps in g.targets.values():
            for t, ps in tps.items():
                assigned.setdefault(t, set()).update(ps)
        subscribed = {tid for tid, _ in g.metadata.values()}
        return any(assigned.get(t) != ps for t, ps in self.initialized(g.group_id).items() if t in subscribed)

    def _maybe_initialize(self, g: ShareGroup) -> None:
        """As Kafka's group coordinator does after a heartbeat: ask the share coordinator to
        initialize the state of subscribed partitions that have none (InitializeShareGroupState at
        the group epoch, start offset -1: chosen at the first fetch). It answers after this
        heartbeat; a later heartbeat sees it and gives the partitions out."""
        ready = self.initialized(g.group_id)
        missing = {tid: set(range(n)) - ready.get(tid, set()) for tid, n in g.metadata.values()}
        initializing = self.cluster.runtime.share_initializing.setdefault(g.group_id, set())
        missing = {tid: ps for tid, ps in missing.items() if ps and tid not in initializing}
        if missing:
            initializing |= set(missing)
            asyncio.get_running_loop().call_soon(self._initialize, g.group_id, missing, g.epoch)

    def _initialize(self, group_id: str, partitions: dict[uuid.UUID, set[int]], epoch: int) -> None:
        self.cluster.runtime.share_initializing.get(group_id, set()).difference_update(partitions)
        g = self._live(group_id)
        if g is None:
            return
        ensure_state_topic(self.cluster)   # Kafka's persister finds the share coordinator: the topic appears
        parts = Partitions(self.cluster)
        for tid, ps in partitions.items():
            for p in ps:
                sp = parts.get(g.group_id, tid, p)
                assert sp is not None, "get(create=True) makes one"
                write_state(self.cluster, sp, state_epoch=max(sp.state_epoch, epoch))

    def _reconcile(self, g: ShareGroup, m: Member) -> None:
        """ShareGroupAssignmentBuilder: the member takes its target and the assignment epoch."""
        if m.epoch == g.assignment_epoch and m.member_id in g.targets:
            return
        m.previous_epoch, m.epoch = m.epoch, g.assignment_epoch
        m.assigned = {t: set(ps) for t, ps in g.targets.get(m.member_id, {}).items()}

    # A member that leaves (fence) keeps its share sessions on each broker until a final-epoch
    # request or the connection closes (ShareSessionCache), and its records stay acquired until
    # then (or their lock times out): the acknowledgements a closing consumer sends after leaving
    # still count.

    def resume(self) -> None:
        restore_in_flight(self.cluster)
        super().resume()

    # administration -------------------------------------------------------------------------------

    def state_topics(self, group_id: str) -> dict[uuid.UUID, list[SharePartition]]:
        """The group's initialized share-partitions by topic id."""
        out: dict[uuid.UUID, list[SharePartition]] = {}
        for (gid, tid, _), sp in sorted(share_partitions(self.cluster).items(), key=lambda kv: (str(kv[0][1]), kv[0][2])):
            if gid == group_id:
                out.setdefault(tid, []).append(sp)
        return out

    def delete(self, group_id: str) -> None:
        """After the classic coordinator's checks: the share state goes with the group."""
        Partitions(self.cluster).delete_group(group_id)
        for key in [k for k in sessions(self.cluster) if k[1] == group_id]:
            del sessions(self.cluster)[key]


# -- share sessions (per broker, as each broker keeps its own) ------------------------------------


@dataclass
class Session:
    epoch: int
    partitions: list[tuple[uuid.UUID, int]] = field(default_factory=list)
    connection: object = None   # the client connection it belongs to: it ends with it


def connection_closed(cluster: ClusterState, connection: object) -> None:
    """A client connection closed: its share sessions go, and their members' acquired records
    on the sessions' partitions go back (ShareSessionCache's ClientConnectionDisconnectListener,
    then SharePartitionManager.releaseSession)."""
    table = sessions(cluster)
    for key in [k for k, session in table.items() if session.connection is connection]:
        _, group_id, member_id = key
        Partitions(cluster).release_member(group_id, member_id, table.pop(key).partitions)


def sessions(cluster: ClusterState) -> dict[tuple[int, str, str], Session]:
    return cluster.runtime.share_sessions


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


# -- what --data-dir keeps -------------------------------------------------------------------------


def write_state(cluster: ClusterState, sp: SharePartition, state_epoch: int | None = None,
                leader_epoch: int | None = None) -> None:
    """Write the share-partition's state as the share coordinator keeps it (__share_group_state):
    its start offset (before `advance`, as Kafka's SharePartition writes) and the in-flight
    records above it, as a ShareSnapshotRecord or a ShareUpdateRecord of what changed; nothing
    when that is what was last written. Replaying it is what changes the written state."""
    _written(cluster, sp, records.ShareSnapshotValue(
        sp.state_epoch if state_epoch is None else state_epoch, sp.leader_epoch if leader_epoch is None else leader_epoch,
        sp.start_offset, _batches(b for b in sp.state_batches() if b["last_offset"] >= sp.start_offset)))


def write_leader_epoch(cluster: ClusterState, sp: SharePartition, leader_epoch: int) -> None:
    """A ReadShareGroupState's leader epoch kept: the written state with it, nothing else."""
    _written(cluster, sp, records.ShareSnapshotValue(sp.state_epoch, leader_epoch, sp.written_start,
                                                     _batches(sp.written_batches)))


def _batches(batches: Iterable[dict]) -> tuple[records.StateBatch, ...]:
    return tuple(records.StateBatch(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
                 for b in batches)


def _written(cluster: ClusterState, sp: SharePartition, value: records.ShareSnapshotValue) -> None:
    from kafka_shell.sandbox import group_state  # it imports this module
    record = group_state.share_state_record(cluster, records.ShareSnapshotRecord(sp.group_id, sp.topic_id,
                                                                                 sp.partition, value))
    if record is not None:
        replay.apply(cluster, record)


def restore_in_flight(cluster: ClusterState) -> None:
    """The share-partitions' records as the share coordinator has them written, when a sandbox
    serves what --data-dir brought back: from the start offset, the written record states (what
    was acquired is available again: a lock does not survive its leader)."""
    for sp in share_partitions(cluster).values():
        sp.records.clear()
        sp.start_offset = sp.next_offset = sp.written_start
        for b in sp.written_batches:
            sp.put_states(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"],
                          high_watermark(cluster, sp.topic_id, sp.partition))
        sp.advance()
