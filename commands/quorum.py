"""Changes to the KRaft controller quorum (KIP-853's dynamic quorum), like kafka-metadata-quorum
add-controller / remove-controller (--unregister: KIP-1312, Kafka 4.4). Each names the voters
before and after, read from the quorum when the command runs, and asks (--yes outside the REPL);
--dry-run shows the plan."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.admin import cluster, quorum
from kafka_shell.base.errors import ShellError, UsageError
from kafka_shell.declarations.controller_files import voter_from_config
from kafka_shell.declarations.option_types import broker_id, controller_endpoint, directory_id
from kafka_shell.declarations.registry import Confirm, Option, command
from kafka_shell.declarations.render import Proposal, Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session

VOTER_COLUMNS = ["NodeId", "DirectoryId", "Endpoints", "Change"]


def _plan(q: quorum.Quorum, adding: quorum.NewVoter | None, removing: int | None) -> Table:
    """The voters after the change, each marked kept, added or removed."""
    rows = [[v.replica_id, v.directory_id, ",".join(q.endpoints(v.replica_id)) or None,
             "remove" if v.replica_id == removing else "keep"] for v in q.voters]
    if adding is not None:
        rows.append([adding.node_id, adding.directory_id,
                     ",".join(f"{n}://{h}:{p}" for n, h, p in adding.endpoints), "add"])
    return Table(VOTER_COLUMNS, rows, name="voters")


def _voters(ids: list[int]) -> str:
    return "{" + ", ".join(map(str, sorted(ids))) + "}"


def _not_addable_line(refused: quorum.NotAddable) -> str:
    """Why the quorum cannot take the controller, and what to give instead."""
    node = refused.node_id
    if refused.reason == quorum.ALREADY_VOTER:
        return f"Controller {node} already votes in the quorum (voters: {', '.join(map(str, refused.voters))})"
    if refused.reason == quorum.NOT_FOLLOWING:
        return (f"Controller {node} does not follow the quorum (observers: "
                f"{', '.join(map(str, refused.observers)) or 'none'}), so its directory id is unknown: start it, or "
                "give --controller-directory-id")
    return (f"Controller {node}'s listener is unknown: give --controller-endpoint NAME@HOST:PORT "
            "(or --bootstrap-controller, where the controllers are registered)")


@command("add-controller",
         Option("--controller-id", type=broker_id, metavar="ID",
                help="The new controller's node.id (it must be formatted with --no-initial-controllers and running)."),
         Option("--controller-directory-id", type=directory_id, metavar="DIR",
                help="Its metadata log directory id (default: as the quorum sees it among the observers)."),
         Option("--controller-endpoint", type=controller_endpoint, metavar="NAME@HOST:PORT",
                help="Its controller listener (default: its registration, with --bootstrap-controller)."),
         Option("--config", metavar="FILE", completer="path", aliases=("--command-config",),
                help="Read id, listeners and directory id from the new controller's server.properties and "
                     "meta.properties, as kafka-metadata-quorum add-controller does (its --command-config)."),
         required_groups=(("--controller-id", "--config"),), mutates=True, confirm=Confirm(proposed=True),
         help="Add a controller to the KRaft quorum (AddRaftVoter, KIP-853): names the voters before and after.",
         examples=("add-controller --controller-id 103 --dry-run",
                   "add-controller --controller-id 103 --controller-directory-id ZLgh-CD8QfGsKlZG39bUrQ "
                   "--controller-endpoint CONTROLLER@localhost:9096 --yes",
                   "add-controller --config /etc/kafka/controller.properties"), tables=("voters",))
def add_controller(session: Session, args: dict) -> Result | Proposal:
    node_id, directory = args["controller_id"], args["controller_directory_id"]
    endpoints = [args["controller_endpoint"]] if args["controller_endpoint"] else []
    if args["config"]:
        if node_id is not None:
            raise UsageError("Give --controller-id or --config, not both")
        node_id, directory, endpoints = voter_from_config(args["config"])
    q = quorum.describe(session.conn)
    voter = quorum.new_voter(session.conn, q, node_id, directory, endpoints)
    if isinstance(voter, quorum.NotAddable):
        raise UsageError(_not_addable_line(voter))
    before = [v.replica_id for v in q.voters]
    change = f"voters {_voters(before)} -> {_voters([*before, node_id])}"
    table = _plan(q, voter, None)
    if args["dry_run"]:
        return Result(tables=[table], messages=[f"Would add {voter.describe()}: {change} (dry run)."])

    def apply() -> Result:
        quorum.add_voter(session.conn, voter)
        return Result(tables=[_plan(quorum.describe(session.conn), None, None)],
                      messages=[f"Added {voter.describe()}: {change}."])
    return Proposal(f"Add {voter.describe()} to the quorum: {change}?",
                    f"add-controller would change the quorum's {change}", apply)


@command("remove-controller",
         Option("--controller-id", type=broker_id, required=True, metavar="ID", help="The voter to remove."),
         Option("--controller-directory-id", type=directory_id, required=True, metavar="DIR",
                help="Its metadata log directory id (describe-quorum --replication shows it)."),
         Option("--unregister", flag=True,
                help="Then unregister it too (UnregisterController, KIP-1312, Kafka 4.4), as kafka-metadata-quorum "
                     "remove-controller --unregister: for a controller stopped for good."),
         mutates=True, confirm=Confirm(proposed=True),
         help="Remove a controller from the KRaft quorum (RemoveRaftVoter, KIP-853): names the voters before and after; "
              "--unregister also removes its registration.",
         examples=("remove-controller --controller-id 102 --controller-directory-id ZLgh-CD8QfGsKlZG39bUrQ --dry-run",
                   "remove-controller --controller-id 102 --controller-directory-id ZLgh-CD8QfGsKlZG39bUrQ --unregister --yes"), tables=("voters",))
def remove_controller(session: Session, args: dict) -> Result | Proposal:
    node_id, directory, unregister = args["controller_id"], args["controller_directory_id"], args["unregister"]
    if unregister:   # before anything changes: not after the voter is gone
        cluster.require_controller_unregistration(session.conn)
    q = quorum.describe(session.conn)
    before = [v.replica_id for v in q.voters]
    voter = next((v for v in q.voters if v.replica_id == node_id), None)
    if voter is None:
        hint = f"; to unregister it, run unregister-controller --id {node_id}" if unregister else ""
        raise UsageError(f"Controller {node_id} is no voter of the quorum (voters: {_voters(before)}){hint}")
    if voter.directory_id is not None and voter.directory_id != directory:
        raise UsageError(f"Voter {node_id} has directory id {voter.directory_id}, not {directory} "
                         "(see describe-quorum --replication)")
    change = f"voters {_voters(before)} -> {_voters([b for b in before if b != node_id])}"
    table = _plan(q, None, node_id)
    what = f"controller {node_id} (directory {directory})"
    also = " and unregister it" if unregister else ""
    if args["dry_run"]:
        return Result(tables=[table], messages=[f"Would remove {what}{also}: {change} (dry run)."])

    def apply() -> Result:
        quorum.remove_voter(session.conn, node_id, directory)
        done = Result(tables=[_plan(quorum.describe(session.conn), None, None)], messages=[f"Removed {what}: {change}."])
        if unregister:
            try:
                cluster.unregister_controller(session.conn, node_id)
            except ShellError as exc:   # the voter is gone all the same: say so, and what is left to do
                done.messages.append(f"Failed to unregister controller {node_id}: {exc} To unregister it, run "
                                     f"unregister-controller --id {node_id}.")
                done.exit_code = 1
                return done
            done.messages.append(f"Controller {node_id} is no longer registered.")
        return done
    return Proposal(f"Remove {what} from the quorum{also}: {change}?",
                    f"remove-controller would change the quorum's {change}"
                    + (f" and unregister controller {node_id}" if unregister else ""), apply)
