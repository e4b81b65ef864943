"""DescribeQuorum: the KRaft controller quorum (not served by zk-mode brokers); AddRaftVoter and
RemoveRaftVoter, which change a dynamic quorum's voters (sandbox.quorum) and a static one refuses.

The leader is the active controller and its epoch the controller epoch; observers are the
controllers outside the voter set and the brokers. The metadata log's end offset is the
cluster's change generation: live replicas are caught up now, a stopped one stays at the offset
and time it stopped. v2 adds directory ids (the zero Uuid for the voters of a static quorum,
which the quorum does not know) and `Nodes`, each voter's CONTROLLER listener. Brokers forward
these requests to the active controller (the server waits for one); on a controller listener a
controller that is not the leader answers NOT_LEADER_OR_FOLLOWER, as KafkaRaftClient does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import asyncio
import uuid

from kio.schema.errors import ErrorCode

from kafka_shell.protocol.codes import AclResourceType, ApiKey
from kafka_shell.sandbox import quorum
from kafka_shell.sandbox.handlers import api
from kafka_shell.sandbox.model import now_ms

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

METADATA_TOPIC = "__cluster_metadata"
CONTROLLER_LISTENER = "CONTROLLER"
# controller.quorum.request.timeout.ms: how long the leader waits for a removal to commit.
REMOVAL_TIMEOUT_MS = 2000
COMMIT_POLL_S = 0.02


def _replica(cluster, node, now: int, directory: uuid.UUID) -> dict:
    stopped = cluster.runtime.stopped_at.get(node.id)
    if node.alive or stopped is None:
        offset, seen = cluster.generation, (now if node.alive else -1)
    else:
        offset, seen = stopped
    return {"replica_id": node.id, "replica_directory_id": directory,
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
def describe_quorum(ctx: RequestContext) -> dict:
    cluster = ctx.cluster
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "topics": [], "nodes": []}
    if not _valid(ctx.request):
        return _error(ctx.request, ErrorCode.unknown_topic_or_partition)
    quorum.settle(cluster)   # a pending voter change whose voters are back commits
    if cluster.controller_id < 0 or not ctx.is_controller:
        return _error(ctx.request, ErrorCode.not_leader_or_follower)
    now = now_ms()
    voters = quorum.voters(cluster)
    message = "" if ctx.version >= 2 else None   # Kafka 4.4 answers "" where there is no error
    return {
        "error_code": 0, "error_message": message,
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [{
            "partition_index": 0, "error_code": 0, "error_message": message,
            "leader_id": cluster.controller_id, "leader_epoch": cluster.controller_epoch,
            "high_watermark": cluster.generation,
            "current_voters": [_replica(cluster, c, now, quorum.voter_directory(cluster, c)) for c in voters],
            "observers": [_replica(cluster, n, now, quorum.directory_of(cluster, n)) for n in quorum.observers(cluster)]}]}],
        "nodes": [{"node_id": c.id, "listeners": [{"name": CONTROLLER_LISTENER, "host": c.host, "port": c.port}]}
                  for c in voters],
    }


def _refusal(ctx: RequestContext, verb: str) -> dict | None:
    """What KafkaRaftClient answers before the voter set is looked at: authorization
    (ControllerApis: ALTER on the cluster), the cluster id, whether this controller leads, and
    whether the request names a voter (an id and a directory id)."""
    if not ctx.permits(AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None}
    req = ctx.request
    if req.cluster_id is not None and req.cluster_id != ctx.cluster.cluster_id:
        return {"error_code": ErrorCode.inconsistent_cluster_id,
                "error_message": f'The given id "{req.cluster_id}" doesn\'t match the cluster id "{ctx.cluster.cluster_id}"'}
    if not ctx.is_controller:
        return {"error_code": ErrorCode.not_leader_or_follower, "error_message": ""}
    if req.voter_id < 0 or req.voter_directory_id in (None, quorum.NO_DIRECTORY):   # kio reads the zero Uuid as None
        return {"error_code": ErrorCode.invalid_request, "error_message": f"{verb} voter request didn't include a valid voter"}
    return None


async def _answer(ctx: RequestContext, code: int, message: str | None, wait_ms: int | None) -> dict:
    """The answer to a change, once it has committed when `wait_ms` says to wait (at most that
    long: then REQUEST_TIMED_OUT with Kafka's default message)."""
    if code == ErrorCode.none and wait_ms is not None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_ms / 1000
        while quorum.pending(ctx.cluster):
            if loop.time() >= deadline:
                return {"error_code": ErrorCode.request_timed_out, "error_message": "The request timed out."}
            await asyncio.sleep(COMMIT_POLL_S)
    return {"error_code": code, "error_message": message}


@api(ApiKey.ADD_RAFT_VOTER)
async def add_raft_voter(ctx: RequestContext) -> dict:
    req = ctx.request
    refused = _refusal(ctx, "Add")
    if refused:
        return refused
    endpoint = next(((e.host, e.port) for e in req.listeners if e.name == CONTROLLER_LISTENER), None)
    if endpoint is None:
        listed = ", ".join(f"ListenerName({e.name})={e.host}/<unresolved>:{e.port}" for e in req.listeners)
        return {"error_code": ErrorCode.invalid_request,
                "error_message": f"Add voter request didn't include the endpoint (Endpoints(endpoints={{{listed}}})) "
                                 f"for the default listener ListenerName({CONTROLLER_LISTENER})"}
    code, message = quorum.add_voter(ctx.cluster, req.voter_id, req.voter_directory_id, endpoint)
    ack = getattr(req, "ack_when_committed", True)
    return await _answer(ctx, code, message, int(req.timeout.total_seconds() * 1000) if ack else None)


@api(ApiKey.REMOVE_RAFT_VOTER)
async def remove_raft_voter(ctx: RequestContext) -> dict:
    req = ctx.request
    refused = _refusal(ctx, "Remove")
    if refused:
        return refused
    code, message = quorum.remove_voter(ctx.cluster, req.voter_id, req.voter_directory_id)
    return await _answer(ctx, code, message, REMOVAL_TIMEOUT_MS)
