"""Share groups (KIP-932, "queues for Kafka"): ShareGroupDescribe and DescribeShareGroupOffsets
at each group's coordinator. A cluster without them (before Kafka 4.1, or one that does not serve
them) is told in one line before anything is asked (`releases.require`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_shell.base.answers import COORDINATOR, AdminError, Answers, Target
from kafka_shell.protocol.codes import ApiKey, Error

from kafka_shell.admin import releases
from kafka_shell.admin.consumer_groups import described

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

Key = tuple[str, int]
SINCE = "4.1"


def require(conn: ConnectionManager) -> None:
    releases.require(conn, ApiKey.SHARE_GROUP_DESCRIBE, "share groups", SINCE)


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    rack: str | None
    member_epoch: int
    client_id: str
    host: str
    subscribed_topics: tuple[str, ...]
    assignment: tuple[Key, ...]


@dataclass(frozen=True)
class ShareGroup:
    group_id: str
    coordinator: int
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ShareMember, ...]


def describe(conn: ConnectionManager, group_ids: list[str]) -> Answers[str, ShareGroup]:
    """ShareGroupDescribe of each group: its description, or its error (a group that is not a
    share group is GROUP_ID_NOT_FOUND, as Kafka answers)."""
    require(conn)
    return described(conn, group_ids, ApiKey.SHARE_GROUP_DESCRIBE, {"include_authorized_operations": False},
                     lambda g, node: ShareGroup(g.group_id, node, g.group_state, int(g.group_epoch),
                                                int(g.assignment_epoch), g.assignor_name,
                                                tuple(_member(m) for m in g.members)))


def _member(m: Any) -> ShareMember:
    keys = tuple(sorted((t.topic_name, int(p)) for t in m.assignment.topic_partitions for p in t.partitions))
    return ShareMember(m.member_id, m.rack_id, int(m.member_epoch), m.client_id, m.client_host,
                       tuple(m.subscribed_topic_names), keys)


class ShareOffset(NamedTuple):
    key: Key
    start_offset: int | None     # None: the share-partition is not initialized
    leader_epoch: int
    lag: int | None              # None: unknown (Kafka's -1)
    error_code: int = 0          # the partition's error, when its state could not be read


def offsets(conn: ConnectionManager, group_ids: list[str]) -> Answers[str, tuple[ShareOffset, ...]]:
    """DescribeShareGroupOffsets of every topic each group has state for: one row a partition
    (with its own error code when its state could not be read), or the group's error."""
    require(conn)
    parts = conn.coordinator_requests(
        group_ids, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        lambda ids, version: {"groups": [{"group_id": gid, "topics": None} for gid in ids]},
        lambda answer, ids: {g.group_id: g for g in answer.groups}, batched_from=None)
    return Answers({gid: tuple(sorted(
        ShareOffset((t.topic_name, int(p.partition_index)), int(p.start_offset) if p.start_offset >= 0 else None,
                    int(p.leader_epoch), int(p.lag) if p.lag >= 0 else None, int(p.error_code))
        for t in g.topics for p in t.partitions)) for gid, (g, _) in parts.rows.items()}, parts.errors)


def alter_offsets(conn: ConnectionManager, group_id: str, offsets: dict[Key, int]) -> Answers[Key, int]:
    """AlterShareGroupOffsets (the group must be empty): each partition's start offset set, or
    its error (the group's, when it refused as a whole: the same error for every partition)."""
    require(conn)
    topics: dict[str, list[dict]] = {}
    for (t, p), offset in sorted(offsets.items()):
        topics.setdefault(t, []).append({"partition_index": p, "start_offset": offset})
    body = {"group_id": group_id, "topics": [{"topic_name": t, "partitions": ps} for t, ps in topics.items()]}
    found = conn.coordinator_requests([group_id], ApiKey.ALTER_SHARE_GROUP_OFFSETS, lambda ids, version: body,
                                      lambda a, ids: {group_id: a}, mutation=True)
    if group_id in found.errors:
        return Answers({}, dict.fromkeys(sorted(offsets), found.errors[group_id]))
    part, node = found.rows[group_id]
    refused = {(t.topic_name, int(p.partition_index)): AdminError(int(p.error_code), Target(
                   COORDINATOR, node, ((t.topic_name, int(p.partition_index)),)), p.error_message or "")
               for t in getattr(part, "responses", ()) for p in t.partitions if p.error_code}
    return Answers({k: o for k, o in sorted(offsets.items()) if k not in refused}, refused)


def delete_offsets(conn: ConnectionManager, group_id: str, topics: list[str]) -> Answers[str, None]:
    """DeleteShareGroupOffsets (the group must be empty): each topic whose state was deleted, or
    its error (the group's, when it refused as a whole: the same error for every topic)."""
    require(conn)
    body = {"group_id": group_id, "topics": [{"topic_name": t} for t in topics]}
    found = conn.coordinator_requests([group_id], ApiKey.DELETE_SHARE_GROUP_OFFSETS, lambda ids, version: body,
                                      lambda a, ids: {group_id: a}, mutation=True)
    if group_id in found.errors:
        return Answers({}, dict.fromkeys(topics, found.errors[group_id]))
    part, node = found.rows[group_id]
    answered = {t.topic_name: t for t in getattr(part, "responses", ())}
    errors = {t: AdminError(int(answered[t].error_code) if t in answered else Error.unknown_server_error,
                            Target(COORDINATOR, node, (t,)),
                            (answered[t].error_message or "") if t in answered else "left out of the answer")
              for t in topics if t not in answered or answered[t].error_code}
    return Answers(dict.fromkeys(t for t in topics if t not in errors), errors)
