"""KIP-848 consumer groups (type `consumer`): ConsumerGroupDescribe at each group's coordinator,
with what the classic DescribeGroups cannot say: member epochs, subscriptions (names or a regex),
each member's assignment beside its target, the server assignor, the group epoch and the
assignment epoch.

`groups.describe` asks here first, as Kafka's Admin.describeConsumerGroups does, and takes the
groups that are not consumer groups to DescribeGroups.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from kafka_shell.protocol.codes import ApiKey, Error

from kafka_shell.admin.errors import group_line

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

Key = tuple[str, int]
T = TypeVar("T")
M = TypeVar("M")


@dataclass(frozen=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None
    rack: str | None
    member_epoch: int
    client_id: str
    host: str
    subscribed_topics: tuple[str, ...]
    subscribed_regex: str | None
    assignment: tuple[Key, ...]
    target_assignment: tuple[Key, ...]

    @property
    def reconciled(self) -> bool:
        """Whether the member owns what the group's target gives it."""
        return set(self.assignment) == set(self.target_assignment)


@dataclass(frozen=True)
class ConsumerGroup:
    group_id: str
    coordinator: int
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ConsumerMember, ...]


@dataclass(frozen=True)
class NotConsumerGroup:
    """The coordinator holds no consumer group of this id (none at all, or one of another type:
    DescribeGroups is asked next)."""


def supported(conn: ConnectionManager) -> bool:
    return bool(conn.api_versions().get(ApiKey.CONSUMER_GROUP_DESCRIBE))


def described(conn: ConnectionManager, group_ids: list[str], api_key: int, body: dict,
              build: Callable[[Any, int], T], missing: Callable[[str], M],
              missing_codes: tuple[int, ...] = (Error.group_id_not_found,)) -> dict[str, T | M | str]:
    """The describe APIs of KIP-848's group types (consumer, share, streams): one request per
    coordinator for its groups; each group built from its part of the answer with its
    coordinator's id, `missing(gid)` where the coordinator holds no such group, else the line why
    it could not be described."""
    parts = conn.coordinator_requests(group_ids, api_key, lambda ids, version: {"group_ids": ids, **body},
                                      lambda answer, ids: {g.group_id: g for g in answer.groups})
    out: dict[str, T | M | str] = {}
    for gid in group_ids:
        g, node = parts[gid]
        code = int(g.error_code)
        if code in missing_codes:
            out[gid] = missing(gid)
        elif code:
            out[gid] = group_line(code, gid, getattr(g, "error_message", None) or getattr(g, "why", None))
        else:
            out[gid] = build(g, node)
    return out


def describe(conn: ConnectionManager, group_ids: list[str]) -> dict[str, ConsumerGroup | NotConsumerGroup | str]:
    """ConsumerGroupDescribe of each group at its coordinator: its description, NotConsumerGroup,
    or the line why it could not be described."""
    return described(conn, group_ids, ApiKey.CONSUMER_GROUP_DESCRIBE, {"include_authorized_operations": False},
                     lambda g, node: ConsumerGroup(g.group_id, node, g.group_state, int(g.group_epoch),
                                                   int(g.assignment_epoch), g.assignor_name,
                                                   tuple(_member(m) for m in g.members)),
                     lambda gid: NotConsumerGroup(),
                     # A 3.9 broker without the new coordinator lists the API but answers this.
                     (Error.group_id_not_found, Error.unsupported_version))


def _member(m: Any) -> ConsumerMember:
    return ConsumerMember(m.member_id, m.instance_id, m.rack_id, int(m.member_epoch), m.client_id, m.client_host,
                          tuple(m.subscribed_topic_names), m.subscribed_topic_regex,
                          _keys(m.assignment), _keys(m.target_assignment))


def _keys(assignment: Any) -> tuple[Key, ...]:
    return tuple(sorted((t.topic_name, int(p)) for t in assignment.topic_partitions for p in t.partitions))
