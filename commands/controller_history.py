"""`controller-history`: the controller changes this shell has seen on the cluster (time, from,
to, epoch), kept per cluster in the user's data dir by `kafka_shell.connection.controller_history`; on a
sandbox (embedded, or a `kafka-shell sandbox` server's control endpoint) also the cluster's own
record of them, beside."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from kafka_shell.connection import controller_history, sandbox_client
from kafka_shell.admin import cluster
from kafka_shell.base.errors import ShellError
from kafka_shell.declarations import failure_lines
from kafka_shell.declarations.registry import command
from kafka_shell.declarations.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session


@command("controller-history",
         help="The controller changes this shell has seen on this cluster (time, from, to, epoch); "
              "on a sandbox also the cluster's own record.",
         description="Every command that learns the active controller records a change from the "
                     "last one seen (another node, or a new KRaft epoch) in the user's data dir, per "
                     "cluster id; changes while no shell ran show up at the next run, timed then. "
                     "On a sandbox the cluster's own record of each change is shown beside "
                     "(tables `observed` and `cluster` in json).",
         examples=("controller-history", "controller-history -o json"), tables=("observed", "cluster"))
def controller_history_command(session: Session, args: dict) -> Result:
    # Records the controller as it is now; the history is told also when the quorum does not answer.
    snap, refused, partial = cluster.read_maybe_controller(session.conn, [])
    if not snap.cluster_id:
        raise ShellError("The cluster does not tell its id, so no history is kept for it.")
    rows = [[_time(e["time"]), e.get("from"), e.get("to"), _epoch(e.get("epoch")), e.get("mode")]
            for e in controller_history.load(snap.cluster_id) if isinstance(e.get("time"), (int, float))]
    messages = [f"{len(rows)} controller observation(s) for cluster {snap.cluster_id}."]
    messages += [failure_lines.controller_unshown_line(refused, partial)] if refused else []
    tables = [Table(["Time", "From", "To", "Epoch", "Mode"], rows, "observed")]
    changes = sandbox_client.controller_changes(session.target, session.sandbox)
    if changes is not None:
        tables.append(Table(["Time", "From", "To", "Epoch"],
                            [[_time(e["time"]), e.get("from"), e.get("to"), e.get("epoch")] for e in changes], "cluster"))
        messages.append(f"{len(changes)} controller change(s) in the sandbox's own record.")
    return Result(tables=tables, messages=messages, exit_code=1 if partial else 0)


def _time(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="seconds")


def _epoch(value: object) -> int | None:
    """ZooKeeper mode tells no epoch (-1): shown as none."""
    return value if isinstance(value, int) and value >= 0 else None
