"""The KRaft metadata quorum (DescribeQuorum): its leader, epoch, high watermark, voters and
observers with their log ends, and each node's listeners; and its changes (KIP-853's dynamic
quorum): AddRaftVoter and RemoveRaftVoter. The connection manager reads it (the active
controller is the quorum's leader: it routes by it); this is how commands ask for it."""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_shell.protocol.codes import ApiKey
from kafka_shell.base.errors import UsageError
from kafka_shell.connection.metadata import Quorum, QuorumReplica

from kafka_shell.admin.errors import response_error

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

__all__ = ["Quorum", "QuorumReplica", "NewVoter", "describe", "add_voter", "remove_voter", "new_voter"]

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


def new_voter(conn: ConnectionManager, q: Quorum, node_id: int, directory_id: str | None,
              endpoints: list[tuple[str, str, int]]) -> NewVoter:
    """The controller to add, from what was given and what the cluster says of it now: its
    directory id from the quorum's observers (it follows the quorum once started), its address
    from the registered controllers (DescribeCluster, KIP-919) under the quorum's listener name,
    as kafka-metadata-quorum reads them from the new controller's own configuration."""
    if node_id in {v.replica_id for v in q.voters}:
        raise UsageError(f"Controller {node_id} already votes in the quorum (voters: {_ids(q.voters)})")
    observer = next((o for o in q.observers if o.replica_id == node_id), None)
    directory = directory_id or (observer.directory_id if observer else None)
    if directory is None:
        raise UsageError(f"Controller {node_id} does not follow the quorum (observers: {_ids(q.observers) or 'none'}), "
                         "so its directory id is unknown: start it, or give --controller-directory-id")
    if not endpoints:
        names = sorted({name for listeners in q.listeners.values() for name, _, _ in listeners}) or ["CONTROLLER"]
        registered = {b.broker_id: b for b in conn.controllers().brokers} if conn.router.controller_addresses else {}
        node = registered.get(node_id)
        if node is None:
            raise UsageError(f"Controller {node_id}'s listener is unknown: give --controller-endpoint NAME@HOST:PORT "
                             "(or --bootstrap-controller, where the controllers are registered)")
        endpoints = [(names[0], node.host, node.port)]
    return NewVoter(node_id, directory, tuple(endpoints))


def voter_from_config(path: str) -> tuple[int, str, list[tuple[str, str, int]]]:
    """(node id, directory id, controller listeners) from a new controller's server.properties
    and the meta.properties its format wrote, as kafka-metadata-quorum add-controller reads them."""
    from kafka_shell.connection.client_config import load_properties
    props = load_properties(path)
    if not props.get("node.id", "").isdigit():
        raise UsageError(f"{path} has no node.id: give the new controller's server.properties")
    names = [n.strip() for n in props.get("controller.listener.names", "").split(",") if n.strip()]
    listeners = props.get("advertised.listeners") or props.get("listeners", "")
    endpoints = []
    for item in filter(None, (x.strip() for x in listeners.split(","))):
        name, _, rest = item.partition("://")
        host, _, port = rest.rpartition(":")
        if name in names and port.isdigit():
            endpoints.append((name, host.strip("[]") or "localhost", int(port)))
    if not endpoints:
        raise UsageError(f"{path} names no controller listener (controller.listener.names and listeners)")
    log_dir = props.get("metadata.log.dir") or props.get("log.dirs", "").split(",")[0].strip()
    meta = Path(log_dir) / "meta.properties"
    try:
        directory = load_properties(str(meta)).get("directory.id")
    except Exception:  # noqa: BLE001 - said below, in the user's terms
        directory = None
    if not directory:
        raise UsageError(f"Cannot read directory.id from {meta}: format the new controller first "
                         "(kafka-storage format --no-initial-controllers)")
    return int(props["node.id"]), directory, endpoints


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


def _ids(replicas: tuple[QuorumReplica, ...]) -> str:
    return ", ".join(str(r.replica_id) for r in replicas)
