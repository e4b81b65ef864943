"""DescribeLogDirs and AlterReplicaLogDirs: each broker describes and moves its own replicas
among its log dirs (sandbox/directories.py).

Per partition: the bytes the replica holds, its offset lag as Kafka's ReplicaManager computes it
(high watermark - replica log end, never negative; for a future replica the replica's log end
minus the future's). Each dir's total/usable bytes (v4) are those of a fixed-size virtual disk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import AclResourceType, ApiKey
from kafka_shell.sandbox import cordons, directories, replication
from kafka_shell.sandbox.handlers import api

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

@api(ApiKey.DESCRIBE_LOG_DIRS)
def describe_log_dirs(ctx: RequestContext) -> dict:
    if not ctx.permits(AclResourceType.CLUSTER):
        # v3+ say it in the top-level error; older versions get no results.
        return {"error_code": ErrorCode.cluster_authorization_failed, "results": []}
    cluster = ctx.cluster
    me = ctx.broker.id
    wanted = None
    if ctx.request.topics is not None:
        wanted = {(t.topic, i) for t in ctx.request.topics for i in t.partitions}
    partition = codec.element_class(codec.element_class(codec.element_class(
        codec.response_schema(ApiKey.DESCRIBE_LOG_DIRS, ctx.version), "results"), "topics"), "partitions")
    paths = directories.broker_dirs(cluster, me)
    # dir -> topic -> (partition, size, offset lag, future) of each replica
    listed: dict[str, dict[str, list[tuple[int, int, int, bool]]]] = {d: {} for d in paths}
    used = dict.fromkeys(paths, 0)
    home = directories.home_dir(cluster, me)
    for t in cluster.topics.values():
        name = t.name
        rows_in: dict[str, list[tuple[int, int, int, bool]]] = {}   # this topic's rows in each dir
        for p in t.partitions:   # a broker of a large cluster holds 100,000s: kept lean
            if me not in p.replicas:
                continue
            size = replication.replica_size(p, me) if p.batches else 0
            where = p.dirs.get(me) or home   # directories.dir_of
            used[where] += size
            future = p.future_dirs.get(me)
            if future is not None:
                future_size, future_lag = directories.future_size(cluster, p, me)
                used[future] += future_size
            if wanted is not None and (name, p.index) not in wanted:
                continue
            rows = rows_in.get(where)
            if rows is None:
                rows = rows_in[where] = listed[where].setdefault(name, [])
            lag = p.high_watermark - p.leo.get(me, 0)
            rows.append((p.index, size, lag if lag > 0 else 0, False))
            if future is not None:
                listed[future].setdefault(name, []).append((p.index, future_size, future_lag, True))
    cordoned = cordons.cordoned_dirs(cluster, me)
    names = ("partition_index", "partition_size", "offset_lag", "is_future_key")
    # Packed: a broker of a large cluster holds 100,000s of replicas.
    return {"error_code": 0, "results": [{
        "error_code": 0, "log_dir": d,
        "topics": [{"name": name, "partitions": codec.packed_rows(partition, names, rows)} for name, rows in listed[d].items()],
        "total_bytes": directories.DISK_BYTES, "usable_bytes": directories.DISK_BYTES - used[d],
        "is_cordoned": d in cordoned,   # v5 (KIP-1066)
    } for d in paths]}


@api(ApiKey.ALTER_REPLICA_LOG_DIRS)
def alter_replica_log_dirs(ctx: RequestContext) -> dict:
    """Kafka's KafkaApis.handleAlterReplicaLogDirs: CLUSTER_AUTHORIZATION_FAILED for every
    partition without ALTER on the cluster, else ReplicaManager.alterReplicaLogDirs per partition
    (sandbox/directories.alter); the moves start copying at once."""
    allowed = ctx.permits(AclResourceType.CLUSTER)
    me = ctx.broker.id
    results: dict[str, list[dict]] = {}
    moved = []
    for d in ctx.request.dirs:
        for t in d.topics:
            for index in t.partitions:
                code = directories.alter(ctx.cluster, t.name, index, me, d.path) if allowed else \
                    ErrorCode.cluster_authorization_failed
                results.setdefault(t.name, []).append({"partition_index": index, "error_code": code})
                p = ctx.cluster.partition(t.name, index)
                if code == ErrorCode.none and p is not None and me in p.future_dirs:
                    moved.append(p)
    if moved:
        replication.settle(ctx.cluster, moved)
    return {"results": [{"topic_name": name, "partitions": parts} for name, parts in results.items()]}
