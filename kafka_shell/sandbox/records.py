"""The records the sandbox's state changes by, with Kafka's names and the fields that matter.

As in Kafka, an operation on controller-owned state builds its records and its answer
(`ControllerResult`) without changing anything; `replay.apply` applies each record, the only
place the state changes, and the journal (`--data-dir`) writes the records applied, which a
restart applies again through the same function. The group, share and transaction
coordinators keep their state the same way with their own record types.

Metadata records are Kafka's (metadata/src/main/resources/common/metadata/*.json) plus two of
KRaft's control records (LeaderChangeMessage, VotersRecord); coordinator records are Kafka's
key/value pairs as one record (OffsetCommitKey + OffsetCommitValue is `OffsetCommitRecord`, a
tombstone's value None). `PartitionLogs` is the sandbox's own: what a partition's log
directories hold (batches, each replica's log end, the high watermark), which Kafka keeps in log
segments and checkpoint files, not in records.

Records are frozen dataclasses; `encode` makes a JSON object of one (its `type` and fields),
`decode` reads one back, each field checked against its annotation (a StateError names the
record and the field).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import sys
import types
import typing
import uuid
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar

if typing.TYPE_CHECKING:
    from kafka_shell.sandbox.persist import Checker

T = TypeVar("T")


@dataclass(frozen=True)
class Range:
    low: int
    high: int


INT16_MAX, INT32_MAX, INT64_MAX = 2**15 - 1, 2**31 - 1, 2**63 - 1
Int16 = Annotated[int, Range(0, INT16_MAX)]
Int32 = Annotated[int, Range(-(INT32_MAX + 1), INT32_MAX)]
NodeId = Annotated[int, Range(0, INT32_MAX)]         # a broker's or a controller's id, a partition index
Leader = Annotated[int, Range(-2, INT32_MAX)]        # a leader id, -1 none, -2 no change (PartitionChangeRecord)
Epoch = Annotated[int, Range(0, INT32_MAX)]
Port = Annotated[int, Range(0, 65535)]
Offset = Annotated[int, Range(-1, INT64_MAX)]
Long = Annotated[int, Range(-(INT64_MAX + 1), INT64_MAX)]

NO_LEADER_CHANGE = -2   # PartitionChangeRecord's leader when it does not move


class Record:
    """The base of every record type (for annotations; records are plain frozen dataclasses)."""


class CoordinatorRecord(Record):
    """A record of the group or share coordinator (in __consumer_offsets or __share_group_state on
    Kafka): it does not move the metadata log."""


class ReplayError(ValueError):
    """A record that cannot apply to the state (it names a topic no record created, ...): read
    from a damaged file, never made by the sandbox itself."""


@dataclass
class ControllerResult(Generic[T]):
    """An operation's records, which `replay.commit` applies, and its answer."""
    records: list[Record]
    response: T


# -- the metadata log -------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicRecord(Record):
    name: str
    topic_id: uuid.UUID


@dataclass(frozen=True)
class PartitionRecord(Record):
    topic_id: uuid.UUID
    partition_id: NodeId
    replicas: tuple[NodeId, ...]
    isr: tuple[NodeId, ...]
    removing_replicas: tuple[NodeId, ...] = ()
    adding_replicas: tuple[NodeId, ...] = ()
    leader: Leader = -1
    leader_epoch: Epoch = 0
    partition_epoch: Epoch = 0
    eligible_leader_replicas: tuple[NodeId, ...] = ()
    last_known_elr: tuple[NodeId, ...] = ()
    directories: tuple[str, ...] = ()       # KIP-858's, per replica: its log dir's path ("": unassigned)


@dataclass(frozen=True)
class PartitionChangeRecord(Record):
    """Fields left None do not change; a leader given (-1: none) bumps the leader epoch, and
    every change the partition epoch (Kafka's PartitionRegistration.merge). `directories`
    (KIP-858, paths where Kafka has directory ids) is parallel to the replicas after the change."""
    topic_id: uuid.UUID
    partition_id: NodeId
    leader: Leader = NO_LEADER_CHANGE
    isr: tuple[NodeId, ...] | None = None
    replicas: tuple[NodeId, ...] | None = None
    removing_replicas: tuple[NodeId, ...] | None = None
    adding_replicas: tuple[NodeId, ...] | None = None
    eligible_leader_replicas: tuple[NodeId, ...] | None = None
    last_known_elr: tuple[NodeId, ...] | None = None
    directories: tuple[str, ...] | None = None


@dataclass(frozen=True)
class RemoveTopicRecord(Record):
    topic_id: uuid.UUID


# ConfigRecord's resource types (Kafka's ConfigResource.Type ids).
TOPIC_RESOURCE, BROKER_RESOURCE, CLIENT_METRICS_RESOURCE, GROUP_RESOURCE = 2, 4, 16, 32


@dataclass(frozen=True)
class ConfigRecord(Record):
    """A dynamic config set (value None: deleted). A BROKER resource named "" is the cluster-wide
    default, one named by a node id that node's own (a controller's too)."""
    resource_type: int
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True)
class FeatureLevelRecord(Record):
    """A finalized feature level; 0 removes the feature."""
    name: str
    feature_level: Int16


@dataclass(frozen=True)
class AccessControlEntryRecord(Record):
    id: uuid.UUID
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True)
class RemoveAccessControlEntryRecord(Record):
    id: uuid.UUID


@dataclass(frozen=True)
class UserScramCredentialRecord(Record):
    name: str
    mechanism: str
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: Annotated[int, Range(1, INT32_MAX)]


@dataclass(frozen=True)
class RemoveUserScramCredentialRecord(Record):
    name: str
    mechanism: str


@dataclass(frozen=True)
class EntityData:
    entity_type: str
    entity_name: str | None   # None: the default entity


@dataclass(frozen=True)
class ClientQuotaRecord(Record):
    entity: tuple[EntityData, ...]
    key: str
    value: float
    remove: bool = False


@dataclass(frozen=True)
class ProducerIdsRecord(Record):
    """The controller handed the broker the block of producer ids that ends below `producer_ids_end`
    (a snapshot's names broker 0, epoch 0, as Kafka's does)."""
    broker_id: NodeId
    broker_epoch: Long
    producer_ids_end: Annotated[int, Range(0, INT64_MAX)]


@dataclass(frozen=True)
class Endpoint:
    name: str       # the listener
    host: str
    port: Port


@dataclass(frozen=True)
class RegisterBrokerRecord(Record):
    """A broker registers at each start (a new epoch). `host_name` is the sandbox's: the machine
    KIP-426's host -> id mapping keys on."""
    broker_id: NodeId
    broker_epoch: Long
    end_points: tuple[Endpoint, ...]
    rack: str | None = None
    fenced: bool = False
    host_name: str | None = None
    log_dirs: tuple[str, ...] = ()      # its log.dirs (Kafka registers their ids); empty: one default dir


@dataclass(frozen=True)
class UnregisterBrokerRecord(Record):
    broker_id: NodeId
    broker_epoch: Long


@dataclass(frozen=True)
class BrokerRegistrationChangeRecord(Record):
    broker_id: NodeId
    broker_epoch: Long
    fenced: bool | None = None   # None: unchanged


@dataclass(frozen=True)
class RegisterControllerRecord(Record):
    """A KRaft controller's registration; `directory_id` is its metadata log directory's
    (meta.properties' directory.id), None for a static quorum's voters."""
    controller_id: NodeId
    end_points: tuple[Endpoint, ...]
    directory_id: uuid.UUID | None = None


@dataclass(frozen=True)
class UnregisterControllerRecord(Record):
    controller_id: NodeId


@dataclass(frozen=True)
class VotersRecord(Record):
    """KRaft's control record: the voter set."""
    voters: tuple[NodeId, ...]


@dataclass(frozen=True)
class LeaderChangeMessage(Record):
    """KRaft's control record (the epoch is its batch's): the active controller, a broker's id
    in zk mode (the /controller znode); -1 while the quorum has no leader."""
    leader_id: Annotated[int, Range(-1, INT32_MAX)]
    leader_epoch: Epoch


@dataclass(frozen=True)
class DelegationTokenRecord(Record):
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: Long
    max_timestamp: Long
    expiration_timestamp: Long
    token_id: str


@dataclass(frozen=True)
class RemoveDelegationTokenRecord(Record):
    token_id: str


# -- the group coordinator (__consumer_offsets) ----------------------------------------------


@dataclass(frozen=True)
class OffsetCommitValue:
    offset: Offset
    leader_epoch: Annotated[int, Range(-1, INT32_MAX)]
    metadata: str | None
    commit_timestamp: Long


@dataclass(frozen=True)
class OffsetCommitRecord(CoordinatorRecord):
    """OffsetCommitKey + OffsetCommitValue: an offset committed (value None: deleted)."""
    group: str
    topic: str
    partition: NodeId
    value: OffsetCommitValue | None


@dataclass(frozen=True)
class MemberMetadata:
    """GroupMetadataValue's MemberMetadata: a classic member, its subscription and assignment in
    the group's protocol."""
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: Annotated[int, Range(1, INT32_MAX)]
    session_timeout: Annotated[int, Range(1, INT32_MAX)]
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadataValue:
    protocol_type: str | None
    generation: Epoch
    protocol: str | None
    leader: str | None
    current_state_timestamp: Long
    members: tuple[MemberMetadata, ...]


@dataclass(frozen=True)
class GroupMetadataRecord(CoordinatorRecord):
    """GroupMetadataKey + GroupMetadataValue: a classic group as Kafka stores it when it becomes
    Stable or Empty (value None: the group's tombstone, after its offsets')."""
    group: str
    value: GroupMetadataValue | None = None


@dataclass(frozen=True)
class TopicPartitions:
    """A topic's partitions (the consumer and share records' TopicPartitions); Kafka 4.4's
    tagged AssignmentEpochs: the epoch each was assigned in (empty where the record has none)."""
    topic_id: uuid.UUID
    partitions: tuple[NodeId, ...]
    assignment_epochs: tuple[Int32, ...] = ()


@dataclass(frozen=True)
class TopicMetadata:
    """ConsumerGroupPartitionMetadataValue's TopicMetadata (ShareGroupPartitionMetadata's alike)."""
    topic_id: uuid.UUID
    topic_name: str
    num_partitions: NodeId


@dataclass(frozen=True)
class ConsumerGroupMetadataValue:
    epoch: Int32


@dataclass(frozen=True)
class ConsumerGroupMetadataRecord(CoordinatorRecord):
    """A KIP-848 group's epoch (value None: the group's tombstone, its last record)."""
    group: str
    value: ConsumerGroupMetadataValue | None = None


@dataclass(frozen=True)
class PartitionMetadataValue:
    topics: tuple[TopicMetadata, ...]


@dataclass(frozen=True)
class ConsumerGroupPartitionMetadataRecord(CoordinatorRecord):
    """The subscribed topics' metadata the group epoch was computed against."""
    group: str
    value: PartitionMetadataValue | None = None


@dataclass(frozen=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: Int32
    server_assignor: str | None


@dataclass(frozen=True)
class ConsumerGroupMemberMetadataRecord(CoordinatorRecord):
    """A member's subscription (value None: the member left, after its assignments' tombstones)."""
    group: str
    member_id: str
    value: ConsumerGroupMemberMetadataValue | None = None


@dataclass(frozen=True)
class TargetAssignmentMetadataValue:
    assignment_epoch: Int32
    assignment_timestamp: Long = 0


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadataRecord(CoordinatorRecord):
    group: str
    value: TargetAssignmentMetadataValue | None = None


@dataclass(frozen=True)
class TargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMemberRecord(CoordinatorRecord):
    group: str
    member_id: str
    value: TargetAssignmentMemberValue | None = None


@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    """`state` is Kafka's MemberState id (0 STABLE, 1 UNREVOKED_PARTITIONS, 2
    UNRELEASED_PARTITIONS, 127 UNKNOWN)."""
    member_epoch: Int32
    previous_member_epoch: Int32
    state: Annotated[int, Range(-128, 127)]
    assigned_partitions: tuple[TopicPartitions, ...]
    partitions_pending_revocation: tuple[TopicPartitions, ...]


@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignmentRecord(CoordinatorRecord):
    group: str
    member_id: str
    value: ConsumerGroupCurrentMemberAssignmentValue | None = None


@dataclass(frozen=True)
class ShareGroupMetadataRecord(CoordinatorRecord):
    """A KIP-932 group's epoch (ShareGroupMetadataValue; value None: the group's tombstone)."""
    group: str
    value: ConsumerGroupMetadataValue | None = None


@dataclass(frozen=True)
class ShareGroupPartitionMetadataRecord(CoordinatorRecord):
    group: str
    value: PartitionMetadataValue | None = None


@dataclass(frozen=True)
class ShareGroupMemberMetadataValue:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True)
class ShareGroupMemberMetadataRecord(CoordinatorRecord):
    group: str
    member_id: str
    value: ShareGroupMemberMetadataValue | None = None


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMetadataRecord(CoordinatorRecord):
    group: str
    value: TargetAssignmentMetadataValue | None = None


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMemberRecord(CoordinatorRecord):
    group: str
    member_id: str
    value: TargetAssignmentMemberValue | None = None


@dataclass(frozen=True)
class ShareGroupCurrentMemberAssignmentValue:
    member_epoch: Int32
    previous_member_epoch: Int32
    assigned_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True)
class ShareGroupCurrentMemberAssignmentRecord(CoordinatorRecord):
    group: str
    member_id: str
    value: ShareGroupCurrentMemberAssignmentValue | None = None


@dataclass(frozen=True)
class KeyValue:
    key: str
    value: str


@dataclass(frozen=True)
class StreamsGroupMetadataValue:
    """`topics`: what Kafka's MetadataHash is a hash of (the topics the topology names, as the
    epoch was computed against them)."""
    epoch: Int32
    topics: tuple[TopicMetadata, ...]
    validated_topology_epoch: Int32 = -1
    last_assignment_configs: tuple[KeyValue, ...] = ()


@dataclass(frozen=True)
class StreamsGroupMetadataRecord(CoordinatorRecord):
    """A KIP-1071 group's epoch (value None: the group's tombstone, its last record)."""
    group: str
    value: StreamsGroupMetadataValue | None = None


@dataclass(frozen=True)
class StreamsTopicInfo:
    name: str
    partitions: Int32
    replication_factor: Int16
    topic_configs: tuple[KeyValue, ...]


@dataclass(frozen=True)
class CopartitionGroup:
    """Indexes into its subtopology's source topics, regexes and repartition source topics."""
    source_topics: tuple[Int16, ...]
    source_topic_regex: tuple[Int16, ...]
    repartition_source_topics: tuple[Int16, ...]


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...]
    source_topic_regex: tuple[str, ...]
    state_changelog_topics: tuple[StreamsTopicInfo, ...]
    repartition_sink_topics: tuple[str, ...]
    repartition_source_topics: tuple[StreamsTopicInfo, ...]
    copartition_groups: tuple[CopartitionGroup, ...]


@dataclass(frozen=True)
class StreamsGroupTopologyValue:
    epoch: Int32
    subtopologies: tuple[Subtopology, ...]


@dataclass(frozen=True)
class StreamsGroupTopologyRecord(CoordinatorRecord):
    group: str
    value: StreamsGroupTopologyValue | None = None


@dataclass(frozen=True)
class StreamsEndpoint:
    host: str
    port: Port


@dataclass(frozen=True)
class StreamsGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: Int32
    topology_epoch: Int32
    process_id: str
    user_endpoint: StreamsEndpoint | None
    client_tags: tuple[KeyValue, ...]


@dataclass(frozen=True)
class StreamsGroupMemberMetadataRecord(CoordinatorRecord):
    group: str
    member_id: str
    value: StreamsGroupMemberMetadataValue | None = None


@dataclass(frozen=True)
class StreamsGroupTargetAssignmentMetadataRecord(CoordinatorRecord):
    group: str
    value: TargetAssignmentMetadataValue | None = None


@dataclass(frozen=True)
class TaskIds:
    subtopology_id: str
    partitions: tuple[NodeId, ...]


@dataclass(frozen=True)
class StreamsGroupTargetAssignmentMemberValue:
    active_tasks: tuple[TaskIds, ...]
    standby_tasks: tuple[TaskIds, ...]
    warmup_tasks: tuple[TaskIds, ...]


@dataclass(frozen=True)
class StreamsGroupTargetAssignmentMemberRecord(CoordinatorRecord):
    group: str
    member_id: str
    value: StreamsGroupTargetAssignmentMemberValue | None = None


@dataclass(frozen=True)
class StreamsGroupCurrentMemberAssignmentValue:
    """`state` is Kafka's streams MemberState id (0 STABLE, 1 UNREVOKED_TASKS, 2 UNRELEASED_TASKS);
    the sandbox revokes active tasks only (no standby or warmup tasks pending revocation)."""
    member_epoch: Int32
    previous_member_epoch: Int32
    state: Annotated[int, Range(-128, 127)]
    active_tasks: tuple[TaskIds, ...]
    standby_tasks: tuple[TaskIds, ...]
    warmup_tasks: tuple[TaskIds, ...]
    active_tasks_pending_revocation: tuple[TaskIds, ...]


@dataclass(frozen=True)
class StreamsGroupCurrentMemberAssignmentRecord(CoordinatorRecord):
    group: str
    member_id: str
    value: StreamsGroupCurrentMemberAssignmentValue | None = None


# -- the share coordinator (__share_group_state) ---------------------------------------------


@dataclass(frozen=True)
class StateBatch:
    first_offset: Long
    last_offset: Long
    delivery_state: Annotated[int, Range(-128, 127)]
    delivery_count: Annotated[int, Range(-(INT16_MAX + 1), INT16_MAX)]


@dataclass(frozen=True)
class ShareSnapshotValue:
    state_epoch: Int32
    leader_epoch: Int32
    start_offset: Offset
    state_batches: tuple[StateBatch, ...]


@dataclass(frozen=True)
class ShareSnapshotRecord(CoordinatorRecord):
    """ShareSnapshotKey + ShareSnapshotValue: a share-partition's state as the share coordinator
    has it written, whole (value None: the share-partition's tombstone)."""
    group: str
    topic_id: uuid.UUID
    partition: NodeId
    value: ShareSnapshotValue | None = None


@dataclass(frozen=True)
class ShareUpdateValue:
    leader_epoch: Int32
    start_offset: Offset
    state_batches: tuple[StateBatch, ...]


@dataclass(frozen=True)
class ShareUpdateRecord(CoordinatorRecord):
    """ShareUpdateKey + ShareUpdateValue: what changed since the last snapshot or update: the start
    offset, and the record states that changed (they replace those of their offsets; the
    states below the start offset go)."""
    group: str
    topic_id: uuid.UUID
    partition: NodeId
    value: ShareUpdateValue


# -- the transaction coordinator (__transaction_state) ----------------------------------------


@dataclass(frozen=True)
class TransactionPartitions:
    """TransactionLogValue's PartitionsSchema."""
    topic: str
    partition_ids: tuple[NodeId, ...]


@dataclass(frozen=True)
class TransactionLogValue:
    producer_id: Long
    previous_producer_id: Long
    next_producer_id: Long
    producer_epoch: Annotated[int, Range(-1, INT16_MAX)]
    transaction_timeout_ms: Int32
    transaction_status: Annotated[int, Range(0, 7)]
    transaction_partitions: tuple[TransactionPartitions, ...]
    transaction_last_update_timestamp_ms: Long
    transaction_start_timestamp_ms: Long
    client_transaction_version: Int16 = 0


@dataclass(frozen=True)
class TransactionLogRecord(CoordinatorRecord):
    """TransactionLogKey + TransactionLogValue: a transactional id's state (value None: its
    tombstone, the id Dead)."""
    transactional_id: str
    value: TransactionLogValue | None = None


# -- the logs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Batch:
    """One stored record batch (model.Batch's fields)."""
    base_offset: Annotated[int, Range(0, INT64_MAX)]
    last_offset: Annotated[int, Range(0, INT64_MAX)]
    max_timestamp: Long
    data: bytes


@dataclass(frozen=True)
class PartitionLogs(Record):
    """What a partition's log directories hold: its log start, high watermark, segments and
    cleaner checkpoint, each replica's log end and the leader epoch of its last write, and the
    batches appended since the last of these (all of them when `rewrite`: the log was
    truncated or cleaned)."""
    topic_id: uuid.UUID
    partition_id: NodeId
    log_start_offset: Annotated[int, Range(0, INT64_MAX)]
    high_watermark: Annotated[int, Range(0, INT64_MAX)]
    segments: tuple[Annotated[int, Range(0, INT64_MAX)], ...]
    cleaner_checkpoint: Annotated[int, Range(0, INT64_MAX)]
    log_end_offsets: tuple[tuple[NodeId, Annotated[int, Range(0, INT64_MAX)]], ...]
    replica_epochs: tuple[tuple[NodeId, Epoch], ...]
    rewrite: bool
    batches: tuple[Batch, ...]


@dataclass(frozen=True)
class FutureReplica(Record):
    """A future replica (AlterReplicaLogDirs, KIP-113) of a partition on one broker, copying
    into `log_dir` (None: it is gone: swapped in, cancelled or dropped). Kafka keeps it as a
    `-future` directory on the broker's disk, not in records."""
    topic_id: uuid.UUID
    partition_id: NodeId
    broker_id: NodeId
    log_dir: str | None


# -- encoding ---------------------------------------------------------------------------------

RECORD_TYPES: dict[str, type] = {}


def _register() -> None:
    module = sys.modules[__name__]
    for name, value in vars(module).items():
        if isinstance(value, type) and issubclass(value, Record) and value not in (Record, CoordinatorRecord):
            RECORD_TYPES[name] = value


_HINTS: dict[type, list[tuple[str, Any, Any]]] = {}


def _fields(cls: type) -> list[tuple[str, Any, Any]]:
    """(name, type, default or MISSING) of each field of a record type."""
    found = _HINTS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls, include_extras=True)
        found = _HINTS[cls] = [(f.name, hints[f.name], f.default) for f in dataclasses.fields(cls)]
    return found


def encode(record: Record, raw: bytearray | None = None) -> dict:
    """A record as a JSON object (`type` first; fields at their default left out). Bytes are
    base64; a batch's bytes go to `raw` instead when given (the journal appends them after the
    JSON, the JSON holds their size)."""
    out: dict[str, Any] = {"type": type(record).__name__}
    for name, hint, default in _fields(type(record)):
        value = getattr(record, name)
        if value != default or default is dataclasses.MISSING:
            out[name] = _encode_value(value, hint, raw)
    return out


def _encode_value(value: Any, hint: Any, raw: bytearray | None) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, Batch):
        if raw is not None:
            raw += value.data
            return [value.base_offset, value.last_offset, value.max_timestamp, len(value.data)]
        return [value.base_offset, value.last_offset, value.max_timestamp, base64.b64encode(value.data).decode()]
    if isinstance(value, tuple):
        args = typing.get_args(_optional(_strip(hint)))
        if args and args[-1] is not Ellipsis:   # a fixed-size tuple, e.g. (node, offset)
            return [_encode_value(v, h, raw) for v, h in zip(value, args, strict=True)]
        item = args[0] if args else Any
        return [_encode_value(v, item, raw) for v in value]
    if dataclasses.is_dataclass(value):
        return {name: _encode_value(getattr(value, name), h, raw) for name, h, _ in _fields(type(value))}
    raise TypeError(f"cannot encode {type(value).__name__} in a record")


def decode(data: object, check: Checker, where: str) -> Record:
    """The record a JSON object says, every field checked (a StateError names `where` and the
    field); its batches' bytes are base64 in the JSON."""
    return _decode_record(data, check, where, _Cursor(None))


def decode_all(items: list, check: Checker, where: str, raw: memoryview) -> list[Record]:
    """The records of a journal entry: `raw` holds the bytes of their batches, in order."""
    cursor = _Cursor(raw)
    out = [_decode_record(item, check, f"{where}: records[{i}]", cursor) for i, item in enumerate(items)]
    if cursor.pos != len(raw):
        raise check.fail(where, f"followed by as many batch bytes as its batches say ({cursor.pos}, not {len(raw)})")
    return out


def _decode_record(data: object, check: Checker, where: str, cursor: _Cursor) -> Record:
    obj = check.mapping(data, where)
    name = obj.get("type")
    cls = RECORD_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise check.fail(f"{where}.type", f"a record type this sandbox knows, not {str(name)[:100]!r}")
    return _decode_object(cls, obj, check, f"{where} ({name})", cursor)


class _Cursor:
    def __init__(self, raw: memoryview | None):
        self.raw, self.pos = raw, 0

    def take(self, size: int, check: Checker, where: str) -> bytes:
        assert self.raw is not None
        if size < 0 or self.pos + size > len(self.raw):
            raise check.fail(f"{where} size", f"within the entry's {len(self.raw)} batch bytes")
        data = bytes(self.raw[self.pos:self.pos + size])
        self.pos += size
        return data


def _decode_object(cls: type, obj: dict, check: Checker, where: str, cursor: _Cursor) -> Any:
    values = {}
    for f in dataclasses.fields(cls):
        at = f"{where}.{f.name}"
        if f.name not in obj:
            if f.default is not dataclasses.MISSING:
                continue
            raise check.fail(at, "present")
    for name, hint, _ in _fields(cls):
        if name in obj:
            values[name] = _decode_value(obj[name], hint, check, f"{where}.{name}", cursor)
    return cls(**values)


def _strip(hint: Any) -> Any:
    return typing.get_args(hint)[0] if typing.get_origin(hint) is Annotated else hint


def _optional(hint: Any) -> Any:
    """X of `X | None`."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return next(a for a in typing.get_args(hint) if a is not type(None))
    return hint


def _decode_value(value: Any, hint: Any, check: Checker, where: str, cursor: _Cursor) -> Any:
    bounds = next((m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Range)), None)
    hint = _strip(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return None if value is None else _decode_value(value, _optional(hint), check, where, cursor)
    if hint is int:
        return check.integer(value, where, *((bounds.low, bounds.high) if bounds else (None, None)))
    if hint is str:
        return check.text(value, where)
    if hint is bool:
        return check.flag(value, where)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise check.fail(where, "a number")
        return float(value)
    if hint is uuid.UUID:
        return check.uuid_of(value, where)
    if hint is bytes:
        try:
            return base64.b64decode(check.text(value, where), validate=True)
        except (binascii.Error, ValueError):
            raise check.fail(where, "base64") from None
    if hint is Batch:
        return _decode_batch(value, check, where, cursor)
    if origin is tuple:
        items = check.array(value, where)
        if args and args[-1] is not Ellipsis:
            if len(items) != len(args):
                raise check.fail(where, f"a list of {len(args)}")
            return tuple(_decode_value(v, h, check, f"{where}[{i}]", cursor) for i, (v, h) in enumerate(zip(items, args)))
        return tuple(_decode_value(v, args[0], check, f"{where}[{i}]", cursor) for i, v in enumerate(items))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _decode_object(hint, check.mapping(value, where), check, where, cursor)
    raise TypeError(f"no decoder for {hint!r}")   # a record type declared with a field type not handled here


def _decode_batch(value: Any, check: Checker, where: str, cursor: _Cursor) -> Batch:
    fields = check.array(value, where)
    if len(fields) != 4:
        raise check.fail(where, "[base offset, last offset, max timestamp, bytes]")
    base = check.integer(fields[0], f"{where} base offset", low=0)
    last = check.integer(fields[1], f"{where} last offset", low=0)
    max_ts = check.integer(fields[2], f"{where} max timestamp")
    if cursor.raw is not None:
        data = cursor.take(check.integer(fields[3], f"{where} size", low=0), check, where)
    else:
        try:
            data = base64.b64decode(check.text(fields[3], f"{where} data"), validate=True)
        except (binascii.Error, ValueError):
            raise check.fail(f"{where} data", "base64") from None
    return Batch(base, last, max_ts, data)


_register()
