"""Replication and controller behaviour of the sandbox, modelled on KRaft's controller (4.1+).

- A partition's leader comes from its ISR among usable (alive, unfenced) brokers, then from its
  ELR (KIP-966, on by default in Kafka 4.1+): when the ISR shrinks below min.insync.replicas the
  replicas leaving it are kept as eligible leaders, and the ISR may become empty. With
  `unclean.leader.election.enable=true` a live out-of-sync replica is chosen as a last resort.
  Stopping a broker counts as a clean shutdown, so it is never dropped from the ELR.
- In-sync followers copy every write at once. Out-of-sync replicas (a restarted broker, a replica
  a reassignment adds) copy the leader's batches at `Runtime.replication_rate` bytes/s
  (unset: at once), and no faster than `follower.replication.throttled.rate` of the follower and
  `leader.replication.throttled.rate` of the leader when the topic's `*.throttled.replicas`
  lists them: as in Kafka, throttles apply to out-of-sync replicas only. A caught-up replica
  joins the ISR; a reassignment whose adding replicas are all in the ISR completes.
  The copying runs as a task on the sandbox loop, ticking every TICK_S while work is pending.
- Leadership does not move back to the preferred replica unless `auto.leader.rebalance.enable`
  is true (then at once, where Kafka checks every leader.imbalance.check.interval.seconds) or a
  preferred election asks for it.
- The controller is one live voter of the controller quorum in KRaft mode, one usable broker in
  zk mode; `preferred.controller.id` (KAFKA-1778) names the only candidate allowed to stand while
  it can: designating it makes the active controller resign to it; while it is down every other
  candidate stands, and it takes the role back when it returns. A KRaft cluster without a live
  voter has no controller: stopped brokers stay unfenced and leaders stay until one is back.

A partition's leader, ISR, ELR and replicas change by PartitionChangeRecords (`change`), each
applied as it is made so that the next decision sees it, as the records of Kafka's controller
are replayed as they are generated; the logs they affect (a truncation, a new replica's empty
log, a follower's progress) change in `log`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

from kio.schema.errors import ErrorCode

from kafka_shell.sandbox import configs, directories, log, registrations, replay
from kafka_shell.sandbox.model import ClusterState, Partition, now_ms
from kafka_shell.sandbox.records import (NO_LEADER_CHANGE, ControllerResult, LeaderChangeMessage, PartitionChangeRecord,
                                         UnregisterBrokerRecord)

PREFERRED_CONTROLLER_KEY = "preferred.controller.id"
MAX_CONTROLLER_CHANGES = 1000
TICK_S = 0.05
_UNLIMITED = 2**62  # Kafka's throttled-rate default is Long.MAX_VALUE: no throttle


# -- controller -------------------------------------------------------------------------------


def preferred_controller(cluster: ClusterState) -> int | None:
    value = cluster.cluster_configs.get(PREFERRED_CONTROLLER_KEY)
    return int(value) if value not in (None, "", "-1") else None


def controller_candidates(cluster: ClusterState, exclude: int | None = None) -> list[int]:
    """Who may hold the controller role now: live voters in KRaft mode (not the observer
    controllers of a dynamic quorum), usable brokers in zk mode."""
    if cluster.kraft:
        return sorted(c.id for c in cluster.controllers.values() if c.voter and c.alive and c.id != exclude)
    return sorted(b.id for b in cluster.live_brokers() if b.id != exclude)


def elect_controller(cluster: ClusterState, exclude: int | None = None) -> int:
    """Choose the controller among the candidates; the preferred one stands alone when it can."""
    usable = controller_candidates(cluster, exclude)
    preferred = preferred_controller(cluster)
    if preferred in usable:
        chosen = preferred
    elif cluster.controller_id in usable:
        chosen = cluster.controller_id
    elif usable:
        # Rotate past the old controller so a resignation moves the role on, as a new vote would.
        after = [i for i in usable if i > cluster.controller_id]
        chosen = (after or usable)[0]
    else:
        chosen = -1
    if chosen != cluster.controller_id:
        old = cluster.controller_id
        returned = old < 0 and chosen >= 0
        # A KRaft quorum without voters holds no election, so its epoch stays until one is back.
        epoch = cluster.controller_epoch + 1 if chosen >= 0 or not cluster.kraft else cluster.controller_epoch
        replay.apply(cluster, LeaderChangeMessage(chosen, epoch))
        _record_controller_change(cluster, old)
        if returned and cluster.kraft:
            _catch_up_controller_work(cluster)
    return chosen


def move_controller(cluster: ClusterState) -> int:
    """The active controller resigns (a crash of its controller role): another candidate takes
    over; a lone one (or the preferred one) takes the role back at once with a higher epoch."""
    old = cluster.controller_id
    if old < 0:
        raise ValueError("there is no active controller to kill (start a controller first)")
    candidates = controller_candidates(cluster)
    preferred = preferred_controller(cluster)
    exclude = None if preferred == old and preferred in candidates else old
    if exclude is not None and len(candidates) <= 1:
        exclude = None  # a lone candidate re-elects itself
    if exclude is None:
        replay.apply(cluster, LeaderChangeMessage(old, cluster.controller_epoch + 1))
        _record_controller_change(cluster, old)
        return old
    return elect_controller(cluster, exclude=exclude)


def controller_changes(cluster: ClusterState) -> list[dict]:
    """The cluster's own record of its controller changes, oldest first: {"time" (s), "from",
    "to" (None: no controller), "epoch"} (the metadata log's leader changes in KRaft mode, the
    /controller znode's in zk mode). In memory only: a --data-dir restart begins a new record."""
    return cluster.runtime.controller_changes


def _record_controller_change(cluster: ClusterState, old: int) -> None:
    changes = controller_changes(cluster)
    changes.append({"time": now_ms() / 1000, "from": old if old >= 0 else None,
                    "to": cluster.controller_id if cluster.controller_id >= 0 else None,
                    "epoch": cluster.controller_epoch})
    del changes[:-MAX_CONTROLLER_CHANGES]


def stopped_at(cluster: ClusterState) -> dict[int, tuple[int, int]]:
    """Node id -> (metadata log end, time) when a broker or controller stopped (DescribeQuorum)."""
    return cluster.runtime.stopped_at


def controller_stopped(cluster: ClusterState, controller_id: int) -> None:
    """A KRaft voter stopped: the others elect a new leader if it was the active one."""
    stopped_at(cluster)[controller_id] = (cluster.generation, now_ms())
    if cluster.controller_id == controller_id:
        elect_controller(cluster, exclude=controller_id)


def controller_started(cluster: ClusterState, controller_id: int) -> None:
    if cluster.controller_id < 0 or preferred_controller(cluster) == controller_id:
        elect_controller(cluster)


def _catch_up_controller_work(cluster: ClusterState) -> None:
    """A KRaft quorum got a leader back: it fences the brokers that stopped meanwhile (their
    partitions fail over) and unfences those that came back, then replication settles."""
    for b in cluster.brokers.values():
        if not b.alive and not b.fenced:
            broker_stopped(cluster, b.id)
        elif b.alive and b.fenced:
            broker_started(cluster, b.id)
    settle(cluster)


def on_cluster_config_changed(cluster: ClusterState, key: str) -> None:
    """Called by the config handlers after a cluster-wide dynamic broker config changed."""
    if key == PREFERRED_CONTROLLER_KEY:
        elect_controller(cluster)  # the designated broker, if usable, takes over at once
    settle(cluster)  # throttle rates, auto.leader.rebalance.enable, min.insync.replicas...


# -- leaders, ISR and ELR ---------------------------------------------------------------------


def _usable(cluster: ClusterState, broker_id: int) -> bool:
    b = cluster.brokers.get(broker_id)
    return b is not None and b.usable


def _min_isr(cluster: ClusterState, p: Partition) -> int:
    try:
        return int(configs.topic_value(cluster, p.topic, "min.insync.replicas") or 1)
    except ValueError:
        return 1


def change_record(cluster: ClusterState, p: Partition, **fields: object) -> PartitionChangeRecord:
    """A PartitionChangeRecord of p (lists given become the record's tuples)."""
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
    return PartitionChangeRecord(cluster.topics[p.topic].id, p.index, **values)  # type: ignore[arg-type]


def change(cluster: ClusterState, p: Partition, **fields: object) -> None:
    """Apply one PartitionChangeRecord of p."""
    replay.apply(cluster, change_record(cluster, p, **fields))


def replay_change(cluster: ClusterState, record: PartitionChangeRecord) -> None:
    """Kafka's PartitionRegistration.merge: the fields given change; a new leader (or -1) bumps
    the leader epoch; every change bumps the partition epoch."""
    from kafka_shell.sandbox.topic_lifecycle import partition_by_id
    p = partition_by_id(cluster, record.topic_id, record.partition_id)
    if record.replicas is not None:
        p.replicas = list(record.replicas)
    if record.isr is not None:
        p.isr = list(record.isr)
    if record.adding_replicas is not None:
        p.adding = list(record.adding_replicas)
    if record.removing_replicas is not None:
        p.removing = list(record.removing_replicas)
    if record.eligible_leader_replicas is not None:
        p.elr = list(record.eligible_leader_replicas)
    if record.last_known_elr is not None:
        p.last_known_elr = list(record.last_known_elr)
    if record.leader != NO_LEADER_CHANGE:
        p.leader = record.leader
        p.leader_epoch += 1
    p.partition_epoch += 1
    if record.replicas is not None or record.directories is not None:
        directories.place(cluster, p, record.directories)


def replay_leader_change(cluster: ClusterState, record: LeaderChangeMessage) -> None:
    cluster.controller_id, cluster.controller_epoch = record.leader_id, record.leader_epoch


def snapshot(cluster: ClusterState) -> list[LeaderChangeMessage]:
    return [LeaderChangeMessage(cluster.controller_id, cluster.controller_epoch)]


REPLAY = {PartitionChangeRecord: replay_change, LeaderChangeMessage: replay_leader_change}


def set_leader(cluster: ClusterState, p: Partition, leader: int) -> None:
    change(cluster, p, leader=leader)


def set_isr(cluster: ClusterState, p: Partition, isr: list[int]) -> None:
    """Change the ISR and keep the ELR as KRaft's PartitionChangeBuilder does: below
    min.insync.replicas, replicas leaving the ISR become eligible leaders; at or above it the
    ELR is cleared."""
    if len(isr) >= _min_isr(cluster, p):
        cleared = p.elr or p.last_known_elr
        change(cluster, p, isr=isr, eligible_leader_replicas=[] if cleared else None,
               last_known_elr=[] if cleared else None)
    else:
        change(cluster, p, isr=isr,
               eligible_leader_replicas=[r for r in p.replicas if (r in p.isr or r in p.elr) and r not in isr])
    log.update_high_watermark(cluster, p)


def elect_from_isr(cluster: ClusterState, p: Partition, unclean: bool | None = None) -> bool:
    """Give a leaderless partition (or one whose leader left) a leader: a usable ISR member,
    else a usable ELR member, else, when unclean election is allowed (the topic config, or
    `unclean=True` for an explicit request), any usable replica. True if it has a leader after."""
    for r in p.replicas:
        if r in p.isr and _usable(cluster, r):
            set_leader(cluster, p, r)
            log.truncate_to(cluster, p, p.leo.get(r, 0))
            return True
    for r in p.replicas:
        if r in p.elr and _usable(cluster, r):
            set_leader(cluster, p, r)
            log.truncate_to(cluster, p, p.leo.get(r, 0))
            set_isr(cluster, p, [r])
            return True
    if unclean is None:
        unclean = configs.topic_value(cluster, p.topic, "unclean.leader.election.enable") == "true"
    if unclean:
        for r in p.replicas:
            if _usable(cluster, r):
                unclean_elect(cluster, p, r)
                return True
    if p.leader != -1:
        set_leader(cluster, p, -1)
    return False


def unclean_elect(cluster: ClusterState, p: Partition, leader: int) -> None:
    """Make an out-of-sync replica leader: the log is truncated to what it holds."""
    change(cluster, p, leader=leader, isr=[leader], eligible_leader_replicas=[], last_known_elr=[])
    log.lead_uncleanly(cluster, p, leader)


# The elections below change state only; the caller runs `settle` once after a batch of them.


def elect_all_preferred(cluster: ClusterState) -> None:
    """A preferred election on every partition, then replication settles (for tests and
    benchmarks: the state an ElectLeaders request for all partitions leaves)."""
    for t in cluster.topics.values():
        for p in t.partitions:
            replay.commit(cluster, elect_preferred(cluster, p))
    settle(cluster)


def elect_preferred(cluster: ClusterState, p: Partition) -> ControllerResult[int]:
    """A preferred election (ElectLeaders type 0, auto rebalance): its record and error code."""
    if p.leader == p.preferred:
        return ControllerResult([], ErrorCode.election_not_needed)
    if p.preferred in p.isr and _usable(cluster, p.preferred):
        return ControllerResult([change_record(cluster, p, leader=p.preferred)], ErrorCode.none)
    return ControllerResult([], ErrorCode.preferred_leader_not_available)


def elect_unclean(cluster: ClusterState, p: Partition) -> int:
    """An unclean election (ElectLeaders type 1): only for partitions without a leader."""
    if p.leader >= 0:
        return ErrorCode.election_not_needed
    if elect_from_isr(cluster, p, unclean=True):
        return ErrorCode.none
    return ErrorCode.eligible_leaders_not_available


def elect_designated(cluster: ClusterState, p: Partition, broker_id: int) -> tuple[int, str | None]:
    """A designated election (ElectLeaders v3 type 2, KAFKA-20098): only for offline partitions,
    and only a replica on a usable broker. The other replicas truncate to its log."""
    name = f"{p.topic}-{p.index}"
    if p.leader >= 0:
        return ErrorCode.election_not_needed, f"{name} already has leader {p.leader}"
    if broker_id not in p.replicas:
        return ErrorCode.invalid_request, (
            f"broker {broker_id} is not a replica of {name} (replicas {p.replicas})")
    if not _usable(cluster, broker_id):
        return ErrorCode.eligible_leaders_not_available, (
            f"broker {broker_id} is fenced or offline and cannot lead {name}")
    unclean_elect(cluster, p, broker_id)
    return ErrorCode.none, None


# -- broker lifecycle -------------------------------------------------------------------------


def broker_stopped(cluster: ClusterState, broker_id: int) -> None:
    """A broker's process stopped (it is no longer alive). The controller fences it and moves
    its leaderships away; a KRaft cluster without an active controller does that only when a
    voter is back (`_catch_up_controller_work`)."""
    stopped_at(cluster).setdefault(broker_id, (cluster.generation, now_ms()))
    if not cluster.controller_available:
        return
    replay.apply(cluster, registrations.fencing(cluster.brokers[broker_id], True))
    for t in cluster.topics.values():
        for p in t.partitions:
            if broker_id not in p.replicas:
                continue
            if broker_id in p.isr:
                set_isr(cluster, p, [r for r in p.isr if r != broker_id])
            if p.leader == broker_id:
                elect_from_isr(cluster, p)
    if not cluster.kraft and (cluster.controller_id == broker_id or cluster.controller_id < 0):
        elect_controller(cluster, exclude=broker_id)
    settle(cluster)


def broker_started(cluster: ClusterState, broker_id: int) -> None:
    """A broker's process is back (alive). The controller unfences it; in KRaft mode without an
    active controller it stays fenced until a voter is back."""
    stopped_at(cluster).pop(broker_id, None)
    if not cluster.controller_available:
        return
    replay.apply(cluster, registrations.fencing(cluster.brokers[broker_id], False))
    for t in cluster.topics.values():
        for p in t.partitions:
            if broker_id in p.replicas and p.leader < 0:
                elect_from_isr(cluster, p)
    preferred = preferred_controller(cluster)
    if not cluster.kraft and (cluster.controller_id < 0 or preferred == broker_id):
        elect_controller(cluster)
    settle(cluster)  # the restarted replicas truncate, catch up and rejoin the ISR


def unregister_broker(cluster: ClusterState, broker_id: int) -> tuple[int, str | None]:
    """UnregisterBroker, as KRaft's ReplicationControlManager: the broker leaves every ISR and
    ELR (its leaderships move) and its registration goes. A running broker registers again at
    once with a new epoch (its lifecycle manager would within a heartbeat); a stopped one stays
    unregistered until it starts."""
    b = cluster.brokers.get(broker_id)
    if b is None or not b.registered:
        return ErrorCode.broker_id_not_registered, f"Broker ID {broker_id} is not currently registered"
    for t in cluster.topics.values():
        for p in t.partitions:
            if broker_id in p.elr:
                change(cluster, p, eligible_leader_replicas=[r for r in p.elr if r != broker_id])
            if broker_id in p.isr:
                set_isr(cluster, p, [r for r in p.isr if r != broker_id])
    replay.apply(cluster, UnregisterBrokerRecord(broker_id, b.epoch))   # fenced, and gone
    for t in cluster.topics.values():
        for p in t.partitions:
            if p.leader == broker_id:
                elect_from_isr(cluster, p)
    if b.alive:
        replay.apply(cluster, registrations.broker_registration(cluster, b, epoch=b.epoch + 1))
        broker_started(cluster, broker_id)
    settle(cluster)
    return ErrorCode.none, None


# -- reassignments ----------------------------------------------------------------------------
# Like the elections above, these change state only: the caller runs `settle` once afterwards.


def reassign(cluster: ClusterState, p: Partition, target: list[int]) -> None:
    """Start moving a partition to `target` (validated by the caller), as KRaft's
    PartitionReassignmentReplicas: replicas = target + removing; adding replicas start empty."""
    current = p.replicas
    removing = [r for r in current if r not in target]
    adding = [r for r in target if r not in current]
    change(cluster, p, replicas=list(target) + removing, adding_replicas=adding, removing_replicas=removing)
    log.add_replicas(cluster, p, adding)


def cancel_reassignment(cluster: ClusterState, p: Partition) -> tuple[int, str | None]:
    """Revert to the replicas before the move (KRaft's PartitionReassignmentRevert)."""
    if not (p.adding or p.removing):
        return ErrorCode.no_reassignment_in_progress, "No partition reassignment is in progress."
    isr = [r for r in p.isr if r not in p.adding]
    if not isr and configs.topic_value(cluster, p.topic, "unclean.leader.election.enable") != "true":
        return ErrorCode.invalid_replica_assignment, (
            f"Unable to revert partition assignment for {p.topic}:{p.index} because it would "
            "require an unclean leader election.")
    _drop_replicas(cluster, p, p.adding)
    set_isr(cluster, p, isr)
    if p.leader not in p.replicas or p.leader not in p.isr:
        elect_from_isr(cluster, p)
    return ErrorCode.none, None


def _drop_replicas(cluster: ClusterState, p: Partition, gone: list[int]) -> None:
    """The move ends (or is reverted): `gone` leave the replicas, their logs go."""
    change(cluster, p, replicas=[r for r in p.replicas if r not in gone], adding_replicas=[], removing_replicas=[])
    log.drop_replicas(cluster, p, gone)


def _maybe_complete_reassignment(cluster: ClusterState, p: Partition) -> None:
    """Finish a move once every adding replica is in the ISR and some target replica is too."""
    if not (p.adding or p.removing):
        return
    isr = [r for r in p.isr if r not in p.removing]
    if not isr or any(r not in isr for r in p.adding):
        return
    removed = p.removing
    _drop_replicas(cluster, p, removed)
    set_isr(cluster, p, isr)
    if p.leader in removed or p.leader < 0:
        elect_from_isr(cluster, p)


# -- follower catch-up ------------------------------------------------------------------------


def replica_size(p: Partition, broker_id: int) -> int:
    """Bytes of the partition's log held by one replica (the batches below its log end)."""
    end = p.leo.get(broker_id, 0)
    return sum(len(b.data) for b in p.batches if b.last_offset < end)


def _throttled(cluster: ClusterState, p: Partition, key: str, broker_id: int) -> bool:
    value = configs.topic_value(cluster, p.topic, key) or ""
    entries = {e.strip() for e in value.split(",") if e.strip()}
    return "*" in entries or f"{p.index}:{broker_id}" in entries


def _limits(cluster: ClusterState, p: Partition, follower: int) -> list[tuple[tuple[str, int], float]]:
    """The rate budgets (key, bytes/s) an out-of-sync follower's copying draws from."""
    limits = []
    base = cluster.runtime.replication_rate
    if base is not None:
        limits.append((("base", follower), float(base)))
    for side, broker in (("follower", follower), ("leader", p.leader)):
        if _throttled(cluster, p, f"{side}.replication.throttled.replicas", broker):
            rate = int(configs.broker_value(cluster, broker, f"{side}.replication.throttled.rate")
                       or _UNLIMITED)
            if rate < _UNLIMITED:
                limits.append(((side, broker), float(rate)))
    return limits


def _advance(cluster: ClusterState, seconds: float | None,
             partitions: Iterable[Partition] | None = None) -> bool:
    """One replication step: every out-of-sync replica (of `partitions`, default all) fetches
    from its leader (unlimited ones completely; rate-limited ones only when `seconds` of budget
    are given). Caught-up replicas join the ISR, moves complete. True while copying is pending."""
    budgets: dict[tuple[str, int], float] = {}
    credits = cluster.runtime.replication_credit
    pending = False
    # Without an active KRaft controller followers still copy, but ISR changes, completed moves
    # and leader changes wait for one (they are controller decisions).
    decide = cluster.controller_available
    rebalance = decide and _auto_rebalance(cluster)
    if partitions is None:
        partitions = (p for t in cluster.topics.values() for p in t.partitions)
    for p in partitions:
        if p.leader >= 0 and _usable(cluster, p.leader):
            for r in p.replicas:
                if r != p.leader and _usable(cluster, r):
                    pending |= _fetch(cluster, p, r, seconds, budgets, credits)
            if decide:
                _maybe_complete_reassignment(cluster, p)
        if p.future_dirs:   # moves between the log dirs of a broker (AlterReplicaLogDirs)
            for r in list(p.future_dirs):
                if _usable(cluster, r) and r in p.future_dirs:
                    pending |= directories.copy_future(cluster, p, r, seconds, budgets)
        if rebalance:
            replay.commit(cluster, elect_preferred(cluster, p))
    return pending


def _fetch(cluster: ClusterState, p: Partition, r: int, seconds: float | None,
           budgets: dict, credits: dict) -> bool:
    """Follower r fetches from the leader; True if it is still behind afterwards."""
    end = p.leo.get(p.leader, 0)
    if p.leo.get(r, 0) > end:
        log.follower_truncate(cluster, p, r, end)   # a diverging follower truncates to the leader's log
    if p.leo.get(r, 0) < end:
        limits = [] if r in p.isr else _limits(cluster, p, r)
        if not limits:
            log.copy_to_follower(cluster, p, r, float("inf"))
        elif seconds is not None:
            key = (p.topic, p.index, r)
            allowance = min(budgets.setdefault(k, rate * seconds) for k, rate in limits)
            for k, _ in limits:
                budgets[k] -= allowance
            credits[key] = log.copy_to_follower(cluster, p, r, credits.get(key, 0.0) + allowance)
    if p.leo.get(r, 0) < end:
        return True
    credits.pop((p.topic, p.index, r), None)
    log.follower_caught_up(cluster, p, r)
    if r not in p.isr and cluster.controller_available:
        set_isr(cluster, p, p.isr + [r])
    return False


def _auto_rebalance(cluster: ClusterState) -> bool:
    return configs.broker_value(cluster, None, "auto.leader.rebalance.enable") == "true"


def settle(cluster: ClusterState, partitions: Iterable[Partition] | None = None) -> None:
    """Run replication forward after a change (to `partitions` when only those changed: an
    election batch must not cost a scan of every partition); keep ticking while rate-limited
    copies remain."""
    if _advance(cluster, None, partitions):
        _start_ticker(cluster)


def _start_ticker(cluster: ClusterState) -> None:
    spawn = cluster.runtime.spawn
    if spawn is None or cluster.runtime.replication_ticking:
        return
    cluster.runtime.replication_ticking = True

    async def tick() -> None:
        try:
            last = time.monotonic()
            while True:
                await asyncio.sleep(TICK_S)
                now = time.monotonic()
                pending = _advance(cluster, now - last)
                last = now
                if not pending:
                    return
        finally:
            cluster.runtime.replication_ticking = False

    spawn(tick())


def reassigning(cluster: ClusterState) -> list[Partition]:
    return [p for t in cluster.topics.values() for p in t.partitions if p.adding or p.removing]
