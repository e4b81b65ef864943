"""Cluster-wide reads: describe-cluster, list-brokers, api-versions (each reads the cluster when
it runs; the controller is the one Kafka's own rules name, see kafka_shell/router.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from collections import Counter

from kafka_shell.admin import cluster
from kafka_shell.option_types import broker_id
from kafka_shell.registry import Option, command
from kafka_shell.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.metadata import ClusterSnapshot
    from kafka_shell.session import Session


def _load(snapshot: ClusterSnapshot) -> tuple[Counter, Counter, set[int]]:
    """Replicas and leaders per broker, and broker ids that replicas name but metadata lacks."""
    replicas: Counter = Counter()
    leaders: Counter = Counter()
    for t in snapshot.topics.values():
        for p in t.partitions:
            replicas.update(p.replicas)
            if p.leader >= 0:
                leaders[p.leader] += 1
    return replicas, leaders, set(replicas) - set(snapshot.brokers)


@command("describe-cluster",
         help="Cluster id, controller, and each broker with its rack, partitions and leaders.",
         examples=("describe-cluster",))
def describe_cluster(session: Session, args: dict) -> Result:
    snap, refused = cluster.read_maybe_controller(session.conn)
    replicas, leaders, offline = _load(snap)
    partitions = sum(len(t.partitions) for t in snap.topics.values())
    c = snap.controller
    known = c.id >= 0 and refused is None
    summary = Table(["ClusterId", "Mode", "Controller", "ControllerEpoch", "Brokers", "Topics", "Partitions"],
                    [[snap.cluster_id, c.mode, c.id if known else None, c.epoch if known and c.epoch >= 0 else None,
                      len(snap.brokers), len(snap.topics), partitions]],
                    name="cluster")
    rows = [[b.id, b.host, b.port, b.rack, "online", replicas[b.id], leaders[b.id]]
            for b in sorted(snap.brokers.values(), key=lambda b: b.id)]
    rows += [[i, None, None, None, "offline", replicas[i], 0] for i in sorted(offline)]
    brokers = Table(["Id", "Host", "Port", "Rack", "Status", "Partitions", "Leaders"], rows, name="brokers")
    return Result(tables=[summary, brokers], messages=[refused] if refused else [])


@command("list-brokers", help="Live brokers (in ZooKeeper mode the controller marked; in KRaft mode the "
                               "controllers are no brokers: see describe-controller).",
         examples=("list-brokers",))
def list_brokers(session: Session, args: dict) -> Result:
    snap, refused = cluster.read_maybe_controller(session.conn, [])  # (ZooKeeper mode marks the controller broker)
    known = snap.controller_id if refused is None else -1
    rows = [[b.id, b.host, b.port, b.rack, "controller" if b.id == known else "broker"]
            for b in sorted(snap.brokers.values(), key=lambda b: b.id)]
    return Result.table(["Id", "Host", "Port", "Rack", "Role"], rows, name="brokers")


@command("api-versions",
         Option("--broker", type=broker_id, metavar="ID", completer="broker",
                help="Broker to ask (default: any live broker)."),
         help="The API versions a broker supports.",
         examples=("api-versions", "api-versions --broker 2"))
def api_versions(session: Session, args: dict) -> Result:
    if args["broker"] is not None:
        cluster.require_brokers(session.conn, [args["broker"]])
    rows = [[v.name, v.key, v.min_version, v.max_version] for v in cluster.api_versions(session.conn, args["broker"])]
    return Result.table(["Api", "Key", "MinVersion", "MaxVersion"], rows, name="api_versions")
