"""Take one snapshot of a cluster (see `schema` for the format) through the session's
connection: one Metadata read (with the active controller), one DescribeLogDirs per live
broker, ListOffsets (earliest and latest) batched per leader, DescribeTopicPartitions only
where an ELR can exist, the replica log ends of offline partitions, one DescribeConfigs for
every topic, and the consumer groups' committed offsets. No per-partition calls.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_shell.codes import ApiKey
from kafka_shell.errors import KafkaCallError, ShellError
from kafka_shell.metadata import ClusterSnapshot, PartitionInfo
from kafka_shell.groups import EARLIEST, LATEST, log_offsets
from kafka_shell.operations import admin_error, debug, eligible_leaders, replica_log_ends, replica_log_info, topic_configs

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_shell.session import Session

Key = tuple[str, int]


def take(session: Session, root: Path) -> Path:
    """Read the cluster once and write the snapshot under `root`; returns its directory."""
    import pyarrow as pa

    from kafka_shell.pipeline import schema
    started = time.monotonic()
    now = datetime.datetime.now(datetime.UTC)
    taken_at = now.replace(microsecond=now.microsecond // 1000 * 1000)  # Parquet keeps milliseconds
    conn = session.conn
    snap = conn.read(controller=True)
    cluster_id = snap.cluster_id or "unknown-cluster"
    parts = [p for _, t in sorted(snap.topics.items()) for p in t.partitions]
    live = set(snap.brokers)
    replicas, log_dirs = _log_dirs(session, sorted(live))
    log_ends = _offline_log_ends(session, snap, [p for p in parts if p.leader < 0 or p.leader not in live])
    offsets = _offsets(session, snap, [p for p in parts if p.leader in live])
    elr = {key: list(lists[0]) for key, lists in eligible_leaders(session, [t for _, t in sorted(snap.topics.items())]).items()}
    configs = topic_configs(session, sorted(snap.topics))
    groups = _group_offsets(session)
    key = {"cluster_id": cluster_id, "taken_at": taken_at}

    def table(name: str, columns: dict[str, list]) -> pa.Table:
        n = len(next(iter(columns.values()))) if columns else 0
        full = {**{k: [v] * n for k, v in key.items()}, **columns}
        return pa.table(full, schema=schema.SCHEMAS[name])

    topic_rows = [(t.name, str(t.topic_id) if t.topic_id else None, len(t.partitions),
                   len(t.partitions[0].replicas) if t.partitions else 0, *configs.get(t.name, ({}, 1)))
                  for _, t in sorted(snap.topics.items())]
    replica_rows = [(t, p, b, size, lag, *log_ends.get((t, p, b), (None, None)), log_dir)
                    for (t, p, b), (size, lag, log_dir) in sorted(replicas.items())]
    tables = {
        "cluster": table("cluster", {"mode": [conn.mode or ""], "controller_id": [snap.controller.id],
                                     "controller_epoch": [snap.controller.epoch]}),
        "brokers": table("brokers", _columns(["broker_id", "host", "port", "rack", "state"],
                                             [(b.id, b.host, b.port, b.rack, "live") for _, b in sorted(snap.brokers.items())])),
        "topics": table("topics", _columns(["topic", "topic_id", "partitions", "replication_factor", "configs", "min_isr"],
                                           [(*r[:4], list(r[4].items()), r[5]) for r in topic_rows])),
        "partitions": table("partitions", _columns(
            ["topic", "partition", "leader", "leader_epoch", "replicas", "isr", "elr", "offline_replicas"],
            [(p.topic, p.partition, p.leader, p.leader_epoch, list(p.replicas), list(p.isr),
              elr.get((p.topic, p.partition), []), list(p.offline_replicas)) for p in parts])),
        "replicas": table("replicas", _columns(
            ["topic", "partition", "broker_id", "size", "offset_lag", "log_end_offset", "last_epoch", "log_dir"], replica_rows)),
        "log_dirs": table("log_dirs", _columns(["broker_id", "log_dir", "total_bytes", "usable_bytes"], log_dirs)),
        "offsets": table("offsets", _columns(["topic", "partition", "log_start_offset", "log_end_offset"],
                                             [(t, p, start, end) for (t, p), (start, end) in sorted(offsets.items())])),
        "group_offsets": table("group_offsets", _columns(["group", "topic", "partition", "committed_offset"], groups)),
    }
    manifest = {"cluster_id": cluster_id, "mode": conn.mode or "", "taken_at": taken_at.isoformat(),
                "taken_at_ms": int(taken_at.timestamp() * 1000), "controller_id": snap.controller.id,
                "controller_epoch": snap.controller.epoch, "source": "kafka-shell snapshot",
                "seconds": round(time.monotonic() - started, 3)}
    return schema.write_snapshot(schema.snapshot_dir(root, cluster_id, taken_at), tables, manifest)


def _columns(names: list[str], rows: Iterable[tuple]) -> dict[str, list]:
    rows = list(rows)
    return {n: [r[i] for r in rows] for i, n in enumerate(names)}


def _log_dirs(session: Session, brokers: list[int]) -> tuple[dict[tuple[str, int, int], tuple[int, int, str]], list[tuple]]:
    """(topic, partition, broker) -> (size, offset lag, log dir), and (broker, log dir, total
    bytes, usable bytes) per dir: one DescribeLogDirs per live broker."""
    out: dict[tuple[str, int, int], tuple[int, int, str]] = {}
    dirs: list[tuple] = []
    if not session.conn.api_versions().get(ApiKey.DESCRIBE_LOG_DIRS):
        return out, dirs
    for b in brokers:
        debug(session, f"DescribeLogDirs request to broker {b}")
        try:
            answer = session.conn.broker_request_entity(b, ApiKey.DESCRIBE_LOG_DIRS, {"topics": None})
        except ShellError as exc:
            session.stderr.write(f"Broker {b} did not describe its log dirs ({exc}); its replicas are left out.\n")
            continue
        for d in answer.results:
            # v4+ (KIP-827) tell the dir's total and usable bytes; older versions leave -1.
            total, usable = getattr(d, "total_bytes", -1), getattr(d, "usable_bytes", -1)
            dirs.append((b, d.log_dir, total if total >= 0 else None, usable if usable >= 0 else None))
            for t in d.topics:
                name = t.name
                for p in t.partitions:
                    if not p.is_future_key:
                        out[(name, p.partition_index, b)] = (p.partition_size, p.offset_lag, d.log_dir)
    return out, dirs


def _offsets(session: Session, snap: ClusterSnapshot, online: list[PartitionInfo]) -> dict[Key, tuple[int, int]]:
    """(topic, partition) -> (log start, log end), asked of each leader for all it leads."""
    keys = [(p.topic, p.partition) for p in online]
    start = log_offsets(session, snap, keys, EARLIEST)
    end = log_offsets(session, snap, keys, LATEST)
    out = {k: (start[k].offset, end[k].offset) for k in keys if not start[k].error and not end[k].error}
    if len(out) < len(keys):
        session.stderr.write(f"The leaders did not list the offsets of {len(keys) - len(out)} partition(s); "
                             "they are left out.\n")
    return out


def _offline_log_ends(session: Session, snap: ClusterSnapshot,
                      offline: list[PartitionInfo]) -> dict[tuple[str, int, int], tuple[int, int]]:
    """(topic, partition, broker) -> (log end offset, leader epoch) of the live replicas of
    offline partitions: what the recovery plan chooses by. GetReplicaLogInfo (KAFKA-20098)
    where the cluster has it (the epoch of the last write), else ListOffsets with replica id -2
    (the broker's current epoch)."""
    wanted: dict[int, list[Key]] = {}
    for p in offline:
        for b in p.replicas:
            if b in snap.brokers:
                wanted.setdefault(b, []).append((p.topic, p.partition))
    out: dict[tuple[str, int, int], tuple[int, int]] = {}
    use_log_info = bool(wanted) and bool(session.conn.api_versions().get(ApiKey.GET_REPLICA_LOG_INFO))
    ask = replica_log_info if use_log_info else replica_log_ends
    for broker, keys in wanted.items():
        try:
            answers = ask(session, snap, broker, keys)
        except ShellError as exc:
            session.stderr.write(f"Broker {broker} did not tell its log ends ({exc}).\n")
            continue
        out.update({(t, p, broker): (end, epoch) for (t, p), (epoch, end, error) in answers.items() if error is None})
    return out


def _group_offsets(session: Session) -> list[tuple[str, str, int, int]]:
    """(group, topic, partition, committed offset) of every consumer group."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    listed = session.conn.admin_call("list_consumer_groups")[None]
    if isinstance(listed, BaseException):
        raise KafkaCallError(admin_error(listed))
    rows: list[tuple[str, str, int, int]] = []
    for group in sorted(g.group_id for g in listed.valid):
        answer = session.conn.admin_call("list_consumer_group_offsets", [ConsumerGroupTopicPartitions(group)])
        for result in answer.values():
            if isinstance(result, BaseException):
                session.stderr.write(f"Group {group}: {admin_error(result)}; left out.\n")
                continue
            rows += [(group, tp.topic, tp.partition, tp.offset) for tp in result.topic_partitions or []
                     if tp.offset >= 0]
    return sorted(rows)


def summary(directory: Path) -> dict[str, Any]:
    import json

    from kafka_shell.pipeline.schema import MANIFEST
    return json.loads((directory / MANIFEST).read_text())
