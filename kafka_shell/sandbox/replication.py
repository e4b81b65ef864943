"""Replication and controller behaviour of the sandbox, modelled on KRaft's controller.

- A partition's leader comes from its ISR among usable (alive, unfenced) brokers; when the last
  ISR member goes, the partition goes offline (leader -1) and the ISR keeps that member, as KRaft
  does. With `unclean.leader.election.enable=true` a live out-of-sync replica is chosen instead.
- A restarted replica catches up and rejoins the ISR; an offline partition whose ISR member
  comes back gets it as leader. Leadership does not move back to the preferred replica unless
  `auto.leader.rebalance.enable=true` or a preferred election asks for it.
- The controller is one usable broker; `preferred.controller.id` (KAFKA-1778) names the only
  broker allowed to stand while it is usable.
"""

from __future__ import annotations

from kafka_shell.sandbox import configs
from kafka_shell.sandbox.model import Cluster, Partition

PREFERRED_CONTROLLER_KEY = "preferred.controller.id"


# -- controller -------------------------------------------------------------------------------


def preferred_controller(cluster: Cluster) -> int | None:
    value = cluster.cluster_configs.get(PREFERRED_CONTROLLER_KEY)
    return int(value) if value not in (None, "", "-1") else None


def elect_controller(cluster: Cluster, exclude: int | None = None) -> int:
    """Choose the controller among usable brokers; the preferred one stands alone when usable."""
    usable = sorted(b.id for b in cluster.live_brokers() if b.id != exclude)
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
        cluster.controller_id = chosen
        cluster.controller_epoch += 1
        cluster.changed()
    return chosen


def move_controller(cluster: Cluster) -> int:
    """The active controller resigns (a crash of its controller role): another broker takes over.
    With a preferred controller designated and usable, it takes over (or keeps) the role."""
    old = cluster.controller_id
    preferred = preferred_controller(cluster)
    exclude = None if preferred == old and preferred in {b.id for b in cluster.live_brokers()} else old
    if exclude is not None and len(cluster.live_brokers()) <= 1:
        exclude = None  # a lone broker re-elects itself
    if exclude is None:
        cluster.controller_epoch += 1
        cluster.changed()
        return old
    return elect_controller(cluster, exclude=exclude)


# -- partitions -------------------------------------------------------------------------------


def _usable(cluster: Cluster, broker_id: int) -> bool:
    b = cluster.brokers.get(broker_id)
    return b is not None and b.usable


def set_leader(p: Partition, leader: int) -> None:
    p.leader = leader
    p.leader_epoch += 1
    p.partition_epoch += 1


def update_high_watermark(p: Partition) -> None:
    if p.leader < 0 or not p.isr:
        return
    p.high_watermark = max(p.high_watermark, min(p.leo.get(r, 0) for r in p.isr))


def elect_from_isr(cluster: Cluster, p: Partition) -> bool:
    """Give an offline or leaderless partition a leader from its live ISR (or, when unclean
    election is enabled for the topic, from any live replica). True if it has a leader after."""
    for r in p.replicas:
        if r in p.isr and _usable(cluster, r):
            set_leader(p, r)
            return True
    if configs.topic_value(cluster, p.topic, "unclean.leader.election.enable") == "true":
        for r in p.replicas:
            if _usable(cluster, r):
                unclean_elect(p, r)
                return True
    if p.leader != -1:
        set_leader(p, -1)
    return False


def unclean_elect(p: Partition, leader: int) -> None:
    """Make an out-of-sync replica leader: the log is truncated to what it holds."""
    set_leader(p, leader)
    p.isr = [leader]
    p.elr = []
    end = p.leo.get(leader, 0)
    p.batches = [b for b in p.batches if b.last_offset < end]
    p.high_watermark = end
    for r in p.replicas:
        p.leo[r] = min(p.leo.get(r, 0), end) if r != leader else end
    p.replica_epoch[leader] = p.leader_epoch


def broker_stopped(cluster: Cluster, broker_id: int) -> None:
    for t in cluster.topics.values():
        for p in t.partitions:
            if broker_id not in p.replicas:
                continue
            if broker_id in p.isr and len(p.isr) > 1:
                p.isr.remove(broker_id)
                p.partition_epoch += 1
            if p.leader == broker_id:
                elect_from_isr(cluster, p)
    if cluster.controller_id == broker_id or cluster.controller_id < 0:
        elect_controller(cluster, exclude=broker_id)
    cluster.changed()


def broker_started(cluster: Cluster, broker_id: int) -> None:
    for t in cluster.topics.values():
        for p in t.partitions:
            if broker_id not in p.replicas:
                continue
            if p.leader < 0:
                elect_from_isr(cluster, p)
            if p.leader >= 0 and broker_id != p.leader:
                # The follower truncates to the leader's log and catches up at once.
                p.leo[broker_id] = p.leo.get(p.leader, 0)
                p.replica_epoch[broker_id] = p.leader_epoch
                if broker_id not in p.isr:
                    p.isr.append(broker_id)
                    p.partition_epoch += 1
    preferred = preferred_controller(cluster)
    if cluster.controller_id < 0 or preferred == broker_id:
        elect_controller(cluster)
    cluster.changed()
