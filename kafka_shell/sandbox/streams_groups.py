"""Streams groups (KIP-1071) of the sandbox, after Kafka 4.4's GroupMetadataManager (its streams
part), StreamsGroup, InternalTopicManager, CurrentAssignmentBuilder and the sticky task assignor.

A Kafka Streams client heartbeats (StreamsGroupHeartbeat) with its topology when it joins. The
first topology initialises the group's; the coordinator then configures it against the cluster:
source topics must exist (else MISSING_SOURCE_TOPICS), the internal topics (repartition and
changelog) get their partition counts (a repartition topic's from the topics its writers read, a
changelog's from its subtopology's task count), and those that are missing are reported
(MISSING_INTERNAL_TOPICS) and created by the broker, as Kafka's does; until the topology is
configured the group is NotReady. A subtopology has one task per partition of its widest input.
The group epoch moves when a member joins, leaves or changes, when the topics move, when the
topology becomes ready, or when the assignment configs change; the target assignment of each
epoch (at most once per streams.assignment.interval.ms; a new group's first one only after
streams.initial.rebalance.delay.ms, ASSIGNMENT_DELAYED until then) gives each member active tasks, balanced and sticky, and
streams.num.standby.replicas standby tasks of the stateful subtopologies on other processes.
Members reconcile towards their target: an active task is revoked before it is given to
another member. Member epochs fence zombies; a member silent for streams.session.timeout.ms, or
slow to revoke within its rebalance timeout, is fenced.

Groups share `groups.all_groups(cluster)` with classic and consumer groups (one id, one type),
their offsets the same table. Differences from Kafka are listed in docs/sandbox.md.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import configs, group_configs, topic_lifecycle
from kafka_shell.sandbox import classic_groups as classic
from kafka_shell.sandbox.consumer_groups import GroupError, RevokingCoordinator
from kafka_shell.sandbox.model import ClusterState, now_ms
from kafka_shell.sandbox.records import ControllerResult

EMPTY, NOT_READY, ASSIGNING, RECONCILING, STABLE = "Empty", "NotReady", "Assigning", "Reconciling", "Stable"
LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2
M_STABLE, M_UNREVOKED, M_UNRELEASED = "STABLE", "UNREVOKED_TASKS", "UNRELEASED_TASKS"
# StreamsGroupHeartbeatResponse.Status codes (Kafka 4.4).
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS, \
    SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED = range(6)

Tasks = dict[str, set[int]]   # subtopology id -> partitions
Task = tuple[str, int]


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: int = 0              # 0: the coordinator decides
    replication_factor: int = 0      # 0: the broker's default
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    changelog_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple = ()

    def inputs(self) -> list[str]:
        return [*self.source_topics, *(t.name for t in self.repartition_source_topics)]


@dataclass(frozen=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...]


@dataclass
class Configured:
    """A topology configured against the cluster (Kafka's ConfiguredTopology)."""
    tasks: dict[str, int] | None                       # subtopology -> task count; None: not ready
    internal: dict[str, TopicInfo] = field(default_factory=dict)   # every internal topic, sized
    missing: dict[str, TopicInfo] = field(default_factory=dict)    # those to create
    status: tuple[int, str] | None = None


@dataclass
class Member:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    epoch: int = 0
    previous_epoch: int = 0
    state: str = M_STABLE
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)
    revoking: Tasks = field(default_factory=dict)

    def metadata(self) -> tuple:
        """What, when it changes, bumps the group epoch (hasStreamsMemberMetadataChanged)."""
        return (self.instance_id, self.rack_id, self.process_id, self.user_endpoint, self.client_tags,
                self.topology_epoch, self.rebalance_timeout_ms)


@dataclass
class Target:
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)


@dataclass
class StreamsGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    assignment_time_ms: int = 0
    topology: Topology | None = None
    configured: Configured | None = None   # the topology against the topics, set by replay (as Kafka's)
    validated_topology_epoch: int = -1
    metadata: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)   # topic -> (id, partitions)
    assignment_configs: dict[str, str] = field(default_factory=dict)
    members: dict[str, Member] = field(default_factory=dict)
    targets: dict[str, Target] = field(default_factory=dict)
    offsets: dict[tuple[str, int], classic.CommittedOffset] = field(default_factory=dict)

    group_type = "streams"
    protocol_type = "streams"

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.configured is None or self.configured.tasks is None:
            return NOT_READY
        if self.epoch > self.assignment_epoch:
            return ASSIGNING
        if any(m.state != M_STABLE or m.epoch != self.assignment_epoch for m in self.members.values()):
            return RECONCILING
        return STABLE

    def subscribed_topics(self, cluster: ClusterState) -> set[str]:
        """The topics the topology reads (OffsetDelete keeps their offsets while members are in)."""
        if self.topology is None or not self.members:
            return set()
        return {t for s in self.topology.subtopologies for t in s.inputs()}

    def active_owner(self, task: Task, but: Member) -> bool:
        return any(task[1] in part.get(task[0], ()) for m in self.members.values() if m is not but
                   for part in (m.active, m.revoking))


@dataclass
class Runtime:
    """What Kafka's StreamsGroup keeps in memory only (never in records): the epoch of the
    endpoint information the members were told, and the member that asked the application to
    shut down."""
    endpoint_epoch: int = 0
    shutdown_requested_by: str | None = None


def runtime(cluster: ClusterState, group_id: str) -> Runtime:
    return cluster.runtime.streams_groups.setdefault(group_id, Runtime())


# -- configuring a topology (InternalTopicManager) ------------------------------------------------


def configure(cluster: ClusterState, topology: Topology) -> Configured:
    missing_sources = sorted({t for s in topology.subtopologies for t in s.source_topics if t not in cluster.topics})
    if missing_sources:
        return Configured(None, status=(MISSING_SOURCE_TOPICS, f"Source topics {', '.join(missing_sources)} are missing."))

    def count(topic: str, decided: dict[str, int]) -> int | None:
        t = cluster.topics.get(topic)
        return len(t.partitions) if t is not None else decided.get(topic)

    decided: dict[str, int] = {}
    repartition = {t.name: t for s in topology.subtopologies for t in s.repartition_source_topics}
    decided.update({name: t.partitions for name, t in repartition.items() if t.partitions > 0})
    for _ in range(len(repartition) + 1):     # RepartitionTopics.setup: upstream first, to a fixed point
        for name in repartition:
            if name in decided:
                continue
            writers = [s for s in topology.subtopologies if name in s.repartition_sink_topics]
            counts = [c for s in writers for i in s.inputs() if (c := count(i, decided)) is not None]
            if counts:
                decided[name] = max(counts)
    tasks: dict[str, int] = {}
    for s in topology.subtopologies:
        counts = [c for i in s.inputs() if (c := count(i, decided)) is not None]
        if not counts:
            return Configured(None, status=(MISSING_SOURCE_TOPICS, f"Number of partitions of the inputs of "
                                                                   f"subtopology {s.subtopology_id} is unknown."))
        tasks[s.subtopology_id] = max(counts)
        for changelog in s.changelog_topics:    # ChangelogTopics.setup: one partition per task
            decided[changelog.name] = tasks[s.subtopology_id]
    internal = {t.name: TopicInfo(t.name, decided[t.name], t.replication_factor, t.configs)
                for s in sorted(topology.subtopologies, key=lambda s: s.subtopology_id)
                for t in (*s.repartition_source_topics, *s.changelog_topics)}
    missing = {}
    for name, info in internal.items():
        existing = cluster.topics.get(name)
        if existing is None:
            missing[name] = info
        elif len(existing.partitions) != info.partitions:
            return Configured(None, internal, status=(
                INCORRECTLY_PARTITIONED_TOPICS, f"Existing topic {name} has different number of partitions: "
                                                f"expected {info.partitions}, found {len(existing.partitions)}"))
    if missing:
        named = ", ".join(sorted(missing))   # Kafka names them in its HashMap's order
        return Configured(None, internal, missing, (MISSING_INTERNAL_TOPICS, f"Internal topics are missing: {named}"))
    return Configured(tasks, internal)


def create_internal_topics(cluster: ClusterState, missing: dict[str, TopicInfo]) -> None:
    """What Kafka's broker does with the topics a heartbeat reports missing (auto-creation with
    the topology's partitions, replication factor and configs)."""
    for info in missing.values():
        if info.name in cluster.topics:
            continue
        try:
            replicas, checked = topic_lifecycle.plan_topic(cluster, info.name, info.partitions,
                                                 info.replication_factor or -1,
                                                 topic_configs=dict(info.configs))
        except topic_lifecycle.AdminError:
            continue   # reported again at the next heartbeat, as Kafka's would be
        topic_lifecycle.create_topic(cluster, info.name, assignment=replicas, configs=checked)


# -- the sticky task assignor ---------------------------------------------------------------------


def assign(members: dict[str, Member], configured: Configured, stateful: set[str], standby_replicas: int,
           previous: dict[str, Target]) -> dict[str, Target]:
    """Active tasks balanced over the members, each kept where it was (the member's current or
    previous target) while that member is within its share; then `standby_replicas` standby
    copies of each stateful task on members of other processes, least loaded first, sticky too."""
    assert configured.tasks is not None
    ids = sorted(members)
    targets = {i: Target() for i in ids}
    if not ids:
        return targets
    every = [(s, p) for s in sorted(configured.tasks) for p in range(configured.tasks[s])]
    quota = -(-len(every) // len(ids))
    load = dict.fromkeys(ids, 0)
    owner: dict[Task, str] = {}

    def had(i: str, task: Task, kind: str) -> bool:
        """Whether member i holds the task of this kind now or in its previous target."""
        return any(task[1] in getattr(where, kind).get(task[0], ()) for where in (members[i], previous.get(i, Target())))

    for task in every:
        keep = next((i for i in ids if had(i, task, "active") and load[i] < quota), None)
        if keep is not None:
            owner[task], load[keep] = keep, load[keep] + 1
    for task in every:
        if task not in owner:
            i = min(ids, key=lambda m: (load[m], m))
            owner[task], load[i] = i, load[i] + 1
    for task, i in owner.items():
        targets[i].active.setdefault(task[0], set()).add(task[1])
    for task in (t for t in every if t[0] in stateful):
        holders = {owner[task]}
        for _ in range(standby_replicas):
            processes = {members[h].process_id for h in holders}
            candidates = [i for i in ids if i not in holders and members[i].process_id not in processes]
            if not candidates:
                break
            i = min(candidates, key=lambda m: (not had(m, task, "standby"), load[m], m))
            targets[i].standby.setdefault(task[0], set()).add(task[1])
            holders.add(i)
            load[i] += 1
    return targets


# -- the coordinator --------------------------------------------------------------------------------


def _tasks(items) -> Tasks:
    return {t.subtopology_id: set(t.partitions) for t in items or () if t.partitions}


def _same(a: Tasks, b: Tasks) -> bool:
    return {k: v for k, v in a.items() if v} == {k: v for k, v in b.items() if v}


class Coordinator(RevokingCoordinator):
    """Streams group operations for one request, as the consumer coordinator's: each computes
    the group's next state on a copy and returns the records that make it (or writes them
    itself, from a timer); the group changes only when they are replayed. Timers run on the loop."""
    kind = "streams"
    group_class = StreamsGroup
    members_subscribe = False
    unrevoked = M_UNREVOKED

    def group(self, group_id: str) -> StreamsGroup:
        g: StreamsGroup = super().group(group_id)
        return g

    def _group_to_join(self, group_id: str) -> StreamsGroup:
        """A copy of the group to join, or a new one."""
        g = self.groups.get(group_id)
        if isinstance(g, StreamsGroup):
            return self._draft(g)
        if g is not None and (g.members or g.state not in (classic.EMPTY, "Empty")):
            raise GroupError(ErrorCode.group_id_not_found, f"Group {group_id} is not a streams group.")
        new = StreamsGroup(group_id)
        if g is not None:   # an empty group of another type gives way; its offsets stay
            new.offsets = g.offsets
        return new

    def heartbeat(self, req, client_id: str, client_host: str) -> ControllerResult[dict]:
        epoch = req.member_epoch
        if epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(req.group_id, req.member_id, epoch)
        joining = epoch == 0
        g = self._group_to_join(req.group_id) if joining else self._draft(self.group(req.group_id))
        kept = runtime(self.cluster, req.group_id)
        max_size = int(configs.broker_value(self.cluster, None, "group.streams.max.size") or 2**31 - 1)
        if joining and len(g.members) >= max_size and req.member_id not in g.members:
            raise GroupError(ErrorCode.group_max_size_reached,
                             f"The streams group has reached its maximum capacity of {max_size} members.")
        m = g.members.get(req.member_id)
        if m is None:
            if not joining:
                raise GroupError(ErrorCode.unknown_member_id,
                                 f"Member {req.member_id} is not a member of group {g.group_id}.")
            m = Member(req.member_id)
        elif not joining:
            self._check_epoch(m, epoch, req)
        new_member = g.members.get(m.member_id) is not m
        before = m.metadata()
        if req.instance_id is not None:
            m.instance_id = req.instance_id
        if req.rack_id is not None:
            m.rack_id = req.rack_id
        rebalance_ms = int(req.rebalance_timeout.total_seconds() * 1000)
        if rebalance_ms != -1:
            m.rebalance_timeout_ms = rebalance_ms
        if req.topology is not None:
            m.topology_epoch = req.topology.epoch
        if req.process_id is not None:
            m.process_id = req.process_id
        if req.user_endpoint is not None:
            m.user_endpoint = (req.user_endpoint.host, req.user_endpoint.port)
        if req.client_tags is not None:
            m.client_tags = tuple(sorted((t.key, t.value) for t in req.client_tags))
        m.client_id, m.client_host = client_id, client_host
        bump = new_member or m.metadata() != before
        if new_member:
            g.members[m.member_id] = m
        status: list[tuple[int, str]] = []
        self._topology(g, req.topology)
        if g.topology is not None and m.topology_epoch < g.topology.epoch:
            status.append((STALE_TOPOLOGY, f"The member's topology epoch {m.topology_epoch} is behind the group's "
                                           f"topology epoch {g.topology.epoch}."))
        metadata = self._metadata(g)
        if metadata != g.metadata or g.configured is None:
            bump = bump or metadata != g.metadata
            g.metadata = metadata
            assert g.topology is not None, "_topology set it"
            g.configured = configure(self.cluster, g.topology)
        validated = g.topology.epoch if g.configured.tasks is not None and g.topology else -1
        if validated != g.validated_topology_epoch:
            g.validated_topology_epoch, bump = validated, True
        assignment_configs = {"num.standby.replicas": str(self._standby_replicas(g))}
        if assignment_configs != g.assignment_configs:
            g.assignment_configs, bump = assignment_configs, True
        if bump:
            g.epoch += 1
        self._maybe_assign(g)
        old = (dict(m.active), dict(m.standby), dict(m.warmup))
        owned = None if req.active_tasks is None else _tasks(req.active_tasks)
        self._reconcile(g, m, owned)
        self._schedule_session(g, m)
        if req.shutdown_application:
            kept.shutdown_requested_by = m.member_id
        answer: dict = {"error_code": 0, "member_id": m.member_id, "member_epoch": m.epoch,
                        "heartbeat_interval": group_configs.value(self.cluster, g.group_id,
                                                                  "streams.heartbeat.interval.ms"),
                        "acceptable_recovery_lag": int(configs.broker_value(
                            self.cluster, None, "group.streams.acceptable.recovery.lag") or 10000),
                        "task_offset_interval": int(configs.broker_value(
                            self.cluster, None, "group.streams.task.offset.interval.ms") or 60000),
                        "endpoint_information_epoch": kept.endpoint_epoch}
        if joining or old != (m.active, m.standby, m.warmup):
            answer.update({kind: [{"subtopology_id": s, "partitions": sorted(ps)} for s, ps in sorted(tasks.items())
                                  if ps]
                           for kind, tasks in (("active_tasks", m.active), ("standby_tasks", m.standby),
                                               ("warmup_tasks", m.warmup))})
            if m.user_endpoint is not None:
                kept.endpoint_epoch += 1
                answer["endpoint_information_epoch"] = kept.endpoint_epoch
        if req.endpoint_information_epoch != kept.endpoint_epoch:
            answer["partitions_by_user_endpoint"] = self._endpoints(g)
        records = self._changes(self.groups.get(g.group_id), g)
        if g.configured is not None and g.configured.status is not None:
            status.append(g.configured.status)
            create_internal_topics(self.cluster, g.configured.missing)
        if (g.group_id, "", "delay") in self.cluster.runtime.group_timers:
            status.append((ASSIGNMENT_DELAYED, "Assignment delayed due to the configured initial rebalance delay."))
        if kept.shutdown_requested_by is not None:
            status.append((SHUTDOWN_APPLICATION, f"Streams group member {kept.shutdown_requested_by} encountered a "
                                                 "fatal error and requested a shutdown for the entire application."))
        if status:
            answer["status"] = [{"status_code": code, "status_detail": detail} for code, detail in status]
        return ControllerResult(records, answer)

    def _check_epoch(self, m: Member, epoch: int, req) -> None:
        """Kafka's throwIfStreamsGroupMemberEpochIsInvalid."""
        if epoch > m.epoch:
            raise GroupError(ErrorCode.fenced_member_epoch,
                             f"The streams group member has a greater member epoch ({epoch}) than the one known by "
                             f"the group coordinator ({m.epoch}). The member must abandon all its partitions and "
                             "rejoin.")
        if epoch < m.epoch:
            owned = _tasks(req.active_tasks) if req.active_tasks is not None else None
            if epoch != m.previous_epoch or owned is None or any(
                    not ps <= m.active.get(s, set()) for s, ps in owned.items()):
                raise GroupError(ErrorCode.fenced_member_epoch,
                                 f"The streams group member has a smaller member epoch ({epoch}) than the one known "
                                 f"by the group coordinator ({m.epoch}). The member must abandon all its partitions "
                                 "and rejoin.")

    def _topology(self, g: StreamsGroup, requested) -> None:
        """maybeUpdateTopology: the first topology initialises the group's; a newer different one
        is refused (Kafka 4.4 does not update topologies)."""
        if requested is None:
            if g.topology is None:
                raise GroupError(ErrorCode.invalid_request, "The topology is null and the group topology is also null.")
            return
        topology = Topology(requested.epoch, tuple(
            Subtopology(s.subtopology_id, tuple(s.source_topics), tuple(s.source_topic_regex),
                        tuple(s.repartition_sink_topics),
                        tuple(_topic_info(t) for t in s.repartition_source_topics),
                        tuple(_topic_info(t) for t in s.state_changelog_topics),
                        tuple((tuple(c.source_topics), tuple(c.source_topic_regex), tuple(c.repartition_source_topics))
                              for c in s.copartition_groups))
            for s in requested.subtopologies))
        if g.topology is None:
            g.topology, g.configured = topology, None
        elif g.topology.epoch <= topology.epoch and g.topology != topology:
            raise GroupError(ErrorCode.invalid_request, "Topology updates are not supported yet.")

    def _metadata(self, g: StreamsGroup) -> dict[str, tuple[uuid.UUID, int]]:
        """The topics the topology names, as the cluster has them now (Kafka's metadata hash)."""
        assert g.topology is not None
        names = {t for s in g.topology.subtopologies
                 for t in (*s.inputs(), *(c.name for c in s.changelog_topics))}
        return {n: (t.id, len(t.partitions)) for n in sorted(names) if (t := self.cluster.topics.get(n)) is not None}

    def _standby_replicas(self, g: StreamsGroup) -> int:
        return group_configs.value(self.cluster, g.group_id, "streams.num.standby.replicas")

    # target assignment ----------------------------------------------------------------------------

    def _maybe_assign(self, g: StreamsGroup) -> None:
        """A new target when the group epoch moved past it, at most once per
        streams.assignment.interval.ms. A new group's first members get an empty target for
        streams.initial.rebalance.delay.ms (status ASSIGNMENT_DELAYED), so that the others can
        join; then the group epoch moves and the tasks are assigned."""
        if g.epoch <= g.assignment_epoch:
            return
        if not g.assignment_time_ms and g.members:
            delay = group_configs.value(self.cluster, g.group_id, "streams.initial.rebalance.delay.ms")
            if delay > 0:   # ASSIGNMENT_DELAYED while its timer runs
                g.targets = {i: Target() for i in g.members}
                g.assignment_epoch, g.assignment_time_ms = g.epoch, now_ms()
                self._schedule((g.group_id, "", "delay"), delay, self._delay_over, g.group_id)
                return
        interval = group_configs.value(self.cluster, g.group_id, "streams.assignment.interval.ms")
        wait_ms = g.assignment_time_ms + interval - now_ms()
        if g.assignment_time_ms and wait_ms > 0 and g.members:
            key = (g.group_id, "", "assignment")
            if key not in self.cluster.runtime.group_timers:
                self._schedule(key, wait_ms, self._assign_later, g.group_id)
            return
        self._assign(g)

    def _delay_over(self, group_id: str) -> None:
        g = self._live(group_id)
        if g is not None and g.members:
            new = self._draft(g)
            new.epoch += 1
            self._assign(new)
            self._write(g, new)

    def _assign(self, g: StreamsGroup) -> None:
        if g.configured is not None and g.configured.tasks is not None and g.topology is not None:
            stateful = {s.subtopology_id for s in g.topology.subtopologies if s.changelog_topics}
            g.targets = assign(g.members, g.configured, stateful, self._standby_replicas(g), g.targets)
        else:
            g.targets = {i: Target() for i in g.members}
        g.assignment_epoch, g.assignment_time_ms = g.epoch, now_ms()

    # reconciliation (CurrentAssignmentBuilder) ------------------------------------------------------

    def _reconcile(self, g: StreamsGroup, m: Member, owned: Tasks | None) -> None:
        if m.state == M_STABLE and m.epoch == g.assignment_epoch:
            return
        if m.state == M_UNREVOKED and _owns_any(owned, m.revoking):
            return
        target = g.targets.get(m.member_id, Target())
        keep = {s: ps & target.active.get(s, set()) for s, ps in m.active.items()}
        gone = {s: ps - target.active.get(s, set()) for s, ps in m.active.items()}
        keep, gone = {s: ps for s, ps in keep.items() if ps}, {s: ps for s, ps in gone.items() if ps}
        if gone and _owns_any(owned, gone):
            m.active, m.revoking, m.state = keep, gone, M_UNREVOKED
            m.standby = {s: set(ps) for s, ps in target.standby.items()}
            m.warmup = {s: set(ps) for s, ps in target.warmup.items()}
            self._schedule_rebalance(g, m)
            return
        unreleased = False
        for s, ps in target.active.items():
            for p in ps - keep.get(s, set()):
                if g.active_owner((s, p), m):
                    unreleased = True
                else:
                    keep.setdefault(s, set()).add(p)
        m.previous_epoch, m.epoch = m.epoch, g.assignment_epoch
        m.active, m.revoking = keep, {}
        m.standby = {s: set(ps) for s, ps in target.standby.items()}
        m.warmup = {s: set(ps) for s, ps in target.warmup.items()}
        m.state = M_UNRELEASED if unreleased else M_STABLE
        self._schedule_rebalance(g, m)

    def _endpoints(self, g: StreamsGroup) -> list[dict]:
        """Each member's user endpoint with the input partitions of its active and standby tasks."""
        if g.topology is None:
            return []
        inputs = {s.subtopology_id: s.inputs() for s in g.topology.subtopologies}

        def partitions(tasks: Tasks) -> list[dict]:
            by_topic: dict[str, set[int]] = {}
            for s, ps in tasks.items():
                for t in inputs.get(s, ()):
                    by_topic.setdefault(t, set()).update(ps)
            return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]
        return [{"user_endpoint": {"host": m.user_endpoint[0], "port": m.user_endpoint[1]},
                 "active_partitions": partitions(m.active), "standby_partitions": partitions(m.standby)}
                for m in g.members.values() if m.user_endpoint is not None]

    # leaving and fencing ------------------------------------------------------------------------------

    def _leave(self, group_id: str, member_id: str, epoch: int) -> ControllerResult[dict]:
        g = self.group(group_id)
        m = g.members.get(member_id)
        if m is None:
            raise GroupError(ErrorCode.unknown_member_id, f"Member {member_id} is not a member of group {group_id}.")
        return ControllerResult(self._fenced(g, m), {"error_code": 0, "member_id": member_id, "member_epoch": epoch})

    def _remove(self, g: StreamsGroup, m: Member) -> None:
        super()._remove(g, m)
        kept = runtime(self.cluster, g.group_id)
        if kept.shutdown_requested_by == m.member_id or not g.members:
            kept.shutdown_requested_by = None

    # offsets ------------------------------------------------------------------------------------------

    def commit_error(self, g: StreamsGroup, member_id: str, epoch: int, version: int,
                     transactional: bool = False) -> int:
        """StreamsGroup.validateOffsetCommit: an admin commit (no member, epoch -1) into an empty
        group, or a member's at its current epoch."""
        if epoch < 0 and not member_id and not g.members:
            return 0
        m = g.members.get(member_id)
        if m is None:
            return ErrorCode.unknown_member_id
        if not transactional and version < 9:
            return ErrorCode.unsupported_version
        return 0 if epoch == m.epoch else ErrorCode.stale_member_epoch

    def fetch_error(self, g: StreamsGroup, member_id: str | None, epoch: int) -> int:
        if member_id is None and epoch < 0:
            return 0
        m = g.members.get(member_id or "")
        if m is None:
            return ErrorCode.unknown_member_id
        return 0 if epoch == m.epoch else ErrorCode.stale_member_epoch


def _topic_info(t) -> TopicInfo:
    return TopicInfo(t.name, int(t.partitions), int(t.replication_factor),
                     tuple(sorted((c.key, c.value) for c in t.topic_configs)))


def _owns_any(owned: Tasks | None, tasks: Tasks) -> bool:
    """Whether the member still owns one of these tasks (None: it did not say, so it does)."""
    if owned is None:
        return True
    return any(ps & tasks.get(s, set()) for s, ps in owned.items())
