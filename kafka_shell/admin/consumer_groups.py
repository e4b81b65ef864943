"""KIP-848 consumer groups (type `consumer`): ConsumerGroupDescribe at each group's coordinator,
with what the classic DescribeGroups cannot say: member epochs, subscriptions (names or a regex),
each member's assignment beside its target, the server assignor, the group epoch and the
assignment epoch.

`groups.describe` asks ConsumerGroupDescribe first, as Kafka's Admin.describeConsumerGroups does,
and DescribeGroups, at the same coordinator, for the groups that are not consumer groups.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from kafka_shell.base.answers import Answers
from kafka_shell.protocol.codes import ApiKey, Error

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

Key = tuple[str, int]
T = TypeVar("T")


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


def supported(conn: ConnectionManager) -> bool:
    return bool(conn.api_versions().get(ApiKey.CONSUMER_GROUP_DESCRIBE))


def described(conn: ConnectionManager, group_ids: list[str], api_key: int, body: dict,
              build: Callable[[Any, int], T]) -> Answers[str, T]:
    """The describe APIs of KIP-848's group types (consumer, share, streams): one request per
    coordinator for its groups; each group built from its part of the answer with its
    coordinator's id, or its error (GROUP_ID_NOT_FOUND where the coordinator holds no such group)."""
    parts = conn.coordinator_requests(group_ids, api_key, lambda ids, version: {"group_ids": ids, **body},
                                      lambda answer, ids: {g.group_id: g for g in answer.groups})
    return Answers({gid: build(g, node) for gid, (g, node) in parts.rows.items()}, parts.errors)


def consumer_group(g: Any, node: int) -> ConsumerGroup:
    """A group from its part of a ConsumerGroupDescribe answer, at coordinator `node`."""
    return ConsumerGroup(g.group_id, node, g.group_state, int(g.group_epoch), int(g.assignment_epoch),
                         g.assignor_name, tuple(_member(m) for m in g.members))


def not_a_consumer_group(part: Any) -> bool:
    """ConsumerGroupDescribe holds no consumer group of this id (none, or one of another type;
    a 3.9 broker without the new coordinator lists the API but answers UNSUPPORTED_VERSION)."""
    return int(part.error_code) in (Error.group_id_not_found, Error.unsupported_version)


def is_consumer_group(part: Any) -> bool:
    """The part is ConsumerGroupDescribe's (not DescribeGroups')."""
    return hasattr(part, "assignor_name")


def _member(m: Any) -> ConsumerMember:
    return ConsumerMember(m.member_id, m.instance_id, m.rack_id, int(m.member_epoch), m.client_id, m.client_host,
                          tuple(m.subscribed_topic_names), m.subscribed_topic_regex,
                          _keys(m.assignment), _keys(m.target_assignment))


def _keys(assignment: Any) -> tuple[Key, ...]:
    return tuple(sorted((t.topic_name, int(p)) for t in assignment.topic_partitions for p in t.partitions))
