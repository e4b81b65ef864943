"""Topic lifecycle of the sandbox (the one place topics are created, grown and deleted), with
the validation Kafka's KRaft controller (`ReplicationControlManager`) does and its messages.

Creating a topic is a TopicRecord, a ConfigRecord per config and a PartitionRecord per
partition (`topic_creation`); new partitions are PartitionRecords, a deletion a
RemoveTopicRecord; each operation returns its records and its answer (`ControllerResult`) and
`replay` applies them (`REPLAY` below).

Placement follows Kafka's rack-aware assignment (`AdminUtils.assignReplicasToBrokersRackAware`,
which KRaft's `StripedReplicaPlacer` keeps in spirit): brokers are ordered alternating between
racks, leaders rotate from a random start, and a partition's replicas take a new rack until
every rack has one. A broker without a rack counts as a rack of its own (as KRaft does).
"""

from __future__ import annotations

import random
import re
import uuid

from kio.schema.errors import ErrorCode

from kafka_shell.base.limits import MAX_PARTITIONS_PER_BATCH, MAX_TOPIC_NAME
from kafka_shell.sandbox import configs, cordons, directories, replay
from kafka_shell.sandbox.model import ClusterState, Partition, Topic
from kafka_shell.sandbox.records import (TOPIC_RESOURCE, ConfigRecord, ControllerResult, PartitionRecord, Record,
                                         RemoveTopicRecord, ReplayError, TopicRecord)

# limits.MAX_PARTITIONS_PER_BATCH: a CreateTopics request asking for more partitions in total
# fails as a whole with POLICY_VIOLATION. It also bounds the memory a single request can make the
# sandbox allocate.
TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
# KRaft's controller builds an operation's metadata records in a list bounded at 10,000
# (QuorumController's MAX_RECORDS_PER_USER_OP); beyond it the whole request fails with this.
MAX_RECORDS_PER_OPERATION = 10_000
EXCESSIVE_BATCH = "Unable to perform excessively large batch operation."

_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")


class AdminError(ValueError):
    """A request refused with a Kafka error code and message."""

    def __init__(self, code: int, message: str | None = None):
        super().__init__(message)
        self.code = int(code)
        self.message = message


# -- validation ------------------------------------------------------------------------------


def check_topic_name(name: str) -> None:
    """Kafka's `Topic.validate`."""
    if not name:
        raise AdminError(ErrorCode.invalid_topic_exception, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise AdminError(ErrorCode.invalid_topic_exception, 'Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME:
        raise AdminError(ErrorCode.invalid_topic_exception,
                         f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} "
                         f"characters, topic name: {name}")
    if not _LEGAL_NAME.fullmatch(name):
        raise AdminError(ErrorCode.invalid_topic_exception,
                         f'Topic name "{name}" is illegal, it contains a character other than '
                         "ASCII alphanumerics, '.', '_' and '-'")


def check_new_topic_name(cluster: ClusterState, name: str) -> None:
    """Name rules, then existence, then the '.'/'_' metric-name collision KRaft refuses."""
    check_topic_name(name)
    if name in cluster.topics:
        raise AdminError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
    if "." in name or "_" in name:
        normal = name.replace(".", "_")
        for other in cluster.topics:
            if other.replace(".", "_") == normal:
                raise AdminError(ErrorCode.invalid_topic_exception,
                                 f"Topic '{name}' collides with existing topic: {other}")


def check_topic_configs(cluster: ClusterState, topic_configs: dict[str, str | None]) -> dict[str, str]:
    """Kafka's LogConfig validation of the configs given at creation (INVALID_CONFIG)."""
    try:
        configs.check_topic_configs(cluster, topic_configs)
    except configs.ConfigProblem as exc:
        raise AdminError(exc.code, exc.message) from None
    return dict(topic_configs)  # type: ignore[arg-type]


def check_manual_assignment(cluster: ClusterState, replicas: list[int], replication_factor: int | None) -> None:
    """Kafka's `validateManualPartitionAssignment`."""
    if not replicas:
        raise AdminError(ErrorCode.invalid_replica_assignment,
                         "The manual partition assignment includes an empty replica list.")
    previous = None
    for broker in sorted(replicas):
        if broker not in cluster.brokers:
            raise AdminError(ErrorCode.invalid_replica_assignment,
                             f"The manual partition assignment includes broker {broker}, "
                             "but no such broker is registered.")
        cordoned = cordons.assignment_refusal(cluster, broker)
        if cordoned:
            raise AdminError(ErrorCode.invalid_replica_assignment, cordoned)
        if broker == previous:
            raise AdminError(ErrorCode.invalid_replica_assignment,
                             f"The manual partition assignment includes the broker {broker} more than once.")
        previous = broker
    if replication_factor is not None and len(replicas) != replication_factor:
        raise AdminError(ErrorCode.invalid_replica_assignment,
                         f"The manual partition assignment includes a partition with {len(replicas)} "
                         "replica(s), but this is not consistent with previous partitions, which have "
                         f"{replication_factor} replica(s).")
    if not any(cluster.brokers[b].usable for b in replicas):
        raise AdminError(ErrorCode.invalid_replica_assignment,
                         "All brokers specified in the manual partition assignment are fenced or "
                         "in controlled shutdown.")


def broker_default_int(cluster: ClusterState, key: str) -> int:
    return int(configs.broker_value(cluster, None, key) or 0)


def requested_partitions(cluster: ClusterState, num_partitions: int, assignment_count: int) -> int:
    """How many partitions a CreateTopics entry asks for (KRaft's per-request count)."""
    if assignment_count:
        return assignment_count
    if num_partitions == -1:
        return broker_default_int(cluster, "num.partitions")
    return max(num_partitions, 0)


def plan_topic(cluster: ClusterState, name: str, num_partitions: int = -1, replication_factor: int = -1,
               assignment: dict[int, list[int]] | None = None,
               topic_configs: dict[str, str | None] | None = None) -> tuple[list[list[int]], dict[str, str]]:
    """Validate a new topic as KRaft does (name, existence, configs, then counts or assignment)
    and return its replica lists and configs. Raises AdminError."""
    check_new_topic_name(cluster, name)
    checked_configs = check_topic_configs(cluster, topic_configs or {})
    if assignment:
        if replication_factor != -1:
            raise AdminError(ErrorCode.invalid_request, "A manual partition assignment was specified, "
                             "but replication factor was not set to -1.")
        if num_partitions != -1:
            raise AdminError(ErrorCode.invalid_request, "A manual partition assignment was specified, "
                             "but numPartitions was not set to -1.")
        rf = None
        for replicas in assignment.values():
            check_manual_assignment(cluster, replicas, rf)
            rf = len(replicas)
        if sorted(assignment) != list(range(len(assignment))):
            raise AdminError(ErrorCode.invalid_replica_assignment,
                             "partitions should be a consecutive 0-based integer sequence")
        return [list(assignment[i]) for i in range(len(assignment))], checked_configs
    if replication_factor < -1 or replication_factor == 0:
        raise AdminError(ErrorCode.invalid_replication_factor,
                         "Replication factor must be larger than 0, or -1 to use the default value.")
    if num_partitions < -1 or num_partitions == 0:
        raise AdminError(ErrorCode.invalid_partitions,
                         "Number of partitions was set to an invalid non-positive value.")
    partitions = broker_default_int(cluster, "num.partitions") if num_partitions == -1 else num_partitions
    rf = broker_default_int(cluster, "default.replication.factor") if replication_factor == -1 else replication_factor
    if partitions > MAX_PARTITIONS_PER_BATCH:
        raise AdminError(ErrorCode.policy_violation, TOO_MANY_PARTITIONS)
    return place_replicas(cluster, partitions, rf), checked_configs


# -- placement -------------------------------------------------------------------------------


def rack_alternated_brokers(cluster: ClusterState) -> list[int]:
    """Usable brokers ordered a1, b1, c1, a2, b2, ... (racks sorted, ids sorted in a rack)."""
    by_rack: dict[str, list[int]] = {}
    for b in sorted(cluster.live_brokers(), key=lambda b: b.id):
        if cordons.fully_cordoned(cluster, b.id):   # KIP-1066: the controller gives it nothing new
            continue
        by_rack.setdefault(b.rack if b.rack is not None else f"\0{b.id}", []).append(b.id)
    lists = [by_rack[r] for r in sorted(by_rack)]
    order: list[int] = []
    for i in range(max((len(x) for x in lists), default=0)):
        order += [x[i] for x in lists if i < len(x)]
    return order


def place_replicas(cluster: ClusterState, partitions: int, replication_factor: int,
                   first_partition: int = 0, start_index: int | None = None) -> list[list[int]]:
    """Replica lists for `partitions` new partitions numbered from `first_partition`."""
    order = rack_alternated_brokers(cluster)
    n = len(order)
    if replication_factor > n:
        raise AdminError(ErrorCode.invalid_replication_factor,
                         cordons.placement_refusal(cluster, replication_factor, n))
    rack_of = {b: cluster.brokers[b].rack if cluster.brokers[b].rack is not None else f"\0{b}" for b in order}
    num_racks = len(set(rack_of.values()))
    start = random.randrange(n) if start_index is None else start_index
    shift = random.randrange(n) if start_index is None else start_index
    result = []
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [order[first]]
        racks = {rack_of[order[first]]}
        k = 0
        while len(replicas) < replication_factor:
            step = 1 + (shift * num_racks + k) % (n - 1)
            broker = order[(first + step) % n]
            rack = rack_of[broker]
            # A new rack until every rack has a replica, and never the same broker twice.
            if (rack not in racks or len(racks) == num_racks) and broker not in replicas:
                replicas.append(broker)
                racks.add(rack)
            k += 1
        result.append(replicas)
    return result


# -- state changes ---------------------------------------------------------------------------


# Kafka's Topic.INTERNAL_TOPICS: these names are internal however they were created.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def topic_creation(cluster: ClusterState, name: str, assignment: list[list[int]],
                   topic_configs: dict[str, str] | None = None) -> ControllerResult[uuid.UUID]:
    """The records of a new topic whose parameters are already valid (see plan_topic), and its id."""
    topic_id = uuid.uuid4()
    out: list[Record] = [TopicRecord(name, topic_id)]
    out += [ConfigRecord(TOPIC_RESOURCE, name, key, value) for key, value in (topic_configs or {}).items()]
    out += [partition_record(cluster, topic_id, i, replicas) for i, replicas in enumerate(assignment)]
    return ControllerResult(out, topic_id)


def create_topic(cluster: ClusterState, name: str, partitions: int = 1, replication_factor: int = 1,
                 assignment: list[list[int]] | None = None, configs: dict[str, str] | None = None) -> Topic:
    """Create a topic whose parameters are already valid (placed as Kafka places them unless
    `assignment` says where)."""
    if assignment is None:
        assignment = place_replicas(cluster, partitions, replication_factor)
    replay.commit(cluster, topic_creation(cluster, name, assignment, configs))
    return cluster.topics[name]


def partition_record(cluster: ClusterState, topic_id: uuid.UUID, index: int, replicas: list[int]) -> PartitionRecord:
    """A new partition: its live replicas in sync, the first of them leading."""
    live = [r for r in replicas if cluster.brokers[r].usable]
    return PartitionRecord(topic_id, index, tuple(replicas), tuple(live or replicas[:1]), leader=live[0] if live else -1)


def auto_create_topic(cluster: ClusterState, name: str) -> Topic | None:
    """Create an unknown topic named in a Metadata request, with the broker defaults, when
    `auto.create.topics.enable` is true. Raises AdminError when Kafka would refuse it."""
    if configs.broker_value(cluster, None, "auto.create.topics.enable") != "true":
        return None
    replicas, _ = plan_topic(cluster, name)
    return create_topic(cluster, name, assignment=replicas)


def plan_new_partitions(cluster: ClusterState, name: str, count: int,
                        assignment: list[list[int]] | None) -> list[list[int]]:
    """Replica lists of the partitions a CreatePartitions entry adds (KRaft's checks)."""
    topic = cluster.topics.get(name)
    if topic is None:
        raise AdminError(ErrorCode.unknown_topic_or_partition, f"Topic '{name}' does not exist.")
    existing = len(topic.partitions)
    if count == existing:
        raise AdminError(ErrorCode.invalid_partitions, f"Topic already has {existing} partition(s).")
    if count < existing:
        raise AdminError(ErrorCode.invalid_partitions, f"The topic {name} currently has {existing} "
                         f"partition(s); {count} would not be an increase.")
    additional = count - existing
    if additional > MAX_PARTITIONS_PER_BATCH:
        raise AdminError(ErrorCode.policy_violation, TOO_MANY_PARTITIONS)
    rf = len(topic.partitions[0].replicas)
    if assignment is not None:
        if len(assignment) != additional:
            raise AdminError(ErrorCode.invalid_replica_assignment,
                             f"Attempted to add {additional} additional partition(s), but only "
                             f"{len(assignment)} assignment(s) were specified.")
        for replicas in assignment:
            check_manual_assignment(cluster, replicas, rf)
        return [list(r) for r in assignment]
    # As Kafka does when adding partitions: continue the existing striping, starting from
    # partition 0's leader in the broker order.
    order = rack_alternated_brokers(cluster)
    first = topic.partitions[0].replicas[0]
    start = next((i for i, b in enumerate(order) if b >= first), 0)
    return place_replicas(cluster, additional, rf, first_partition=existing, start_index=start)


def partition_creation(cluster: ClusterState, name: str, replica_lists: list[list[int]]) -> ControllerResult[None]:
    topic = cluster.topics[name]
    first = len(topic.partitions)
    return ControllerResult([partition_record(cluster, topic.id, first + i, replicas)
                             for i, replicas in enumerate(replica_lists)], None)


def topic_deletion(cluster: ClusterState, name: str) -> ControllerResult[Topic]:
    topic = cluster.topics[name]
    return ControllerResult([RemoveTopicRecord(topic.id)], topic)


def delete_topic(cluster: ClusterState, name: str) -> Topic:
    """Delete the topic; the group and transaction coordinators forget it then (Kafka's
    coordinators react to the deletion in the metadata)."""
    from kafka_shell.sandbox import classic_groups, transactions   # they create their internal topics through this module
    topic = replay.commit(cluster, topic_deletion(cluster, name))
    classic_groups.forget_topic(cluster, name)
    transactions.forget_topic(cluster, name)
    return topic


# -- replay ------------------------------------------------------------------------------------


def topic_by_id(cluster: ClusterState, topic_id: uuid.UUID) -> Topic:
    t = cluster.topic_by_id(topic_id)
    if t is None:
        raise ReplayError(f"names topic id {topic_id}, which no TopicRecord created")
    return t


def partition_by_id(cluster: ClusterState, topic_id: uuid.UUID, index: int) -> Partition:
    t = topic_by_id(cluster, topic_id)
    p = t.partition(index)
    if p is None:
        raise ReplayError(f"names partition {index} of topic {t.name!r}, which has {len(t.partitions)}")
    return p


def replay_topic(cluster: ClusterState, record: TopicRecord) -> None:
    if record.name in cluster.topics or cluster.topic_by_id(record.topic_id) is not None:
        raise ReplayError(f"creates topic {record.name!r} ({record.topic_id}), which exists")
    cluster.topics[record.name] = Topic(name=record.name, id=record.topic_id, partitions=[],
                                        internal=record.name in INTERNAL_TOPICS)


def replay_partition(cluster: ClusterState, record: PartitionRecord) -> None:
    t = topic_by_id(cluster, record.topic_id)
    if record.partition_id != len(t.partitions):
        raise ReplayError(f"creates partition {record.partition_id} of topic {t.name!r}, which has "
                          f"{len(t.partitions)}")
    replicas = list(record.replicas)
    t.partitions.append(Partition(
        topic=t.name, index=record.partition_id, replicas=replicas, leader=record.leader,
        leader_epoch=record.leader_epoch, partition_epoch=record.partition_epoch, isr=list(record.isr),
        elr=list(record.eligible_leader_replicas), last_known_elr=list(record.last_known_elr),
        adding=list(record.adding_replicas), removing=list(record.removing_replicas),
        leo={r: 0 for r in replicas}, replica_epoch={r: 0 for r in replicas}))
    directories.place(cluster, t.partitions[-1], record.directories)


def replay_remove_topic(cluster: ClusterState, record: RemoveTopicRecord) -> None:
    del cluster.topics[topic_by_id(cluster, record.topic_id).name]
    directories.forget(cluster)


def snapshot(cluster: ClusterState) -> list[Record]:
    out: list[Record] = []
    for t in cluster.topics.values():
        out.append(TopicRecord(t.name, t.id))
        out += [ConfigRecord(TOPIC_RESOURCE, t.name, key, value) for key, value in t.configs.items()]
        out += [PartitionRecord(t.id, p.index, tuple(p.replicas), tuple(p.isr), tuple(p.removing), tuple(p.adding),
                                p.leader, p.leader_epoch, p.partition_epoch, tuple(p.elr), tuple(p.last_known_elr),
                                directories.directories(cluster, p))
                for p in t.partitions]
    return out


REPLAY = {TopicRecord: replay_topic, PartitionRecord: replay_partition, RemoveTopicRecord: replay_remove_topic}
