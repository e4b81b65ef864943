"""A picture of a cluster as read at one moment: `ClusterSnapshot`.

Two kinds exist. The connection manager's cache keeps one for completion, the toolbar and
routing (never for answers). Commands get their own from `ConnectionManager.read()`, made
when they run and used for the whole command. A snapshot is immutable once built: the cache
swaps in a new one with one assignment, so readers on other threads never see a half-built one.
"""

from __future__ import annotations

import operator
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kafka_shell.protocol.codes import Error
from kafka_shell.base.tuples import new_tuple


@dataclass(frozen=True)
class BrokerInfo:
    id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class PartitionInfo(NamedTuple):
    """One partition as Metadata told it (a NamedTuple: a snapshot builds 100,000s of them, and a
    tuple is made five times faster than a frozen dataclass)."""
    topic: str
    partition: int
    leader: int                      # -1 when offline
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    leader_epoch: int = -1

    @property
    def preferred_leader(self) -> int:
        return self.replicas[0] if self.replicas else -1


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID | None
    partitions: tuple[PartitionInfo, ...]
    internal: bool = False


KRAFT, ZOOKEEPER = "KRaft", "ZooKeeper"


@dataclass(frozen=True)
class ControllerInfo:
    """The active controller as Kafka's own rules tell it: in KRaft mode the metadata quorum's
    leader (DescribeQuorum), a node that may be no broker at all; in ZooKeeper mode the broker
    that Metadata names. `epoch` is -1 where the cluster does not tell it (ZooKeeper mode)."""
    id: int
    epoch: int = -1
    host: str | None = None
    port: int | None = None
    mode: str = KRAFT

    @property
    def address(self) -> str | None:
        return f"{self.host}:{self.port}" if self.host is not None else None

    def describe(self) -> str:
        """`active controller 100 at h:p, epoch 7` / `controller broker 2 at h:p`."""
        where = f" at {self.address}" if self.address else ""
        if self.mode == KRAFT:
            epoch = f", epoch {self.epoch}" if self.epoch >= 0 else ""
            return f"active controller {self.id}{where}{epoch}"
        return f"controller broker {self.id}{where}"


NO_CONTROLLER = ControllerInfo(-1)


@dataclass(frozen=True)
class ClusterSnapshot:
    cluster_id: str | None
    controller: ControllerInfo
    brokers: dict[int, BrokerInfo]
    topics: dict[str, TopicInfo]
    groups: tuple[str, ...] = ()
    transactional_ids: tuple[str, ...] = ()
    taken_at: float = field(default_factory=time.time)
    unauthorized: frozenset[str] = frozenset()   # named topics Metadata refused to describe

    @property
    def controller_id(self) -> int:
        return self.controller.id

    def topic_names(self) -> list[str]:
        return sorted(self.topics)


EMPTY = ClusterSnapshot(cluster_id=None, controller=NO_CONTROLLER, brokers={}, topics={}, taken_at=0.0)


ZERO_UUID = uuid.UUID(int=0)
_partition_index = operator.attrgetter("partition_index")


def unauthorized_topics(entities: Any) -> frozenset[str]:
    """The topics a Metadata answer refused (TOPIC_AUTHORIZATION_FAILED)."""
    return frozenset(t.name for t in entities if t.error_code == Error.topic_authorization_failed)


def topics_from_metadata(entities: Any, skip_errors: bool = False) -> dict[str, TopicInfo]:
    """TopicInfo per topic straight from a Metadata answer's kio entities (no dict conversion:
    100,000 partitions must stay fast). Topics answered with an error and no partitions (being
    deleted, unknown) are left out; with `skip_errors` every topic and partition answered with
    an error is (a broker that cannot tell a leader yet)."""
    topics = {}
    for t in entities:
        if t.error_code and (skip_errors or not t.partitions):
            continue
        name = t.name
        topic_id = getattr(t, "topic_id", None)
        parts = sorted((p for p in t.partitions if not (skip_errors and p.error_code)), key=_partition_index)
        topics[name] = TopicInfo(
            name=name,
            topic_id=None if topic_id in (None, ZERO_UUID) else topic_id,
            partitions=tuple([  # a list comprehension: faster than tuple(generator)
                new_tuple(PartitionInfo, (name, p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes,
                                          getattr(p, "offline_replicas", ()), getattr(p, "leader_epoch", -1)))
                for p in parts]),
            internal=bool(getattr(t, "is_internal", False)),
        )
    return topics


# -- the metadata quorum (DescribeQuorum), read by the router: its leader is the controller ----------


class QuorumReplica(NamedTuple):
    replica_id: int
    directory_id: str | None          # None where the cluster does not tell (or the zero uuid)
    log_end_offset: int
    last_fetch_timestamp: int = -1     # epoch ms; -1 unknown
    last_caught_up_timestamp: int = -1


@dataclass(frozen=True)
class Quorum:
    """The __cluster_metadata partition of a DescribeQuorum answer, and each node's listeners."""
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[QuorumReplica, ...]
    observers: tuple[QuorumReplica, ...]
    listeners: dict[int, tuple[tuple[str, str, int], ...]]   # node id -> (name, host, port) (v2+)

    @property
    def leader(self) -> QuorumReplica | None:
        return next((v for v in self.voters if v.replica_id == self.leader_id), None)

    def endpoints(self, node: int) -> list[str]:
        """`NAME://host:port` of each listener of the node."""
        return [f"{name}://{host}:{port}" for name, host, port in self.listeners.get(node, ())]


def quorum_from(part: Any, nodes: Any) -> Quorum:
    """A Quorum from a DescribeQuorum answer's partition entity and its `nodes` (v2+); voters and
    observers by id (Kafka answers in no stable order: the observers come from a hash map)."""
    def by_id(replicas: Any) -> tuple[QuorumReplica, ...]:
        return tuple(sorted((_replica(r) for r in replicas), key=lambda r: r.replica_id))
    return Quorum(part.leader_id, part.leader_epoch, part.high_watermark, by_id(part.current_voters), by_id(part.observers),
                  {n.node_id: tuple((e.name, e.host, e.port) for e in n.listeners) for n in nodes or ()})


def kafka_uuid(value: uuid.UUID) -> str:
    """A topic or directory id as Kafka's tools print it (Uuid.toString: URL-safe base64 of the
    16 bytes, unpadded), e.g. "ZLgh-CD8QfGsKlZG39bUrQ"."""
    import base64
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def _replica(r: Any) -> QuorumReplica:
    directory = getattr(r, "replica_directory_id", None)
    return QuorumReplica(r.replica_id, None if directory in (None, ZERO_UUID) else kafka_uuid(directory), r.log_end_offset,
                         _ms(getattr(r, "last_fetch_timestamp", -1)), _ms(getattr(r, "last_caught_up_timestamp", -1)))


def _ms(value: Any) -> int:
    """Epoch milliseconds of a kio timestamp field (a datetime, or None for Kafka's -1)."""
    if value is None:
        return -1
    if isinstance(value, int):
        return value
    return int(value.timestamp() * 1000)


# -- consumer groups as ListGroups lists them (the cache's completion, and list-groups) -----------


class GroupListing(NamedTuple):
    group_id: str
    state: str
    protocol_type: str
    group_type: str
    coordinator: int


def group_listings(answer: Any, broker: int) -> list[GroupListing]:
    """The groups of one broker's ListGroups answer (the groups it coordinates)."""
    return [GroupListing(g.group_id, getattr(g, "group_state", "") or "", g.protocol_type or "",
                         getattr(g, "group_type", "") or "classic", broker) for g in answer.groups]
