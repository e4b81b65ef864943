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

from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.connection.manager import COORDINATOR_RETRIABLE
from kafka_shell.connection.metadata import GroupListing, group_listings

from kafka_shell.admin import consumer_groups
from kafka_shell.admin.errors import code_name, group_line
from kafka_shell.base.errors import kafka_error_message

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

__all__ = ["GroupListing", "Groups", "Member", "GroupDescription", "list_groups", "describe", "delete"]

Key = tuple[str, int]
# Kafka's ConsumerGroupState values (what --state accepts).
STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning",
          "Reconciling", "Unknown")
TYPES = ("classic", "consumer", "share", "streams")   # ListGroups v5's group types


@dataclass(frozen=True)
class Groups:
    """Every group the brokers that answered listed, and a line per broker that did not."""
    groups: list[GroupListing]
    failures: list[str]


def list_groups(conn: ConnectionManager, states: Iterable[str] = (), types: Iterable[str] = ()) -> Groups:
    """Every group of the cluster (each broker lists the groups it coordinates), optionally only
    those in `states` and of `types`."""
    wanted = {s.lower() for s in states}
    kinds = {t.lower() for t in types}
    brokers = sorted(conn.read([]).brokers)
    body = {"states_filter": sorted(wanted), "types_filter": sorted(kinds)}
    deadline = conn.deadline()
    answered: dict[int, Any] = {}
    failed: dict[int, str] = {}
    pending = brokers
    while True:   # a broker still loading a coordinator's state is asked again, as Kafka's Admin does
        conn.debug(f"ListGroups request to broker(s) {', '.join(map(str, pending))}")
        answers = conn.each_broker(pending, ApiKey.LIST_GROUPS, body, deadline=deadline)
        answered.update(answers.answers)
        failed.update(answers.failed)
        pending = [b for b, a in answers.answers.items() if a.error_code in COORDINATOR_RETRIABLE]
        if not pending or not deadline.backoff():
            break
    out: dict[str, GroupListing] = {}
    failures = [f"Broker {b} did not list its groups: {why}" for b, why in sorted(failed.items())]
    for broker, answer in sorted(answered.items()):
        if answer.error_code:
            failures.append(f"Broker {broker} did not list its groups: "
                            + kafka_error_message(answer.error_code, code_name(answer.error_code)))
            continue
        for g in group_listings(answer, broker):
            # Brokers before v4 (v5) do not filter by state (type).
            if (not wanted or g.state.lower() in wanted) and (not kinds or g.group_type.lower() in kinds):
                out[g.group_id] = g
    return Groups([out[k] for k in sorted(out)], failures)


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
    problem: str | None = None        # why it could not be described, as a line
    missing: bool = False             # it does not exist (GROUP_ID_NOT_FOUND, or Dead)
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


def describe(conn: ConnectionManager, group_ids: list[str]) -> dict[str, GroupDescription]:
    """Each group as its coordinator describes it: ConsumerGroupDescribe first where the cluster
    has it (as Kafka's Admin), DescribeGroups for the groups that are not KIP-848 consumer groups.
    A group that does not exist comes back `missing`."""
    out: dict[str, GroupDescription] = {}
    classic = group_ids
    if group_ids and consumer_groups.supported(conn):
        found = consumer_groups.describe(conn, group_ids)
        for gid, d in found.items():
            if isinstance(d, str):
                out[gid] = GroupDescription(gid, d)
            elif isinstance(d, consumer_groups.ConsumerGroup):
                members = tuple(Member(m.member_id, m.instance_id, m.client_id, m.host, m.assignment) for m in d.members)
                out[gid] = GroupDescription(gid, None, False, d.state, "consumer", d.assignor, d.coordinator, members,
                                            "consumer", d)
        classic = [gid for gid in group_ids if isinstance(found[gid], consumer_groups.NotConsumerGroup)]
    out.update(_describe_classic(conn, classic) if classic else {})
    return {gid: out[gid] for gid in group_ids}


def _describe_classic(conn: ConnectionManager, group_ids: list[str]) -> dict[str, GroupDescription]:
    """DescribeGroups of each group at its coordinator; a group that does not exist comes back
    `missing` (older brokers say state Dead, which is taken as that)."""
    parts = conn.coordinator_requests(
        group_ids, ApiKey.DESCRIBE_GROUPS,
        lambda ids, version: {"groups": ids, "include_authorized_operations": False},
        lambda answer, ids: {g.group_id: g for g in answer.groups})
    out = {}
    for gid in group_ids:
        g, node = parts[gid]
        code = int(g.error_code)
        state = getattr(g, "group_state", "") or ""
        if code or state == "Dead":
            code = code or Error.group_id_not_found
            missing = code == Error.group_id_not_found
            out[gid] = GroupDescription(gid, group_line(code, gid, getattr(g, "error_message", None)),
                                        missing=missing, state="Dead" if missing else state, coordinator=node)
            continue
        protocol_type = g.protocol_type or ""
        consumer = protocol_type in ("consumer", "")
        members = tuple(Member(m.member_id, getattr(m, "group_instance_id", None), m.client_id, m.client_host,
                               consumer_assignment(m.member_assignment or b"") if consumer else ())
                        for m in g.members)
        out[gid] = GroupDescription(gid, None, False, state, protocol_type, g.protocol_data or "", node, members)
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


def delete(conn: ConnectionManager, group_ids: list[str]) -> dict[str, str | None]:
    """DeleteGroups at each group's coordinator: group -> None when deleted, else the line why not."""
    parts = conn.coordinator_requests(group_ids, ApiKey.DELETE_GROUPS, lambda ids, version: {"groups_names": ids},
                                      lambda a, ids: {r.group_id: r for r in a.results}, mutation=True)
    out: dict[str, str | None] = {}
    for gid in group_ids:
        part: Any = parts[gid][0]
        code = int(part.error_code)
        out[gid] = group_line(code, gid, getattr(part, "error_message", None)) if code else None
    return out
