"""The log dirs of the sandbox's brokers (JBOD: KIP-112, KIP-113, KIP-858), as Kafka 4.4 keeps them.

- A broker has one log dir, or `--log-dirs-per-broker N` of them (`Broker.log_dirs`, from its
  registration). Each replica lives in one dir of its broker (`Partition.dirs`, carried by the
  PartitionRecord's and PartitionChangeRecord's `directories`, paths where Kafka has directory
  ids). A new replica goes where the broker says: the dir an earlier AlterReplicaLogDirs named
  for it (LogManager.preferredLogDirs, kept in memory only), else the dir holding the fewest
  replicas, cordoned dirs last (LogManager.nextLogDirs).
- AlterReplicaLogDirs (ReplicaManager.alterReplicaLogDirs): a dir the broker does not have is
  LOG_DIR_NOT_FOUND, a cordoned one (KIP-1066) INVALID_REPLICA_ASSIGNMENT; a partition the
  cluster does not have UNKNOWN_TOPIC_OR_PARTITION; a replica the broker does not hold
  REPLICA_NOT_AVAILABLE (the dir is remembered for when it arrives). Else
  a future replica is made in the new dir (a `FutureReplica` record; one in another dir is
  dropped first; the replica's own dir only drops it). The future copies the replica's log (at
  `Runtime.replication_rate` and the broker's `replica.alter.log.dirs.io.max.bytes.per.second`,
  unset: at once) and, caught up, replaces it: the broker tells the controller the replica's new
  dir (AssignReplicasToDirs: a PartitionChangeRecord with `directories`).
- DescribeLogDirs answers per dir: its replicas and future replicas (the future's offset lag is
  the replica's log end minus its own), each dir a virtual disk of DISK_BYTES.
"""

from __future__ import annotations

import functools

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import configs, cordons, replay
from kafka_shell.sandbox.model import ClusterState, Partition
from kafka_shell.sandbox.records import FutureReplica, PartitionChangeRecord, Record

DISK_BYTES = 100 * 2**30
IO_RATE_KEY = "replica.alter.log.dirs.io.max.bytes.per.second"
_UNLIMITED = 2**62
_MAX_DIR_NAME = 255     # a future dir's name must fit a file name (Kafka's KAFKA-4893 check)


@functools.cache   # asked once per replica when a broker describes its 100,000s
def default_dir(broker_id: int) -> str:
    return f"/sandbox/broker-{broker_id}/data"


def new_dirs(broker_id: int, count: int) -> tuple[str, ...]:
    """The log dirs of a new broker with `count` of them (empty for the one default dir)."""
    return () if count <= 1 else tuple(f"/sandbox/broker-{broker_id}/data-{k}" for k in range(1, count + 1))


def broker_dirs(cluster: ClusterState, broker_id: int) -> list[str]:
    b = cluster.brokers.get(broker_id)
    return list(b.log_dirs) if b is not None and b.log_dirs else [default_dir(broker_id)]


def dir_of(cluster: ClusterState, p: Partition, broker_id: int) -> str:
    """The log dir holding the broker's replica of p (its first dir unless placed)."""
    return p.dirs.get(broker_id) or home_dir(cluster, broker_id)


def home_dir(cluster: ClusterState, broker_id: int) -> str:
    """The broker's first log dir: where its replicas are unless placed in another."""
    b = cluster.brokers.get(broker_id)
    return b.log_dirs[0] if b is not None and b.log_dirs else default_dir(broker_id)


def _several(cluster: ClusterState, broker_id: int) -> bool:
    b = cluster.brokers.get(broker_id)
    return b is not None and len(b.log_dirs) > 1


# -- placement (at replay: the records carry it again) -----------------------------------------

def _load(cluster: ClusterState) -> dict[tuple[int, str], int]:
    """Replicas per (broker, dir), kept as replicas are placed and counted again after a topic
    deletion (`forget`)."""
    load = cluster.runtime.dir_load
    if load is None:
        load = cluster.runtime.dir_load = {}
        for t in cluster.topics.values():
            for p in t.partitions:
                for r, d in p.dirs.items():
                    load[(r, d)] = load.get((r, d), 0) + 1
    return load


def forget(cluster: ClusterState) -> None:
    """Partitions went (a topic deletion): count the dirs' replicas again when next needed."""
    cluster.runtime.dir_load = None


def _next_dir(cluster: ClusterState, p: Partition, broker_id: int, load: dict[tuple[int, str], int]) -> str:
    preferred = cluster.runtime.preferred_dirs.pop((p.topic, p.index, broker_id), None)
    dirs = broker_dirs(cluster, broker_id)
    if preferred in dirs:
        return preferred
    cordoned = cordons.cordoned_dirs(cluster, broker_id)
    return min(dirs, key=lambda d: (d in cordoned, load.get((broker_id, d), 0), dirs.index(d)))


def place(cluster: ClusterState, p: Partition, directories: tuple[str, ...] | None) -> None:
    """After p's replicas changed (or a record named their dirs): each replica's dir as the record
    says, else where it was, else a new one; replicas gone take their dir and future with them."""
    if not p.dirs and not directories and not any(_several(cluster, r) for r in p.replicas):
        return   # one dir per broker: nothing to keep
    load = _load(cluster)
    named = dict(zip(p.replicas, directories or ()))
    for r in [r for r in p.dirs if r not in p.replicas or named.get(r)]:
        d = p.dirs.pop(r)
        load[(r, d)] -= 1
    for r in [r for r in p.future_dirs if r not in p.replicas]:
        del p.future_dirs[r]
    for r in p.replicas:
        if r in p.dirs or not (named.get(r) or _several(cluster, r)):
            continue
        d = p.dirs[r] = named.get(r) or _next_dir(cluster, p, r, load)
        load[(r, d)] = load.get((r, d), 0) + 1


def directories(cluster: ClusterState, p: Partition) -> tuple[str, ...]:
    """p's `directories` for a record (empty when no replica's broker has several dirs)."""
    return tuple(p.dirs.get(r, "") for r in p.replicas) if p.dirs else ()


# -- AlterReplicaLogDirs -----------------------------------------------------------------------

def alter(cluster: ClusterState, topic: str, index: int, broker_id: int, destination: str) -> ErrorCode:
    """Move the broker's replica of topic-index to `destination`, as ReplicaManager does."""
    if len(f"{topic}-{index}.{'0' * 32}-future") > _MAX_DIR_NAME:
        return ErrorCode.invalid_topic_exception
    if destination not in broker_dirs(cluster, broker_id):
        return ErrorCode.log_dir_not_found
    if destination in cordons.cordoned_dirs(cluster, broker_id):   # Kafka 4.3+: "Log directory D is cordoned"
        return ErrorCode.invalid_replica_assignment
    p = cluster.partition(topic, index)
    if p is None:
        return ErrorCode.unknown_topic_or_partition
    if broker_id not in p.replicas:
        # Kept for when the replica arrives (a reassignment adding it): it is created there.
        cluster.runtime.preferred_dirs[(topic, index, broker_id)] = destination
        return ErrorCode.replica_not_available
    topic_id = cluster.topics[topic].id
    future = p.future_dirs.get(broker_id)
    records: list[Record] = []
    if future is not None and future != destination:
        records.append(FutureReplica(topic_id, index, broker_id, None))
    if destination != dir_of(cluster, p, broker_id) and future != destination:
        records.append(FutureReplica(topic_id, index, broker_id, destination))
    replay.apply_all(cluster, records)
    return ErrorCode.none


def _limits(cluster: ClusterState, broker_id: int) -> list[tuple[tuple[str, int], float]]:
    limits = []
    if cluster.runtime.replication_rate is not None:
        limits.append((("base", broker_id), float(cluster.runtime.replication_rate)))
    rate = int(configs.broker_value(cluster, broker_id, IO_RATE_KEY) or _UNLIMITED)
    if rate < _UNLIMITED:
        limits.append((("alter-log-dirs", broker_id), float(rate)))
    return limits


def copy_future(cluster: ClusterState, p: Partition, broker_id: int, seconds: float | None,
                budgets: dict[tuple[str, int], float]) -> bool:
    """The broker's future replica of p copies from its current one, whole batches while the rate
    budgets of `seconds` last (a last batch may overdraw them: a debt the next ticks pay first);
    caught up, it replaces the replica. True while it is still behind."""
    key = (p.topic, p.index, broker_id)
    end = p.leo.get(broker_id, 0)
    done, credit = cluster.runtime.future_progress.get(key, (p.log_start_offset, 0.0))
    done = max(done, p.log_start_offset)
    limits = _limits(cluster, broker_id)
    if not limits:
        done = end
    elif seconds is not None:
        allowance = min(budgets.setdefault(k, rate * seconds) for k, rate in limits)
        for k, _ in limits:
            budgets[k] -= allowance
        credit += allowance
        throttled = False
        for b in p.batches:
            if b.last_offset < done:
                continue
            if b.base_offset >= end:
                break
            if credit <= 0:
                done, throttled = max(done, b.base_offset), True
                break
            credit -= len(b.data)
            done = b.last_offset + 1
        if not throttled:
            done = end
    cluster.runtime.future_progress[key] = (done, credit)
    if done < end:
        return True
    _swap(cluster, p, broker_id)
    return False


def _swap(cluster: ClusterState, p: Partition, broker_id: int) -> None:
    """The caught-up future replaces the replica; the controller learns its dir."""
    destination = p.future_dirs[broker_id]
    topic_id = cluster.topics[p.topic].id
    named = tuple(destination if r == broker_id else dir_of(cluster, p, r) for r in p.replicas)
    replay.apply_all(cluster, [PartitionChangeRecord(topic_id, p.index, directories=named),
                               FutureReplica(topic_id, p.index, broker_id, None)])


def future_size(cluster: ClusterState, p: Partition, broker_id: int) -> tuple[int, int]:
    """(bytes copied, offsets still to copy) of the broker's future replica of p."""
    done = cluster.runtime.future_progress.get((p.topic, p.index, broker_id), (p.log_start_offset, 0.0))[0]
    size = sum(len(b.data) for b in p.batches if b.last_offset < done)
    return size, max(p.leo.get(broker_id, 0) - done, 0)


# -- replay ------------------------------------------------------------------------------------

def replay_future(cluster: ClusterState, record: FutureReplica) -> None:
    from kafka_shell.sandbox.topic_lifecycle import partition_by_id
    p = partition_by_id(cluster, record.topic_id, record.partition_id)
    cluster.runtime.future_progress.pop((p.topic, p.index, record.broker_id), None)
    if record.log_dir is None:
        p.future_dirs.pop(record.broker_id, None)
    else:
        p.future_dirs[record.broker_id] = record.log_dir


def snapshot(cluster: ClusterState) -> list[Record]:
    return [FutureReplica(t.id, p.index, b, d) for t in cluster.topics.values() for p in t.partitions
            for b, d in p.future_dirs.items()]


REPLAY = {FutureReplica: replay_future}
