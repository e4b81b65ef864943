"""DescribeLogDirs: each broker describes its own replicas, in one log dir; AlterReplicaLogDirs,
which with one dir moves nothing.

Per partition: the bytes the replica holds, its offset lag as Kafka's ReplicaManager computes it
(high watermark - replica log end, never negative), is_future false (no directory moves). The
dir's total/usable bytes (v4) are those of a fixed-size virtual disk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import AclResourceType, ApiKey
from kafka_shell.sandbox import cordons, replication
from kafka_shell.sandbox.handlers import api

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

DISK_BYTES = 100 * 2**30


def log_dir(broker_id: int) -> str:
    return f"/sandbox/broker-{broker_id}/data"


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
    # Partitions made as entities at once: a broker of a large cluster holds 100,000s of replicas.
    make = codec.maker(codec.element_class(codec.element_class(codec.element_class(
        codec.response_schema(ApiKey.DESCRIBE_LOG_DIRS, ctx.version), "results"), "topics"), "partitions"),
        is_future_key=False)
    topics = []
    used = 0
    for t in cluster.topics.values():
        parts = []
        for p in t.partitions:
            if me not in p.replicas:
                continue
            size = replication.replica_size(p, me) if p.batches else 0
            used += size
            if wanted is None or (t.name, p.index) in wanted:
                parts.append(make(partition_index=p.index, partition_size=size,
                                  offset_lag=max(p.high_watermark - p.leo.get(me, 0), 0)))
        if parts:
            topics.append({"name": t.name, "partitions": parts})
    return {"error_code": 0, "results": [{
        "error_code": 0, "log_dir": log_dir(me), "topics": topics,
        "total_bytes": DISK_BYTES, "usable_bytes": DISK_BYTES - used,
        "is_cordoned": log_dir(me) in cordons.cordoned_dirs(cluster, me),   # v5 (KIP-1066)
    }]}


@api(ApiKey.ALTER_REPLICA_LOG_DIRS)
def alter_replica_log_dirs(ctx: RequestContext) -> dict:
    """Kafka's ReplicaManager.alterReplicaLogDirs with one log dir per broker: another path is
    LOG_DIR_NOT_FOUND; a partition the cluster does not have, UNKNOWN_TOPIC_OR_PARTITION; a
    replica the broker does not hold, REPLICA_NOT_AVAILABLE; one it holds is already there."""
    allowed = ctx.permits(AclResourceType.CLUSTER)
    me = ctx.broker.id
    results: dict[str, list[dict]] = {}
    for d in ctx.request.dirs:
        for t in d.topics:
            topic = ctx.cluster.topics.get(t.name)
            for index in t.partitions:
                p = topic.partition(index) if topic is not None else None
                code = (ErrorCode.cluster_authorization_failed if not allowed else
                        ErrorCode.log_dir_not_found if d.path != log_dir(me) else
                        ErrorCode.unknown_topic_or_partition if p is None else
                        ErrorCode.replica_not_available if me not in p.replicas else ErrorCode.none)
                results.setdefault(t.name, []).append({"partition_index": index, "error_code": code})
    return {"results": [{"topic_name": name, "partitions": parts} for name, parts in results.items()]}
