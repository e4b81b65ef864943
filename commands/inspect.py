"""Cluster inspection: describe-log-dirs (kafka-log-dirs), describe-quorum (kafka-metadata-quorum
describe) and describe-controller. Each asks the cluster directly (the cache does not hold these)
and says plainly when the cluster lacks the API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.connection import controller_history, sandbox_client
from kafka_shell.declarations import failure_lines
from kafka_shell.admin import cluster, configs, features, log_dirs, quorum, topics
from kafka_shell.base.errors import KafkaCallError, NotSupported
from kafka_shell.connection.metadata import KRAFT
from kafka_shell.declarations.option_types import broker_ids
from kafka_shell.declarations.registry import Option, command
from kafka_shell.declarations.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.metadata import ControllerInfo
    from kafka_shell.connection.session import Session


def name_list(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise ValueError("topic names separated by commas, like a,b")
    return list(dict.fromkeys(names))


# -- describe-log-dirs -----------------------------------------------------------------------


@command("describe-log-dirs",
         Option("--broker-list", type=broker_ids, metavar="ID,ID", completer="broker",
                help="Brokers to describe (default: every live broker)."),
         Option("--topic-list", type=name_list, metavar="T,T", completer="topic",
                help="Only these topics' partitions (default: all)."),
         Option("--topic", repeatable=True, metavar="NAME", completer="topic",
                help="Only this topic's partitions, like --topic-list."),
         Option("--describe", flag=True, help="Accepted for kafka-log-dirs compatibility (the only action)."),
         topic_context=True, context_narrows=True, context_without=("--broker-list",),
         exclusive_groups=(("--topic", "--topic-list"),),
         help="Log directories of brokers: per dir and partition, size, offset lag and future replicas.",
         description=("As kafka-log-dirs --describe. Per dir also whether it is cordoned (KIP-1066, Kafka 4.3+: "
                      "no new replica lands there; see cordon), where the cluster tells."),
         examples=("describe-log-dirs", "describe-log-dirs --broker-list 1,2 --topic-list orders"), tables=("log_dirs", "partitions"))
def describe_log_dirs(session: Session, args: dict) -> Result:
    conn = session.conn
    brokers = _brokers(session, args["broker_list"])
    wanted = None
    names = list(dict.fromkeys([*(args["topic_list"] or []), *args["topic"]]))
    if names:
        wanted = {t.name: [p.partition for p in t.partitions] for t in topics.read_topics(conn, names)[1]}
    found = log_dirs.describe(conn, brokers, wanted)
    unanswered = failure_lines.log_dir_lines(found.errors)
    if unanswered and not found.rows:   # no broker described its log dirs: one line says why
        raise KafkaCallError(" ".join(dict.fromkeys(unanswered)))
    dirs = [[d.broker, d.path, failure_lines.log_dir_error_line(d.path, d.error) if d.error else None,
             d.total_bytes, d.usable_bytes, d.cordoned] for d in found.dirs]
    parts = sorted(([d.broker, d.path, r.topic, r.partition, r.size, r.offset_lag, r.is_future]
                    for d in found.dirs for r in d.replicas), key=lambda r: (r[0], r[1], r[2], r[3]))
    failed = sum(1 for d in found.dirs if d.error)
    messages = [f"{failed} log dir(s) reported an error."] if failed else []
    messages += unanswered
    return Result(tables=[
        Table(["Broker", "LogDir", "Error", "TotalBytes", "UsableBytes", "Cordoned"], dirs, name="log_dirs",
              kinds={"TotalBytes": "bytes", "UsableBytes": "bytes"}),
        Table(["Broker", "LogDir", "Topic", "Partition", "Size", "OffsetLag", "IsFuture"], parts,
              name="partitions", kinds={"Size": "bytes"})],
        messages=messages, exit_code=1 if failed or found.errors else 0)


def _brokers(session: Session, wanted: list[int] | None) -> list[int]:
    if wanted is None:
        return sorted(session.conn.read([]).brokers)
    if absent := cluster.absent(session.conn, wanted):
        raise failure_lines.absent_error(absent)
    return wanted


# -- describe-quorum -------------------------------------------------------------------------


@command("describe-quorum",
         Option("--status", flag=True, help="The quorum's leader, epoch, high watermark and lag (default)."),
         Option("--replication", flag=True, help="Each voter and observer: log end offset, lag, last fetch."),
         exclusive_groups=(("--status", "--replication"),),
         help="The KRaft metadata quorum, like kafka-metadata-quorum describe.",
         examples=("describe-quorum --status", "describe-quorum --replication"), tables=("status", "replication"))
def describe_quorum(session: Session, args: dict) -> Result:
    q = quorum.describe(session.conn)
    leader = q.leader
    leader_end = leader.log_end_offset if leader else q.high_watermark
    if args["replication"]:
        rows = [[*_replica_row(r, leader_end, status), ",".join(q.endpoints(r.replica_id)) or None]
                for r, status in ([(leader, "Leader")] if leader else [])
                + [(v, "Follower") for v in q.voters if v is not leader]
                + [(o, "Observer") for o in q.observers]]
        return Result.table(["NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                             "LastCaughtUpTimestamp", "Status", "Endpoints"], rows, name="replication",
                            kinds={"LastFetchTimestamp": "time", "LastCaughtUpTimestamp": "time"})
    laggard = min(q.voters, key=lambda v: v.log_end_offset) if q.voters else None
    lag = leader_end - laggard.log_end_offset if laggard else 0
    if laggard is None or laggard is leader:
        lag_ms = 0
    elif leader and leader.last_caught_up_timestamp >= 0 and laggard.last_caught_up_timestamp >= 0:
        lag_ms = leader.last_caught_up_timestamp - laggard.last_caught_up_timestamp
    else:
        lag_ms = -1
    return Result.table(
        ["ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag", "MaxFollowerLagTimeMs",
         "CurrentVoters", "CurrentObservers", "KraftVersion"],
        [[cluster.cluster_id(session.conn), q.leader_id, q.leader_epoch, q.high_watermark,
          lag, lag_ms, [_node(v, q) for v in q.voters], [_node(o, q, False) for o in q.observers],
          _kraft_version(session)]],
        name="status")


def _kraft_version(session: Session) -> int | None:
    """The finalized kraft.version (1: a dynamic quorum, KIP-853); None when the node does not tell."""
    try:
        found = features.describe(session.conn).get(features.KRAFT_VERSION)
    except NotSupported:
        return None
    return found.finalized if found else 0


def _replica_row(r: quorum.QuorumReplica, leader_end: int, status: str) -> list:
    return [r.replica_id, r.directory_id, r.log_end_offset, leader_end - r.log_end_offset,
            r.last_fetch_timestamp, r.last_caught_up_timestamp, status]


def _node(r: quorum.QuorumReplica, q: quorum.Quorum, directory: bool = True) -> str:
    """Kafka's `{"id": 1, "directoryId": "...", "endpoints": [...]}` as one short text:
    1@CONTROLLER://h:p (dir ZLgh-CD8QfGsKlZG39bUrQ). Observers go without their directory ids
    (--replication has them): the voters' are what a quorum change needs."""
    where = q.endpoints(r.replica_id)
    text = f"{r.replica_id}@{'|'.join(where)}" if where else str(r.replica_id)
    return f"{text} (dir {r.directory_id})" if r.directory_id and directory else text


# -- describe-controller ---------------------------------------------------------------------


@command("describe-controller",
         help="The active controller: id, address, rack, epoch, and the preferred controller if one is set.",
         examples=("describe-controller",), tables=("controller",))
def describe_controller(session: Session, args: dict) -> Result:
    controller = cluster.active_controller(session.conn)  # KRaft: one DescribeQuorum gives id and epoch
    if controller is None:
        raise failure_lines.no_controller_error()
    rack = None
    if controller.mode != KRAFT:  # a broker: Metadata knows its rack
        broker = session.conn.read([]).brokers.get(controller.id)
        rack = broker.rack if broker else None
    return Result.table(["Id", "Host", "Port", "Rack", "Mode", "ControllerEpoch", "PreferredController",
                         "HeldSince", "SeenSince", "Voters"],
                        [[controller.id, controller.host, controller.port, rack, controller.mode,
                          controller.epoch if controller.epoch >= 0 else None,
                          configs.read_preferred_controller(session.conn),
                          _held_since(session, controller), _seen_since(session, controller),
                          _voters(session) if controller.mode == KRAFT else None]], name="controller",
                        kinds={"HeldSince": "datetime", "SeenSince": "datetime", "PreferredController": "id"})


def _held_since(session: Session, controller: ControllerInfo) -> int | None:
    """When the controller took the role (epoch ms), from the cluster's own record where it
    keeps one (a sandbox): Kafka tells no such time, and when this shell first saw it is not it
    (that is `SeenSince`)."""
    changes = sandbox_client.controller_changes(session.target, session.sandbox)
    took = [e for e in changes or () if e.get("to") == controller.id]
    return round(took[-1]["time"] * 1000) if took else None


def _seen_since(session: Session, controller: ControllerInfo) -> int | None:
    """Since when this shell has seen the controller hold the role without a change (epoch ms;
    `controller-history`: the first of the latest run of observations naming it)."""
    cluster_id = session.conn.cluster_id or cluster.cluster_id(session.conn)
    if not cluster_id:
        return None
    controller_history.observe(cluster_id, controller)
    since = None
    for entry in reversed(controller_history.load(cluster_id)):
        if entry.get("to") != controller.id or not isinstance(entry.get("time"), (int, float)):
            break
        since = entry["time"]
    return round(since * 1000) if since is not None else None


def _voters(session: Session) -> list[str]:
    """KRaft voters with their lag behind the leader's log end: `101 (lag 0)`."""
    voters = quorum.describe(session.conn).voters
    end = max((v.log_end_offset for v in voters), default=-1)
    return [f"{v.replica_id} (lag {end - v.log_end_offset if v.log_end_offset >= 0 else '?'})" for v in voters]
