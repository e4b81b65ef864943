"""`controller-history`: the controller changes this shell has seen on the cluster (time, from,
to, epoch), kept per cluster in the user's data dir by `kafka_shell.controller_history`."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from kafka_shell import controller_history
from kafka_shell.errors import ShellError
from kafka_shell.registry import command
from kafka_shell.render import Result

if TYPE_CHECKING:
    from kafka_shell.session import Session


@command("controller-history",
         help="The controller changes this shell has seen on this cluster (time, from, to, epoch).",
         description="Every command that learns the active controller records a change from the "
                     "last one seen (another node, or a new KRaft epoch) in the user's data dir, per "
                     "cluster id; changes while no shell ran show up at the next run, timed then.",
         examples=("controller-history", "controller-history -o json"))
def controller_history_command(session: Session, args: dict) -> Result:
    snap = session.conn.read([], controller=True)  # records the controller as it is now
    if not snap.cluster_id:
        raise ShellError("The cluster does not tell its id, so no history is kept for it.")
    rows = [[datetime.datetime.fromtimestamp(e["time"], datetime.UTC).isoformat(timespec="seconds"),
             e.get("from"), e.get("to"), _epoch(e.get("epoch")), e.get("mode")]
            for e in controller_history.load(snap.cluster_id) if isinstance(e.get("time"), (int, float))]
    return Result.table(["Time", "From", "To", "Epoch", "Mode"], rows,
                        f"{len(rows)} controller observation(s) for cluster {snap.cluster_id}.")


def _epoch(value: object) -> int | None:
    """ZooKeeper mode tells no epoch (-1): shown as none."""
    return value if isinstance(value, int) and value >= 0 else None
