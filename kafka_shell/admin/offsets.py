"""Offsets: of logs (ListOffsets, read here and nowhere else: at each partition's leader, or at a
named broker for its own replica), of replicas (GetReplicaLogInfo, KAFKA-20098) and the
offsets groups committed (OffsetFetch, many groups a request where the cluster can;
OffsetCommit; OffsetDelete), at each group's coordinator.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.connection.manager import COORDINATOR_RETRIABLE
from kafka_shell.base.errors import NotSupported, shown
from kafka_shell.base.limits import MAX_PARTITIONS_PER_ELECTION

from kafka_shell.admin.errors import code_name, group_line, partition_line

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.connection.metadata import ClusterSnapshot

Key = tuple[str, int]
# ListOffsets timestamps with a meaning of their own (Kafka's ListOffsetsRequest).
LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
MAX_TIMESTAMP_VERSION = 7      # ListOffsets learnt -3 in v7 (KIP-734)
LEADER_EPOCHS_VERSION = 4      # ListOffsets answers leader epochs from v4
DEBUGGING_REPLICA_ID = -2      # ListOffsets: answer from the local log, leader or not
# OffsetCommit and OffsetFetch v10 name topics by id (KIP-848): we name them, so stay below.
BY_NAME_VERSION = 9
MANY_GROUPS_VERSION = 8        # OffsetFetch asks for several groups in one request from v8
# The codes (as ints: they are compared with 100,000s of answers) of a partition whose leader moved.
LEADER_MOVED = frozenset(int(e) for e in (Error.not_leader_or_follower, Error.leader_not_available,
                                          Error.fenced_leader_epoch, Error.unknown_leader_epoch))


# -- log offsets -------------------------------------------------------------------------------


class LogOffset(NamedTuple):
    offset: int             # -1 when no record matches (a timestamp after the last record)
    timestamp: int = -1
    error: str | None = None   # the partition's line when it failed
    gone: bool = False          # the topic or partition does not exist (any more)


def log_offsets(conn: ConnectionManager, snap: ClusterSnapshot, keys: Iterable[Key], timestamp: int) -> dict[Key, LogOffset]:
    """ListOffsets for `timestamp` (LATEST, EARLIEST, MAX_TIMESTAMP or ms) of each partition, at
    its leader (one request per leader, all at once; one retry on a fresh read for partitions
    whose leader moved)."""
    keys = list(keys)
    found: dict[Key, tuple[int, int, int]] = {}   # offset, timestamp, error code
    for attempt in range(2):
        by_leader: dict[int, list[tuple[Key, int]]] = {}
        for key in keys:
            topic = snap.topics.get(key[0])
            parts = topic.partitions if topic else ()
            if not 0 <= key[1] < len(parts):
                found[key] = (-1, -1, Error.unknown_topic_or_partition)
            elif parts[key[1]].leader < 0:
                found[key] = (-1, -1, Error.leader_not_available)
            else:
                by_leader.setdefault(parts[key[1]].leader, []).append((key, timestamp))
        for key, (offset, ts, _, code) in _list_offsets(conn, by_leader, replica_id=-1).items():
            found[key] = (offset, ts, code)
        moved = [k for k in keys if found[k][2] in LEADER_MOVED]
        if not moved or attempt:
            break
        snap, keys = conn.read(sorted({t for t, _ in moved})), moved
    return {key: (LogOffset(offset, ts) if not code else
                  LogOffset(-1, error=partition_line(key, code), gone=code == Error.unknown_topic_or_partition))
            for key, (offset, ts, code) in found.items()}


@functools.cache
def _partition_maker(version: int) -> Callable[..., object]:
    """Partitions of a ListOffsets request made as entities at once (10,000s per request)."""
    cls = codec.element_class(codec.element_class(codec.request_schema(ApiKey.LIST_OFFSETS, version),
                                                        "topics"), "partitions")
    return codec.maker(cls, current_leader_epoch=-1, max_num_offsets=1)


def _list_offsets(conn: ConnectionManager, wanted: dict[int, list[tuple[Key, int]]], replica_id: int,
                  min_version: int = 0) -> dict[Key, tuple[int, int, int, int]]:
    """(offset, timestamp, leader epoch, error code) of each (partition, timestamp) asked of
    each broker, all brokers at once; a broker that does not answer gives its partitions
    LEADER_NOT_AVAILABLE."""
    if not wanted:
        return {}

    def body(broker: int, version: int) -> dict:
        if version < min_version:
            raise NotSupported(f"Broker {broker} does not support ListOffsets v{min_version}+.")
        if version < MAX_TIMESTAMP_VERSION and any(ts == MAX_TIMESTAMP for _, ts in wanted[broker]):
            raise NotSupported("This cluster does not support --time max-timestamp (ListOffsets v7, Kafka 3.0+).")
        make = _partition_maker(version)
        topics: dict[str, list[object]] = {}
        for (t, p), ts in wanted[broker]:
            topics.setdefault(t, []).append(make(partition_index=p, timestamp=ts))
        conn.debug(f"ListOffsets request to broker {broker}: {len(wanted[broker])} partition(s)")
        return {"replica_id": replica_id, "isolation_level": 0,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}

    answers = conn.each_broker(sorted(wanted), ApiKey.LIST_OFFSETS, body)
    out: dict[Key, tuple[int, int, int, int]] = {}
    for answer in answers.answers.values():
        for t in answer.topics:
            name = t.name
            for p in t.partitions:
                out[(name, p.partition_index)] = (getattr(p, "offset", -1), getattr(p, "timestamp", -1),
                                                  getattr(p, "leader_epoch", -1), int(p.error_code))
    for broker, asked in wanted.items():
        missing = Error.leader_not_available if broker in answers.failed else Error.unknown_server_error
        for key, _ in asked:
            out.setdefault(key, (-1, -1, -1, missing))
    return out


# -- the log ends of replicas (unclean recovery, snapshots) ---------------------------------------


class ReplicaLogEnd(NamedTuple):
    epoch: int          # leader epoch: of the last write (GetReplicaLogInfo) or the current one
    log_end: int        # -1 when unknown
    error: str | None = None


def has_replica_log_info(conn: ConnectionManager) -> bool:
    """GetReplicaLogInfo (KAFKA-20098): the epoch of each replica's last write."""
    return conn.supports(ApiKey.GET_REPLICA_LOG_INFO)


def has_replica_log_ends(conn: ConnectionManager) -> bool:
    """ListOffsets with leader epochs (v4+): any broker's own log end of a replica it holds."""
    return conn.supports(ApiKey.LIST_OFFSETS, LEADER_EPOCHS_VERSION)


def replica_log_info(conn: ConnectionManager, snap: ClusterSnapshot, broker: int, keys: list[Key]) -> dict[Key, ReplicaLogEnd]:
    """`broker`'s own replicas of `keys`: the leader epoch of the last write and the log end,
    from GetReplicaLogInfo (KAFKA-20098), at most MAX_PARTITIONS_PER_ELECTION partitions a
    request; what an answer leaves out (HasMoreData) is asked again."""
    ids = {snap.topics[topic].topic_id: topic for topic, _ in keys}
    left = list(keys)
    out: dict[Key, ReplicaLogEnd] = {}
    while left:
        page, left = left[:MAX_PARTITIONS_PER_ELECTION], left[MAX_PARTITIONS_PER_ELECTION:]
        by_topic: dict[str, list[int]] = {}
        for topic, partition in page:
            by_topic.setdefault(topic, []).append(partition)
        conn.debug(f"GetReplicaLogInfo request to broker {broker}: {len(page)} partition(s)")
        answer = conn.broker_request(broker, ApiKey.GET_REPLICA_LOG_INFO, {"topic_partitions": [
            {"topic_id": snap.topics[t].topic_id, "partitions": ps} for t, ps in by_topic.items()]})
        for tl in answer.topic_partition_log_info_list:
            name = ids.get(tl.topic_id)
            if name is None:
                continue
            for info in tl.partition_log_info:
                out[(name, info.partition)] = ReplicaLogEnd(info.partition_leader_epoch, info.log_end_offset,
                                                            _code_name(info.error_code))
        unanswered = [k for k in page if k not in out]
        if unanswered and not answer.has_more_data:
            for k in unanswered:
                out[k] = ReplicaLogEnd(-1, -1, "left out of the broker's answer")
        elif unanswered:
            left = unanswered + left
    return out


def replica_log_ends(conn: ConnectionManager, snap: ClusterSnapshot, broker: int, keys: list[Key]) -> dict[Key, ReplicaLogEnd]:
    """The same from ListOffsets with ReplicaId -2 and Timestamp -1 (where the cluster lacks
    GetReplicaLogInfo): `broker`'s own replica's log end and its current leader epoch."""
    found = _list_offsets(conn, {broker: [(k, LATEST) for k in keys]}, replica_id=DEBUGGING_REPLICA_ID)
    out = {}
    for key in keys:
        offset, _, epoch, code = found[key]
        out[key] = ReplicaLogEnd(epoch if not code else -1, offset if not code else -1, _code_name(code))
    return out


def _code_name(code: int) -> str | None:
    return code_name(code) if code else None


# -- committed offsets -------------------------------------------------------------------------


@dataclass(frozen=True)
class Committed:
    """A group's committed offsets, or the line saying why they could not be read."""
    group: str
    offsets: dict[Key, int]
    problem: str | None = None


def committed(conn: ConnectionManager, group_ids: list[str], wait_for_coordinators: bool = True) -> dict[str, Committed]:
    """Each group's committed offsets (OffsetFetch of every topic) at its coordinator: one
    request per coordinator for all its groups (v8+), else one per group. Answers are read as
    kio entities: a group may hold offsets of 10,000s of partitions. Without
    `wait_for_coordinators`, the groups of a coordinator that does not answer come back with
    the line why, at once (a snapshot must not wait for a stopped broker)."""

    def body(ids: list[str], version: int) -> dict:
        return {"group_id": ids[0], "topics": None, "require_stable": False,
                "groups": [{"group_id": g, "topics": None} for g in ids]}

    def split(answer: Any, ids: list[str]) -> dict[str, Any]:
        if hasattr(answer, "groups"):
            return {g.group_id: g for g in answer.groups}
        return {ids[0]: answer}

    parts = conn.coordinator_requests(group_ids, ApiKey.OFFSET_FETCH, body, split, max_version=BY_NAME_VERSION,
                                      batched_from=MANY_GROUPS_VERSION, patient=wait_for_coordinators)
    out = {}
    for gid in group_ids:
        part, node = parts[gid]
        code = int(getattr(part, "error_code", 0))
        why = getattr(part, "why", None)
        if why is not None:
            out[gid] = Committed(gid, {}, f"The coordinator of group '{shown(gid)}' (broker {node}) did not answer: {why}")
            continue
        if code:
            out[gid] = Committed(gid, {}, group_line(code, gid))
            continue
        offsets: dict[Key, int] = {}
        problem = None
        for t in part.topics:
            name = t.name
            for p in t.partitions:
                if p.error_code and problem is None:
                    problem = f"{name}-{p.partition_index}: " + group_line(int(p.error_code), gid)
                elif p.committed_offset >= 0:
                    offsets[(name, p.partition_index)] = p.committed_offset
        out[gid] = Committed(gid, {} if problem else offsets, problem)
    return out


class _Commit(NamedTuple):
    error_code: int   # the group's code when the coordinator refused the whole commit
    answer: Any


def commit(conn: ConnectionManager, group_id: str, offsets: dict[Key, int]) -> dict[Key, str | None]:
    """Commit `offsets` for the group as an admin does (no member, generation -1): per
    partition None when committed, else the line why not."""
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

    part, _ = conn.coordinator_requests([group_id], ApiKey.OFFSET_COMMIT, lambda ids, version: body, split,
                                        mutation=True, max_version=BY_NAME_VERSION)[group_id]
    answer = getattr(part, "answer", None)
    codes = {(t.name, p.partition_index): int(p.error_code)
             for t in (answer.topics if answer is not None else ()) for p in t.partitions}
    fallback = int(part.error_code) or Error.unknown_server_error
    return {key: (group_line(code, group_id) if code else None)
            for key, code in ((k, codes.get(k, fallback)) for k in offsets)}


def delete(conn: ConnectionManager, group_id: str, keys: list[Key]) -> tuple[str | None, dict[Key, str | None]]:
    """OffsetDelete: the group's line when it refused as a whole, and per partition None when
    deleted, else the line why not."""
    topics: dict[str, list[dict]] = {}
    for t, p in sorted(keys):
        topics.setdefault(t, []).append({"partition_index": p})
    body = {"group_id": group_id, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
    part, _ = conn.coordinator_requests([group_id], ApiKey.OFFSET_DELETE, lambda ids, version: body,
                                        lambda a, ids: {group_id: a}, mutation=True)[group_id]
    top = int(part.error_code)
    per_partition = {(t.name, p.partition_index): (group_line(int(p.error_code), group_id) if p.error_code else None)
                     for t in getattr(part, "topics", ()) for p in t.partitions}
    return (group_line(top, group_id) if top else None), per_partition
