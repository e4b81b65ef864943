"""The KRaft controller quorum's voter set, as Kafka 4.4's KafkaRaftClient keeps it (KIP-853).

kraft.version 0 is a static quorum (controller.quorum.voters; what `kafka-storage format` gives
without --standalone or --initial-controllers, and the sandbox's default): its voters are fixed
and their directory ids unknown to the quorum. kraft.version 1 is a dynamic quorum (`format
--standalone | --initial-controllers`: `Sandbox(dynamic_quorum=True)`; or UpdateFeatures
kraft.version 0 -> 1): AddRaftVoter makes an observer controller a voter, RemoveRaftVoter takes a
voter out by id and directory id, with Kafka's checks, errors and messages (AddVoterHandler,
RemoveVoterHandler).

A sandbox controller follows the metadata log at once, so an observer controller is always
caught up. A change commits once a majority of the new voter set is alive; until then it is
pending and the next change is refused, as Kafka refuses it. A leader removed from the voters
resigns once the change commits, and a remaining voter takes over with a higher epoch.
"""

from __future__ import annotations

import base64
import uuid

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import replay, replication
from kafka_shell.sandbox.handlers import features
from kafka_shell.sandbox.model import Broker, ClusterState, Controller
from kafka_shell.sandbox.records import Record, ReplayError, VotersRecord

KRAFT_VERSION = features.KRAFT_VERSION
DYNAMIC_LEVEL = 1   # the kraft.version from which voters can change
# The zero Uuid: what Kafka answers for a voter whose directory id the quorum does not know.
NO_DIRECTORY = uuid.UUID(int=0)


def kraft_version(cluster: ClusterState) -> int:
    return features.finalized(cluster).get(KRAFT_VERSION, 0)


def default_directory_id(cluster: ClusterState, node_id: int) -> uuid.UUID:
    """A node's log directory id when none was given: the same for the same cluster and node."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-sandbox:{cluster.cluster_id}:{node_id}")


def directory_of(cluster: ClusterState, node: Broker | Controller) -> uuid.UUID:
    given = node.directory_id if isinstance(node, Controller) else None
    return given or default_directory_id(cluster, node.id)


def voters(cluster: ClusterState) -> list[Controller]:
    return sorted((c for c in cluster.controllers.values() if c.voter), key=lambda c: c.id)


def observers(cluster: ClusterState) -> list[Broker | Controller]:
    """The replicas that follow the log without a vote: controllers outside the voter set, brokers."""
    others: list[Broker | Controller] = [c for c in cluster.controllers.values() if not c.voter]
    return sorted(others, key=lambda n: n.id) + sorted(cluster.brokers.values(), key=lambda b: b.id)


def voter_directory(cluster: ClusterState, c: Controller) -> uuid.UUID:
    """A voter's directory id as the quorum knows it: none in a static quorum."""
    return directory_of(cluster, c) if kraft_version(cluster) >= DYNAMIC_LEVEL else NO_DIRECTORY


def kafka_uuid(value: uuid.UUID) -> str:
    """A Uuid as Kafka prints it (url-safe base64, no padding)."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def parse_directory_id(text: str) -> uuid.UUID:
    """A directory id as Kafka prints it (22 characters of url-safe base64) or as a UUID."""
    try:
        if len(text) == 22:
            return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))
        return uuid.UUID(text)
    except ValueError:
        raise ValueError(f"bad directory id {text!r}: give a Kafka Uuid (22 characters of base64) or a UUID") from None


def replica_key(node_id: int, directory: uuid.UUID) -> str:
    shown = kafka_uuid(directory) if directory != NO_DIRECTORY else "<undefined>"
    return f"ReplicaKey(id={node_id}, directoryId={shown})"


def _voter_keys(cluster: ClusterState) -> str:
    return "[" + ", ".join(replica_key(c.id, voter_directory(cluster, c)) for c in voters(cluster)) + "]"


# -- pending changes --------------------------------------------------------------------------


def _has_majority(cluster: ClusterState) -> bool:
    members = voters(cluster)
    return 2 * sum(1 for c in members if c.alive) > len(members)


def settle(cluster: ClusterState) -> None:
    """Commit a pending change once a majority of the voters is alive; a leader it removed
    resigns then."""
    if cluster.runtime.voter_change_pending is None or not _has_majority(cluster):
        return
    cluster.runtime.voter_change_pending = None
    leader = cluster.controllers.get(cluster.controller_id)
    if leader is not None and not leader.voter:
        replication.elect_controller(cluster)


def pending(cluster: ClusterState) -> bool:
    settle(cluster)
    return cluster.runtime.voter_change_pending is not None


def _change_voters(cluster: ClusterState, voter_ids: list[int], node_id: int) -> None:
    """The VotersRecord of the new voter set; the change commits once a majority of it is alive."""
    replay.apply(cluster, VotersRecord(tuple(sorted(voter_ids))))
    cluster.runtime.voter_change_pending = node_id
    settle(cluster)


def replay_voters(cluster: ClusterState, record: VotersRecord) -> None:
    unknown = [v for v in record.voters if v not in cluster.controllers]
    if unknown:
        raise ReplayError(f"names voters {unknown}, which never registered as controllers")
    for c in cluster.controllers.values():
        c.voter = c.id in record.voters


def snapshot(cluster: ClusterState) -> list[Record]:
    return [VotersRecord(tuple(c.id for c in voters(cluster)))] if cluster.kraft else []


REPLAY = {VotersRecord: replay_voters}


def _refusal(cluster: ClusterState, verb: str) -> tuple[int, str] | None:
    if pending(cluster):
        return ErrorCode.request_timed_out, "Request timed out waiting for leader to handle previous voter change request"
    level = kraft_version(cluster)
    if level < DYNAMIC_LEVEL:
        return ErrorCode.unsupported_version, f"Cluster doesn't support {verb} voter because the {KRAFT_VERSION} feature is {level}"
    return None


# -- changes ----------------------------------------------------------------------------------


def add_voter(cluster: ClusterState, voter_id: int, directory: uuid.UUID, endpoint: tuple[str, int]) -> tuple[int, str | None]:
    """AddRaftVoter on the leader, once the request named a voter and a CONTROLLER endpoint.
    Kafka asks the endpoint for its ApiVersions first, then whether that replica is a caught-up
    observer."""
    refusal = _refusal(cluster, "adding")
    if refusal:
        return refusal
    key = replica_key(voter_id, directory)
    members = voters(cluster)
    if any(c.id == voter_id for c in members):
        return ErrorCode.duplicate_voter, f"The voter id for {key} is already part of the set of voters {_voter_keys(cluster)}."
    if not _listening(cluster, endpoint):
        return (ErrorCode.request_timed_out,
                "Aborted add voter operation for since API_VERSIONS returned an error BROKER_NOT_AVAILABLE")
    node = cluster.controllers.get(voter_id)
    if node is None or directory_of(cluster, node) != directory:
        return ErrorCode.request_timed_out, f"Aborted add voter operation for {key} since it is lagging behind"
    _change_voters(cluster, [c.id for c in members] + [voter_id], voter_id)
    return ErrorCode.none, None


def remove_voter(cluster: ClusterState, voter_id: int, directory: uuid.UUID) -> tuple[int, str | None]:
    refusal = _refusal(cluster, "removing")
    if refusal:
        return refusal
    members = voters(cluster)
    node = cluster.controllers.get(voter_id)
    if node is None or node not in members or voter_directory(cluster, node) != directory or len(members) == 1:
        return (ErrorCode.voter_not_found,
                f"Cannot remove voter {replica_key(voter_id, directory)} from the set of voters {_voter_keys(cluster)}")
    _change_voters(cluster, [c.id for c in members if c.id != voter_id], voter_id)
    return ErrorCode.none, None


def _listening(cluster: ClusterState, endpoint: tuple[str, int]) -> bool:
    """Whether a live sandbox node answers at host:port (any of its listeners)."""
    host, port = endpoint
    nodes: list[Broker | Controller] = [*cluster.brokers.values(), *cluster.controllers.values()]
    for n in nodes:
        ports = {n.port, *(n.listener_ports.values() if isinstance(n, Broker) else ())}
        if n.alive and port in ports and (host == n.host or host == "localhost" and n.host == "127.0.0.1"):
            return True
    return False

