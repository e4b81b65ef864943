"""GetReplicaLogInfo v0 (KAFKA-20098, API key 1000): what one broker's replicas hold.

Every broker answers for its own replicas, whatever their partition's state (the point is to
inspect offline partitions): the leader epoch of the replica's last write and its log end
offset. An unknown topic id gets UNKNOWN_TOPIC_ID, an unknown partition
UNKNOWN_TOPIC_OR_PARTITION, a partition this broker holds no replica of NOT_LEADER_OR_FOLLOWER.
Only the first 1000 partitions are answered; then has_more_data is true.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafka_shell.base.limits import MAX_PARTITIONS_PER_ELECTION
from kafka_shell.protocol.codes import AclResourceType, ApiKey
from kafka_shell.sandbox.handlers import api

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext


def _info(ctx: RequestContext, topic, index: int) -> dict:
    me = ctx.broker.id
    answer = {"partition": index, "partition_leader_epoch": -1, "log_end_offset": -1}
    if not ctx.permits(AclResourceType.CLUSTER):
        return {**answer, "error_code": ErrorCode.cluster_authorization_failed}
    if topic is None:
        return {**answer, "error_code": ErrorCode.unknown_topic_id}
    if not 0 <= index < len(topic.partitions):
        return {**answer, "error_code": ErrorCode.unknown_topic_or_partition}
    p = topic.partitions[index]
    if me not in p.replicas:
        return {**answer, "error_code": ErrorCode.not_leader_or_follower}
    return {"partition": index, "partition_leader_epoch": p.replica_epoch.get(me, 0),
            "log_end_offset": p.leo.get(me, 0), "error_code": 0}


@api(ApiKey.GET_REPLICA_LOG_INFO)
def get_replica_log_info(ctx: RequestContext) -> dict:
    budget = MAX_PARTITIONS_PER_ELECTION
    more = False
    out = []
    for tp in ctx.request.topic_partitions or ():
        if budget <= 0:
            more = True
            break
        served = list(tp.partitions)[:budget]
        more |= len(served) < len(tp.partitions)
        budget -= len(served)
        topic = ctx.cluster.topic_by_id(tp.topic_id)
        out.append({"topic_id": tp.topic_id,
                    "partition_log_info": [_info(ctx, topic, i) for i in served]})
    return {"broker_epoch": getattr(ctx.broker, "epoch", -1), "has_more_data": more,
            "topic_partition_log_info_list": out}
