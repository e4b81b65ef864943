"""Cluster-wide reads: describe-cluster, list-brokers, api-versions (from the cache where it can)."""

from __future__ import annotations

from collections import Counter

from commands.topics import require_brokers
from kafka_shell.registry import INT32_MAX, Option, command, int_range
from kafka_shell.render import Result, Table


def _load(snapshot) -> tuple[Counter, Counter, set[int]]:
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
def describe_cluster(session, args: dict) -> Result:
    snap = session.snapshot
    replicas, leaders, offline = _load(snap)
    partitions = sum(len(t.partitions) for t in snap.topics.values())
    cluster = Table(["ClusterId", "Controller", "Brokers", "Topics", "Partitions"],
                    [[snap.cluster_id, snap.controller_id, len(snap.brokers), len(snap.topics), partitions]],
                    name="cluster")
    rows = [[b.id, b.host, b.port, b.rack, "online", replicas[b.id], leaders[b.id]]
            for b in sorted(snap.brokers.values(), key=lambda b: b.id)]
    rows += [[i, None, None, None, "offline", replicas[i], 0] for i in sorted(offline)]
    brokers = Table(["Id", "Host", "Port", "Rack", "Status", "Partitions", "Leaders"], rows, name="brokers")
    return Result(tables=[cluster, brokers])


@command("list-brokers", help="Brokers in the cluster (the controller marked).",
         examples=("list-brokers",))
def list_brokers(session, args: dict) -> Result:
    snap = session.snapshot
    rows = [[b.id, b.host, b.port, b.rack, "controller" if b.id == snap.controller_id else "broker"]
            for b in sorted(snap.brokers.values(), key=lambda b: b.id)]
    return Result.table(["Id", "Host", "Port", "Rack", "Role"], rows)


@command("api-versions",
         Option("--broker", type=int_range(0, INT32_MAX, "a broker id"), metavar="ID", completer="broker",
                help="Broker to ask (default: the controller)."),
         help="The API versions a broker supports.",
         examples=("api-versions", "api-versions --broker 2"))
def api_versions(session, args: dict) -> Result:
    from kafka_shell.protocol import api_name
    if args["broker"] is not None:
        require_brokers(session, [args["broker"]])
    versions = session.conn.api_versions(args["broker"])
    rows = [[api_name(key), key, r.start, r.stop - 1] for key, r in sorted(versions.items())]
    return Result.table(["Api", "Key", "MinVersion", "MaxVersion"], rows)
