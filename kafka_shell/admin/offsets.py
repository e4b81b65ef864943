"""Offsets: of logs (ListOffsets, read here and nowhere else: at each partition's leader, or at a
named broker for its own replica), of replicas (GetReplicaLogInfo, KAFKA-20098) and the
offsets groups committed (OffsetFetch, many groups a request where the cluster can;
OffsetCommit; OffsetDelete), at each group's coordinator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from kafka_shell.protocol import codec
from kafka_shell.base.answers import COORDINATOR, AdminError, Answers, Target
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.connection.manager import COORDINATOR_RETRIABLE
from kafka_shell.base.errors import NotSupported
from kafka_shell.base.tuples import new_tuple


if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.base.deadline import Deadline
    from kafka_shell.connection.metadata import ClusterSnapshot

Key = tuple[str, int]
T = TypeVar("T")
# ListOffsets timestamps with a meaning of their own (Kafka's ListOffsetsRequest).
LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
MAX_TIMESTAMP_VERSION = 7      # ListOffsets learnt -3 in v7 (KIP-734)
LEADER_EPOCHS_VERSION = 4      # ListOffsets answers leader epochs from v4
DEBUGGING_REPLICA_ID = -2      # ListOffsets: answer from the local log, leader or not
# OffsetCommit and OffsetFetch v10 name topics by id (KIP-848): we name them, so stay below.
BY_NAME_VERSION = 9
MANY_GROUPS_VERSION = 8        # OffsetFetch asks for several groups in one request from v8


# -- log offsets -------------------------------------------------------------------------------


class LogOffset(NamedTuple):
    offset: int             # -1 when no record matches (a timestamp after the last record)
    timestamp: int = -1


def log_offsets(conn: ConnectionManager, snap: ClusterSnapshot | None, keys: Iterable[Key], timestamp: int,
                deadline: Deadline | None = None) -> Answers[Key, LogOffset]:
    """ListOffsets for `timestamp` (LATEST, EARLIEST, MAX_TIMESTAMP or ms) of each partition, at
    its leader (in `snap`, the caller's fresh read; located again where it moved). A partition
    that does not exist has the error UNKNOWN_TOPIC_OR_PARTITION."""
    found = conn.leader_requests(keys, ApiKey.LIST_OFFSETS, _list_offsets_body(timestamp, replica_id=-1),
                                 list_offsets_parts, snap=snap, deadline=deadline)
    return Answers({k: new_tuple(LogOffset, (p.offset, p.timestamp)) for k, p in found.rows.items()}, found.errors)


def _list_offsets_body(timestamp: int, replica_id: int, min_version: int = 0) -> Callable[[list[Key], int], dict]:
    def body(keys: list[Key], version: int) -> dict:
        if version < min_version:
            raise NotSupported(f"This cluster does not support ListOffsets v{min_version}+.")
        if version < MAX_TIMESTAMP_VERSION and timestamp == MAX_TIMESTAMP:
            raise NotSupported("This cluster does not support --time max-timestamp (ListOffsets v7, Kafka 3.0+).")
        partition = codec.element_class(codec.element_class(codec.request_schema(ApiKey.LIST_OFFSETS, version),
                                                            "topics"), "partitions")
        topics: dict[str, list[int]] = {}
        for t, p in keys:
            topics.setdefault(t, []).append(p)
        # Packed column-wise: a snapshot asks a leader about 10,000s of partitions at once.
        fixed = {"timestamp": timestamp, "current_leader_epoch": -1, "max_num_offsets": 1}
        return {"replica_id": replica_id, "isolation_level": 0, "topics": [
            {"name": t, "partitions": codec.packed_array(partition, len(ps), {"partition_index": ps, **fixed})}
            for t, ps in topics.items()]}
    return body


def list_offsets_parts(answer: Any) -> Iterator[tuple[Key, Any]]:
    for t in answer.topics:
        name = t.name
        for p in t.partitions:
            yield (name, p.partition_index), p


# -- the log ends of replicas (unclean recovery, snapshots: admin/recovery.py) ---------------------


def has_replica_log_info(conn: ConnectionManager) -> bool:
    """GetReplicaLogInfo (KAFKA-20098): the epoch of each replica's last write."""
    return conn.supports(ApiKey.GET_REPLICA_LOG_INFO)


def has_replica_log_ends(conn: ConnectionManager) -> bool:
    """ListOffsets with leader epochs (v4+): any broker's own log end of a replica it holds."""
    return conn.supports(ApiKey.LIST_OFFSETS, LEADER_EPOCHS_VERSION)


def replica_log_ends_body() -> Callable[[list[Key], int], dict]:
    """ListOffsets with ReplicaId -2 and Timestamp -1 (v4+): a broker's own replica's log end and
    its current leader epoch, leader or not."""
    return _list_offsets_body(LATEST, DEBUGGING_REPLICA_ID, LEADER_EPOCHS_VERSION)


# -- committed offsets -------------------------------------------------------------------------


def committed(conn: ConnectionManager, group_ids: list[str],
              wait_for_coordinators: bool = True) -> Answers[str, dict[Key, int]]:
    """Each group's committed offsets (OffsetFetch of every topic) at its coordinator: one
    request per coordinator for all its groups (v8+), else one per group. Answers are read as
    kio entities: a group may hold offsets of 10,000s of partitions. A partition the coordinator
    refused makes its group's error (naming the partition). Without `wait_for_coordinators`, a
    coordinator that does not answer is not asked again (a snapshot must not wait for a stopped
    broker)."""

    def body(ids: list[str], version: int) -> dict:
        return {"group_id": ids[0], "topics": None, "require_stable": False,
                "groups": [{"group_id": g, "topics": None} for g in ids]}

    def split(answer: Any, ids: list[str]) -> dict[str, Any]:
        if hasattr(answer, "groups"):
            return {g.group_id: g for g in answer.groups}
        return {ids[0]: answer}

    parts = conn.coordinator_requests(group_ids, ApiKey.OFFSET_FETCH, body, split, max_version=BY_NAME_VERSION,
                                      batched_from=MANY_GROUPS_VERSION, patient=wait_for_coordinators)
    rows: dict[str, dict[Key, int]] = {}
    errors = dict(parts.errors)
    for gid, (part, node) in parts.rows.items():
        offsets: dict[Key, int] = {}
        for t in part.topics:
            name = t.name
            for p in t.partitions:
                if p.error_code:
                    errors[gid] = AdminError(int(p.error_code), Target(COORDINATOR, node, ((name, p.partition_index),)))
                    break
                if p.committed_offset >= 0:
                    offsets[(name, p.partition_index)] = p.committed_offset
            if gid in errors:
                break
        else:
            rows[gid] = offsets
    return Answers(rows, {gid: errors[gid] for gid in group_ids if gid in errors})


def commit(conn: ConnectionManager, group_id: str, offsets: dict[Key, int]) -> Answers[Key, int]:
    """Commit `offsets` for the group as an admin does (no member, generation -1): each
    partition's offset committed, or its error (the group's, when it refused the commit as a
    whole: the same error for every partition)."""
    topics: dict[str, list[dict]] = {}
    for (t, p), offset in sorted(offsets.items()):
        topics.setdefault(t, []).append({"partition_index": p, "committed_offset": offset,
                                         "committed_leader_epoch": -1, "committed_metadata": ""})
    body = {"group_id": group_id, "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "retention_time": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}

    def split(answer: Any, ids: list[str]) -> dict[str, _Commit]:
        codes = [int(p.error_code) for t in answer.topics for p in t.partitions]
        # The whole commit is asked again when the coordinator refused it all.
        code = codes[0] if codes and all(c == codes[0] for c in codes) else 0
        return {group_id: _Commit(code if code in COORDINATOR_RETRIABLE else 0, answer)}

    found = conn.coordinator_requests([group_id], ApiKey.OFFSET_COMMIT, lambda ids, version: body, split,
                                      mutation=True, max_version=BY_NAME_VERSION)
    if group_id in found.errors:
        return Answers({}, dict.fromkeys(offsets, found.errors[group_id]))
    part, node = found.rows[group_id]
    codes = {(t.name, p.partition_index): int(p.error_code) for t in part.answer.topics for p in t.partitions}
    return _per_partition(list(offsets), codes, node, offsets)


class _Commit(NamedTuple):
    error_code: int   # the group's code when the coordinator refused the whole commit
    answer: Any


def delete(conn: ConnectionManager, group_id: str, keys: list[Key]) -> Answers[Key, None]:
    """OffsetDelete: each partition's offset deleted, or its error (the group's, when it refused
    the request as a whole: the same error for every partition)."""
    topics: dict[str, list[dict]] = {}
    for t, p in sorted(keys):
        topics.setdefault(t, []).append({"partition_index": p})
    body = {"group_id": group_id, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
    found = conn.coordinator_requests([group_id], ApiKey.OFFSET_DELETE, lambda ids, version: body,
                                      lambda a, ids: {group_id: a}, mutation=True)
    if group_id in found.errors:
        return Answers({}, dict.fromkeys(sorted(keys), found.errors[group_id]))
    part, node = found.rows[group_id]
    codes = {(t.name, p.partition_index): int(p.error_code) for t in part.topics for p in t.partitions}
    return _per_partition(sorted(keys), codes, node, dict.fromkeys(keys))


def _per_partition(keys: list[Key], codes: dict[Key, int], node: int, done: dict[Key, T]) -> Answers[Key, T]:
    """The partitions a coordinator answered for (code 0: `done`'s value), or their error."""
    rows: dict[Key, T] = {}
    errors: dict[Key, AdminError] = {}
    for key in keys:
        code = codes.get(key, Error.unknown_server_error)
        if code:
            errors[key] = AdminError(code, Target(COORDINATOR, node, (key,)))
        else:
            rows[key] = done[key]
    return Answers(rows, errors)
