"""Unclean recovery (KAFKA-20098): what each replica of an offline partition holds, asked of its
broker directly, and the one rule that picks the replica to elect, for the unclean-recovery
command and the pipeline's recovery plan alike (`best_replica`).

Two ways to ask, picked from what the cluster advertises (`path`):
- KAFKA-20098's GetReplicaLogInfo (<= 1000 partitions a request, following HasMoreData): the
  leader epoch of each replica's last write and its log end offset.
- Stock Apache Kafka: ListOffsets v4+ with ReplicaId -2 (Kafka's debugging replica id) and
  Timestamp -1 answers a replica's own log end offset on any broker holding it, with the
  partition's *current* leader epoch there, which says nothing of the log: replicas are then
  compared by log length alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_shell.base.answers import AdminError
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.base.deadline import Deadline
from kafka_shell.base.errors import NotSupported
from kafka_shell.base.limits import MAX_PARTITIONS_PER_ELECTION

from kafka_shell.admin import elections, offsets, reassignments
from kafka_shell.admin.errors import code_name

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.connection.metadata import ClusterSnapshot, PartitionInfo

Key = tuple[str, int]
LIVE, FENCED, UNREACHABLE = "live", "fenced", "unreachable"
DESIGNATED_PATH, STOCK_PATH = "designated", "stock"
LEFT_OUT = "left out of the broker's answer"
RETRY_S = 0.1   # `elect_all` pauses this long after its first round, twice as long after its second...


class Candidate(NamedTuple):
    """A live replica that told its log: whether it is an eligible leader replica (KIP-966: it
    holds every committed record), the leader epoch of its last write, its log end offset."""
    broker: int
    in_elr: bool
    epoch: int
    log_end: int


def best_replica(candidates: Iterable[Candidate], replicas: Iterable[int], by_epoch: bool = True) -> int | None:
    """The replica to elect: an eligible leader replica first (Kafka 4.x's controller elects one
    cleanly when the ISR is empty); then the highest leader epoch (unless `by_epoch` is False:
    the epochs say nothing of the logs), then the longest log; ties go to the earlier replica
    in the assignment. None without candidates."""
    order = {b: i for i, b in enumerate(replicas)}
    ranked = [(c.in_elr, c.epoch if by_epoch else 0, c.log_end, -order.get(c.broker, len(order)), c.broker)
              for c in candidates]
    return max(ranked)[-1] if ranked else None


@dataclass
class Replica:
    broker: int
    state: str                 # live / fenced / unreachable
    in_isr: bool               # in the last ISR the controller knows (or its ELR)
    in_elr: bool = False       # an eligible leader replica (KIP-966): it has every committed record
    epoch: int = -1
    log_end: int = -1
    error: str | None = None

    @property
    def candidate(self) -> bool:
        return self.state == LIVE and self.error is None and self.log_end >= 0


@dataclass
class Target:
    """An offline partition (or one named, which may be online) and what its replicas told."""
    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int                # at the read: -1 when offline
    rows: list[Replica] = field(default_factory=list)
    chosen: int | None = None

    @property
    def key(self) -> Key:
        return (self.topic, self.partition)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def longest(self) -> int:
        return max((r.log_end for r in self.rows if r.candidate), default=-1)

    def truncated(self) -> int:
        """Messages electing the chosen replica drops from the other answered replicas."""
        chosen = next((r for r in self.rows if r.broker == self.chosen), None)
        if chosen is None:
            return 0
        return max((r.log_end for r in self.rows if r.error is None), default=0) - chosen.log_end


def path(conn: ConnectionManager) -> str:
    """KAFKA-20098's RPCs where the cluster has them, else stock Kafka's way; neither: stop."""
    if offsets.has_replica_log_info(conn) and elections.supports(conn, elections.DESIGNATED):
        return DESIGNATED_PATH
    if (offsets.has_replica_log_ends(conn) and reassignments.supports_alter(conn)
            and elections.supports(conn, elections.UNCLEAN)):
        return STOCK_PATH
    raise NotSupported("unclean-recovery needs GetReplicaLogInfo and ElectLeaders v3 (KAFKA-20098), or "
                       "ListOffsets v4, AlterPartitionReassignments and unclean elections (ElectLeaders v1): "
                       "this cluster has neither; nothing was done.")


def targets(snap: ClusterSnapshot, parts: list[PartitionInfo], elr: dict[Key, tuple[list[int], list[int]]]) -> list[Target]:
    """The partitions to recover, each replica with its state in `snap` and whether it is in
    the last ISR: the ISR Kafka keeps (its last member stays in it) and the eligible leader
    replicas (KIP-966, `elr`: describe-topic's Elr), which left it with every committed record."""
    out = []
    for p in parts:
        eligible = set(elr.get((p.topic, p.partition), ((), ()))[0])
        last_isr = {*p.isr, *eligible}
        out.append(Target(p.topic, p.partition, tuple(p.replicas), p.leader,
                          [Replica(b, LIVE if b in snap.brokers else FENCED, b in last_isr, b in eligible)
                           for b in p.replicas]))
    return out


def gather(conn: ConnectionManager, snap: ClusterSnapshot, targets: list[Target], path: str, duration_ms: int) -> None:
    """Ask every live broker holding a replica of `targets`, all at once, what it holds, each
    asked again until it answered or `duration_ms` ended; fill in each target's rows."""
    wanted: dict[int, list[Key]] = {}
    for t in targets:
        for r in t.rows:
            if r.state == LIVE:
                wanted.setdefault(r.broker, []).append(t.key)
    told = replica_logs(conn, snap, wanted, path, Deadline(duration_ms / 1000))
    for t in targets:
        for r in t.rows:
            if r.state != LIVE:
                r.error = "broker is not live"
                continue
            found = told.get((r.broker, t.key))
            if found is None:
                r.state, r.error = UNREACHABLE, f"no answer within {duration_ms} ms"
                continue
            r.epoch, r.log_end, r.error = found


def choose(t: Target, path: str) -> None:
    """The replica to elect for `t` by `best_replica` (on the stock path, by log length: the
    epochs there are each broker's current one)."""
    t.chosen = best_replica((Candidate(r.broker, r.in_elr, r.epoch, r.log_end) for r in t.rows if r.candidate),
                            t.replicas, by_epoch=path == DESIGNATED_PATH)


class Elected(NamedTuple):
    """`elect`: each target's election; on the stock path, the controller's refusal for each
    partition whose original replica order could not be put back."""
    outcomes: dict[Key, elections.Election]
    unrestored: dict[Key, AdminError]


def elect(conn: ConnectionManager, path: str, batch: list[Target], timeout_ms: int) -> Elected:
    """Elect each target's chosen replica: KAFKA-20098's designated election; on stock Kafka, a
    reorder that puts the chosen replica first, an unclean election (the first live replica of
    the assignment wins), then the original order back."""
    if path == DESIGNATED_PATH:
        designated: list[elections.Entry] = [(t.topic, t.partition, t.chosen) for t in batch]
        return Elected(elections.elect(conn, designated, elections.DESIGNATED, timeout_ms), {})
    moves: dict[Key, list[int] | None] = {t.key: [t.chosen, *[b for b in t.replicas if b != t.chosen]]
                                          for t in batch if t.chosen is not None}
    conn.debug(f"AlterPartitionReassignments (reorder only): {len(moves)} partition(s)")
    outcomes = {key: elections.reorder_refused(key, error) for key, error in reassignments.alter(conn, moves).errors.items()}
    reordered = [t for t in batch if t.key not in outcomes]
    if not reordered:
        return Elected(outcomes, {})
    unclean: list[elections.Entry] = [(t.topic, t.partition, None) for t in reordered]
    outcomes.update(elections.elect(conn, unclean, elections.UNCLEAN, timeout_ms))
    restore: dict[Key, list[int] | None] = {t.key: list(t.replicas) for t in reordered}
    conn.debug(f"AlterPartitionReassignments (restore order): {len(restore)} partition(s)")
    return Elected(outcomes, reassignments.alter(conn, restore).errors)


def elect_all(conn: ConnectionManager, path: str, plan: list[Target], attempts: int, timeout_ms: int,
              stop: Callable[[], bool], report: Callable[[Elected], None]) -> dict[Key, elections.Election]:
    """`elect` the plan's targets, MAX_PARTITIONS_PER_ELECTION a batch (each batch `report`ed),
    the ones that failed retriably again, up to `attempts` times with a growing pause. Once
    `stop()` says so, no further batch starts: a target not attempted has no outcome."""
    outcomes: dict[Key, elections.Election] = {}
    pending = list(plan)
    for attempt in range(attempts):
        for i in range(0, len(pending), MAX_PARTITIONS_PER_ELECTION):
            if stop():
                return outcomes
            elected = elect(conn, path, pending[i:i + MAX_PARTITIONS_PER_ELECTION], timeout_ms)
            report(elected)
            outcomes.update(elected.outcomes)
        retry = [t for t in pending if t.key in outcomes and outcomes[t.key].retriable]
        if stop() or not retry:
            break
        pending = retry
        time.sleep(RETRY_S * (attempt + 1))
    return outcomes


# -- what the replicas hold -----------------------------------------------------------------------


class ReplicaLog(NamedTuple):
    epoch: int          # leader epoch: of the last write (GetReplicaLogInfo) or the current one
    log_end: int        # -1 when unknown
    error: str | None = None


def replica_logs(conn: ConnectionManager, snap: ClusterSnapshot, wanted: dict[int, list[Key]], path: str,
                 deadline: Deadline | None = None) -> dict[tuple[int, Key], ReplicaLog]:
    """(broker, partition) -> what the broker's own replica holds, for the partitions `wanted`
    of each broker, all brokers at once, a broker that failed asked again until `deadline`. A
    broker that did not answer has no entry; one that answered with an error for a partition
    has the error's name."""
    deadline = deadline or conn.deadline()
    if path == DESIGNATED_PATH:
        found = _log_info(conn, snap, wanted, deadline)
    else:
        found = conn.replica_requests(wanted, ApiKey.LIST_OFFSETS, offsets.replica_log_ends_body(),
                                      offsets.list_offsets_parts, patient=True, deadline=deadline)
    out = {pair: ReplicaLog(*_epoch_and_end(part, path)) for pair, part in found.rows.items()}
    for pair, error in found.errors.items():
        if error.code is not None:
            out[pair] = ReplicaLog(-1, -1, LEFT_OUT if error.message == LEFT_OUT else code_name(error.code))
    return out


def _epoch_and_end(part: Any, path: str) -> tuple[int, int]:
    if path == DESIGNATED_PATH:
        return int(part.partition_leader_epoch), int(part.log_end_offset)
    return int(part.leader_epoch), int(part.offset)


def _log_info(conn: ConnectionManager, snap: ClusterSnapshot, wanted: dict[int, list[Key]], deadline: Deadline) -> Any:
    """GetReplicaLogInfo (KAFKA-20098) of each broker's replicas, MAX_PARTITIONS_PER_ELECTION a
    request; what an answer leaves out (HasMoreData) is asked again while answers come."""
    names = {snap.topics[t].topic_id: t for keys in wanted.values() for t, _ in keys}

    def body(keys: list[Key], version: int) -> dict:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in keys:
            by_topic.setdefault(topic, []).append(partition)
        return {"topic_partitions": [{"topic_id": snap.topics[t].topic_id, "partitions": ps}
                                     for t, ps in by_topic.items()]}

    def parts(answer: Any) -> Iterable[tuple[Key, Any]]:
        return (((names[tl.topic_id], info.partition), info) for tl in answer.topic_partition_log_info_list
                if tl.topic_id in names for info in tl.partition_log_info)

    found = conn.replica_requests(wanted, ApiKey.GET_REPLICA_LOG_INFO, body, parts,
                                  batch=MAX_PARTITIONS_PER_ELECTION, patient=True, deadline=deadline)
    rows, errors = dict(found.rows), dict(found.errors)
    while True:
        left = {pair for pair, e in errors.items() if e.message == LEFT_OUT}
        if not left:
            break
        again = conn.replica_requests(_by_broker(left), ApiKey.GET_REPLICA_LOG_INFO, body, parts,
                                      batch=MAX_PARTITIONS_PER_ELECTION, patient=True, deadline=deadline)
        if not again.rows:
            break   # nothing more comes: what is left out stays so
        rows.update(again.rows)
        errors.update(again.errors)
        for pair in again.rows:
            errors.pop(pair, None)
    return type(found)(rows, errors)


def _by_broker(pairs: Iterable[tuple[int, Key]]) -> dict[int, list[Key]]:
    out: dict[int, list[Key]] = {}
    for broker, key in sorted(pairs):
        out.setdefault(broker, []).append(key)
    return out
