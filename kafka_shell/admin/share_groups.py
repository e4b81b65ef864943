"""Share groups (KIP-932, "queues for Kafka"): ShareGroupDescribe and DescribeShareGroupOffsets
at each group's coordinator. A cluster without them (before Kafka 4.1, or one that does not serve
them) is told in one line before anything is asked (`releases.require`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_shell.protocol.codes import ApiKey

from kafka_shell.admin import releases
from kafka_shell.admin.consumer_groups import described
from kafka_shell.admin.errors import group_line, partition_line
from kafka_shell.base.errors import shown

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


def describe(conn: ConnectionManager, group_ids: list[str]) -> dict[str, ShareGroup | str]:
    """ShareGroupDescribe of each group: its description, or the line why not (a group that is
    not a share group is "not found", as Kafka answers)."""
    require(conn)
    return described(conn, group_ids, ApiKey.SHARE_GROUP_DESCRIBE, {"include_authorized_operations": False},
                     lambda g, node: ShareGroup(g.group_id, node, g.group_state, int(g.group_epoch),
                                                int(g.assignment_epoch), g.assignor_name,
                                                tuple(_member(m) for m in g.members)),
                     lambda gid: f"Share group '{shown(gid)}' does not exist (list-share-groups lists them).")


def _member(m: Any) -> ShareMember:
    keys = tuple(sorted((t.topic_name, int(p)) for t in m.assignment.topic_partitions for p in t.partitions))
    return ShareMember(m.member_id, m.rack_id, int(m.member_epoch), m.client_id, m.client_host,
                       tuple(m.subscribed_topic_names), keys)


class ShareOffset(NamedTuple):
    key: Key
    start_offset: int | None     # None: the share-partition is not initialized
    leader_epoch: int
    lag: int | None              # None: unknown (Kafka's -1)
    error: str | None = None


def offsets(conn: ConnectionManager, group_id: str) -> tuple[str | None, list[ShareOffset]]:
    """DescribeShareGroupOffsets of every topic the group has state for: (the line why the group
    could not be read, or None; one row a partition)."""
    require(conn)
    parts = conn.coordinator_requests(
        [group_id], ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        lambda ids, version: {"groups": [{"group_id": gid, "topics": None} for gid in ids]},
        lambda answer, ids: {g.group_id: g for g in answer.groups}, batched_from=None)
    g, _ = parts[group_id]
    code = int(g.error_code)
    if code:
        return group_line(code, group_id, getattr(g, "error_message", None) or getattr(g, "why", None)), []
    rows = []
    for t in g.topics:
        for p in t.partitions:
            key = (t.topic_name, int(p.partition_index))
            err = int(p.error_code)
            rows.append(ShareOffset(key, int(p.start_offset) if p.start_offset >= 0 else None, int(p.leader_epoch),
                                    int(p.lag) if p.lag >= 0 else None, partition_line(key, err) if err else None))
    return None, sorted(rows)


def alter_offsets(conn: ConnectionManager, group_id: str, offsets: dict[Key, int]) -> tuple[str | None, dict[Key, str | None]]:
    """AlterShareGroupOffsets (the group must be empty): the group's line when it refused as a
    whole, and per partition None when set, else the line why not."""
    require(conn)
    topics: dict[str, list[dict]] = {}
    for (t, p), offset in sorted(offsets.items()):
        topics.setdefault(t, []).append({"partition_index": p, "start_offset": offset})
    body = {"group_id": group_id, "topics": [{"topic_name": t, "partitions": ps} for t, ps in topics.items()]}
    part, _ = conn.coordinator_requests([group_id], ApiKey.ALTER_SHARE_GROUP_OFFSETS, lambda ids, version: body,
                                        lambda a, ids: {group_id: a}, mutation=True)[group_id]
    top = int(part.error_code)
    per_partition = {(t.topic_name, int(p.partition_index)):
                     (partition_line((t.topic_name, int(p.partition_index)), int(p.error_code)) if p.error_code else None)
                     for t in getattr(part, "responses", ()) for p in t.partitions}
    return (group_line(top, group_id, getattr(part, "error_message", None)) if top else None), per_partition


def delete_offsets(conn: ConnectionManager, group_id: str, topics: list[str]) -> tuple[str | None, dict[str, str | None]]:
    """DeleteShareGroupOffsets (the group must be empty): the group's line when it refused as a
    whole, and per topic None when its state was deleted, else the line why not."""
    require(conn)
    body = {"group_id": group_id, "topics": [{"topic_name": t} for t in topics]}
    part, _ = conn.coordinator_requests([group_id], ApiKey.DELETE_SHARE_GROUP_OFFSETS, lambda ids, version: body,
                                        lambda a, ids: {group_id: a}, mutation=True)[group_id]
    top = int(part.error_code)
    per_topic = {t.topic_name: (f"{t.topic_name}: {t.error_message or f'error code {int(t.error_code)}'}"
                                if t.error_code else None) for t in getattr(part, "responses", ())}
    return (group_line(top, group_id, getattr(part, "error_message", None)) if top else None), per_topic
