"""The sandbox cluster's state: brokers, topics, partitions with their replication state, configs,
and one named, typed field per subsystem (groups, ACLs, SCRAM, quotas, features, tokens, client
metrics, share state, transactions); `ClusterState.runtime` holds what is never kept (callbacks,
events, timers and caches of the running server).

All of it lives in the event loop thread of the sandbox; nothing here does I/O. Handlers read it;
it changes by records (`replay.apply`, which also moves `generation`, the metadata log's end that
cached metadata answers key on).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from kafka_shell.protocol.definitions import DEFAULT_RELEASE

if TYPE_CHECKING:
    from kafka_shell.sandbox.authorizer import AclBinding
    from kafka_shell.sandbox.consumer_groups import ConsumerGroup
    from kafka_shell.sandbox.classic_groups import Group
    from kafka_shell.sandbox.journal import Journal
    from kafka_shell.sandbox.producer_state import PartitionProducers
    from kafka_shell.sandbox.records import Record
    from kafka_shell.sandbox.security import ScramCredential
    from kafka_shell.sandbox.share_groups import Session, ShareGroup, SharePartition
    from kafka_shell.sandbox.streams_groups import StreamsGroup
    from kafka_shell.sandbox.tokens import Token
    from kafka_shell.sandbox.transactions import Store as TransactionStore

    AnyGroup: TypeAlias = Group | ConsumerGroup | ShareGroup | StreamsGroup


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
    # Its log dirs (log.dirs), in order; empty: the one default dir (sandbox/directories.py).
    log_dirs: list[str] = field(default_factory=list)

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
    registered: bool = True     # known to the active controller (UnregisterController clears it until a restart)
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
    # The log dir of each replica, on brokers with more than one (sandbox/directories.py), and
    # the dir of each future replica an AlterReplicaLogDirs is copying into.
    dirs: dict[int, str] = field(default_factory=dict)
    future_dirs: dict[int, str] = field(default_factory=dict)

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
class Runtime:
    """What the running server keeps beside the state and never persists: the loop's task
    spawner, the journal, wake-ups, caches, fault-injection knobs and in-memory records."""
    spawn: Callable[[Awaitable[Any]], asyncio.Task] | None = None   # background tasks (loop thread)
    first_listener: str = "PLAINTEXT"               # the brokers' first listener (on Broker.port)
    journal: Journal | None = None                  # with --data-dir
    log_progress: asyncio.Event | None = None       # set when a high watermark moves
    active_segments: dict = field(default_factory=dict)   # log._Active by (topic id, partition)
    metadata_cache: dict = field(default_factory=dict)    # Metadata answers by version (handlers.core)
    metadata_lags: dict[int, int] = field(default_factory=dict)   # broker -> ms behind the controller (propagation)
    metadata_images: list = field(default_factory=list)   # propagation's [(monotonic time, generation, image)]
    producers: dict[tuple[object, int], PartitionProducers] = field(default_factory=dict)
    replication_rate: int | None = None             # catch-up bytes/s per follower (fault injection)
    replication_credit: dict[tuple[str, int, int], float] = field(default_factory=dict)
    replication_ticking: bool = False
    share_sessions: dict[tuple[int, str, str], Session] = field(default_factory=dict)
    controller_changes: list[dict] = field(default_factory=list)     # replication.controller_changes
    stopped_at: dict[int, tuple[int, int]] = field(default_factory=dict)   # node -> (metadata end, time)
    logger_levels: dict[tuple[int, int], dict[str, str]] = field(default_factory=dict)  # (node, epoch) ->
    voter_change_pending: int | None = None         # the voter a quorum change not yet committed is about
    dir_load: dict[tuple[int, str], int] | None = None      # replicas per (broker, log dir) (directories)
    preferred_dirs: dict[tuple[str, int, int], str] = field(default_factory=dict)   # (topic, partition, broker) ->
    future_progress: dict[tuple[str, int, int], tuple[int, float]] = field(default_factory=dict)   # offset, credit
    producer_id_blocks: dict[int, range] = field(default_factory=dict)   # broker -> the ids left (producer_ids)
    # The modern group coordinators' timers by (group, member or "", what), as Kafka's
    # CoordinatorTimer keys them, and the consumer groups' resolved regexes (consumer_groups.Regexes).
    group_timers: dict[tuple[str, str, str], asyncio.Handle] = field(default_factory=dict)
    group_regexes: dict[str, Any] = field(default_factory=dict)
    streams_groups: dict[str, Any] = field(default_factory=dict)   # streams_groups.Runtime by group
    share_initializing: dict[str, set[uuid.UUID]] = field(default_factory=dict)   # topic ids, by share group


@dataclass
class ClusterState:
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
    # The subsystems' state, each in its module: groups of every kind by id (groups.py,
    # consumer_groups.py, share_groups.py, streams_groups.py) and their configs (group_configs.py),
    # share-partitions by (group, topic id, partition), the transaction coordinator's store
    # (made by its TransactionLogRecords), ACLs, SCRAM credentials (user ->
    # mechanism -> credential), client quotas (entity -> key -> value), the finalized feature
    # levels, client metrics subscriptions,
    # delegation tokens by id.
    groups: dict[str, AnyGroup] = field(default_factory=dict)
    group_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    share_partitions: dict[tuple[str, uuid.UUID, int], SharePartition] = field(default_factory=dict)
    # The group and share coordinators' latest record of each key by group (group_state.py), as
    # the compacted __consumer_offsets and __share_group_state hold them: what a restart replays.
    group_records: dict[str, dict[tuple[type, str], Record]] = field(default_factory=dict)
    transactions: TransactionStore | None = None
    acls: dict[uuid.UUID, AclBinding] = field(default_factory=dict)
    scram_credentials: dict[str, dict[str, ScramCredential]] = field(default_factory=dict)
    client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    producer_ids_end: int = 0   # the end of the producer ids handed to brokers (producer_ids.py)
    client_metrics: dict[str, dict[str, str]] = field(default_factory=dict)
    delegation_tokens: dict[str, Token] = field(default_factory=dict)
    runtime: Runtime = field(default_factory=Runtime, compare=False, repr=False)

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
        """A plain-data copy of the state, without the runtime (for debugging and tests)."""
        plain = dataclasses.asdict(dataclasses.replace(self, runtime=Runtime()))
        del plain["runtime"]
        return plain
