"""Streams groups (KIP-1071): StreamsGroupDescribe at each group's coordinator: the topology's
subtopologies and their topics, members with their process and task assignment (active,
standby, warm-up) beside the target. Their committed offsets are a consumer group's
(OffsetFetch, offsets.committed). A cluster without them is told in one line first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_shell.base.answers import Answers
from kafka_shell.protocol.codes import ApiKey

from kafka_shell.admin import releases
from kafka_shell.admin.consumer_groups import described

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

SINCE = "4.1"
Tasks = tuple[tuple[str, tuple[int, ...]], ...]    # (subtopology id, partitions) each


def require(conn: ConnectionManager) -> None:
    releases.require(conn, ApiKey.STREAMS_GROUP_DESCRIBE, "streams groups", SINCE)


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...]
    changelog_topics: tuple[str, ...]
    repartition_source_topics: tuple[str, ...]


@dataclass(frozen=True)
class StreamsMember:
    member_id: str
    member_epoch: int
    instance_id: str | None
    process_id: str
    client_id: str
    host: str
    classic: bool
    active: Tasks
    standby: Tasks
    warmup: Tasks
    target_active: Tasks
    target_standby: Tasks
    target_warmup: Tasks


@dataclass(frozen=True)
class StreamsGroup:
    group_id: str
    coordinator: int
    state: str
    group_epoch: int
    assignment_epoch: int
    topology_epoch: int | None
    assignor: str
    subtopologies: tuple[Subtopology, ...]
    members: tuple[StreamsMember, ...]

    @property
    def source_topics(self) -> tuple[str, ...]:
        """The topology's source topics: what kafka-streams-groups' --all-input-topics means."""
        return tuple(sorted({t for s in self.subtopologies for t in s.source_topics}))

    @property
    def internal_topics(self) -> tuple[str, ...]:
        """The topics Kafka's tool deletes with --delete-all-internal-topics: repartition and
        changelog topics that are no source topic and are named as Streams names its own
        (`<application id>-...-changelog`, `-repartition`, ...)."""
        sources = set(self.source_topics)
        named = {t for s in self.subtopologies for t in (*s.repartition_source_topics, *s.changelog_topics)}
        return tuple(sorted(t for t in named - sources if is_internal_topic(t, self.group_id)))

    def task_partitions(self) -> set[tuple[str, int]]:
        """The partitions the members' active tasks read (their subtopology's source and
        repartition topics): the rows of Kafka's describe offsets."""
        inputs = {s.subtopology_id: (*s.source_topics, *s.repartition_source_topics) for s in self.subtopologies}
        return {(topic, p) for m in self.members for sub, partitions in m.active
                for topic in inputs.get(sub, ()) for p in partitions}


_INTERNAL_SUFFIXES = ("-changelog", "-repartition", "-subscription-registration-topic", "-subscription-response-topic")
_FK_JOIN_TOPIC = re.compile(r".+-KTABLE-FK-JOIN-SUBSCRIPTION-(REGISTRATION|RESPONSE)-\d+-topic")


def is_internal_topic(topic: str, application_id: str) -> bool:
    """Whether `topic` is named as Kafka Streams names the internal topics of `application_id`."""
    return topic.startswith(application_id + "-") and (topic.endswith(_INTERNAL_SUFFIXES)
                                                       or _FK_JOIN_TOPIC.fullmatch(topic) is not None)


def describe(conn: ConnectionManager, group_ids: list[str]) -> Answers[str, StreamsGroup]:
    """StreamsGroupDescribe of each group: its description, or its error (GROUP_ID_NOT_FOUND
    for a group that is not a streams group)."""
    require(conn)
    return described(conn, group_ids, ApiKey.STREAMS_GROUP_DESCRIBE,
                     {"include_authorized_operations": False, "include_topology_description": False}, _group)


def _group(g: Any, node: int) -> StreamsGroup:
    topology = g.topology
    subs = tuple(Subtopology(s.subtopology_id, tuple(s.source_topics), tuple(s.repartition_sink_topics),
                             tuple(t.name for t in s.state_changelog_topics),
                             tuple(t.name for t in s.repartition_source_topics))
                 for s in (topology.subtopologies if topology is not None else ()))
    return StreamsGroup(g.group_id, node, g.group_state, int(g.group_epoch), int(g.assignment_epoch),
                        int(topology.epoch) if topology is not None else None,
                        getattr(g, "assignor_name", "") or "", subs, tuple(_member(m) for m in g.members))


def _tasks(tasks: Any) -> Tasks:
    return tuple(sorted((t.subtopology_id, tuple(sorted(int(p) for p in t.partitions))) for t in tasks))


def _member(m: Any) -> StreamsMember:
    a, t = m.assignment, m.target_assignment
    return StreamsMember(m.member_id, int(m.member_epoch), m.instance_id, m.process_id, m.client_id, m.client_host,
                         bool(m.is_classic), _tasks(a.active_tasks), _tasks(a.standby_tasks), _tasks(a.warmup_tasks),
                         _tasks(t.active_tasks), _tasks(t.standby_tasks), _tasks(t.warmup_tasks))


def tasks_text(tasks: Tasks) -> str:
    """Kafka's way: `0:[0,1] 1:[2]`."""
    return " ".join(f"{s}:[{','.join(map(str, ps))}]" for s, ps in tasks) or "-"
