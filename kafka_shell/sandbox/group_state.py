"""The consumer-group state `--data-dir` keeps: what a coordinator told clients is done.

As Kafka's GroupMetadataManager stores it in __consumer_offsets: each committed offset, a
group's deletion, and a group's metadata when it becomes Stable (the leader's assignment taken)
or Empty. Offsets and deletions are the coordinator's records (OffsetCommitRecord, a
GroupMetadataRecord tombstone), applied here (`REPLAY`) like every record. `view(g)` is a group's
metadata as plain JSON data (protocol type and name, generation, leader, members with their
protocols and assignments); `classic_groups.Coordinator` takes it at those moments
(`Group.stored`) and tells the journal (`journal.group_touched`), which writes the group's view
before the answer leaves (not yet as the coordinator's records).

`offset_records(cluster)` are the committed offsets for the state file, `snapshot(cluster)` every
group's stored view; `restore` and `apply_view` put the views back, checked field by field (a
StateError names the field). A group comes back as Kafka loads one: Stable with its members, or Empty; its members'
sessions start again when the sandbox serves (`classic_groups.Coordinator.resume`), so members that do
not come back expire as they would after a coordinator move.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import uuid

from kafka_shell.sandbox import classic_groups, consumer_groups
from kafka_shell.sandbox.records import GroupMetadataRecord, OffsetCommitRecord, ReplayError

if TYPE_CHECKING:
    from kafka_shell.sandbox.model import ClusterState
    from kafka_shell.sandbox.persist import Checker

INT32_MAX = 2**31 - 1


def view(g: classic_groups.Group) -> dict:
    """The group's metadata as Kafka stores it (no offsets)."""
    return {
        "protocol_type": g.protocol_type, "protocol_name": g.protocol_name,
        "generation": g.generation, "leader": g.leader,
        "members": [[m.member_id, m.group_instance_id, m.client_id, m.client_host, m.session_timeout_ms,
                     m.rebalance_timeout_ms, [[name, meta.hex()] for name, meta in m.protocols],
                     m.assignment.hex()] for m in g.members.values()],
    }


def consumer_view(g: consumer_groups.ConsumerGroup) -> dict:
    """A KIP-848 group as Kafka's ConsumerGroup* records keep it: epochs, members with their
    subscription and current assignment, and each member's target."""
    def parts(owned: dict) -> list:
        return [[str(t), sorted(ps.items()) if isinstance(ps, dict) else sorted(ps)] for t, ps in owned.items()]
    return {
        "type": "consumer", "epoch": g.epoch, "assignment_epoch": g.assignment_epoch,
        "metadata": {name: [str(tid), n] for name, (tid, n) in g.metadata.items()},
        "members": [{"id": m.member_id, "instance": m.instance_id, "rack": m.rack_id, "client": m.client_id,
                     "host": m.client_host, "rebalance_ms": m.rebalance_timeout_ms, "topics": list(m.topic_names),
                     "regex": m.topic_regex, "assignor": m.server_assignor, "epoch": m.epoch,
                     "previous_epoch": m.previous_epoch, "state": m.state, "assigned": parts(m.assigned),
                     "revoking": parts(m.revoking), "target": parts(g.targets.get(m.member_id, {}))}
                    for m in g.members.values()],
    }


def apply_consumer_view(cluster: ClusterState, check: Checker, group_id: str, v: dict, where: str) -> None:
    table = classic_groups.all_groups(cluster)
    old = table.get(group_id)
    g = consumer_groups.ConsumerGroup(group_id)
    g.offsets = old.offsets if old is not None else {}
    g.epoch = check.integer(v.get("epoch"), f"{where}.epoch", low=0, high=INT32_MAX)
    g.assignment_epoch = check.integer(v.get("assignment_epoch"), f"{where}.assignment_epoch", low=0, high=INT32_MAX)

    def owned(data: object, at: str, epochs: bool) -> dict:
        out: dict = {}
        for pair in check.array(data, at):
            pair = check.array(pair, at)
            if len(pair) != 2:
                raise check.fail(at, "[topic id, partitions] pairs")
            try:
                topic_id = uuid.UUID(check.text(pair[0], at))
            except ValueError:
                raise check.fail(at, "topic ids") from None
            if epochs:
                out[topic_id] = {check.integer(p, at, low=0): check.integer(e, at) for p, e in
                                 (check.array(x, at) for x in check.array(pair[1], at))}
            else:
                out[topic_id] = {check.integer(p, at, low=0) for p in check.array(pair[1], at)}
        return out
    for k, row in enumerate(check.array(v.get("members"), f"{where}.members")):
        at = f"{where}.members[{k}]"
        r = check.mapping(row, at)
        m = consumer_groups.Member(
            check.text(r.get("id"), f"{at}.id"), check.optional_text(r.get("instance"), f"{at}.instance"),
            check.optional_text(r.get("rack"), f"{at}.rack"), check.text(r.get("client"), f"{at}.client"),
            check.text(r.get("host"), f"{at}.host"), check.integer(r.get("rebalance_ms"), f"{at}.rebalance_ms"),
            tuple(check.text(t, f"{at}.topics") for t in check.array(r.get("topics"), f"{at}.topics")),
            check.optional_text(r.get("regex"), f"{at}.regex"), check.optional_text(r.get("assignor"), f"{at}.assignor"),
            check.integer(r.get("epoch"), f"{at}.epoch"), check.integer(r.get("previous_epoch"), f"{at}.previous_epoch"),
            check.text(r.get("state"), f"{at}.state"),
            owned(r.get("assigned"), f"{at}.assigned", True), owned(r.get("revoking"), f"{at}.revoking", True))
        g.members[m.member_id] = m
        g.targets[m.member_id] = owned(r.get("target"), f"{at}.target", False)
        if m.instance_id is not None:
            g.static_members[m.instance_id] = m.member_id
    for name, pair in check.mapping(v.get("metadata", {}), f"{where}.metadata").items():
        pair = check.array(pair, f"{where}.metadata")
        try:
            g.metadata[name] = (uuid.UUID(check.text(pair[0], f"{where}.metadata")),
                                check.integer(pair[1], f"{where}.metadata", low=0))
        except (ValueError, IndexError):
            raise check.fail(f"{where}.metadata", "topic -> [topic id, partitions]") from None
    g.stored = consumer_view(g)
    table[group_id] = g


def replay_offset(cluster: ClusterState, record: OffsetCommitRecord) -> None:
    """An offset committed (a group that has none yet is created Empty, as a simple commit does)
    or deleted."""
    table = classic_groups.all_groups(cluster)
    g = table.get(record.group)
    key = (record.topic, record.partition)
    if record.value is None:
        if g is not None:
            getattr(g, "offsets", {}).pop(key, None)
        return
    if g is None:
        g = table[record.group] = classic_groups.Group(record.group)
    if not hasattr(g, "offsets"):
        raise ReplayError(f"commits an offset to {record.group!r}, a group that keeps none (a share group)")
    v = record.value
    g.offsets[key] = classic_groups.CommittedOffset(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp)


def replay_group_tombstone(cluster: ClusterState, record: GroupMetadataRecord) -> None:
    classic_groups.all_groups(cluster).pop(record.group, None)


REPLAY = {OffsetCommitRecord: replay_offset, GroupMetadataRecord: replay_group_tombstone}


def offset_records(cluster: ClusterState) -> list[OffsetCommitRecord]:
    """Every committed offset as its record."""
    return [classic_groups.offset_record(g.group_id, key, o) for g in classic_groups.all_groups(cluster).values()
            for key, o in getattr(g, "offsets", {}).items()]


def snapshot(cluster: ClusterState) -> list:
    """Every group's stored view, for the state file (its offsets are records)."""
    return [{"id": g.group_id, "view": g.stored}
            for g in classic_groups.all_groups(cluster).values() if g.stored is not None]


def restore(cluster: ClusterState, data: object, check: Checker) -> None:
    """Put a `snapshot` back, after the state file's records (its groups' offsets)."""
    seen: set[str] = set()
    for i, entry in enumerate(check.array(data, "groups")):
        entry = check.mapping(entry, f"groups[{i}]")
        group_id = check.text(entry.get("id"), f"groups[{i}].id")
        if group_id in seen:
            raise check.fail(f"groups[{i}].id", f"a group id used once ({group_id!r} appears twice)")
        seen.add(group_id)
        view = entry.get("view")
        if view is None:
            raise check.fail(f"groups[{i}].view", "the group's stored view")
        apply_view(cluster, check, group_id, view, f"groups[{i}].view")


def apply_view(cluster: ClusterState, check: Checker, group_id: str, data: object, where: str) -> None:
    """The group as its stored view says (its offsets kept); None deletes the group."""
    table = classic_groups.all_groups(cluster)
    if data is None:
        table.pop(group_id, None)
        return
    v = check.mapping(data, where)
    if v.get("type") == "consumer":
        apply_consumer_view(cluster, check, group_id, v, where)
        return
    if v.get("type") == "share":
        from kafka_shell.sandbox import share_groups
        share_groups.restore_view(cluster, check, group_id, v, where)
        return
    old = table.get(group_id)
    g = table[group_id] = classic_groups.Group(group_id)
    g.offsets = old.offsets if old is not None else {}
    g.protocol_type = check.optional_text(v.get("protocol_type"), f"{where}.protocol_type")
    g.protocol_name = check.optional_text(v.get("protocol_name"), f"{where}.protocol_name")
    g.generation = check.integer(v.get("generation"), f"{where}.generation", low=0, high=INT32_MAX)
    g.leader = check.optional_text(v.get("leader"), f"{where}.leader")
    for k, row in enumerate(check.array(v.get("members"), f"{where}.members")):
        at = f"{where}.members[{k}]"
        fields = check.array(row, at)
        if len(fields) != 8:
            raise check.fail(at, "[member id, instance id, client id, client host, session timeout, "
                                 "rebalance timeout, protocols, assignment]")
        protocols = []
        for name_meta in check.array(fields[6], f"{at} protocols"):
            pair = check.array(name_meta, f"{at} protocols")
            if len(pair) != 2:
                raise check.fail(f"{at} protocols", "[name, hex metadata] pairs")
            protocols.append((check.text(pair[0], f"{at} protocols"), _hex(check, pair[1], f"{at} protocols")))
        m = classic_groups.Member(check.text(fields[0], f"{at} member id"), check.optional_text(fields[1], f"{at} instance id"),
                          check.text(fields[2], f"{at} client id"), check.text(fields[3], f"{at} client host"),
                          check.integer(fields[4], f"{at} session timeout", low=1, high=INT32_MAX),
                          check.integer(fields[5], f"{at} rebalance timeout", low=1, high=INT32_MAX),
                          protocols, _hex(check, fields[7], f"{at} assignment"))
        g.members[m.member_id] = m
        if m.group_instance_id is not None:     # KIP-345: the instance keeps its member's place
            g.static_members[m.group_instance_id] = m.member_id
    if g.members and (g.leader not in g.members or not g.protocol_name):
        raise check.fail(f"{where}.leader", "one of its members, with a protocol name, when it has members")
    g.state = classic_groups.STABLE if g.members else classic_groups.EMPTY
    g.stored = view(g)


def _hex(check: Checker, value: object, where: str) -> bytes:
    try:
        return bytes.fromhex(check.text(value, where))
    except ValueError:
        raise check.fail(where, "hex bytes") from None
