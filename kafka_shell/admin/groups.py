"""Consumer groups: listing them (ListGroups, each broker for the groups it coordinates),
describing them (ConsumerGroupDescribe for KIP-848 groups, `consumer_groups.py`; DescribeGroups
for classic ones) and deleting them (DeleteGroups).

Group requests go to each group's coordinator; the connection manager finds it and asks again
while it moves or loads (`ConnectionManager.coordinator_requests`), within the command's deadline.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_shell.base.answers import BROKER, COORDINATOR, AdminError, Answers, Target
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.connection.manager import COORDINATOR_RETRIABLE, Then
from kafka_shell.connection.metadata import GroupListing, group_listings

from kafka_shell.admin import consumer_groups, share_groups, streams_groups
from kafka_shell.admin.errors import OTHER_TYPES, another_type
from kafka_shell.base.errors import NotSupported

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

__all__ = ["GroupListing", "Groups", "Member", "GroupDescription", "list_groups", "describe", "delete"]

Key = tuple[str, int]
# Kafka's ConsumerGroupState values (what --state accepts).
STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning",
          "Reconciling", "Unknown")
TYPES = ("classic", "consumer", "share", "streams")   # ListGroups v5's group types


@dataclass(frozen=True)
class Groups(Answers[int, tuple[GroupListing, ...]]):
    """The groups each broker listed (those it coordinates); an AdminError for each broker that
    did not list them."""

    @property
    def groups(self) -> list[GroupListing]:
        """Every group listed, by id (once: a coordinator that moved may be listed by two brokers)."""
        found = {g.group_id: g for _, listed in sorted(self.rows.items()) for g in listed}
        return [found[k] for k in sorted(found)]


def list_groups(conn: ConnectionManager, states: Iterable[str] = (), types: Iterable[str] = ()) -> Groups:
    """Every group of the cluster (each broker lists the groups it coordinates), optionally only
    those in `states` and of `types`."""
    wanted = {s.lower() for s in states}
    kinds = {t.lower() for t in types}
    brokers = sorted(conn.read([]).brokers)
    body = {"states_filter": sorted(wanted), "types_filter": sorted(kinds)}
    deadline = conn.deadline()
    answered: dict[int, Any] = {}
    failed: dict[int, AdminError] = {}
    pending = brokers
    while True:   # a broker still loading a coordinator's state is asked again, as Kafka's Admin does
        conn.debug(f"ListGroups request to broker(s) {', '.join(map(str, pending))}")
        answers = conn.each_broker(pending, ApiKey.LIST_GROUPS, body, deadline=deadline)
        answered.update(answers.rows)
        failed.update(answers.errors)
        pending = [b for b, a in answers.rows.items() if a.error_code in COORDINATOR_RETRIABLE]
        if not pending or not deadline.backoff():
            break
    rows: dict[int, tuple[GroupListing, ...]] = {}
    for broker, answer in sorted(answered.items()):
        if answer.error_code:
            failed[broker] = AdminError(int(answer.error_code), Target(BROKER, broker))
            continue
        # Brokers before v4 (v5) do not filter by state (type).
        rows[broker] = tuple(g for g in group_listings(answer, broker)
                             if (not wanted or g.state.lower() in wanted) and (not kinds or g.group_type.lower() in kinds))
    return Groups(rows, dict(sorted(failed.items())))


@dataclass(frozen=True)
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[Key, ...] = ()


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str = ""
    protocol_type: str = ""
    protocol: str = ""
    coordinator: int = -1
    members: tuple[Member, ...] = field(default=())
    group_type: str = "classic"
    consumer: consumer_groups.ConsumerGroup | None = None   # a KIP-848 group's own description

    @property
    def active(self) -> bool:
        """Kafka resets offsets only of groups that are Empty (or do not exist: Dead)."""
        return self.state not in ("Empty", "Dead")


def describe(conn: ConnectionManager, group_ids: list[str]) -> Answers[str, GroupDescription]:
    """Each group as its coordinator describes it: ConsumerGroupDescribe first where the cluster
    has it (as Kafka's Admin), then, at the same coordinator, DescribeGroups for the groups that
    are not KIP-848 consumer groups. A group that does not exist has the error
    GROUP_ID_NOT_FOUND (`errors.no_such_group`; older brokers say state Dead)."""
    classic = Then(ApiKey.DESCRIBE_GROUPS, lambda ids, version: {"groups": ids, "include_authorized_operations": False},
                   lambda answer, ids: {g.group_id: g for g in answer.groups}, consumer_groups.not_a_consumer_group)
    if group_ids and consumer_groups.supported(conn):
        parts = conn.coordinator_requests(
            group_ids, ApiKey.CONSUMER_GROUP_DESCRIBE,
            lambda ids, version: {"group_ids": ids, "include_authorized_operations": False},
            lambda answer, ids: {g.group_id: g for g in answer.groups}, then=classic)
    else:
        parts = conn.coordinator_requests(group_ids, ApiKey.DESCRIBE_GROUPS, classic.body_for, classic.split)
    rows: dict[str, GroupDescription] = {}
    errors = dict(parts.errors)
    for gid, (g, node) in parts.rows.items():
        if consumer_groups.is_consumer_group(g):
            d = consumer_groups.consumer_group(g, node)
            members = tuple(Member(m.member_id, m.instance_id, m.client_id, m.host, m.assignment) for m in d.members)
            rows[gid] = GroupDescription(gid, d.state, "consumer", d.assignor, node, members, "consumer", d)
        elif (getattr(g, "group_state", "") or "") == "Dead":
            errors[gid] = AdminError(Error.group_id_not_found, Target(COORDINATOR, node, (gid,)))
        else:
            protocol_type = g.protocol_type or ""
            consumer = protocol_type in ("consumer", "")
            members = tuple(Member(m.member_id, getattr(m, "group_instance_id", None), m.client_id, m.client_host,
                                   consumer_assignment(m.member_assignment or b"") if consumer else ())
                            for m in g.members)
            rows[gid] = GroupDescription(gid, g.group_state, protocol_type, g.protocol_data or "", node, members)
    missing = [gid for gid, e in errors.items() if e.code == Error.group_id_not_found]
    for gid, kind in (other_group_types(conn, missing) if missing else {}).items():
        errors[gid] = AdminError(Error.group_id_not_found, errors[gid].target, another_type(kind))
    return Answers({gid: rows[gid] for gid in group_ids if gid in rows},
                   {gid: errors[gid] for gid in group_ids if gid in errors})


def other_group_types(conn: ConnectionManager, group_ids: list[str]) -> dict[str, str]:
    """Which of these ids, unknown as consumer groups, are share or streams groups (KIP-932,
    KIP-1071), asked of their coordinators where the cluster has those groups."""
    out: dict[str, str] = {}
    for kind, module in zip(OTHER_TYPES, (share_groups, streams_groups)):
        pending = [gid for gid in group_ids if gid not in out]
        try:
            found = module.describe(conn, pending) if pending else Answers()
        except NotSupported:
            continue
        out.update(dict.fromkeys(found.rows, kind))
    return out


def consumer_assignment(data: bytes) -> tuple[Key, ...]:
    """Partitions of a ConsumerProtocolAssignment (version, [topic, [partition]], user data);
    empty when the bytes are not one (another protocol type)."""
    out: list[Key] = []
    try:
        (count,) = struct.unpack_from(">i", data, 2)
        pos = 6
        for _ in range(max(count, 0)):
            (n,) = struct.unpack_from(">h", data, pos)
            topic = data[pos + 2:pos + 2 + n].decode()
            pos += 2 + n
            (parts,) = struct.unpack_from(">i", data, pos)
            pos += 4
            out += [(topic, p) for p in struct.unpack_from(f">{max(parts, 0)}i", data, pos)]
            pos += 4 * max(parts, 0)
    except (struct.error, UnicodeDecodeError):
        return ()
    return tuple(out)


def delete(conn: ConnectionManager, group_ids: list[str]) -> Answers[str, None]:
    """DeleteGroups at each group's coordinator: each group deleted, or its error."""
    parts = conn.coordinator_requests(group_ids, ApiKey.DELETE_GROUPS, lambda ids, version: {"groups_names": ids},
                                      lambda a, ids: {r.group_id: r for r in a.results}, mutation=True)
    return Answers(dict.fromkeys(parts.rows), parts.errors)
