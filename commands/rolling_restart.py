"""`rolling-restart-plan`: the order to restart a cluster's nodes with the fewest controller
moves and the least unavailability (KAFKA-1778's problem, for clusters without a preferred
controller).

Brokers are grouped so that no partition loses more than one replica at a time: two brokers
that share a partition never restart together (a greedy colouring of that conflict graph, most
constrained broker first; by rack where every rack is already such a group). The controller
moves only when its node stops, so in ZooKeeper mode the controller broker restarts last, alone;
in KRaft mode the brokers go first (the controller never moves), then the standby controllers
one at a time, then the active controller: one move in all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.admin import quorum
from kafka_shell.base.errors import UsageError
from kafka_shell.connection.metadata import KRAFT, ClusterSnapshot
from kafka_shell.declarations.option_types import broker_ids
from kafka_shell.declarations.registry import Option, command
from kafka_shell.declarations.render import Result

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

CHECK = ("every partition's ISR full, no offline partition "
         "(describe-topic --under-replicated-partitions and --unavailable-partitions print nothing)")


@command("rolling-restart-plan",
         Option("--brokers", type=broker_ids, metavar="ID,ID", completer="broker",
                help="Only these brokers (default: every live broker, and the KRaft controllers)."),
         help="The order to restart brokers and controllers with the fewest controller moves.",
         description=" ".join((__doc__ or "").split("\n\n", 1)[-1].split()),   # one paragraph, wrapped by help
         examples=("rolling-restart-plan", "rolling-restart-plan --brokers 1,2,3 -o json"), tables=("steps",))
def rolling_restart_plan(session: Session, args: dict) -> Result:
    snap = session.conn.read(controller=True)
    live = sorted(snap.brokers)
    wanted = sorted(args["brokers"] or live)
    unknown = [b for b in wanted if b not in snap.brokers]
    if unknown:
        raise UsageError(f"Broker(s) {', '.join(map(str, unknown))} not live in the cluster "
                         f"(live brokers: {', '.join(map(str, live))})")
    controller = snap.controller
    voters: list[int] = []
    if controller.mode == KRAFT and not args["brokers"]:
        voters = sorted(v.replica_id for v in quorum.describe(session.conn).voters)
    steps = plan(snap, wanted, controller.id if controller.mode != KRAFT else None, voters, controller.id)
    rows = []
    for i, (role, nodes, unavailable) in enumerate(steps, 1):
        check = CHECK if role == "broker" else "a controller is active again (describe-controller), and " + CHECK
        rows.append([i, role, nodes, unavailable, check])
    moves = 1 if (controller.mode != KRAFT and controller.id in wanted) or controller.id in voters else 0
    return Result.table(["Step", "Role", "Nodes", "UnavailablePartitions", "CheckBeforeNext"], rows,
                        f"{len(steps)} step(s); the controller moves {moves} time(s).", name="steps")


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
