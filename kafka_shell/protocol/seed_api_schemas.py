"""The classes of the message types `protocol_ext` declares (ElectLeaders v3, GetReplicaLogInfo
v0), in kio's own style so kio's codec handles them. Imported on first use: defining them costs
a noticeable part of a one-shot start, and most lines never send these requests."""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from kafka_shell.protocol.seed_apis import ELECT_LEADERS_KEY, GET_REPLICA_LOG_INFO_KEY


def _meta(kafka_type: str) -> dict:
    return {"kafka_type": kafka_type}


# --- ElectLeaders v3 ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersV3TopicPartitions:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ELECT_LEADERS_KEY)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic: str = field(metadata=_meta("string"))
    partitions: tuple[i32, ...] = field(metadata=_meta("int32"), default=())
    designated_leaders: tuple[i32, ...] | None = field(metadata=_meta("int32"), default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersV3Request:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ELECT_LEADERS_KEY)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    election_type: i8 = field(metadata=_meta("int8"))
    topic_partitions: tuple[ElectLeadersV3TopicPartitions, ...] | None
    timeout: i32Timedelta = field(metadata=_meta("timedelta_i32"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersV3PartitionResult:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ELECT_LEADERS_KEY)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    partition_id: i32 = field(metadata=_meta("int32"))
    error_code: ErrorCode = field(metadata=_meta("error_code"))
    error_message: str | None = field(metadata=_meta("string"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersV3ReplicaElectionResult:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ELECT_LEADERS_KEY)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic: str = field(metadata=_meta("string"))
    partition_result: tuple[ElectLeadersV3PartitionResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersV3Response:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(ELECT_LEADERS_KEY)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata=_meta("timedelta_i32"))
    error_code: ErrorCode = field(metadata=_meta("error_code"))
    replica_election_results: tuple[ElectLeadersV3ReplicaElectionResult, ...]


# --- GetReplicaLogInfo v0 ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class GetReplicaLogInfoTopicPartitions:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(GET_REPLICA_LOG_INFO_KEY)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_id: uuid.UUID = field(metadata=_meta("uuid"))
    partitions: tuple[i32, ...] = field(metadata=_meta("int32"), default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class GetReplicaLogInfoRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(GET_REPLICA_LOG_INFO_KEY)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic_partitions: tuple[GetReplicaLogInfoTopicPartitions, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionLogInfo:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(GET_REPLICA_LOG_INFO_KEY)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    partition: i32 = field(metadata=_meta("int32"))
    partition_leader_epoch: i32 = field(metadata=_meta("int32"))
    log_end_offset: i64 = field(metadata=_meta("int64"))
    error_code: ErrorCode = field(metadata=_meta("error_code"))


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitionLogInfo:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(GET_REPLICA_LOG_INFO_KEY)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic_id: uuid.UUID = field(metadata=_meta("uuid"))
    partition_log_info: tuple[PartitionLogInfo, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class GetReplicaLogInfoResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(GET_REPLICA_LOG_INFO_KEY)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata=_meta("timedelta_i32"))
    broker_epoch: i64 = field(metadata=_meta("int64"))
    has_more_data: bool = field(metadata=_meta("bool"))
    topic_partition_log_info_list: tuple[TopicPartitionLogInfo, ...]


REQUESTS = {(ELECT_LEADERS_KEY, 3): ElectLeadersV3Request,
            (GET_REPLICA_LOG_INFO_KEY, 0): GetReplicaLogInfoRequest}
RESPONSES = {(ELECT_LEADERS_KEY, 3): ElectLeadersV3Response,
             (GET_REPLICA_LOG_INFO_KEY, 0): GetReplicaLogInfoResponse}
