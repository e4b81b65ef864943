"""A rolling restart planned from the cluster's read (rolling-restart-plan): the order to restart
nodes with the fewest controller moves and the least unavailability.

Brokers are grouped so that no partition loses more than one replica at a time (a greedy
colouring of the graph of brokers that share a partition, most constrained broker first; by rack
where every rack is already such a group). The controller broker (ZooKeeper mode) restarts last,
alone; KRaft controllers follow the brokers, the standbys one at a time, then the active one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_shell.connection.metadata import ClusterSnapshot


def plan(snap: ClusterSnapshot, brokers: list[int], controller_broker: int | None, voters: list[int],
         active: int) -> list[tuple[str, list[int], int]]:
    """(role, nodes restarted together, partitions they leave without a replica) per step."""
    first = [b for b in brokers if b != controller_broker]
    steps: list[tuple[str, list[int]]] = [("broker", g) for g in groups(snap, first)]
    if controller_broker in brokers:
        steps.append(("broker (controller)", [controller_broker]))
    broker_steps = len(steps)
    steps += [("controller", [v]) for v in voters if v != active]
    if active in voters:
        steps.append(("controller", [active]))
    # One pass: a partition is unavailable at the step that holds every one of its replicas.
    step_of = {b: i for i, (_, nodes) in enumerate(steps[:broker_steps]) for b in nodes}
    lost = [0] * len(steps)
    for t in snap.topics.values():
        for p in t.partitions:
            at = {step_of.get(r, -1) for r in p.replicas}
            if len(at) == 1 and -1 not in at and p.replicas:
                lost[at.pop()] += 1
    return [(role, nodes, lost[i]) for i, (role, nodes) in enumerate(steps)]


def groups(snap: ClusterSnapshot, brokers: list[int]) -> list[list[int]]:
    """Brokers in groups that share no partition: by rack when each rack is such a group, else
    greedily, the broker with the most neighbours first, into the first group it fits."""
    chosen = set(brokers)
    neighbours: dict[int, set[int]] = {b: set() for b in brokers}
    for topic in snap.topics.values():
        for p in topic.partitions:
            members = [r for r in p.replicas if r in chosen]
            if len(members) > 1:
                for r in members:
                    neighbours[r].update(members)
    for b in brokers:
        neighbours[b].discard(b)
    racks: dict[str, list[int]] = {}
    for b in brokers:
        rack = snap.brokers[b].rack
        racks.setdefault(rack or "", []).append(b)
    if all(snap.brokers[b].rack for b in brokers) and len(racks) > 1 and all(
            not (neighbours[b] & set(rack_members)) for rack_members in racks.values() for b in rack_members):
        return [sorted(m) for _, m in sorted(racks.items())]
    out: list[list[int]] = []
    taken: list[set[int]] = []
    for b in sorted(brokers, key=lambda b: (-len(neighbours[b]), b)):
        for group, group_set in zip(out, taken):
            if not (neighbours[b] & group_set):
                group.append(b)
                group_set.add(b)
                break
        else:
            out.append([b])
            taken.append({b})
    return [sorted(g) for g in out]
