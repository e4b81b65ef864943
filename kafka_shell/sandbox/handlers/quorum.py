"""DescribeQuorum: the KRaft controller quorum (not served by zk-mode brokers); AddRaftVoter and
RemoveRaftVoter, which a static quorum refuses.

Voters are the controllers, observers the brokers; the leader is the active controller and its
epoch the controller epoch. The metadata log's end offset is the cluster's change generation:
live replicas are caught up now, a stopped one stays at the offset and time it stopped. v2
`Nodes` lists each voter's CONTROLLER listener. Brokers forward the request to the active
controller (the server waits for one); on a controller listener a voter that is not the leader
answers NOT_LEADER_OR_FOLLOWER, as KafkaRaftClient does.
"""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from kafka_shell.codes import AclResourceType, ApiKey
from kafka_shell.sandbox.handlers import api, features
from kafka_shell.sandbox.model import now_ms

KRAFT_VERSION = "kraft.version"

METADATA_TOPIC = "__cluster_metadata"


def directory_id(cluster, broker_id: int) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-sandbox:{cluster.cluster_id}:{broker_id}")


# A voter of a static quorum (controller.quorum.voters, kraft.version 0: the only kind the sandbox
# has) has no directory id; Kafka answers the zero Uuid for it. Brokers have their log dir's.
NO_DIRECTORY = uuid.UUID(int=0)


def _replica(cluster, node, now: int, voter: bool = False) -> dict:
    stopped = cluster.extras.get("stopped_at", {}).get(node.id)
    if node.alive or stopped is None:
        offset, seen = cluster.generation, (now if node.alive else -1)
    else:
        offset, seen = stopped
    return {"replica_id": node.id, "replica_directory_id": NO_DIRECTORY if voter else directory_id(cluster, node.id),
            "log_end_offset": offset, "last_fetch_timestamp": seen,
            "last_caught_up_timestamp": seen}


def _valid(request) -> bool:
    return (len(request.topics) == 1 and request.topics[0].topic_name == METADATA_TOPIC
            and len(request.topics[0].partitions) == 1
            and request.topics[0].partitions[0].partition_index == 0)


def _error(request, code: int) -> dict:
    return {"error_code": 0, "topics": [
        {"topic_name": t.topic_name, "partitions": [
            {"partition_index": p.partition_index, "error_code": code, "leader_id": -1,
             "leader_epoch": -1, "high_watermark": -1} for p in t.partitions]}
        for t in request.topics]}


@api(ApiKey.DESCRIBE_QUORUM)
def describe_quorum(ctx) -> dict:
    cluster = ctx.cluster
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "topics": [], "nodes": []}
    if not _valid(ctx.request):
        return _error(ctx.request, ErrorCode.unknown_topic_or_partition)
    if cluster.controller_id < 0 or not ctx.is_controller:
        return _error(ctx.request, ErrorCode.not_leader_or_follower)
    now = now_ms()
    voters = [_replica(cluster, c, now, voter=True) for c in cluster.controllers.values()]
    observers = [_replica(cluster, b, now) for b in cluster.brokers.values()]
    return {
        "error_code": 0,
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [{
            "partition_index": 0, "error_code": 0, "leader_id": cluster.controller_id,
            "leader_epoch": cluster.controller_epoch, "high_watermark": cluster.generation,
            "current_voters": voters, "observers": observers}]}],
        "nodes": [{"node_id": c.id, "listeners": [{"name": "CONTROLLER", "host": c.host,
                                                   "port": c.port}]}
                  for c in cluster.controllers.values()],
    }


def _static_quorum(ctx, verb: str) -> dict:
    """The sandbox's quorum is static (Kafka's controller.quorum.voters): KIP-853's voter changes
    are refused as Kafka refuses them while kraft.version is 0 (KafkaRaftClient)."""
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None}
    level = features.finalized(ctx.cluster).get(KRAFT_VERSION, 0)
    message = (f"Cluster doesn't support {verb} voter because the kraft.version feature is {level}" if level == 0
               else f"The sandbox's controller quorum is static: voters cannot be {'added' if verb == 'adding' else 'removed'}")
    return {"error_code": ErrorCode.unsupported_version, "error_message": message}


@api(ApiKey.ADD_RAFT_VOTER)
def add_raft_voter(ctx) -> dict:
    return _static_quorum(ctx, "adding")


@api(ApiKey.REMOVE_RAFT_VOTER)
def remove_raft_voter(ctx) -> dict:
    return _static_quorum(ctx, "removing")
