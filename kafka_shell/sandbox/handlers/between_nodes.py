"""The RPCs between Kafka's own nodes, answered as a Kafka node answers a node that is not part of
its cluster: the sandbox's brokers and controllers are one process and never send them, so every
one comes from outside, and none changes the sandbox's state.

KRaft controller listeners (KafkaRaftClient, ControllerApis, QuorumController): the Raft APIs
(Fetch, Vote, BeginQuorumEpoch, EndQuorumEpoch, FetchSnapshot, UpdateRaftVoter) check the cluster
id, then that they name the metadata partition; the broker lifecycle APIs (BrokerHeartbeat,
AllocateProducerIds, AssignReplicasToDirs, AlterPartition) find no registered broker with that
epoch. ZooKeeper-mode brokers (3.9 KafkaApis): the controller's requests carry a stale controller
epoch; the ones for the controller meet a broker it does not know. Each needs CLUSTER_ACTION on
the cluster under an authorizer. Also UnregisterController (Kafka 4.4), an admin API.
What Kafka would go on to do for a request that passes these checks (register a broker, grant a
vote, apply a LeaderAndIsr) the sandbox refuses: docs/sandbox.md says how.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import uuid

from kio.schema.errors import ErrorCode

from kafka_shell.protocol import codec
from kafka_shell.protocol.codes import AclOperation, AclResourceType, ApiKey
from kafka_shell.sandbox import registrations, replay
from kafka_shell.sandbox.records import UnregisterControllerRecord
from kafka_shell.sandbox.handlers import api

if TYPE_CHECKING:
    from kafka_shell.sandbox.dispatch import RequestContext

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = uuid.UUID(int=1)     # Kafka's Uuid.METADATA_TOPIC_ID
CONTROLLER_ID_NOT_REGISTERED = 136       # Kafka 4.4; kio's ErrorCode stops at 133
# ControllerRegistration's refusals: QuorumController's message for NOT_CONTROLLER, none for authorization.
MESSAGES: dict[int, str | None] = {ErrorCode.not_controller: "This is not the correct controller for this cluster.",
                                   ErrorCode.cluster_authorization_failed: None}


def _cluster_action(ctx: RequestContext) -> bool:
    return ctx.authorize(AclOperation.CLUSTER_ACTION, AclResourceType.CLUSTER)


def _leader(ctx: RequestContext) -> dict:
    """The quorum leader (the active controller) as Raft answers name it."""
    cluster = ctx.cluster
    node = cluster.controllers.get(cluster.controller_id)
    return {"leader_id": cluster.controller_id, "leader_epoch": cluster.controller_epoch,
            "host": node.host if node else "", "port": node.port if node else 0}


def _raft_refusal(ctx: RequestContext) -> int | None:
    """ControllerApis' CLUSTER_ACTION, then KafkaRaftClient's cluster id check (an absent id
    passes: older nodes send none)."""
    if not _cluster_action(ctx):
        return ErrorCode.cluster_authorization_failed
    cluster_id = getattr(ctx.request, "cluster_id", None)
    if cluster_id is not None and cluster_id != ctx.cluster.cluster_id:
        return ErrorCode.inconsistent_cluster_id
    return None


def _one_metadata_partition(topics, name_of, index_of) -> bool:
    return (len(topics) == 1 and name_of(topics[0]) in (METADATA_TOPIC, METADATA_TOPIC_ID)
            and len(topics[0].partitions) == 1 and index_of(topics[0].partitions[0]) == 0)


def raft_fetch(ctx: RequestContext) -> dict:
    """Fetch on a controller listener: the metadata log's replication. A request naming the
    metadata partition gets its partition refused as Kafka refuses a fetch with no valid last
    fetched epoch (the sandbox has no metadata log to serve)."""
    code = _raft_refusal(ctx)
    req = ctx.request
    if code is None and _one_metadata_partition(req.topics, lambda t: getattr(t, "topic_id", None) or t.topic,
                                                lambda p: p.partition):
        leader = _leader(ctx)
        topic = req.topics[0]
        return {"error_code": ErrorCode.none, "responses": [{
            "topic": getattr(topic, "topic", ""), "topic_id": getattr(topic, "topic_id", None), "partitions": [{
                "partition_index": 0, "error_code": ErrorCode.invalid_request, "high_watermark": -1,
                "last_stable_offset": -1, "log_start_offset": 0, "diverging_epoch": {"epoch": -1, "end_offset": -1},
                "current_leader": {"leader_id": leader["leader_id"], "leader_epoch": leader["leader_epoch"]},
                "snapshot_id": {"end_offset": -1, "epoch": -1}, "aborted_transactions": [], "preferred_read_replica": -1,
                "records": b""}]}],
            # The leader's endpoint from v17 (KIP-853), though v16's schema has the field.
            "node_endpoints": [{"node_id": leader["leader_id"], "host": leader["host"], "port": leader["port"],
                                "rack": None}] if ctx.version >= 17 else []}
    return {"error_code": ErrorCode.invalid_request if code is None else code, "responses": []}


def _quorum_epoch_answer(ctx: RequestContext) -> dict:
    """Vote, BeginQuorumEpoch, EndQuorumEpoch naming the metadata partition: an older leader
    epoch is fenced; a vote whose candidate epoch is not above its last epoch is invalid, as
    Kafka refuses it. What Kafka would act on (a vote to grant, another leader to follow) the
    sandbox refuses as invalid too: its quorum is its own."""
    code = _raft_refusal(ctx)
    req = ctx.request
    if code is None and _one_metadata_partition(req.topics, lambda t: t.topic_name, lambda p: p.partition_index):
        leader = _leader(ctx)
        epoch = getattr(req.topics[0].partitions[0], "leader_epoch", None)
        partition_code = (ErrorCode.fenced_leader_epoch if epoch is not None and epoch < leader["leader_epoch"]
                          else ErrorCode.invalid_request)
        return {"error_code": ErrorCode.none, "topics": [{"topic_name": METADATA_TOPIC, "partitions": [{
            "partition_index": 0, "error_code": partition_code, "leader_id": leader["leader_id"],
            "leader_epoch": leader["leader_epoch"], "vote_granted": False}]}],
            "node_endpoints": [{"node_id": leader["leader_id"], "host": leader["host"], "port": leader["port"]}]}
    return {"error_code": ErrorCode.invalid_request if code is None else code, "topics": []}


api(ApiKey.VOTE)(_quorum_epoch_answer)
api(ApiKey.BEGIN_QUORUM_EPOCH)(_quorum_epoch_answer)
api(ApiKey.END_QUORUM_EPOCH)(_quorum_epoch_answer)


@api(ApiKey.FETCH_SNAPSHOT)
def fetch_snapshot(ctx: RequestContext) -> dict:
    """Naming no topic: invalid (Kafka 3.9's Raft thread fails on it: the connection closes, and
    the controller stops, which the sandbox does not copy). Naming the metadata partition with
    Kafka's defaults: Kafka fails it (UNKNOWN_SERVER_ERROR); the sandbox has no snapshot to send."""
    code = _raft_refusal(ctx)
    topics = ctx.request.topics
    if code is None and not topics and ctx.cluster.kafka_version == "3.9":
        raise codec.ProtocolError("FetchSnapshot names no topic")
    if code is None:
        code = (ErrorCode.unknown_server_error if _one_metadata_partition(topics, lambda t: t.name, lambda p: p.partition)
                else ErrorCode.invalid_request)
    return {"error_code": code, "topics": []}


@api(ApiKey.UPDATE_RAFT_VOTER)
def update_raft_voter(ctx: RequestContext) -> dict:
    """KafkaRaftClient: the cluster id, then the leader epoch the request names (older: fenced,
    newer: unknown), then leadership; a request that passes names no voter change the sandbox
    makes (its voters change through AddRaftVoter and RemoveRaftVoter)."""
    code = _raft_refusal(ctx)
    leader = _leader(ctx)
    if code is None:
        epoch = ctx.request.current_leader_epoch
        code = (ErrorCode.fenced_leader_epoch if epoch < leader["leader_epoch"]
                else ErrorCode.unknown_leader_epoch if epoch > leader["leader_epoch"]
                else ErrorCode.not_leader_or_follower if not ctx.is_controller
                else ErrorCode.invalid_request)
    return {"error_code": code, "current_leader": leader}


# -- the broker lifecycle, on KRaft controller listeners -------------------------------------------

def _controller_refusal(ctx: RequestContext) -> int | None:
    """CLUSTER_ACTION, then QuorumController's leadership (a standby answers NOT_CONTROLLER)."""
    if not _cluster_action(ctx):
        return ErrorCode.cluster_authorization_failed
    if not ctx.is_controller:
        return ErrorCode.not_controller
    return None


def _stale_broker(ctx: RequestContext, **fields) -> dict:
    """No broker registered with the sandbox's controller over the wire: any epoch is stale."""
    code = _controller_refusal(ctx)
    return {"error_code": ErrorCode.stale_broker_epoch if code is None else code, **fields}


@api(ApiKey.BROKER_HEARTBEAT)
def broker_heartbeat(ctx: RequestContext) -> dict:
    return _stale_broker(ctx, is_caught_up=False, is_fenced=True, should_shut_down=False)


@api(ApiKey.ASSIGN_REPLICAS_TO_DIRS)
def assign_replicas_to_dirs(ctx: RequestContext) -> dict:
    return _stale_broker(ctx, directories=[])


@api(ApiKey.BROKER_REGISTRATION)
def broker_registration(ctx: RequestContext) -> dict:
    """Another cluster's broker is told so; one naming this cluster is refused: a live broker's
    id is in use, and the sandbox takes no new broker over the wire."""
    code = _controller_refusal(ctx)
    req = ctx.request
    if code is None:
        if req.cluster_id != ctx.cluster.cluster_id:
            code = ErrorCode.inconsistent_cluster_id
        elif req.broker_id in ctx.cluster.brokers:
            code = ErrorCode.duplicate_broker_registration
        else:
            code = ErrorCode.invalid_registration
    return {"error_code": code, "broker_epoch": -1}


@api(ApiKey.CONTROLLER_REGISTRATION)
def controller_registration(ctx: RequestContext) -> dict:
    """Kafka's active controller records any registration; the sandbox acknowledges it as Kafka
    does but keeps its own controllers."""
    code = _controller_refusal(ctx)
    if code is not None:
        return {"error_code": code, "error_message": MESSAGES[code]}
    return {"error_code": ErrorCode.none, "error_message": ""}


@api(ApiKey.UNREGISTER_CONTROLLER)
def unregister_controller(ctx: RequestContext) -> dict:
    """Kafka 4.4 (ALTER on the cluster; brokers forward it): the active controller cannot go, an
    unknown (or unregistered) id is not registered; another controller's registration goes, and
    a live one registers again at once, as Kafka's do (its registration manager sees it gone)."""
    if not ctx.authorize(AclOperation.ALTER, AclResourceType.CLUSTER):
        return {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None}
    if not ctx.is_controller:
        # QuorumController names the leader it knows of.
        return {"error_code": ErrorCode.not_controller,
                "error_message": f"The active controller appears to be node {ctx.cluster.controller_id}."}
    controller_id = ctx.request.controller_id
    if controller_id == ctx.cluster.controller_id:
        return {"error_code": ErrorCode.invalid_request,
                "error_message": "Controller cannot unregister itself while it is active."}
    controller = ctx.cluster.controllers.get(controller_id)
    if controller is None or not controller.registered:
        return {"error_code": CONTROLLER_ID_NOT_REGISTERED,
                "error_message": f"Controller ID {controller_id} is not currently registered."}
    replay.apply(ctx.cluster, UnregisterControllerRecord(controller_id))
    if controller.alive:
        replay.apply(ctx.cluster, registrations.controller_registration(controller))
    return {"error_code": ErrorCode.none, "error_message": ""}


# -- on both: AlterPartition, AllocateProducerIds, Envelope; ZooKeeper mode's own ----------------------

@api(ApiKey.ALTER_PARTITION)
def alter_partition(ctx: RequestContext) -> dict:
    """KRaft's controller answers an empty request before anything else; ZooKeeper mode's checks
    the broker epoch first."""
    if not _cluster_action(ctx):
        return {"error_code": ErrorCode.cluster_authorization_failed, "topics": []}
    if ctx.cluster.kraft and not ctx.request.topics:
        return {"error_code": ErrorCode.none, "topics": []}
    return _stale_broker(ctx, topics=[])


@api(ApiKey.ALLOCATE_PRODUCER_IDS)
def allocate_producer_ids(ctx: RequestContext) -> dict:
    """KRaft: a stale broker epoch. ZooKeeper mode's controller checks the broker is registered."""
    fields = {"producer_id_start": 0, "producer_id_len": 0}
    if ctx.cluster.kraft:
        return _stale_broker(ctx, **fields)
    code = _controller_refusal(ctx)
    if code is None:
        code = (ErrorCode.broker_id_not_registered if ctx.request.broker_id not in ctx.cluster.brokers
                else ErrorCode.stale_broker_epoch)
    return {"error_code": code, **fields}


@api(ApiKey.ENVELOPE)
def envelope(ctx: RequestContext) -> dict:
    """A forwarded request. ZooKeeper-mode brokers without forwarding close the connection; a KRaft
    controller checks CLUSTER_ACTION, then reads the principal; the sandbox unwraps no envelope."""
    if not ctx.cluster.kraft:
        raise codec.ProtocolError("Envelope without forwarding enabled")
    if not _cluster_action(ctx):
        code = ErrorCode.cluster_authorization_failed
    elif not ctx.request.request_principal:
        code = ErrorCode.principal_deserialization_failure
    else:
        code = ErrorCode.invalid_request
    return {"error_code": code, "response_data": None}


def _stale_controller(ctx: RequestContext, **fields) -> dict:
    """LeaderAndIsr, StopReplica, UpdateMetadata: only the sandbox's own controller (which sends
    none over the wire) is current: any other is stale."""
    code = ErrorCode.cluster_authorization_failed if not _cluster_action(ctx) else ErrorCode.stale_controller_epoch
    return {"error_code": code, **fields}


@api(ApiKey.LEADER_AND_ISR)
def leader_and_isr(ctx: RequestContext) -> dict:
    return _stale_controller(ctx, partition_errors=[], topics=[])


@api(ApiKey.STOP_REPLICA)
def stop_replica(ctx: RequestContext) -> dict:
    return _stale_controller(ctx, partition_errors=[])


@api(ApiKey.UPDATE_METADATA)
def update_metadata(ctx: RequestContext) -> dict:
    return _stale_controller(ctx)


@api(ApiKey.CONTROLLED_SHUTDOWN)
def controlled_shutdown(ctx: RequestContext) -> dict:
    """3.9's KRaft controllers list it and fail it; ZooKeeper mode's controller knows only its
    live brokers, and shuts none down for a request from outside."""
    if ctx.cluster.kraft:
        return {"error_code": ErrorCode.unknown_server_error, "remaining_partitions": []}
    if not _cluster_action(ctx):
        return {"error_code": ErrorCode.cluster_authorization_failed, "remaining_partitions": []}
    # KafkaController: a broker that is not the controller throws ControllerMovedException.
    code = None if ctx.is_controller else ErrorCode.stale_controller_epoch
    if code is None:
        broker = ctx.cluster.brokers.get(ctx.request.broker_id)
        code = ErrorCode.broker_not_available if broker is None or not broker.alive else ErrorCode.stale_broker_epoch
    return {"error_code": code, "remaining_partitions": []}
