"""Kafka's controller's rule for an ElectLeaders request (preferred, unclean, and KAFKA-20098's
designated elections; KRaft's PartitionChangeBuilder and ReplicationControlManager), written once:
what the leader of a partition becomes, or why it does not change. The shell predicts a
`--dry-run` election from it; it is pure, so the sandbox's controller can elect by it too.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple

from kafka_shell.protocol.codes import ElectionType, Error


class Outcome(NamedTuple):
    """The partition's leader after the election, and Kafka's answer for it: Error.none (a new
    leader), ELECTION_NOT_NEEDED (the leader stays), or the code that refuses it (the leader stays)."""
    leader: int
    code: int

    @property
    def elected(self) -> bool:
        return self.code == Error.none


def elect(kind: int, leader: int, replicas: Sequence[int], isr: Collection[int], live: Collection[int],
          elr: Collection[int] = (), designated: int | None = None) -> Outcome:
    """The outcome of an election of `kind` for a partition led by `leader` (-1: offline), with
    these replicas (the first is the preferred one), ISR, eligible leader replicas (KIP-966) and
    live (registered, unfenced) brokers; `designated`: the replica a designated election names."""
    if kind == ElectionType.PREFERRED:
        preferred = replicas[0] if replicas else -1
        if leader == preferred:
            return Outcome(leader, Error.election_not_needed)
        if preferred in isr and preferred in live:
            return Outcome(preferred, Error.none)
        return Outcome(leader, Error.preferred_leader_not_available)
    if leader >= 0:   # unclean and designated elections are for offline partitions only
        return Outcome(leader, Error.election_not_needed)
    if kind == ElectionType.UNCLEAN:
        # A live ISR member first, then an eligible leader replica, then any live replica.
        for pool in (isr, elr, replicas):
            chosen = next((r for r in replicas if r in pool and r in live), None)
            if chosen is not None:
                return Outcome(chosen, Error.none)
        return Outcome(-1, Error.eligible_leaders_not_available)
    if designated is None or designated not in replicas:
        return Outcome(-1, Error.invalid_request)
    if designated not in live:
        return Outcome(-1, Error.eligible_leaders_not_available)
    return Outcome(designated, Error.none)
