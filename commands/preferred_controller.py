"""`preferred-controller set N | clear | show` (KAFKA-1778): name the one candidate that should
hold the controller role, so a rolling restart moves it once instead of once per bounced node.

The designation is the cluster-wide broker config `preferred.controller.id` (the sandbox
implements it in both modes: the active controller resigns to N, only N stands while it is up,
N's crash lets every candidate stand, `clear` lifts the restriction). Apache Kafka has no such
config: a cluster whose brokers do not list it is told so in one line, and nothing is changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.admin import cluster, configs, quorum
from kafka_shell.admin.configs import PREFERRED_CONTROLLER_KEY
from kafka_shell.base.errors import KafkaCallError, ShellError, UsageError, shown
from kafka_shell.connection.metadata import KRAFT
from kafka_shell.declarations import failure_lines
from kafka_shell.declarations.option_types import positive_int
from kafka_shell.declarations.registry import INT32_MAX, Option, command, int_range
from kafka_shell.declarations.render import Result

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

ACTIONS = ("set", "clear", "show")
POLL_S = 0.1
node_id = int_range(0, INT32_MAX, "a node id")


@command("preferred-controller",
         Option("action", choices=ACTIONS, default="show", help="set N, clear, or show (the default)."),
         Option("args", repeatable=True, metavar="N", help="set: the node that should be the controller."),
         Option("--blocking", flag=True, help="set: wait until N is the active controller."),
         Option("--timeout-ms", type=positive_int, default=30000, metavar="MS",
                help="How long --blocking waits (default 30000)."),
         mutates=True,
         help="Designate the controller (KAFKA-1778): set N, clear, or show the preferred controller.",
         description="The active controller resigns to N and only N stands while it is up; if N "
                     "crashes every candidate stands again. N is a KRaft controller (voter) id, or "
                     "in ZooKeeper mode a broker id. Clusters without the preferred.controller.id "
                     "config (Apache Kafka) are refused: plan restarts with rolling-restart-plan.",
         examples=("preferred-controller show", "preferred-controller set 101 --blocking",
                   "preferred-controller clear"), tables=("preferred_controller",))
def preferred_controller(session: Session, args: dict) -> Result:
    action, values = args["action"], args["args"]
    if action == "set" and len(values) != 1:
        raise UsageError("preferred-controller set takes one node id: preferred-controller set N")
    if action != "set" and values:
        raise UsageError(f"preferred-controller {action} takes no argument")
    if action != "set" and args["blocking"]:
        raise UsageError("--blocking is for preferred-controller set")
    require_feature(session)
    if action == "show":
        return show(session)
    if action == "clear":
        lines = _set_defaults(session, {}, [PREFERRED_CONTROLLER_KEY], args["dry_run"])
        verb = "would be" if args["dry_run"] else "is"
        return Result.message(*lines, f"No preferred controller {verb} set: every candidate may stand.")
    try:
        wanted = node_id(values[0])
    except ValueError as exc:
        raise UsageError(f'Invalid node id "{shown(values[0])}": expected {exc}') from None
    require_up(session, wanted)
    lines = _set_defaults(session, {PREFERRED_CONTROLLER_KEY: str(wanted)}, [], args["dry_run"])
    if args["dry_run"]:
        return Result.message(*lines)
    if not args["blocking"]:
        now = session.conn.controller()
        return Result.message(*lines, f"Preferred controller set to {wanted}; active controller now {now.id}.")
    return Result.message(*lines, wait_until_active(session, wanted, args["timeout_ms"]))


def _set_defaults(session: Session, set_: dict[str, str], delete: list[str], dry_run: bool) -> list[str]:
    """Change the cluster-wide broker defaults: kafka-configs' line for it, or its refusal as the error."""
    done, refused = failure_lines.config_change_lines(configs.alter(session.conn, configs.BROKERS, [""], set_, delete,
                                                                    dry_run), configs.BROKERS, dry_run)
    if refused:
        raise KafkaCallError(" ".join(refused))
    return done


def show(session: Session) -> Result:
    active = session.conn.controller()
    preferred = configs.read_preferred_controller(session.conn)
    return Result.table(["PreferredController", "ActiveController", "Epoch", "Mode"],
                        [[preferred, active.id, active.epoch if active.epoch >= 0 else None, active.mode]],
                        name="preferred_controller", kinds={"PreferredController": "id"})


def require_feature(session: Session) -> None:
    """The cluster's brokers must know the key: a broker lists every config it has when asked
    for all of them (Apache Kafka's do not list this one)."""
    brokers = sorted(session.conn.read([]).brokers)
    if not brokers:
        raise KafkaCallError("No live broker to ask: start one and retry.")
    if not configs.broker_knows(session.conn, brokers[0], PREFERRED_CONTROLLER_KEY):
        raise ShellError(f"This cluster has no preferred controller ({PREFERRED_CONTROLLER_KEY} is not a config of its brokers; "
                         "KAFKA-1778 is not in Apache Kafka): nothing was changed. Plan the restart order "
                         "with rolling-restart-plan instead.")


def require_up(session: Session, wanted: int) -> None:
    """N must be a controller candidate that is running: a KRaft voter whose CONTROLLER listener
    answers, or a live broker in ZooKeeper mode. Refused otherwise, before anything changes."""
    active = session.conn.controller()
    if active.mode != KRAFT:
        live = sorted(session.conn.read([]).brokers)
        if wanted not in live:
            raise ShellError(f"Broker {wanted} is not a live broker (live: {', '.join(map(str, live))}): "
                             "it cannot become the controller; nothing was changed.")
        return
    q = quorum.describe(session.conn)
    voters = sorted(v.replica_id for v in q.voters)
    if wanted not in voters:
        raise ShellError(f"{wanted} is not a controller of the cluster (voters: {', '.join(map(str, voters))}); "
                         "nothing was changed.")
    if wanted != active.id and not any(cluster.answers(session.conn, host, port)
                                       for _, host, port in q.listeners.get(wanted, ())):
        raise ShellError(f"Controller {wanted} does not answer (is it down?): it cannot become the active "
                         "controller; nothing was changed.")


def wait_until_active(session: Session, wanted: int, timeout_ms: int) -> str:
    session.stderr.write(f"Waiting for {wanted} to become the active controller...\n")
    with session.bounded(timeout_ms / 1000 + session.conn.timeout_s):   # --timeout-ms, and its last read
        now = cluster.wait_until_active(session.conn, wanted, timeout_ms, POLL_S)
    if isinstance(now, cluster.NotActive):
        raise KafkaCallError(f"{wanted} is not the active controller after {timeout_ms} ms "
                             f"(the active controller is {now.active.id}); the designation stays set.",
                             retriable=True)
    epoch = f" (epoch {now.epoch})" if now.epoch >= 0 else ""
    return f"{wanted} is the active controller{epoch}."
