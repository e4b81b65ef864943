"""What several handler modules check or answer alike: the topic a request names, the leader
checks before serving a partition, the endpoints of moved leaders (KIP-951), the group checks
before a coordinator sees a request, and the client host groups report."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import AclResourceType
from kafka_shell.sandbox import classic_groups as gc
from kafka_shell.sandbox.model import ClusterState, Partition, Topic

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext


def find_topic(cluster: ClusterState, name: str | None, topic_id: uuid.UUID | None) -> tuple[Topic | None, int]:
    """The topic a request names by name or (newer versions) by id, or the error to answer."""
    if name:
        t = cluster.topics.get(name)
        return t, 0 if t else ErrorCode.unknown_topic_or_partition
    t = cluster.topic_by_id(topic_id) if topic_id and topic_id != codec.ZERO_UUID else None
    return t, 0 if t else ErrorCode.unknown_topic_id


def topic_keys(t: Topic | None, name: str | None, topic_id: uuid.UUID | None) -> dict:
    """Both ways a response may name a topic; `build` keeps the one the version has."""
    return {"name": name or (t.name if t else ""), "topic": name or (t.name if t else ""),
            "topic_id": topic_id or (t.id if t else codec.ZERO_UUID)}


def leader_error(ctx: RequestContext, p: Partition, current_leader_epoch: int = -1) -> int:
    """Kafka's check before serving a partition: this broker a replica, the client's leader epoch
    current, this broker the leader."""
    if ctx.broker.id not in p.replicas:
        return ErrorCode.not_leader_or_follower
    if current_leader_epoch >= 0 and current_leader_epoch < p.leader_epoch:
        return ErrorCode.fenced_leader_epoch
    if current_leader_epoch > p.leader_epoch:
        return ErrorCode.unknown_leader_epoch
    if p.leader != ctx.broker.id:
        return ErrorCode.not_leader_or_follower
    return 0


def topic_denied(ctx: RequestContext, t: Topic | None, name: str | None) -> bool:
    """Whether the principal lacks what this API needs on the topic (authorizer.API_NEEDS):
    asked before whether a named topic exists, as Kafka does."""
    topic_name = name or (t.name if t else None)
    return topic_name is not None and topic_name != "" and not ctx.permits(AclResourceType.TOPIC, topic_name)


def current_leader(p: Partition | None) -> dict:
    return {"leader_id": p.leader, "leader_epoch": p.leader_epoch} if p else {}


def node_endpoints(ctx: RequestContext, partitions: list[Partition]) -> list[dict]:
    """Endpoints of the leaders named in NOT_LEADER_OR_FOLLOWER answers (KIP-951)."""
    ids = sorted({p.leader for p in partitions if p.leader >= 0})
    return [{"node_id": b.id, "host": b.host, "port": ctx.port_of(b), "rack": b.rack}
            for b in (ctx.cluster.brokers[i] for i in ids) if b.usable]


def not_coordinator(ctx: RequestContext, group_id: str) -> int:
    """NOT_COORDINATOR unless this broker leads the group's __consumer_offsets partition."""
    return 0 if gc.coordinator_of(ctx.cluster, group_id) == ctx.broker.id else ErrorCode.not_coordinator


def group_denied(ctx: RequestContext, group_id: str) -> int:
    """GROUP_AUTHORIZATION_FAILED when the principal lacks what this API needs on the group
    (authorizer.API_NEEDS), else 0. Kafka asks it before anything else about the group."""
    return 0 if ctx.permits(AclResourceType.GROUP, group_id) else ErrorCode.group_authorization_failed


def client_host(ctx: RequestContext) -> str:
    # The sandbox listens on loopback only, so its clients share the brokers' host.
    return f"/{ctx.broker.host}"
