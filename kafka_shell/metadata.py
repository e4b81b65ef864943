"""The cached picture of a cluster that the connection manager keeps and everything else reads:
completion candidates, the toolbar, describe-topic from cache, controller routing.

A snapshot is immutable once built: the connection manager builds a new one on refresh and swaps
it in with one assignment, so readers on other threads never see a half-built cache.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field


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


@dataclass(frozen=True)
class ClusterSnapshot:
    cluster_id: str | None
    controller_id: int
    brokers: dict[int, BrokerInfo]
    topics: dict[str, TopicInfo]
    groups: tuple[str, ...] = ()
    taken_at: float = field(default_factory=time.time)

    @property
    def controller(self) -> BrokerInfo | None:
        return self.brokers.get(self.controller_id)

    def topic_names(self) -> list[str]:
        return sorted(self.topics)


EMPTY = ClusterSnapshot(cluster_id=None, controller_id=-1, brokers={}, topics={}, taken_at=0.0)
