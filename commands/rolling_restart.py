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

from kafka_shell.admin import quorum, rolling_restart
from kafka_shell.base.errors import UsageError
from kafka_shell.connection.metadata import KRAFT
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
    steps = rolling_restart.plan(snap, wanted, controller.id if controller.mode != KRAFT else None, voters, controller.id)
    rows = []
    for i, (role, nodes, unavailable) in enumerate(steps, 1):
        check = CHECK if role == "broker" else "a controller is active again (describe-controller), and " + CHECK
        rows.append([i, role, nodes, unavailable, check])
    moves = 1 if (controller.mode != KRAFT and controller.id in wanted) or controller.id in voters else 0
    return Result.table(["Step", "Role", "Nodes", "UnavailablePartitions", "CheckBeforeNext"], rows,
                        f"{len(steps)} step(s); the controller moves {moves} time(s).", name="steps")
