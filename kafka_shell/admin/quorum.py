"""The KRaft metadata quorum (DescribeQuorum): its leader, epoch, high watermark, voters and
observers with their log ends, and each node's listeners; and its changes (KIP-853's dynamic
quorum): AddRaftVoter and RemoveRaftVoter. The connection manager reads it (the active
controller is the quorum's leader: it routes by it); this is how commands ask for it."""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_shell.protocol.codes import ApiKey
from kafka_shell.connection.metadata import Quorum, QuorumReplica

from kafka_shell.admin.errors import response_error

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

__all__ = ["Quorum", "QuorumReplica", "NewVoter", "NotAddable", "describe", "add_voter", "remove_voter", "new_voter"]

ACK_WHEN_COMMITTED = 1   # AddRaftVoter v1 answers once the change is committed


def describe(conn: ConnectionManager) -> Quorum:
    """A fresh DescribeQuorum answer (from the controller listener with --bootstrap-controller)."""
    conn.require(ApiKey.DESCRIBE_QUORUM, "Describing the metadata quorum")
    conn.debug("DescribeQuorum request")
    return conn.quorum()


@dataclass(frozen=True)
class NewVoter:
    """A controller to add: its id, log directory id (Kafka's base64) and controller listeners."""
    node_id: int
    directory_id: str
    endpoints: tuple[tuple[str, str, int], ...]   # (listener name, host, port)

    def describe(self) -> str:
        where = ", ".join(f"{n}://{h}:{p}" for n, h, p in self.endpoints)
        return f"controller {self.node_id} (directory {self.directory_id}, {where})"


def _uuid(directory: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(directory + "=="))


# Why a controller cannot be added, as the quorum says now (NotAddable.reason).
ALREADY_VOTER = "already a voter"
NOT_FOLLOWING = "not following"        # not among the observers, and no directory id was given
LISTENER_UNKNOWN = "listener unknown"  # not registered (or no --bootstrap-controller), and no endpoint was given


@dataclass(frozen=True)
class NotAddable:
    """A controller the quorum cannot take, and why (one of the reasons above), with the
    quorum's voters and observers when it was read."""
    node_id: int
    reason: str
    voters: tuple[int, ...]
    observers: tuple[int, ...]


def new_voter(conn: ConnectionManager, q: Quorum, node_id: int, directory_id: str | None,
              endpoints: list[tuple[str, str, int]]) -> NewVoter | NotAddable:
    """The controller to add, from what was given and what the cluster says of it now: its
    directory id from the quorum's observers (it follows the quorum once started), its address
    from the registered controllers (DescribeCluster, KIP-919) under the quorum's listener name,
    as kafka-metadata-quorum reads them from the new controller's own configuration; or why it
    cannot be added."""
    def not_addable(reason: str) -> NotAddable:
        return NotAddable(node_id, reason, tuple(v.replica_id for v in q.voters),
                          tuple(o.replica_id for o in q.observers))
    if node_id in {v.replica_id for v in q.voters}:
        return not_addable(ALREADY_VOTER)
    observer = next((o for o in q.observers if o.replica_id == node_id), None)
    directory = directory_id or (observer.directory_id if observer else None)
    if directory is None:
        return not_addable(NOT_FOLLOWING)
    if not endpoints:
        names = sorted({name for listeners in q.listeners.values() for name, _, _ in listeners}) or ["CONTROLLER"]
        registered = {b.broker_id: b for b in conn.controllers().brokers} if conn.router.controller_addresses else {}
        node = registered.get(node_id)
        if node is None:
            return not_addable(LISTENER_UNKNOWN)
        endpoints = [(names[0], node.host, node.port)]
    return NewVoter(node_id, directory, tuple(endpoints))


def add_voter(conn: ConnectionManager, voter: NewVoter) -> None:
    """AddRaftVoter: make a controller that follows the quorum a voter; returns once committed."""
    conn.require(ApiKey.ADD_RAFT_VOTER, "Adding a controller to the quorum (KIP-853)")
    body = {"cluster_id": None, "timeout": int(conn.timeout_s * 1000), "voter_id": voter.node_id,
            "voter_directory_id": _uuid(voter.directory_id), "ack_when_committed": True,
            "listeners": [{"name": n, "host": h, "port": p} for n, h, p in voter.endpoints]}
    conn.debug(f"AddRaftVoter request: {voter.describe()}")
    answer = conn.controller_request(ApiKey.ADD_RAFT_VOTER, body, mutation=True)
    if answer.error_code:
        raise response_error(ApiKey.ADD_RAFT_VOTER, answer.error_code, answer.error_message,
                             entity=f"controller {voter.node_id}")


def remove_voter(conn: ConnectionManager, node_id: int, directory_id: str) -> None:
    """RemoveRaftVoter: the voter with this id and directory id leaves the quorum."""
    conn.require(ApiKey.REMOVE_RAFT_VOTER, "Removing a controller from the quorum (KIP-853)")
    body = {"cluster_id": None, "voter_id": node_id, "voter_directory_id": _uuid(directory_id)}
    conn.debug(f"RemoveRaftVoter request: controller {node_id} (directory {directory_id})")
    answer = conn.controller_request(ApiKey.REMOVE_RAFT_VOTER, body, mutation=True)
    if answer.error_code:
        raise response_error(ApiKey.REMOVE_RAFT_VOTER, answer.error_code, answer.error_message,
                             entity=f"controller {node_id}")
