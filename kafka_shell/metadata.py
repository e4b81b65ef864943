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

from kafka_shell.codes import Error


@dataclass(frozen=True)
class BrokerInfo:
    id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class PartitionInfo:
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


def unauthorized_topics(entities) -> frozenset[str]:
    """The topics a Metadata answer refused (TOPIC_AUTHORIZATION_FAILED)."""
    return frozenset(t.name for t in entities if t.error_code == Error.topic_authorization_failed)


def topics_from_metadata(entities) -> dict[str, TopicInfo]:
    """TopicInfo per topic straight from a Metadata answer's kio entities (no dict conversion:
    100,000 partitions must stay fast). Topics answered with an error and no partitions (being
    deleted, unknown) are left out."""
    topics = {}
    for t in entities:
        if t.error_code and not t.partitions:
            continue
        name = t.name
        topic_id = getattr(t, "topic_id", None)
        parts = sorted(t.partitions, key=_partition_index)
        topics[name] = TopicInfo(
            name=name,
            topic_id=None if topic_id in (None, ZERO_UUID) else topic_id,
            partitions=tuple([  # a list comprehension: faster than tuple(generator)
                PartitionInfo(name, p.partition_index, p.leader_id, tuple(p.replica_nodes),
                              tuple(p.isr_nodes), tuple(getattr(p, "offline_replicas", ())),
                              getattr(p, "leader_epoch", -1))
                for p in parts]),
            internal=bool(getattr(t, "is_internal", False)),
        )
    return topics
