"""The group coordinator's state as records, as Kafka's GroupMetadataManager keeps it in
__consumer_offsets (and the share coordinator its share-partitions in __share_group_state).

Committed offsets are OffsetCommitRecords. A group is the records of its type (records.py):
a classic group its GroupMetadataRecord, written when it becomes Stable or Empty (Kafka's
storeGroup); a KIP-848 consumer group its ConsumerGroupMetadata, PartitionMetadata,
MemberMetadata, TargetAssignmentMember, TargetAssignmentMetadata and CurrentMemberAssignment
records; a streams group the StreamsGroup* equivalents and its topology; a share group the
ShareGroup* ones, and each of its share-partitions a ShareSnapshotRecord followed by
ShareUpdateRecords (what changed), a new snapshot after
share.coordinator.snapshot.update.records.per.snapshot of them, as Kafka's share coordinator.
Each type's replay (`REPLAY`, through `replay.apply`) builds the group from them, and
`ClusterState.group_records` keeps the latest record of each key, as the compacted topic does.

The KIP-848 consumer, streams and share group coordinators change their groups as Kafka's
GroupMetadataManager does: an operation computes the group's next state on a copy and returns
the records that make it (`changes`: the records that differ from the live group's, tombstones
for what it no longer has, members first, the group's own record last); the group changes only
when they are replayed. What Kafka keeps in memory only (timers, resolved regexes, a streams
group's endpoint epoch) is on `ClusterState.runtime`. A share-partition's written state changes
only by its ShareSnapshot/ShareUpdate records (share_groups.write_state), its deletion by their
tombstones; its in-flight records are the leader's memory, made again from the written state
when the sandbox serves. Classic groups change in memory, as Kafka's ClassicGroup does, and
write their GroupMetadataRecord as they are when they become Stable or Empty (storeGroup;
`classic_record`); replaying it sets the values the group has. A deleted group's records get
their tombstones (`removal`).
Replayed at start-up, the records make the groups again. A group comes back as Kafka loads one:
classic ones Stable with their members or Empty, their members' sessions starting again when
the sandbox serves (the coordinators' `resume`), so members that do not come back expire as
they would after a coordinator move.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, cast

from kafka_shell.sandbox import classic_groups, configs, consumer_groups, share_groups, streams_groups
from kafka_shell.sandbox import records as r
from kafka_shell.sandbox.model import now_ms
from kafka_shell.sandbox.records import ReplayError

if TYPE_CHECKING:
    import uuid

    from kafka_shell.sandbox.model import AnyGroup, ClusterState

# The record types of a group, in the order they are written (tombstones go in reverse).
ORDER: tuple[type, ...] = (
    r.GroupMetadataRecord,
    r.ConsumerGroupMetadataRecord, r.ConsumerGroupPartitionMetadataRecord, r.ConsumerGroupMemberMetadataRecord,
    r.ConsumerGroupTargetAssignmentMemberRecord, r.ConsumerGroupTargetAssignmentMetadataRecord,
    r.ConsumerGroupCurrentMemberAssignmentRecord,
    r.ShareGroupMetadataRecord, r.ShareGroupPartitionMetadataRecord, r.ShareGroupMemberMetadataRecord,
    r.ShareGroupTargetAssignmentMemberRecord, r.ShareGroupTargetAssignmentMetadataRecord,
    r.ShareGroupCurrentMemberAssignmentRecord, r.ShareSnapshotRecord,
    r.StreamsGroupMetadataRecord, r.StreamsGroupTopologyRecord, r.StreamsGroupMemberMetadataRecord,
    r.StreamsGroupTargetAssignmentMemberRecord, r.StreamsGroupTargetAssignmentMetadataRecord,
    r.StreamsGroupCurrentMemberAssignmentRecord)
RANK = {t: i for i, t in enumerate(ORDER)}

Key = tuple[type, str]

# Kafka's MemberState ids (ConsumerGroupCurrentMemberAssignmentValue.State).
MEMBER_STATES = {consumer_groups.M_STABLE: 0, consumer_groups.M_UNREVOKED: 1, consumer_groups.M_UNRELEASED: 2,
                 consumer_groups.M_UNKNOWN: 127}
STATE_NAMES = {v: k for k, v in MEMBER_STATES.items()}
STREAMS_STATES = {streams_groups.M_STABLE: 0, streams_groups.M_UNREVOKED: 1, streams_groups.M_UNRELEASED: 2}
STREAMS_STATE_NAMES = {v: k for k, v in STREAMS_STATES.items()}
DONE = (share_groups.ACKNOWLEDGED, share_groups.ARCHIVED)


def key_of(record: r.Record) -> Key:
    """What a record is the latest of (its type, and its member or share-partition)."""
    if isinstance(record, r.ShareSnapshotRecord):
        return type(record), f"{record.topic_id}:{record.partition}"
    return type(record), getattr(record, "member_id", "")


def tombstone(record: r.Record) -> r.Record:
    return dataclasses.replace(cast(Any, record), value=None)   # every group record has a value


# -- writing ------------------------------------------------------------------------------------


def changes(cluster: ClusterState, live: AnyGroup | None, new: AnyGroup) -> list[r.Record]:
    """The records that make `new` of the group as it is (`live`, None for none): those of
    `new` that differ from the live group's, then tombstones for what `new` no longer has
    (members first, the group's own record last). A coordinator computes `new` on a copy."""
    old = records_of(cluster, live) if live is not None else {}
    now = records_of(cluster, new)
    gone = sorted((k for k in old if k not in now), key=lambda k: -RANK[k[0]])
    return [rec for k, rec in now.items() if old.get(k) != rec] + [tombstone(old[k]) for k in gone]


def removal(cluster: ClusterState, g: AnyGroup) -> list[r.Record]:
    """Tombstones of the group's records, the group's own last (which removes it)."""
    return [tombstone(rec) for rec in reversed(records_of(cluster, g).values())]


def records_of(cluster: ClusterState, g: AnyGroup) -> dict[Key, r.Record]:
    """The group's records as its coordinator writes them, by key, in ORDER."""
    if isinstance(g, classic_groups.Group):
        out: list[r.Record] = [classic_record(g)]
    elif isinstance(g, consumer_groups.ConsumerGroup):
        out = consumer_records(g)
    elif isinstance(g, share_groups.ShareGroup):
        out = share_records(cluster, g)
    else:
        out = streams_records(g)
    return {key_of(rec): rec for rec in sorted(out, key=lambda rec: RANK[type(rec)])}


def classic_record(g: classic_groups.Group) -> r.GroupMetadataRecord:
    members = tuple(r.MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                     m.rebalance_timeout_ms, m.session_timeout_ms, m.metadata(g.protocol_name),
                                     m.assignment) for m in g.members.values())
    return r.GroupMetadataRecord(g.group_id, r.GroupMetadataValue(g.protocol_type, g.generation, g.protocol_name,
                                                                  g.leader, now_ms(), members))


def _partitions(tps: dict) -> tuple[r.TopicPartitions, ...]:
    """Topic id -> partitions (a set, or partition -> the epoch it was assigned in)."""
    out = []
    for t, ps in sorted(tps.items(), key=lambda kv: str(kv[0])):
        if isinstance(ps, dict):
            items = sorted(ps.items())
            out.append(r.TopicPartitions(t, tuple(p for p, _ in items), tuple(e for _, e in items)))
        else:
            out.append(r.TopicPartitions(t, tuple(sorted(ps))))
    return tuple(out)


def _metadata(metadata: dict[str, tuple[uuid.UUID, int]]) -> r.PartitionMetadataValue:
    return r.PartitionMetadataValue(tuple(r.TopicMetadata(tid, name, n) for name, (tid, n) in sorted(metadata.items())))


def consumer_records(g: consumer_groups.ConsumerGroup) -> list[r.Record]:
    gid = g.group_id
    out: list[r.Record] = [
        r.ConsumerGroupMetadataRecord(gid, r.ConsumerGroupMetadataValue(g.epoch)),
        r.ConsumerGroupPartitionMetadataRecord(gid, _metadata(g.metadata)),
        r.ConsumerGroupTargetAssignmentMetadataRecord(
            gid, r.TargetAssignmentMetadataValue(g.assignment_epoch, g.assignment_time_ms))]
    for m in g.members.values():
        out.append(r.ConsumerGroupMemberMetadataRecord(gid, m.member_id, r.ConsumerGroupMemberMetadataValue(
            m.instance_id, m.rack_id, m.client_id, m.client_host, m.topic_names, m.topic_regex,
            m.rebalance_timeout_ms, m.server_assignor)))
        out.append(r.ConsumerGroupCurrentMemberAssignmentRecord(gid, m.member_id, r.ConsumerGroupCurrentMemberAssignmentValue(
            m.epoch, m.previous_epoch, MEMBER_STATES[m.state], _partitions(m.assigned), _partitions(m.revoking))))
    out += [r.ConsumerGroupTargetAssignmentMemberRecord(gid, member_id, r.TargetAssignmentMemberValue(_partitions(t)))
            for member_id, t in g.targets.items()]
    return out


def share_records(cluster: ClusterState, g: share_groups.ShareGroup) -> list[r.Record]:
    gid = g.group_id
    out: list[r.Record] = [
        r.ShareGroupMetadataRecord(gid, r.ConsumerGroupMetadataValue(g.epoch)),
        r.ShareGroupPartitionMetadataRecord(gid, _metadata(g.metadata)),
        r.ShareGroupTargetAssignmentMetadataRecord(
            gid, r.TargetAssignmentMetadataValue(g.assignment_epoch, g.assignment_time_ms))]
    for m in g.members.values():
        out.append(r.ShareGroupMemberMetadataRecord(gid, m.member_id, r.ShareGroupMemberMetadataValue(
            m.rack_id, m.client_id, m.client_host, m.topic_names)))
        out.append(r.ShareGroupCurrentMemberAssignmentRecord(gid, m.member_id, r.ShareGroupCurrentMemberAssignmentValue(
            m.epoch, m.previous_epoch, _partitions(m.assigned))))
    out += [r.ShareGroupTargetAssignmentMemberRecord(gid, member_id, r.TargetAssignmentMemberValue(_partitions(t)))
            for member_id, t in g.targets.items()]
    # Its share-partitions' state as written (share_groups.write_state; only replay changes it).
    out += [rec for key, rec in sorted(cluster.group_records.get(gid, {}).items(), key=lambda kv: kv[0][1])
            if key[0] is r.ShareSnapshotRecord]
    return out


def snapshot(cluster: ClusterState) -> list[r.Record]:
    """Every group's latest records, for the state file."""
    return [rec for latest in cluster.group_records.values() for rec in sorted(latest.values(), key=lambda x: RANK[type(x)])]


def offset_records(cluster: ClusterState) -> list[r.OffsetCommitRecord]:
    """Every committed offset as its record."""
    return [classic_groups.offset_record(g.group_id, key, o) for g in cluster.groups.values()
            for key, o in getattr(g, "offsets", {}).items()]


# -- replay -------------------------------------------------------------------------------------


def _latest(cluster: ClusterState, record: Any) -> None:
    """Keep the record as its key's latest (a tombstone drops the key)."""
    group_id: str = record.group
    latest = cluster.group_records.setdefault(group_id, {})
    if record.value is None:
        latest.pop(key_of(record), None)
        if not latest:
            del cluster.group_records[group_id]
    else:
        latest[key_of(record)] = record


def _of_type(cluster: ClusterState, group_id: str, cls: type) -> Any:
    """The group, made of `cls` when it is of another type (an empty group of one type gives way
    to another, its offsets kept, as in Kafka)."""
    g = cluster.groups.get(group_id)
    if not isinstance(g, cls):
        new = cls(group_id)
        if g is not None and hasattr(new, "offsets") and not isinstance(new, share_groups.ShareGroup):
            new.offsets = getattr(g, "offsets", {})
        cluster.groups[group_id] = g = new
    return g


def _existing(cluster: ClusterState, record: Any, cls: type) -> Any:
    """The group a member's or an assignment's record is about (None for a tombstone of a group
    gone); a value for a group no record made is damage."""
    g = cluster.groups.get(record.group)
    if isinstance(g, cls):
        return g
    if record.value is None:
        return None
    raise ReplayError(f"names group {record.group!r}, which no {cls.__name__} record made")


def _remove_group(cluster: ClusterState, group_id: str, cls: type | tuple[type, ...]) -> None:
    if isinstance(cluster.groups.get(group_id), cls):
        for m in cluster.groups.pop(group_id).members.values():
            _cancel(m)


def _cancel(m: object) -> None:
    for name in ("session", "rebalance", "expiry"):
        timer = getattr(m, name, None)
        if timer is not None:
            timer.cancel()


def replay_offset(cluster: ClusterState, record: r.OffsetCommitRecord) -> None:
    """An offset committed (a group that has none yet is created Empty, as a simple commit does)
    or deleted."""
    g = cluster.groups.get(record.group)
    key = (record.topic, record.partition)
    if record.value is None:
        if g is not None:
            getattr(g, "offsets", {}).pop(key, None)
        return
    if g is None:
        g = cluster.groups[record.group] = classic_groups.Group(record.group)
    if isinstance(g, share_groups.ShareGroup):
        raise ReplayError(f"commits an offset to {record.group!r}, a group that keeps none (a share group)")
    v = record.value
    g.offsets[key] = classic_groups.CommittedOffset(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp)


def replay_classic(cluster: ClusterState, record: r.GroupMetadataRecord) -> None:
    _latest(cluster, record)
    v = record.value
    if v is None:
        _remove_group(cluster, record.group, classic_groups.Group)
        return
    if v.members and (v.leader not in {m.member_id for m in v.members} or not v.protocol):
        raise ReplayError("has members but not one of them as its leader, or no protocol")
    g = _of_type(cluster, record.group, classic_groups.Group)
    assert isinstance(g, classic_groups.Group)
    g.protocol_type, g.generation, g.protocol_name, g.leader = v.protocol_type, v.generation, v.protocol, v.leader
    members = {}
    for mm in v.members:
        m = g.members.get(mm.member_id)
        if m is None:   # as Kafka loads a member: its subscription to the group's protocol
            m = classic_groups.Member(mm.member_id, mm.group_instance_id, mm.client_id, mm.client_host,
                                      mm.session_timeout, mm.rebalance_timeout, [(v.protocol or "", mm.subscription)])
        m.assignment = mm.assignment
        members[m.member_id] = m
    for gone in set(g.members) - set(members):
        _cancel(g.members[gone])
    g.members = members
    g.static_members = {m.group_instance_id: m.member_id for m in members.values() if m.group_instance_id is not None}
    g.state = classic_groups.STABLE if members else classic_groups.EMPTY


def _epochs(tps: tuple[r.TopicPartitions, ...]) -> dict:
    """Topic id -> partition -> the epoch it was assigned in (0 where the record has none)."""
    if any(t.assignment_epochs and len(t.assignment_epochs) != len(t.partitions) for t in tps):
        raise ReplayError("has assignment epochs that are not one per partition")
    return {t.topic_id: dict(zip(t.partitions, t.assignment_epochs or (0,) * len(t.partitions))) for t in tps}


def _sets(tps: tuple[r.TopicPartitions, ...]) -> dict:
    return {t.topic_id: set(t.partitions) for t in tps}


def _topics(v: r.PartitionMetadataValue | None) -> dict[str, tuple[uuid.UUID, int]]:
    return {} if v is None else {t.topic_name: (t.topic_id, t.num_partitions) for t in v.topics}


def replay_modern(cluster: ClusterState, record: Any) -> None:
    """A consumer or share group's record."""
    _latest(cluster, record)
    cls, _apply = _MODERN[type(record)]
    value = record.value
    if isinstance(record, (r.ConsumerGroupMetadataRecord, r.ShareGroupMetadataRecord, r.StreamsGroupMetadataRecord)):
        if value is None:
            _remove_group(cluster, record.group, cls)
            return
        group: Any = _of_type(cluster, record.group, cls)
        group.epoch = value.epoch
        if isinstance(value, r.StreamsGroupMetadataValue):
            group.metadata = _topics(r.PartitionMetadataValue(value.topics))
            group.validated_topology_epoch = value.validated_topology_epoch
            group.assignment_configs = {kv.key: kv.value for kv in value.last_assignment_configs}
            _configure(cluster, group)
        return
    g = _existing(cluster, record, cls)
    if g is not None:
        _apply(g, record, value)
        if isinstance(record, r.StreamsGroupTopologyRecord):
            _configure(cluster, g)


def _configure(cluster: ClusterState, g: streams_groups.StreamsGroup) -> None:
    """A streams group's topology configured against the topics, as Kafka's StreamsGroup does
    when its topology or its topics' metadata is replayed."""
    g.configured = None if g.topology is None else streams_groups.configure(cluster, g.topology)


def _partition_metadata(g: Any, record: r.Record, v: r.PartitionMetadataValue | None) -> None:
    g.metadata = _topics(v)


def _target_metadata(g: Any, record: r.Record, v: r.TargetAssignmentMetadataValue | None) -> None:
    if v is not None:
        g.assignment_epoch, g.assignment_time_ms = v.assignment_epoch, v.assignment_timestamp


def _target_member(g: Any, record: Any, v: r.TargetAssignmentMemberValue | None) -> None:
    member_id = record.member_id
    if v is None:
        g.targets.pop(member_id, None)
    else:
        g.targets[member_id] = _sets(v.topic_partitions)


def _consumer_member(g: consumer_groups.ConsumerGroup, record: r.ConsumerGroupMemberMetadataRecord,
                     v: r.ConsumerGroupMemberMetadataValue | None) -> None:
    m = g.members.get(record.member_id)
    if v is None:
        if m is not None:
            del g.members[record.member_id]
            if m.instance_id is not None and g.static_members.get(m.instance_id) == m.member_id:
                del g.static_members[m.instance_id]
        return
    if m is None:
        m = g.members[record.member_id] = consumer_groups.Member(record.member_id)
    m.instance_id, m.rack_id, m.client_id, m.client_host = v.instance_id, v.rack_id, v.client_id, v.client_host
    m.topic_names, m.topic_regex = v.subscribed_topic_names, v.subscribed_topic_regex
    m.rebalance_timeout_ms, m.server_assignor = v.rebalance_timeout_ms, v.server_assignor
    if m.instance_id is not None:
        g.static_members[m.instance_id] = m.member_id


def _consumer_assignment(g: consumer_groups.ConsumerGroup, record: r.ConsumerGroupCurrentMemberAssignmentRecord,
                         v: r.ConsumerGroupCurrentMemberAssignmentValue | None) -> None:
    if v is None:
        return   # the member's metadata tombstone removes it
    m = g.members.get(record.member_id)
    if m is None:
        raise ReplayError(f"assigns to member {record.member_id!r}, which no member record made")
    if v.state not in STATE_NAMES:
        raise ReplayError(f"has member state {v.state}, not one of Kafka's")
    m.epoch, m.previous_epoch, m.state = v.member_epoch, v.previous_member_epoch, STATE_NAMES[v.state]
    m.assigned, m.revoking = _epochs(v.assigned_partitions), _epochs(v.partitions_pending_revocation)


def _share_member(g: share_groups.ShareGroup, record: r.ShareGroupMemberMetadataRecord,
                  v: r.ShareGroupMemberMetadataValue | None) -> None:
    m = g.members.get(record.member_id)
    if v is None:
        g.members.pop(record.member_id, None)
        return
    if m is None:
        m = g.members[record.member_id] = share_groups.Member(record.member_id)
    m.rack_id, m.client_id, m.client_host, m.topic_names = v.rack_id, v.client_id, v.client_host, v.subscribed_topic_names


def _share_assignment(g: share_groups.ShareGroup, record: r.ShareGroupCurrentMemberAssignmentRecord,
                      v: r.ShareGroupCurrentMemberAssignmentValue | None) -> None:
    if v is None:
        return
    m = g.members.get(record.member_id)
    if m is None:
        raise ReplayError(f"assigns to member {record.member_id!r}, which no member record made")
    m.epoch, m.previous_epoch, m.assigned = v.member_epoch, v.previous_member_epoch, _sets(v.assigned_partitions)


def _task_ids(tasks: dict[str, set[int]]) -> tuple[r.TaskIds, ...]:
    return tuple(r.TaskIds(s, tuple(sorted(ps))) for s, ps in sorted(tasks.items()) if ps)


def _tasks(ids: tuple[r.TaskIds, ...]) -> dict[str, set[int]]:
    return {t.subtopology_id: set(t.partitions) for t in ids}


def _kv(pairs: tuple[tuple[str, str], ...] | dict[str, str]) -> tuple[r.KeyValue, ...]:
    return tuple(r.KeyValue(k, v) for k, v in (sorted(pairs.items()) if isinstance(pairs, dict) else pairs))


def _topic_info(t: streams_groups.TopicInfo) -> r.StreamsTopicInfo:
    return r.StreamsTopicInfo(t.name, t.partitions, t.replication_factor, _kv(t.configs))


def _streams_info(t: r.StreamsTopicInfo) -> streams_groups.TopicInfo:
    return streams_groups.TopicInfo(t.name, t.partitions, t.replication_factor,
                                    tuple((kv.key, kv.value) for kv in t.topic_configs))


def streams_records(g: streams_groups.StreamsGroup) -> list[r.Record]:
    gid = g.group_id
    out: list[r.Record] = [
        r.StreamsGroupMetadataRecord(gid, r.StreamsGroupMetadataValue(
            g.epoch, _metadata(g.metadata).topics, g.validated_topology_epoch, _kv(g.assignment_configs))),
        r.StreamsGroupTargetAssignmentMetadataRecord(
            gid, r.TargetAssignmentMetadataValue(g.assignment_epoch, g.assignment_time_ms))]
    if g.topology is not None:
        out.append(r.StreamsGroupTopologyRecord(gid, r.StreamsGroupTopologyValue(g.topology.epoch, tuple(
            r.Subtopology(s.subtopology_id, s.source_topics, s.source_topic_regex,
                          tuple(_topic_info(t) for t in s.changelog_topics), s.repartition_sink_topics,
                          tuple(_topic_info(t) for t in s.repartition_source_topics),
                          tuple(r.CopartitionGroup(*(tuple(ix) for ix in c)) for c in s.copartition_groups))
            for s in g.topology.subtopologies))))
    for m in g.members.values():
        endpoint = None if m.user_endpoint is None else r.StreamsEndpoint(*m.user_endpoint)
        out.append(r.StreamsGroupMemberMetadataRecord(gid, m.member_id, r.StreamsGroupMemberMetadataValue(
            m.instance_id, m.rack_id, m.client_id, m.client_host, m.rebalance_timeout_ms, m.topology_epoch,
            m.process_id, endpoint, _kv(m.client_tags))))
        out.append(r.StreamsGroupCurrentMemberAssignmentRecord(gid, m.member_id, r.StreamsGroupCurrentMemberAssignmentValue(
            m.epoch, m.previous_epoch, STREAMS_STATES[m.state], _task_ids(m.active), _task_ids(m.standby),
            _task_ids(m.warmup), _task_ids(m.revoking))))
    out += [r.StreamsGroupTargetAssignmentMemberRecord(gid, member_id, r.StreamsGroupTargetAssignmentMemberValue(
        _task_ids(t.active), _task_ids(t.standby), _task_ids(t.warmup))) for member_id, t in g.targets.items()]
    return out


def _streams_topology(g: streams_groups.StreamsGroup, record: r.StreamsGroupTopologyRecord,
                      v: r.StreamsGroupTopologyValue | None) -> None:
    g.topology = None if v is None else streams_groups.Topology(v.epoch, tuple(
        streams_groups.Subtopology(s.subtopology_id, s.source_topics, s.source_topic_regex, s.repartition_sink_topics,
                                   tuple(_streams_info(t) for t in s.repartition_source_topics),
                                   tuple(_streams_info(t) for t in s.state_changelog_topics),
                                   tuple((c.source_topics, c.source_topic_regex, c.repartition_source_topics)
                                         for c in s.copartition_groups))
        for s in v.subtopologies))


def _streams_member(g: streams_groups.StreamsGroup, record: r.StreamsGroupMemberMetadataRecord,
                    v: r.StreamsGroupMemberMetadataValue | None) -> None:
    m = g.members.get(record.member_id)
    if v is None:
        g.members.pop(record.member_id, None)
        return
    if m is None:
        m = g.members[record.member_id] = streams_groups.Member(record.member_id)
    m.instance_id, m.rack_id, m.client_id, m.client_host = v.instance_id, v.rack_id, v.client_id, v.client_host
    m.rebalance_timeout_ms, m.topology_epoch, m.process_id = v.rebalance_timeout_ms, v.topology_epoch, v.process_id
    m.user_endpoint = None if v.user_endpoint is None else (v.user_endpoint.host, v.user_endpoint.port)
    m.client_tags = tuple((kv.key, kv.value) for kv in v.client_tags)


def _streams_target(g: streams_groups.StreamsGroup, record: r.StreamsGroupTargetAssignmentMemberRecord,
                    v: r.StreamsGroupTargetAssignmentMemberValue | None) -> None:
    if v is None:
        g.targets.pop(record.member_id, None)
    else:
        g.targets[record.member_id] = streams_groups.Target(_tasks(v.active_tasks), _tasks(v.standby_tasks),
                                                            _tasks(v.warmup_tasks))


def _streams_assignment(g: streams_groups.StreamsGroup, record: r.StreamsGroupCurrentMemberAssignmentRecord,
                        v: r.StreamsGroupCurrentMemberAssignmentValue | None) -> None:
    if v is None:
        return
    m = g.members.get(record.member_id)
    if m is None:
        raise ReplayError(f"assigns to member {record.member_id!r}, which no member record made")
    if v.state not in STREAMS_STATE_NAMES:
        raise ReplayError(f"has member state {v.state}, not one of Kafka's")
    m.epoch, m.previous_epoch, m.state = v.member_epoch, v.previous_member_epoch, STREAMS_STATE_NAMES[v.state]
    m.active, m.standby, m.warmup = _tasks(v.active_tasks), _tasks(v.standby_tasks), _tasks(v.warmup_tasks)
    m.revoking = _tasks(v.active_tasks_pending_revocation)


SNAPSHOT_EVERY = "share.coordinator.snapshot.update.records.per.snapshot"


def share_state_record(cluster: ClusterState, new: r.ShareSnapshotRecord) -> r.Record | None:
    """The record that writes a share-partition's new state: None when it is what was last
    written, else as `_as_update` says."""
    old = cluster.group_records.get(new.group, {}).get(key_of(new))
    return None if old == new else _as_update(cluster, old, new)


def _as_update(cluster: ClusterState, old: r.Record | None, new: r.Record) -> r.Record:
    """A share-partition's new state as a ShareUpdateRecord of what changed when that makes it
    from the old (and the snapshot is not due), else the record itself."""
    if not (isinstance(new, r.ShareSnapshotRecord) and isinstance(old, r.ShareSnapshotRecord)
            and old.value is not None and new.value is not None):
        return new
    sp = cluster.share_partitions.get((new.group, new.topic_id, new.partition))
    if sp is None or sp.updates + 1 >= configs.broker_int(cluster, SNAPSHOT_EVERY, {SNAPSHOT_EVERY: 500}):
        return new
    kept = set(old.value.state_batches)
    update = r.ShareUpdateValue(new.value.leader_epoch, new.value.start_offset,
                                tuple(b for b in new.value.state_batches if b not in kept))
    if merged(old.value, update) != new.value:
        return new
    return r.ShareUpdateRecord(new.group, new.topic_id, new.partition, update)


def merged(state: r.ShareSnapshotValue, update: r.ShareUpdateValue) -> r.ShareSnapshotValue:
    """A share-partition's state with an update applied (Kafka's ShareCoordinatorShard.merge):
    the update's batches replace the states of their offsets, batches wholly below the start
    offset go, and neighbours of one state and delivery count join."""
    start = update.start_offset if update.start_offset != -1 else state.start_offset
    pieces = []
    for b in state.state_batches:
        ranges = [(b.first_offset, b.last_offset)]
        for u in update.state_batches:
            ranges = [(lo, hi) for first, last in ranges
                      for lo, hi in ((first, min(last, u.first_offset - 1)), (max(first, u.last_offset + 1), last))
                      if lo <= hi]
        pieces += [r.StateBatch(lo, hi, b.delivery_state, b.delivery_count) for lo, hi in ranges]
    batches: list[r.StateBatch] = []
    for b in sorted([*pieces, *update.state_batches], key=lambda b: b.first_offset):
        if b.last_offset < start:
            continue
        last = batches[-1] if batches else None
        if last and last.last_offset + 1 == b.first_offset and (last.delivery_state, last.delivery_count) == (
                b.delivery_state, b.delivery_count):
            batches[-1] = dataclasses.replace(last, last_offset=b.last_offset)
        else:
            batches.append(b)
    return r.ShareSnapshotValue(state.state_epoch, update.leader_epoch, start, tuple(batches))


def replay_share_update(cluster: ClusterState, record: r.ShareUpdateRecord) -> None:
    """An update merged into the share-partition's last written state."""
    latest = cluster.group_records.get(record.group, {}).get((r.ShareSnapshotRecord, f"{record.topic_id}:{record.partition}"))
    if not isinstance(latest, r.ShareSnapshotRecord) or latest.value is None:
        raise ReplayError("updates a share-partition no ShareSnapshotRecord made")
    replay_share_snapshot(cluster, dataclasses.replace(latest, value=merged(latest.value, record.value)), update=True)


def replay_share_snapshot(cluster: ClusterState, record: r.ShareSnapshotRecord, update: bool = False) -> None:
    """The share-partition's written state (`share_groups.restore_in_flight` makes its records
    from it when the sandbox serves)."""
    _latest(cluster, record)
    key = (record.group, record.topic_id, record.partition)
    v = record.value
    if v is None:
        sp = cluster.share_partitions.pop(key, None)
        if sp is not None:
            for flight in sp.records.values():
                share_groups.Partitions.unlock(flight)
        return
    sp = cluster.share_partitions.get(key)
    if sp is None:
        sp = cluster.share_partitions[key] = share_groups.SharePartition(record.group, record.topic_id, record.partition)
        sp.start_offset = sp.next_offset = v.start_offset
    sp.state_epoch, sp.leader_epoch, sp.written_start = v.state_epoch, v.leader_epoch, v.start_offset
    sp.updates = sp.updates + 1 if update else 0
    sp.written_batches = [{"first_offset": b.first_offset, "last_offset": b.last_offset,
                           "delivery_state": b.delivery_state, "delivery_count": b.delivery_count}
                          for b in v.state_batches]
    sp.written_done = -1 if v.start_offset < 0 else sum(
        b.last_offset - max(b.first_offset, v.start_offset) + 1 for b in v.state_batches
        if b.delivery_state in DONE and b.last_offset >= v.start_offset)


_MODERN: dict[type, tuple[type, Any]] = {
    r.ConsumerGroupMetadataRecord: (consumer_groups.ConsumerGroup, None),
    r.ConsumerGroupPartitionMetadataRecord: (consumer_groups.ConsumerGroup, _partition_metadata),
    r.ConsumerGroupMemberMetadataRecord: (consumer_groups.ConsumerGroup, _consumer_member),
    r.ConsumerGroupTargetAssignmentMemberRecord: (consumer_groups.ConsumerGroup, _target_member),
    r.ConsumerGroupTargetAssignmentMetadataRecord: (consumer_groups.ConsumerGroup, _target_metadata),
    r.ConsumerGroupCurrentMemberAssignmentRecord: (consumer_groups.ConsumerGroup, _consumer_assignment),
    r.ShareGroupMetadataRecord: (share_groups.ShareGroup, None),
    r.ShareGroupPartitionMetadataRecord: (share_groups.ShareGroup, _partition_metadata),
    r.ShareGroupMemberMetadataRecord: (share_groups.ShareGroup, _share_member),
    r.ShareGroupTargetAssignmentMemberRecord: (share_groups.ShareGroup, _target_member),
    r.ShareGroupTargetAssignmentMetadataRecord: (share_groups.ShareGroup, _target_metadata),
    r.ShareGroupCurrentMemberAssignmentRecord: (share_groups.ShareGroup, _share_assignment),
    r.StreamsGroupMetadataRecord: (streams_groups.StreamsGroup, None),
    r.StreamsGroupTopologyRecord: (streams_groups.StreamsGroup, _streams_topology),
    r.StreamsGroupMemberMetadataRecord: (streams_groups.StreamsGroup, _streams_member),
    r.StreamsGroupTargetAssignmentMemberRecord: (streams_groups.StreamsGroup, _streams_target),
    r.StreamsGroupTargetAssignmentMetadataRecord: (streams_groups.StreamsGroup, _target_metadata),
    r.StreamsGroupCurrentMemberAssignmentRecord: (streams_groups.StreamsGroup, _streams_assignment),
}

REPLAY = {r.OffsetCommitRecord: replay_offset, r.GroupMetadataRecord: replay_classic,
          r.ShareSnapshotRecord: replay_share_snapshot, r.ShareUpdateRecord: replay_share_update,
          **{t: replay_modern for t in _MODERN}}
