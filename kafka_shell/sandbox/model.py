"""The sandbox cluster's state: brokers, topics, partitions with their replication state, configs.

All of it lives in the event loop thread of the sandbox; nothing here does I/O. Handlers read and
change it; `Cluster.changed()` bumps the generation that cached metadata answers key on.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from dataclasses import dataclass, field

from kafka_shell.protocol.definitions import DEFAULT_RELEASE


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Broker:
    id: int
    host: str
    port: int
    rack: str | None = None
    # The machine's name (KIP-426's host -> id mapping keys on it); the advertised address stays `host`.
    host_name: str | None = None
    alive: bool = True          # process up and port open
    fenced: bool = False        # the controller considers it out of the cluster
    registered: bool = True     # known to the controller (UnregisterBroker clears it until a restart)
    epoch: int = 1              # broker epoch, bumped at every (re)start
    delay_ms: int = 0           # fault injection: answer this much later
    failures: dict[int, int] = field(default_factory=dict)  # api key -> error code to return
    configs: dict[str, str] = field(default_factory=dict)   # dynamic per-broker configs
    # The ports of its listeners other than the first (which is `port`), by listener name.
    listener_ports: dict[str, int] = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        return self.alive and not self.fenced


@dataclass
class Controller:
    """A KRaft controller with its own CONTROLLER listener: a voter of the metadata quorum, or
    (KIP-853, a dynamic quorum) an observer that AddRaftVoter can make one."""
    id: int
    host: str
    port: int
    # Its metadata log directory's id (meta.properties' directory.id; sandbox.quorum).
    directory_id: uuid.UUID | None = None
    voter: bool = True
    alive: bool = True          # process up and port open
    rack: str | None = None     # controllers have no rack; here so configs treat nodes alike
    delay_ms: int = 0           # fault injection, as for brokers
    failures: dict[int, int] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)   # dynamic per-node configs


KRAFT, ZK = "kraft", "zk"
MODES = (KRAFT, ZK)


@dataclass
class Batch:
    """One stored record batch: raw v2 bytes with its base offset already set."""
    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


@dataclass
class Partition:
    topic: str
    index: int
    replicas: list[int]
    leader: int = -1
    leader_epoch: int = 0
    partition_epoch: int = 0
    isr: list[int] = field(default_factory=list)
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)
    # Per replica: log end offset and the leader epoch of its last write.
    leo: dict[int, int] = field(default_factory=dict)
    replica_epoch: dict[int, int] = field(default_factory=dict)
    log_start_offset: int = 0
    high_watermark: int = 0
    batches: list[Batch] = field(default_factory=list)
    # The base offsets of the log's segments, oldest first; the last is the active segment
    # (log.py rolls them, cleaner.py merges and deletes them).
    segments: list[int] = field(default_factory=lambda: [0])
    # The log cleaner's checkpoint: the log is compacted below this offset (Kafka's
    # cleaner-offset-checkpoint).
    cleaner_checkpoint: int = 0

    @property
    def preferred(self) -> int:
        return self.replicas[0]

    def size_bytes(self) -> int:
        return sum(len(b.data) for b in self.batches)


@dataclass
class Topic:
    name: str
    id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str] = field(default_factory=dict)  # topic overrides only
    internal: bool = False

    def partition(self, index: int) -> Partition | None:
        return self.partitions[index] if 0 <= index < len(self.partitions) else None


@dataclass
class Cluster:
    cluster_id: str
    brokers: dict[int, Broker]
    # The active controller and its epoch: a broker id in zk mode, a controller id in KRaft mode
    # (-1: none, e.g. every voter stopped).
    controller_id: int = -1
    controller_epoch: int = 0
    mode: str = KRAFT
    controllers: dict[int, Controller] = field(default_factory=dict)  # KRaft voters by id
    # The port of the control endpoint once a `kafka-shell sandbox` server bound it (None before):
    # --data-dir keeps it, so the endpoint keeps its address across restarts, as the nodes do.
    control_port: int | None = None
    topics: dict[str, Topic] = field(default_factory=dict)
    cluster_configs: dict[str, str] = field(default_factory=dict)  # dynamic cluster-wide defaults
    # Not kept by --data-dir (given at each start, as Kafka reads server.properties): the Kafka
    # release the sandbox follows (kafka_shell.protocol.definitions) and its static broker configs.
    kafka_version: str = DEFAULT_RELEASE
    static_configs: dict[str, str] = field(default_factory=dict)
    generation: int = 0
    # Extension points filled by other sandbox modules (groups, reassignments, ...).
    extras: dict[str, object] = field(default_factory=dict)

    def changed(self) -> None:
        self.generation += 1

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        for t in self.topics.values():
            if t.id == topic_id:
                return t
        return None

    def partition(self, topic: str, index: int) -> Partition | None:
        t = self.topics.get(topic)
        return t.partition(index) if t is not None else None

    def live_brokers(self) -> list[Broker]:
        return [b for b in self.brokers.values() if b.usable]

    @property
    def kraft(self) -> bool:
        return self.mode == KRAFT

    @property
    def controller_available(self) -> bool:
        """Whether controller work (fencing, elections, ISR changes, admin requests) can happen:
        always in zk mode (ZooKeeper fences brokers), only with an active voter in KRaft mode."""
        return not self.kraft or self.controller_id >= 0

    def node(self, node_id: int) -> Broker | Controller | None:
        """A broker or a controller by id (their ids never collide)."""
        return self.brokers.get(node_id) or self.controllers.get(node_id)

    def snapshot(self) -> dict:
        """A plain-data copy of the state (for --data-dir persistence and for debugging)."""
        return dataclasses.asdict(self)
