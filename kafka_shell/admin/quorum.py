"""The KRaft metadata quorum (DescribeQuorum): its leader, epoch, high watermark, voters and
observers with their log ends, and each node's listeners. The connection manager reads it (the
active controller is the quorum's leader: it routes by it); this is how commands ask for it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.codes import ApiKey
from kafka_shell.metadata import Quorum, QuorumReplica

if TYPE_CHECKING:
    from kafka_shell.connection import ConnectionManager

__all__ = ["Quorum", "QuorumReplica", "describe"]


def describe(conn: ConnectionManager) -> Quorum:
    """A fresh DescribeQuorum answer (from the controller listener with --bootstrap-controller)."""
    conn.require(ApiKey.DESCRIBE_QUORUM, "Describing the metadata quorum")
    conn.debug("DescribeQuorum request")
    return conn.quorum()
