"""KIP-848 consumer groups of the sandbox, after Kafka 4.4's GroupMetadataManager, ConsumerGroup,
ConsumerGroupMember, CurrentAssignmentBuilder and the uniform and range assignors.

A member heartbeats (ConsumerGroupHeartbeat); a change of its subscription (topic names, a regex,
the server assignor) or of the subscribed topics' partitions bumps the group epoch; the server
assignor then computes the target assignment of every member for that epoch (at most once per
`consumer.assignment.interval.ms`, as Kafka 4.4 does); each member reconciles towards its target:
a partition another member still owns (or has yet to revoke) is assigned only once released, so a
partition is revoked before it is assigned elsewhere. Member epochs fence zombies
(FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID); a member that does not heartbeat within the session
timeout, or does not revoke within its rebalance timeout, is fenced and its partitions go to the
others. Static members (instance id) keep their target while away after a -2 leave.

Groups share `groups.all_groups(cluster)` with classic groups (one group id, one type, as in
Kafka), and their committed offsets live in the same `offsets` table, so OffsetFetch, the
journal and transactions see them alike. Online migration between the classic and the consumer
protocol of a group with members is not done (docs/sandbox.md); an empty group of one type is
replaced by the other, its offsets kept, as Kafka does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import configs, group_configs, modern_groups
from kafka_shell.sandbox import classic_groups as classic
from kafka_shell.sandbox.modern_groups import GroupError
from kafka_shell.sandbox.model import ClusterState, now_ms
from kafka_shell.sandbox.records import ControllerResult
from kafka_shell.base.regex import compile_kafka_regex

EMPTY, ASSIGNING, RECONCILING, STABLE, DEAD = "Empty", "Assigning", "Reconciling", "Stable", "Dead"
LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2
REGEX_BATCH_REFRESH_MIN_INTERVAL_MS = 10_000   # GroupMetadataManager's
# A member's reconciliation state (Kafka's MemberState).
M_STABLE, M_UNREVOKED, M_UNRELEASED, M_UNKNOWN = "STABLE", "UNREVOKED_PARTITIONS", "UNRELEASED_PARTITIONS", "UNKNOWN"
MEMBER_TYPE_CONSUMER = 1  # ConsumerGroupDescribe's member type: 0 classic, 1 consumer protocol

TopicPartitions = dict[uuid.UUID, set[int]]
Owned = dict[uuid.UUID, dict[int, int]]  # topic id -> partition -> the epoch it was assigned in


@dataclass
class Member:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topic_names: tuple[str, ...] = ()
    topic_regex: str | None = None
    server_assignor: str | None = None
    epoch: int = 0
    previous_epoch: int = 0
    state: str = M_STABLE
    assigned: Owned = field(default_factory=dict)
    revoking: Owned = field(default_factory=dict)

    def reconciled_to(self, epoch: int) -> bool:
        return self.state == M_STABLE and self.epoch == epoch


@dataclass
class Regexes:
    """A group's regexes as last resolved (Kafka's ResolvedRegularExpression), when, and the
    metadata generation they were resolved against. Runtime only (`ClusterState.runtime`): a
    sandbox that serves again resolves them before any heartbeat."""
    resolved: dict[str, frozenset[str]] = field(default_factory=dict)
    resolved_ms: int = 0
    generation: int = -1


def regexes(cluster: ClusterState, group_id: str) -> Regexes:
    return cluster.runtime.group_regexes.setdefault(group_id, Regexes())


@dataclass
class ConsumerGroup:
    group_id: str
    epoch: int = 1            # Kafka 4.4 starts a group at epoch 1; the first join makes it 2
    assignment_epoch: int = 0
    assignment_time_ms: int = 0
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)   # instance id -> member id
    targets: dict[str, TopicPartitions] = field(default_factory=dict)
    metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)  # subscribed topic -> (id, partitions)
    offsets: dict[tuple[str, int], classic.CommittedOffset] = field(default_factory=dict)

    group_type = "consumer"
    protocol_type = "consumer"

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.epoch > self.assignment_epoch:
            return ASSIGNING
        if any(not m.reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return RECONCILING
        return STABLE

    def subscribed_topics(self, cluster: ClusterState) -> set[str]:
        out: set[str] = set()
        for m in self.members.values():
            out |= subscribed(cluster, self, m)
        return out

    def regexes(self) -> set[str]:
        return {m.topic_regex for m in self.members.values() if m.topic_regex}

    def preferred_assignor(self) -> str | None:
        """The server assignor most members ask for (Kafka's computePreferredServerAssignor)."""
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        return max(counts, key=lambda name: counts[name]) if counts else None


def subscribed(cluster: ClusterState, g: ConsumerGroup, m: Member) -> set[str]:
    """The topics a member subscribes to: its names, and those its regex matched when the
    group last resolved it (none before: Kafka resolves regexes asynchronously)."""
    resolved = cluster.runtime.group_regexes.get(g.group_id)
    return set(m.topic_names) | (resolved.resolved.get(m.topic_regex or "", frozenset()) if resolved else frozenset())


def matching(cluster: ClusterState, regex: str) -> frozenset[str]:
    """The existing topics a regex matches (Kafka resolves regexes with RE2J, whole names;
    Python's re is alike for usual patterns); none for a regex that does not compile."""
    try:
        pattern = compile_kafka_regex(regex)
    except ValueError:
        return frozenset()
    return frozenset(name for name, t in cluster.topics.items() if not t.internal and pattern.fullmatch(name))


def assignors(cluster: ClusterState) -> list[str]:
    value = configs.broker_value(cluster, None, "group.consumer.assignors") or "uniform,range"
    return [a.strip() for a in value.split(",") if a.strip()]


# -- the assignors --------------------------------------------------------------------------------


def uniform(members: dict[str, Member], subscriptions: dict[str, set[uuid.UUID]], partitions: dict[uuid.UUID, int],
            current: dict[str, TopicPartitions]) -> dict[str, TopicPartitions]:
    """Kafka's UniformAssignor: sticky and balanced. For members subscribed alike, its homogeneous
    builder (keep up to the quota of what each has, hand out the rest); otherwise each partition
    goes to its current owner while under quota, else to the least loaded subscriber."""
    ids = list(members)
    if not ids:
        return {}
    topics = sorted({t for s in subscriptions.values() for t in s}, key=str)
    if all(subscriptions[i] == subscriptions[ids[0]] for i in ids):
        total = sum(partitions.get(t, 0) for t in topics)
        quota, extra = divmod(total, len(ids))
        taken = {(t, p) for i in ids for t, ps in current.get(i, {}).items() for p in ps}
        free = [(t, p) for t in topics for p in range(partitions.get(t, 0)) if (t, p) not in taken]
        out: dict[str, TopicPartitions] = {}
        room: list[tuple[str, int]] = []
        for i in ids:
            left = quota + (1 if extra > 0 else 0)
            extra -= 1 if extra > 0 else 0
            kept: TopicPartitions = {}
            for t, ps in current.get(i, {}).items():
                for p in sorted(ps):
                    if t in subscriptions[i] and p < partitions.get(t, 0) and left > 0:
                        kept.setdefault(t, set()).add(p)
                        left -= 1
                    elif t in subscriptions[i] and p < partitions.get(t, 0):
                        free.append((t, p))
            out[i] = kept
            if left > 0:
                room.append((i, left))
        k = 0
        for i, left in room:
            for t, p in free[k:k + left]:
                out[i].setdefault(t, set()).add(p)
            k += left
        return out
    # Heterogeneous subscriptions: sticky under a per-member quota, then the least loaded.
    load = {i: 0 for i in ids}
    out = {i: {} for i in ids}
    owner = {(t, p): i for i in ids for t, ps in current.get(i, {}).items() for p in ps}
    for t in topics:
        subscribers = [i for i in ids if t in subscriptions[i]]
        for p in range(partitions.get(t, 0)):
            holder = owner.get((t, p))
            if holder not in subscribers:
                holder = min(subscribers, key=lambda i: (load[i], ids.index(i)))
            out[holder].setdefault(t, set()).add(p)
            load[holder] += 1
    return out


def range_assignor(members: dict[str, Member], subscriptions: dict[str, set[uuid.UUID]],
                   partitions: dict[uuid.UUID, int]) -> dict[str, TopicPartitions]:
    """Kafka's RangeAssignor: members ordered by instance id (static first), then member id; each
    topic's partitions cut into contiguous ranges among its subscribers."""
    ordered = sorted(members.values(), key=lambda m: (m.instance_id is None, m.instance_id or "", m.member_id))
    out: dict[str, TopicPartitions] = {m.member_id: {} for m in ordered}
    topics = {t for s in subscriptions.values() for t in s}
    for t in topics:
        subscribers = [m.member_id for m in ordered if t in subscriptions[m.member_id]]
        n = partitions.get(t, 0)
        quota, extra = divmod(n, len(subscribers))
        start = 0
        for i in subscribers:
            size = quota + (1 if extra > 0 else 0)
            extra -= 1 if extra > 0 else 0
            if size:
                out[i][t] = set(range(start, start + size))
            start += size
    return out


# -- the coordinator -----------------------------------------------------------------------------


class RevokingCoordinator(modern_groups.Coordinator):
    """The coordinators whose members revoke what they give up before it moves on (consumer and
    streams groups; share groups revoke nothing): a member that has not revoked within its
    rebalance timeout is fenced. Subclasses set `unrevoked`, their member state of one that has
    yet to revoke."""
    unrevoked: ClassVar[Any] = M_UNREVOKED

    def _schedule_rebalance(self, g: Any, m: Any) -> None:
        """While the member has partitions (tasks) to revoke, it must do so within its rebalance timeout."""
        key = (g.group_id, m.member_id, "rebalance")
        self.cancel_timer(key)
        if m.state == self.unrevoked and m.rebalance_timeout_ms > 0:
            self._schedule(key, m.rebalance_timeout_ms, self._revocation_overdue, g.group_id, m.member_id, m.epoch)

    def _revocation_overdue(self, group_id: str, member_id: str, epoch: int) -> None:
        g = self._live(group_id)
        m = g.members.get(member_id) if g is not None else None
        if m is not None and m.epoch == epoch:
            self.fence(g, m)


class Coordinator(RevokingCoordinator):
    """Consumer group operations for one request, as Kafka's GroupMetadataManager: each computes
    the group's next state on a copy (`_draft`) and returns the records that make it
    (`ControllerResult`, which the caller commits) or writes them itself (timers); the group
    changes only when they are replayed (group_state.replay_modern). Timers run on the loop."""

    kind = "consumer"
    group_class = ConsumerGroup

    def _group_to_join(self, group_id: str) -> ConsumerGroup:
        """A copy of the group to join, or a new one."""
        g = self.groups.get(group_id)
        if isinstance(g, ConsumerGroup):
            return self._draft(g)
        if g is not None and (g.members or g.state != classic.EMPTY or g.group_type == "share"):
            # Kafka would convert a classic group of consumers (online migration): not done here.
            raise GroupError(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.")
        new = ConsumerGroup(group_id)
        if g is not None:   # an empty classic group gives way; its offsets stay
            new.offsets = g.offsets
        return new

    # ConsumerGroupHeartbeat ---------------------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, epoch: int, instance_id: str | None,
                  rack_id: str | None, rebalance_ms: int, client_id: str, client_host: str,
                  names: list[str] | None, regex: str | None, assignor: str | None,
                  owned: list[tuple[uuid.UUID, list[int]]] | None) -> ControllerResult[dict]:
        if epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(group_id, member_id, epoch, instance_id)
        joining = epoch == 0
        if assignor is not None and assignor not in assignors(self.cluster):
            raise GroupError(ErrorCode.unsupported_assignor,
                             f"ServerAssignor {assignor} is not supported. Supported assignors: "
                             f"{', '.join(assignors(self.cluster))}.")
        g = self._group_to_join(group_id) if joining else self._draft(self.group(group_id))
        max_size = int(configs.broker_value(self.cluster, None, "group.consumer.max.size") or 2**31 - 1)
        if len(g.members) >= max_size and member_id not in g.members:
            raise GroupError(ErrorCode.group_max_size_reached,
                             f"The consumer group has reached its maximum capacity of {max_size} members.")
        m = self._member(g, member_id, epoch, instance_id, owned)
        before = (set(m.topic_names), m.topic_regex, m.server_assignor)
        if instance_id is not None:
            m.instance_id = instance_id
        if rack_id is not None:
            m.rack_id = rack_id
        if rebalance_ms != -1:
            m.rebalance_timeout_ms = rebalance_ms
        if assignor is not None:
            m.server_assignor = assignor
        if names is not None:
            m.topic_names = tuple(names)
        if regex is not None:
            m.topic_regex = regex or None
        m.client_id, m.client_host = client_id, client_host
        old_assigned = {t: dict(ps) for t, ps in m.assigned.items()}
        if g.members.get(m.member_id) is not m:
            self._add(g, m)
        self._maybe_resolve_regexes(g)
        metadata = self._metadata(g)
        # A new regex bumps the epoch once resolved (at once when another member has it).
        regex_resolved = m.topic_regex != before[1] and (
            not m.topic_regex or m.topic_regex in regexes(self.cluster, group_id).resolved)
        if (set(m.topic_names), m.server_assignor) != (before[0], before[2]) or regex_resolved \
                or metadata != g.metadata:
            g.epoch += 1
            g.metadata = metadata
        self._maybe_assign(g)
        self._reconcile(g, m, owned)
        self._schedule_session(g, m)
        full = joining or (rebalance_ms != -1 and names is not None and owned is not None)
        answer: dict = {"error_code": 0, "member_id": m.member_id, "member_epoch": m.epoch,
                        "heartbeat_interval": group_configs.value(self.cluster, group_id,
                                                                  "consumer.heartbeat.interval.ms")}
        if full or old_assigned != m.assigned:
            answer["assignment"] = {"topic_partitions": [
                {"topic_id": t, "partitions": sorted(ps)} for t, ps in m.assigned.items()]}
        return ControllerResult(self._changes(self.groups.get(group_id), g), answer)

    def _member(self, g: ConsumerGroup, member_id: str, epoch: int, instance_id: str | None,
                owned: list[tuple[uuid.UUID, list[int]]] | None) -> Member:
        """The member the heartbeat is from (getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember)."""
        joining = epoch == 0
        if instance_id is None:
            m = g.members.get(member_id)
            if m is None:
                if not joining:
                    raise GroupError(ErrorCode.unknown_member_id,
                                     f"Member {member_id} is not a member of group {g.group_id}.")
                return Member(member_id)
            _check_epoch(m, epoch, owned)
            return m
        existing = g.members.get(g.static_members.get(instance_id, ""))
        if joining:
            if existing is None:
                return g.members.get(member_id) or Member(member_id, instance_id)
            if existing.epoch != STATIC_LEAVE_EPOCH:
                raise GroupError(ErrorCode.unreleased_instance_id,
                                 f"Static member {member_id} with instance id {instance_id} cannot join the "
                                 f"group because the instance id is owned by {existing.member_id} member.")
            # The instance comes back under a new member id and takes its predecessor's place.
            self._remove(g, existing, keep_target=True)
            new = Member(member_id, instance_id, existing.rack_id, existing.client_id, existing.client_host,
                         existing.rebalance_timeout_ms, existing.topic_names, existing.topic_regex,
                         existing.server_assignor)
            new.assigned = existing.assigned
            g.targets[member_id] = g.targets.pop(existing.member_id, {})
            return new
        _check_instance(existing, member_id, instance_id)
        assert existing is not None, "_check_instance refuses an unknown instance"
        _check_epoch(existing, epoch, owned)
        return existing

    def _add(self, g: ConsumerGroup, m: Member) -> None:
        g.members[m.member_id] = m
        if m.instance_id is not None:
            g.static_members[m.instance_id] = m.member_id

    # regular expressions (GroupMetadataManager.maybeUpdateRegularExpressions) --------------------

    def _maybe_resolve_regexes(self, g: ConsumerGroup) -> None:
        """Resolve the members' regexes after this heartbeat, as Kafka's coordinator executor
        does: at once for a regex not resolved yet (the heartbeat that brings it is answered
        with its literal topics only), else at most every 10 s once topics changed, and every
        group.consumer.regex.refresh.interval.ms."""
        in_use = g.regexes()
        known = regexes(self.cluster, g.group_id)
        for gone in set(known.resolved) - in_use:
            del known.resolved[gone]
        key = (g.group_id, "", "regexes")
        if not in_use or key in self.cluster.runtime.group_timers:
            return
        since = now_ms() - known.resolved_ms
        interval = int(configs.broker_value(self.cluster, None, "group.consumer.regex.refresh.interval.ms") or 600000)
        stale = since >= REGEX_BATCH_REFRESH_MIN_INTERVAL_MS and (
            known.generation < self.cluster.generation or since >= interval)
        if in_use - set(known.resolved) or stale:
            self._schedule(key, 0, self._resolve_regexes, g.group_id)

    def _resolved_now(self, g: ConsumerGroup) -> None:
        known = regexes(self.cluster, g.group_id)
        known.resolved = {r: matching(self.cluster, r) for r in g.regexes()}
        known.resolved_ms, known.generation = now_ms(), self.cluster.generation

    def _resolve_regexes(self, group_id: str) -> None:
        g = self._live(group_id)
        if g is None:
            return
        self._resolved_now(g)
        new = self._draft(g)
        metadata = self._metadata(new)
        if metadata != new.metadata:   # the members reconcile towards the new target at their next heartbeat
            new.epoch += 1
            new.metadata = metadata
            self._maybe_assign(new)
            self._write(g, new)

    def resume(self) -> None:
        """Regexes of groups brought back by --data-dir are resolved before any heartbeat."""
        for g in self.groups.values():
            if isinstance(g, ConsumerGroup):
                self._resolved_now(g)
        super().resume()

    # target assignment -----------------------------------------------------------------------------

    def _assign(self, g: ConsumerGroup) -> None:
        ids = {name: tid for name, (tid, _) in g.metadata.items()}
        partitions = {tid: n for tid, n in g.metadata.values()}
        subscriptions = {i: {ids[t] for t in subscribed(self.cluster, g, m) if t in ids} for i, m in g.members.items()}
        name = g.preferred_assignor() or assignors(self.cluster)[0]
        if name == "range":
            targets = range_assignor(g.members, subscriptions, partitions)
        else:
            current = {i: g.targets.get(i, {}) for i in g.members}
            targets = uniform(g.members, subscriptions, partitions, current)
        # Static members away after a -2 leave keep their place: their target stays theirs.
        g.targets = {i: {t: ps for t, ps in targets.get(i, {}).items() if ps} for i in g.members}
        g.assignment_epoch, g.assignment_time_ms = g.epoch, now_ms()

    # reconciliation (CurrentAssignmentBuilder) ----------------------------------------------------

    def _reconcile(self, g: ConsumerGroup, m: Member, owned: list[tuple[uuid.UUID, list[int]]] | None) -> None:
        if m.reconciled_to(g.assignment_epoch) or m.epoch == STATIC_LEAVE_EPOCH:
            return
        target = g.targets.get(m.member_id, {})
        before = (m.epoch, m.state)
        if m.state == M_STABLE:
            if m.epoch != g.assignment_epoch:
                self._next(g, m, m.epoch, target, owned)
        elif m.state == M_UNREVOKED:
            if not _owns_any(owned, m.revoking):
                self._next(g, m, m.epoch + 1, target, owned)
        elif m.state == M_UNRELEASED:
            self._next(g, m, m.epoch, target, owned)
        if (m.epoch, m.state) != before or m.state != M_UNREVOKED:
            self._schedule_rebalance(g, m)

    def _next(self, g: ConsumerGroup, m: Member, epoch: int, target: TopicPartitions,
              owned: list[tuple[uuid.UUID, list[int]]] | None) -> None:
        """Kafka's computeNextAssignment: keep what stays, revoke what goes, take what is free."""
        taken = {(t, p) for other in g.members.values() if other is not m
                 for part in (other.assigned, other.revoking) for t, ps in part.items() for p in ps}
        assigned: Owned = {}
        revoking: Owned = {}
        pending: TopicPartitions = {}
        unreleased = False
        for t in set(target) | set(m.assigned):
            mine = m.assigned.get(t, {})
            keep = {p: e for p, e in mine.items() if p in target.get(t, ())}
            gone = {p: e for p, e in mine.items() if p not in keep}
            wanted = {p for p in target.get(t, ()) if p not in keep}
            free = {p for p in wanted if (t, p) not in taken}
            unreleased = unreleased or free != wanted
            if keep:
                assigned[t] = keep
            if gone:
                revoking[t] = gone
            if free:
                pending[t] = free
        if revoking and _owns_any(owned, revoking):
            m.previous_epoch, m.epoch = m.epoch, epoch
            m.state, m.assigned, m.revoking = M_UNREVOKED, assigned, revoking
            return
        for t, ps in pending.items():
            assigned.setdefault(t, {}).update({p: g.assignment_epoch for p in ps})
        m.previous_epoch, m.epoch = m.epoch, g.assignment_epoch
        m.state = M_UNRELEASED if unreleased else M_STABLE
        m.assigned, m.revoking = assigned, {}

    # leaving and fencing ------------------------------------------------------------------------------

    def _leave(self, group_id: str, member_id: str, epoch: int, instance_id: str | None) -> ControllerResult[dict]:
        g = self.group(group_id)
        if instance_id is None:
            m = g.members.get(member_id)
            if m is None:
                raise GroupError(ErrorCode.unknown_member_id, f"Member {member_id} is not a member of group {group_id}.")
        else:
            m = g.members.get(g.static_members.get(instance_id, ""))
            _check_instance(m, member_id, instance_id)
            assert m is not None, "_check_instance refuses an unknown instance"
            if epoch == STATIC_LEAVE_EPOCH:
                # Away for a while: the member keeps its place and target until its session ends.
                new = self._draft(g)
                away = new.members[m.member_id]
                away.epoch, away.revoking = STATIC_LEAVE_EPOCH, {}
                return ControllerResult(self._changes(g, new), {
                    "error_code": 0, "member_id": m.member_id, "member_epoch": STATIC_LEAVE_EPOCH})
        return ControllerResult(self._fenced(g, m), {"error_code": 0, "member_id": member_id, "member_epoch": epoch})

    def _remove(self, g: ConsumerGroup, m: Member, keep_target: bool = False) -> None:
        self.cancel_member_timers(g.group_id, m.member_id)
        g.members.pop(m.member_id, None)
        if m.instance_id is not None and g.static_members.get(m.instance_id) == m.member_id:
            del g.static_members[m.instance_id]
        if not keep_target:
            g.targets.pop(m.member_id, None)

    # offsets and administration -------------------------------------------------------------------------

    def commit_error(self, g: ConsumerGroup, member_id: str, epoch: int, version: int,
                     transactional: bool = False) -> Callable[[str, int], int] | int:
        """Kafka 4.4's ConsumerGroup.validateOffsetCommit: 0 (commit), an error code, or a check
        per partition when the member commits with an older epoch than its own."""
        if epoch < 0 and not g.members:
            return 0
        m = g.members.get(member_id)
        if m is None:
            return ErrorCode.unknown_member_id
        if not transactional and version < 9:
            return ErrorCode.unsupported_version
        if epoch == m.epoch:
            return 0
        if epoch > m.epoch:
            return ErrorCode.stale_member_epoch

        def check(topic: str, partition: int) -> int:
            t = self.cluster.topics.get(topic)
            tid = t.id if t is not None else None
            assigned = m.assigned.get(tid, {}).get(partition) if tid else None
            if assigned is None:
                assigned = m.revoking.get(tid, {}).get(partition) if tid else None
            if assigned is None or epoch < assigned:
                return ErrorCode.stale_member_epoch
            return 0
        return check

    def fetch_error(self, g: ConsumerGroup, member_id: str | None, epoch: int) -> int:
        if member_id is None and epoch < 0:
            return 0
        m = g.members.get(member_id or "")
        if m is None:
            return ErrorCode.unknown_member_id
        return 0 if epoch == m.epoch else ErrorCode.stale_member_epoch


def _check_instance(existing: Member | None, member_id: str, instance_id: str) -> None:
    """Kafka's throwIfStaticMemberIsUnknown and throwIfInstanceIdIsFenced."""
    if existing is None:
        raise GroupError(ErrorCode.unknown_member_id, f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise GroupError(ErrorCode.fenced_instance_id, f"Static member {member_id} with instance id {instance_id} "
                                                       f"was fenced by member {existing.member_id}.")


def _check_epoch(m: Member, epoch: int, owned: list[tuple[uuid.UUID, list[int]]] | None) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid (epoch 0 rejoins are let through)."""
    if epoch == 0:
        return
    if epoch > m.epoch:
        raise GroupError(ErrorCode.fenced_member_epoch,
                         f"The consumer group member has a greater member epoch ({epoch}) than the one known by "
                         f"the group coordinator ({m.epoch}). The member must abandon all its partitions and rejoin.")
    if epoch < m.epoch and (epoch != m.previous_epoch or not _subset(owned, m.assigned)):
        raise GroupError(ErrorCode.fenced_member_epoch,
                         f"The consumer group member has a smaller member epoch ({epoch}) than the one known by "
                         f"the group coordinator ({m.epoch}). The member must abandon all its partitions and rejoin.")


def _subset(owned: list[tuple[uuid.UUID, list[int]]] | None, assigned: Owned) -> bool:
    if owned is None:
        return False
    return all(t in assigned and all(p in assigned[t] for p in ps) for t, ps in owned)


def _owns_any(owned: list[tuple[uuid.UUID, list[int]]] | None, partitions: Owned) -> bool:
    """Whether the member still owns one of these partitions (None: it did not say, so it does)."""
    if owned is None:
        return True
    return any(p in partitions.get(t, {}) for t, ps in owned for p in ps)
