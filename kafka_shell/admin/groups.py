"""Consumer groups: listing them (ListGroups, each broker for the groups it coordinates),
describing them (DescribeGroups) and deleting them (DeleteGroups).

Group requests go to each group's coordinator; the connection manager finds it and asks again
while it moves or loads (`ConnectionManager.coordinator_requests`), within the command's deadline.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_shell.codes import ApiKey, Error
from kafka_shell.metadata import GroupListing, group_listings

from kafka_shell.admin.errors import code_name, group_line
from kafka_shell.errors import kafka_error_message

if TYPE_CHECKING:
    from kafka_shell.connection import ConnectionManager

__all__ = ["GroupListing", "Groups", "Member", "GroupDescription", "list_groups", "describe", "delete"]

Key = tuple[str, int]
# Kafka's ConsumerGroupState values (what --state accepts).
STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning",
          "Reconciling", "Unknown")


@dataclass(frozen=True)
class Groups:
    """Every group the brokers that answered listed, and a line per broker that did not."""
    groups: list[GroupListing]
    failures: list[str]


def list_groups(conn: ConnectionManager, states: Iterable[str] = ()) -> Groups:
    """Every group of the cluster (each broker lists the groups it coordinates), optionally only
    those in `states`."""
    wanted = {s.lower() for s in states}
    brokers = sorted(conn.read([]).brokers)
    conn.debug(f"ListGroups request to broker(s) {', '.join(map(str, brokers))}")
    answers = conn.each_broker(brokers, ApiKey.LIST_GROUPS, {"states_filter": sorted(wanted), "types_filter": []})
    out: dict[str, GroupListing] = {}
    failures = [f"Broker {b} did not list its groups: {why}" for b, why in sorted(answers.failed.items())]
    for broker, answer in sorted(answers.answers.items()):
        if answer.error_code:
            failures.append(f"Broker {broker} did not list its groups: "
                            + kafka_error_message(answer.error_code, code_name(answer.error_code)))
            continue
        for g in group_listings(answer, broker):
            if not wanted or g.state.lower() in wanted:  # brokers before v4 do not filter
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

    @property
    def active(self) -> bool:
        """Kafka resets offsets only of groups that are Empty (or do not exist: Dead)."""
        return self.state not in ("Empty", "Dead")


def describe(conn: ConnectionManager, group_ids: list[str]) -> dict[str, GroupDescription]:
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
