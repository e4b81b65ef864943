"""Cluster-wide reads: describe-cluster, list-brokers, api-versions (each reads the cluster when
it runs; the controller is the one Kafka's own rules name, see kafka_shell/connection/router.py); and
kafka-cluster's unregister (brokers) and unregister-controller (KIP-1312)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.admin import cluster, quorum
from kafka_shell.connection.metadata import KRAFT, ZOOKEEPER
from kafka_shell.declarations import failure_lines
from kafka_shell.declarations.option_types import broker_id
from kafka_shell.declarations.registry import Confirm, Option, command
from kafka_shell.declarations.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.session import Session


@command("describe-cluster",
         help="Cluster id, controller, and each broker with its rack, partitions, leaders and whether it is fenced; "
              "with --bootstrap-controller, the registered controllers too (alone: controllers and the brokers "
              "that follow the metadata log).",
         examples=("describe-cluster",), tables=("cluster", "brokers", "controllers"))
def describe_cluster(session: Session, args: dict) -> Result:
    conn = session.conn
    if conn.controllers_only:
        return _controllers_view(session)
    snap, refused, partial = cluster.read_maybe_controller(conn)
    states = cluster.broker_states(conn, snap)
    partitions = sum(len(t.partitions) for t in snap.topics.values())
    c = snap.controller
    known = c.id >= 0 and refused is None
    summary = Table(["ClusterId", "Mode", "Controller", "ControllerEpoch", "Brokers", "Topics", "Partitions"],
                    [[snap.cluster_id, c.mode, c.id if known else None, c.epoch if known and c.epoch >= 0 else None,
                      len(snap.brokers), len(snap.topics), partitions]],
                    name="cluster")
    # A broker the controller has fenced is offline even while the metadata of the broker asked
    # still lists it (the fence takes a moment to reach every broker).
    rows = [[b.id, b.host, b.port, b.rack, "offline" if b.id in states.fenced else "online", states.replicas[b.id],
             states.leaders[b.id], states.is_fenced(b.id)] for b in sorted(snap.brokers.values(), key=lambda b: b.id)]
    rows += [[i, states.fenced_host(i), None, None, "offline", states.replicas[i], 0, states.is_fenced(i)]
             for i in sorted(states.offline)]
    brokers = Table(["Id", "Host", "Port", "Rack", "Status", "Partitions", "Leaders", "IsFenced"], rows, name="brokers")
    tables = [summary, brokers]
    if conn.router.controller_addresses:
        tables.append(_controllers_table(session))
    return Result(tables=tables, messages=[failure_lines.controller_unshown_line(refused, partial)] if refused else [],
                  exit_code=1 if partial else 0)


def _controllers_table(session: Session) -> Table:
    """The registered controllers (DescribeCluster on a controller listener, KIP-919), each
    marked voter or observer and active, from the quorum read now."""
    _, active, nodes = cluster.controllers(session.conn)
    voters = {v.replica_id for v in quorum.describe(session.conn).voters}
    return Table(["Id", "Host", "Port", "Rack", "Role", "IsActive"],
                 [[n.id, n.host, n.port, n.rack, "voter" if n.id in voters else "observer", n.id == active]
                  for n in nodes], name="controllers")


def _controllers_view(session: Session) -> Result:
    """describe-cluster with controllers only: the cluster id, the active controller, the
    controllers, and the brokers that follow the metadata log (DescribeQuorum's observers
    that are no controllers: what the controllers can tell of the brokers)."""
    cluster_id, active, nodes = cluster.controllers(session.conn)
    q = quorum.describe(session.conn)
    controller_ids = {n.id for n in nodes}
    brokers = [o for o in q.observers if o.replica_id not in controller_ids]
    summary = Table(["ClusterId", "Mode", "Controller", "ControllerEpoch", "Brokers", "Topics", "Partitions"],
                    [[cluster_id, KRAFT, active if active >= 0 else None, q.leader_epoch, len(brokers), None, None]],
                    name="cluster")
    rows = [[o.replica_id, None, None, None, "observer", None, None, None] for o in brokers]
    return Result(tables=[summary, Table(["Id", "Host", "Port", "Rack", "Status", "Partitions", "Leaders", "IsFenced"],
                                         rows, name="brokers"), _controllers_table(session)],
                  messages=["Only the controllers were asked (--bootstrap-controller): brokers are those that "
                            "follow the metadata log; add --bootstrap-server for their addresses and load."])


def _confirm_unregister(session: Session, args: dict) -> str:
    return f"Unregister broker {args['id']} (its registration goes; a running broker registers again at once)?"


@command("unregister-broker",
         Option("--id", type=broker_id, required=True, metavar="ID", completer="broker",
                help="The broker to unregister."),
         mutates=True, confirm=Confirm(question=_confirm_unregister),
         help="Remove a broker's registration from a KRaft cluster (kafka-cluster unregister, UnregisterBroker): "
              "for a broker that is gone for good.",
         examples=("unregister-broker --id 4 --yes",))
def unregister_broker(session: Session, args: dict) -> Result:
    broker = args["id"]
    if args["dry_run"]:
        snap = None if session.conn.controllers_only else session.conn.read([])
        state = ("" if snap is None else " (live: it would register again at once)" if broker in snap.brokers else "")
        return Result.message(f"Would unregister broker {broker}{state} (dry run).")
    cluster.unregister(session.conn, broker)
    return Result.message(f"Broker {broker} was unregistered.")


def controller_role(session: Session, controller_id: int) -> str:
    """What the quorum says of a controller now, for the question and the dry run."""
    q = quorum.describe(session.conn)
    if controller_id == q.leader_id:
        return "the active controller: Kafka refuses to unregister it"
    voter = next((v for v in q.voters if v.replica_id == controller_id), None)
    if voter is not None:
        return (f"a voter of the quorum: stop it and remove it first (remove-controller --controller-id {controller_id} "
                f"--controller-directory-id {voter.directory_id} --unregister does both steps)")
    if any(o.replica_id == controller_id for o in q.observers):
        return "it follows the quorum now, so it registers again at once"
    return "not in the quorum"


def _confirm_unregister_controller(session: Session, args: dict) -> str:
    cluster.require_controller_unregistration(session.conn)
    return f"Unregister controller {args['id']} ({controller_role(session, args['id'])})?"


@command("unregister-controller",
         Option("--id", type=broker_id, required=True, metavar="ID", help="The controller to unregister."),
         mutates=True, confirm=Confirm(question=_confirm_unregister_controller),
         help="Remove a controller's registration (kafka-cluster unregister-controller, KIP-1312, Kafka 4.4): for a "
              "controller that is stopped and out of the quorum for good, whose stale registration blocks feature "
              "upgrades.",
         description="Stop the controller and remove it from the voters first (remove-controller --unregister does "
                     "both). A running controller registers again at once.",
         examples=("unregister-controller --id 102 --yes", "unregister-controller --id 102 --dry-run"))
def unregister_controller(session: Session, args: dict) -> Result:
    controller = args["id"]
    cluster.require_controller_unregistration(session.conn)
    if args["dry_run"]:
        return Result.message(f"Would unregister controller {controller} ({controller_role(session, controller)}) (dry run).")
    cluster.unregister_controller(session.conn, controller)
    return Result.message(f"Controller {controller} is no longer registered.")


@command("list-brokers", help="Live brokers (in ZooKeeper mode the controller marked; in KRaft mode the "
                               "controllers are no brokers: see describe-controller).",
         examples=("list-brokers",), tables=("brokers",))
def list_brokers(session: Session, args: dict) -> Result:
    snap = session.conn.read([])   # ZooKeeper mode: Metadata names the controller broker, which is marked
    known = snap.controller.id if snap.controller.mode == ZOOKEEPER else -1
    rows = [[b.id, b.host, b.port, b.rack, "controller" if b.id == known else "broker"]
            for b in sorted(snap.brokers.values(), key=lambda b: b.id)]
    return Result.table(["Id", "Host", "Port", "Rack", "Role"], rows, name="brokers")


@command("api-versions",
         Option("--broker", type=broker_id, metavar="ID", completer="broker",
                help="Broker to ask (default: any live broker)."),
         help="The API versions a broker supports.",
         examples=("api-versions", "api-versions --broker 2"), tables=("api_versions",))
def api_versions(session: Session, args: dict) -> Result:
    if args["broker"] is not None:
        if absent := cluster.absent(session.conn, [args["broker"]]):
            raise failure_lines.absent_error(absent)
    rows = [[v.name, v.key, v.min_version, v.max_version] for v in cluster.api_versions(session.conn, args["broker"])]
    return Result.table(["Api", "Key", "MinVersion", "MaxVersion"], rows, name="api_versions")
