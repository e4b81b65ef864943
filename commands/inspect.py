"""Cluster inspection: describe-log-dirs (kafka-log-dirs), describe-quorum (kafka-metadata-quorum
describe) and describe-controller. Each asks the cluster directly (the cache does not hold these)
and says plainly when the cluster lacks the API.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from kafka_shell import controller_history

from kafka_shell.codes import ApiKey, Error
from kafka_shell.errors import KafkaCallError, kafka_error_message
from kafka_shell.metadata import KRAFT
from kafka_shell.operations import debug, read_topics, require_brokers, read_preferred_controller, response_error
from kafka_shell.registry import INT32_MAX, Option, command, int_range
from kafka_shell.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.session import Session



def id_list(text: str) -> list[int]:
    broker = int_range(0, INT32_MAX)
    try:
        ids = [broker(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"broker ids separated by commas, like 1,2,3 (each from 0 to {INT32_MAX})") from None
    if not ids:
        raise ValueError("broker ids separated by commas, like 1,2,3")
    return list(dict.fromkeys(ids))


def name_list(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise ValueError("topic names separated by commas, like a,b")
    return list(dict.fromkeys(names))


# -- describe-log-dirs -----------------------------------------------------------------------


@command("describe-log-dirs",
         Option("--broker-list", type=id_list, metavar="ID,ID", completer="broker",
                help="Brokers to describe (default: every live broker)."),
         Option("--topic-list", type=name_list, metavar="T,T", completer="topic",
                help="Only these topics' partitions (default: all)."),
         Option("--topic", repeatable=True, metavar="NAME", completer="topic",
                help="Only this topic's partitions, like --topic-list."),
         Option("--describe", flag=True, help="Accepted for kafka-log-dirs compatibility (the only action)."),
         topic_context=True, exclusive_groups=(("--topic", "--topic-list"),),
         help="Log directories of brokers: per dir and partition, size, offset lag and future replicas.",
         examples=("describe-log-dirs", "describe-log-dirs --broker-list 1,2 --topic-list orders"))
def describe_log_dirs(session: Session, args: dict) -> Result:
    conn = session.conn
    brokers = _brokers(session, args["broker_list"])
    topics = None
    names = list(dict.fromkeys([*(args["topic_list"] or []), *args["topic"]]))
    if names:
        topics = [{"topic": t.name, "partitions": [p.partition for p in t.partitions]}
                  for t in read_topics(session, names)[1]]
    conn.require(ApiKey.DESCRIBE_LOG_DIRS, "Describing log dirs")
    dirs, parts, failed = [], [], 0
    for b in brokers:
        debug(session, f"DescribeLogDirs request to broker {b}")
        answer = conn.broker_request(b, ApiKey.DESCRIBE_LOG_DIRS, {"topics": topics})
        top = answer.get("error_code", 0)
        if top and not answer.get("results"):  # the broker refused the request as a whole
            raise response_error(ApiKey.DESCRIBE_LOG_DIRS, top, entity=f"broker {b}")
        for d in answer.get("results", []):
            code = d["error_code"] or top
            error = kafka_error_message(code, "", "", entity=f"log dir {d['log_dir']}") if code else None
            failed += bool(code)
            dirs.append([b, d["log_dir"], error, _known(d.get("total_bytes")), _known(d.get("usable_bytes"))])
            for t in d["topics"]:
                for p in t["partitions"]:
                    parts.append([b, d["log_dir"], t["name"], p["partition_index"], p["partition_size"],
                                  p["offset_lag"], p["is_future_key"]])
    parts.sort(key=lambda r: (r[0], r[1], r[2], r[3]))
    return Result(tables=[
        Table(["Broker", "LogDir", "Error", "TotalBytes", "UsableBytes"], dirs, name="log_dirs",
              kinds={"TotalBytes": "bytes", "UsableBytes": "bytes"}),
        Table(["Broker", "LogDir", "Topic", "Partition", "Size", "OffsetLag", "IsFuture"], parts,
              name="partitions", kinds={"Size": "bytes"})],
        messages=[f"{failed} log dir(s) reported an error."] if failed else [], exit_code=1 if failed else 0)


def _brokers(session, wanted: list[int] | None) -> list[int]:
    if wanted is None:
        return sorted(session.conn.read([]).brokers)
    require_brokers(session, wanted)
    return wanted


def _known(value):
    """None (shown as -) for Kafka's "unknown" -1 and for versions without the field."""
    return None if value is None or value < 0 else value


# -- describe-quorum -------------------------------------------------------------------------


@command("describe-quorum",
         Option("--status", flag=True, help="The quorum's leader, epoch, high watermark and lag (default)."),
         Option("--replication", flag=True, help="Each voter and observer: log end offset, lag, last fetch."),
         exclusive_groups=(("--status", "--replication"),),
         help="The KRaft metadata quorum, like kafka-metadata-quorum describe.",
         examples=("describe-quorum --status", "describe-quorum --replication"))
def describe_quorum(session: Session, args: dict) -> Result:
    quorum = _quorum(session)
    # By id: Kafka answers in no stable order (the observers come from a hash map).
    voters, observers = (sorted(quorum[k], key=lambda r: r["replica_id"]) for k in ("current_voters", "observers"))
    leader = next((v for v in voters if v["replica_id"] == quorum["leader_id"]), None)
    leader_end = leader["log_end_offset"] if leader else quorum["high_watermark"]
    if args["replication"]:
        rows = [_replica_row(r, leader_end, status)
                for r, status in ([(leader, "Leader")] if leader else [])
                + [(v, "Follower") for v in voters if v is not leader]
                + [(o, "Observer") for o in observers]]
        return Result.table(["NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                             "LastCaughtUpTimestamp", "Status"], rows, name="replication",
                            kinds={"LastFetchTimestamp": "time", "LastCaughtUpTimestamp": "time"})
    laggard = min(voters, key=lambda v: v["log_end_offset"]) if voters else None
    lag = leader_end - laggard["log_end_offset"] if laggard else 0
    if laggard is None or laggard is leader:
        lag_ms = 0
    elif leader and leader["last_caught_up_timestamp"] >= 0 and laggard["last_caught_up_timestamp"] >= 0:
        lag_ms = leader["last_caught_up_timestamp"] - laggard["last_caught_up_timestamp"]
    else:
        lag_ms = -1
    endpoints = quorum["endpoints"]
    return Result.table(
        ["ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag", "MaxFollowerLagTimeMs",
         "CurrentVoters", "CurrentObservers"],
        [[session.conn.read([]).cluster_id, quorum["leader_id"], quorum["leader_epoch"], quorum["high_watermark"],
          lag, lag_ms, [_node(v, endpoints) for v in voters], [_node(o, endpoints) for o in observers]]],
        name="status", kinds={"MaxFollowerLagTimeMs": "ms"})


def _quorum(session) -> dict:
    """A fresh DescribeQuorum answer's __cluster_metadata partition, with `endpoints` (v2 nodes)."""
    debug(session, "DescribeQuorum request")
    quorum = session.conn.quorum()
    endpoints = {n["node_id"]: [f"{e['name']}://{e['host']}:{e['port']}" for e in n["listeners"]]
                 for n in quorum["nodes"]}
    return {**quorum, "endpoints": endpoints}


def _replica_row(r: dict, leader_end: int, status: str) -> list:
    return [r["replica_id"], _directory(r), r["log_end_offset"], leader_end - r["log_end_offset"],
            r.get("last_fetch_timestamp", -1), r.get("last_caught_up_timestamp", -1), status]


def _directory(r: dict) -> str | None:
    d = r.get("replica_directory_id")
    return None if d is None or str(d) == "00000000-0000-0000-0000-000000000000" else str(d)


def _node(r: dict, endpoints: dict) -> str:
    """Kafka's `{"id": 1, "directoryId": "...", "endpoints": [...]}` as one short text: 1@CONTROLLER://h:p."""
    where = endpoints.get(r["replica_id"])
    return f"{r['replica_id']}@{'|'.join(where)}" if where else str(r["replica_id"])


# -- describe-controller ---------------------------------------------------------------------


@command("describe-controller",
         help="The active controller: id, address, rack, epoch, and the preferred controller if one is set.",
         examples=("describe-controller",))
def describe_controller(session: Session, args: dict) -> Result:
    controller = session.conn.controller()  # KRaft: one DescribeQuorum gives id and epoch together
    if controller.id < 0:
        raise KafkaCallError("The cluster has no active controller right now; try again shortly.",
                             code=Error.not_controller)
    rack = None
    if controller.mode != KRAFT:  # a broker: Metadata knows its rack
        broker = session.conn.read([]).brokers.get(controller.id)
        rack = broker.rack if broker else None
    return Result.table(["Id", "Host", "Port", "Rack", "Mode", "ControllerEpoch", "PreferredController",
                         "HeldSince", "Voters"],
                        [[controller.id, controller.host, controller.port, rack, controller.mode,
                          controller.epoch if controller.epoch >= 0 else None, _or_none(read_preferred_controller(session)),
                          _held_since(session, controller),
                          _voters(session) if controller.mode == KRAFT else None]], name="controller")


def _held_since(session, controller) -> str | None:
    """Since when the controller has held the role without a change, as this shell saw it
    (`controller-history`: the first of the latest run of observations naming it)."""
    if session.conn.cluster_id is None:
        session.conn.read([])
    cluster_id = session.conn.cluster_id
    if not cluster_id:
        return None
    controller_history.observe(cluster_id, controller)
    since = None
    for entry in reversed(controller_history.load(cluster_id)):
        if entry.get("to") != controller.id or not isinstance(entry.get("time"), (int, float)):
            break
        since = entry["time"]
    return (datetime.datetime.fromtimestamp(since, datetime.UTC).isoformat(timespec="seconds")
            if since is not None else None)


def _voters(session) -> list[str]:
    """KRaft voters with their lag behind the leader's log end: `101 (lag 0)`."""
    quorum = session.conn.quorum()
    voters = quorum.get("current_voters", [])
    end = max((v.get("log_end_offset", -1) for v in voters), default=-1)
    return [f"{v['replica_id']} (lag {end - v['log_end_offset'] if v.get('log_end_offset', -1) >= 0 else '?'})"
            for v in voters]


def _or_none(broker_id: int | None) -> int | str:
    return "none" if broker_id is None else broker_id
