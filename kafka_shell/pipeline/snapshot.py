"""Take one snapshot of a cluster (see `schema` for the format) through the session's
connection and the admin layer: one Metadata read (with the active controller), one
DescribeLogDirs per live broker (all at once), ListOffsets (earliest and latest) batched per
leader, DescribeTopicPartitions only where an ELR can exist, the replica log ends of offline
partitions, one DescribeConfigs for every topic, and the consumer groups' committed offsets
(batched per coordinator). No per-partition calls.

A broker that is down does not stop the snapshot: what it would have told is left out, the
manifest records it under `brokers_down` (with why), and stderr says it. A node that is up but
does not answer (a hung broker, a coordinator) leaves the snapshot partial: what is missing is
said on stderr and listed in the manifest under `left_out`, and the command exits 1.
"""

from __future__ import annotations

import contextlib
import datetime
import gc
import itertools
import operator
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_shell.declarations import failure_lines
from kafka_shell.admin import cluster, configs, groups, log_dirs, offsets, recovery, topics
from kafka_shell.admin.offsets import EARLIEST, LATEST
from kafka_shell.base.answers import Answers
from kafka_shell.base.errors import ShellError
from kafka_shell.connection.metadata import ClusterSnapshot, PartitionInfo

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_shell.connection.session import Session

Key = tuple[str, int]


def take(session: Session, root: Path) -> tuple[Path, list[str]]:
    """Read the cluster once and write the snapshot under `root`; returns its directory and
    what is missing from it because a node that is up did not answer (one line each)."""
    # What a snapshot reads stays alive until it is written (millions of objects for 100,000
    # partitions: entities, rows, columns), so the collector's walks over it find nothing to
    # free, and cost 0.5 s of such a snapshot. It walks again afterwards.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _take(session, root)
    finally:
        if collecting:
            gc.enable()


def _take(session: Session, root: Path) -> tuple[Path, list[str]]:
    import pyarrow as pa

    from kafka_shell.pipeline import schema
    started = time.monotonic()
    now = datetime.datetime.now(datetime.UTC)
    taken_at = now.replace(microsecond=now.microsecond // 1000 * 1000)  # Parquet keeps milliseconds
    conn = session.conn
    left_out: list[str] = []
    snap, refused, partial = cluster.read_maybe_controller(conn)
    if refused and partial:
        left_out.append(failure_lines.controller_unshown_line(refused, partial))
    elif refused:   # the principal may not see it: that is no missing answer
        session.stderr.write(failure_lines.controller_unshown_line(refused, partial) + "\n")
    controller = snap.controller if refused is None else None
    cluster_id = snap.cluster_id or "unknown-cluster"
    parts = [p for _, t in sorted(snap.topics.items()) for p in t.partitions]
    down = _down_brokers(session, snap, left_out)
    dirs, refusing, unanswered = _log_dirs(session, sorted(set(snap.brokers) - set(down)))
    down.update(refusing)   # a broker that refused the connection is down: what it leads is not missing
    left_out += unanswered
    live = set(snap.brokers) - set(down)
    log_ends = _offline_log_ends(session, snap, [p for p in parts if p.leader < 0 or p.leader not in live], live,
                                 left_out)
    online = [(p.topic, p.partition) for p in parts if p.leader in live]
    key = {"cluster_id": cluster_id, "taken_at": taken_at}

    def table(name: str, columns: dict[str, list]) -> pa.Table:
        given = schema.given(name)
        n = len(next(iter(columns.values()))) if columns else 0
        # One value in every row: repeated as an Arrow value, not converted row by row (a
        # datetime each: 0.1 s for the 300,000 replicas of 100,000 partitions)
        full = {**{k: pa.repeat(pa.scalar(v, given.field(k).type), n) for k, v in key.items()}, **columns}
        return pa.table(full, schema=given)

    from concurrent.futures import ThreadPoolExecutor
    with _pandas_not_imported(), ThreadPoolExecutor(1) as pool:
        # The leaders answer the log offsets (the longest wait) while this thread makes the
        # replicas' table and reads the rest.
        asked = pool.submit(_offsets, session, snap, online)
        replicas = table("replicas", _replica_columns(dirs, log_ends, schema.given("replicas"))).sort_by(REPLICA_ORDER)
        elr = {key: list(lists[0]) for key, lists
               in topics.eligible_leaders(conn, [t for _, t in sorted(snap.topics.items())]).items()}
        settings = configs.topic_configs(conn, sorted(snap.topics))
        groups_left_out: list[str] = []
        committed = _group_offsets(session, groups_left_out)
        offset_columns = _offset_columns(online, *asked.result(), left_out)
        left_out += groups_left_out
        for broker, why in sorted(down.items()):
            session.stderr.write(f"Broker {broker} is down ({why}): what it holds is left out.\n")
        for line in left_out:
            session.stderr.write(line + "\n")
        no_config = configs.TopicConfig({}, 1)
        topic_rows = [(t.name, str(t.topic_id) if t.topic_id else None, len(t.partitions),
                       len(t.partitions[0].replicas) if t.partitions else 0, settings.get(t.name, no_config))
                      for _, t in sorted(snap.topics.items())]
        tables = {
            "cluster": table("cluster", {"mode": [conn.mode or ""], "controller_id": [controller.id if controller else -1],
                                         "controller_epoch": [controller.epoch if controller else -1]}),
            "brokers": table("brokers", _columns(["broker_id", "host", "port", "rack", "state"],
                                                 [(b.id, b.host, b.port, b.rack, "live") for _, b in sorted(snap.brokers.items())])),
            "topics": table("topics", _columns(["topic", "topic_id", "partitions", "replication_factor", "configs", "min_isr"],
                                               [(*r[:4], list(r[4].overrides.items()), r[4].min_isr) for r in topic_rows])),
            "partitions": table("partitions", _partition_columns(parts, elr)),
            "replicas": replicas,
            "log_dirs": table("log_dirs", _columns(["broker_id", "log_dir", "total_bytes", "usable_bytes"],
                                                   [(d.broker, d.path, d.total_bytes, d.usable_bytes) for d in dirs])),
            "offsets": table("offsets", offset_columns),
            "group_offsets": table("group_offsets", _columns(["group", "topic", "partition", "committed_offset"], committed)),
        }
        manifest = {"cluster_id": cluster_id, "mode": conn.mode or "", "taken_at": taken_at.isoformat(),
                    "taken_at_ms": int(taken_at.timestamp() * 1000), "controller_id": controller.id if controller else -1,
                    "controller_epoch": controller.epoch if controller else -1, "source": "kafka-shell snapshot",
                    "brokers_down": {str(b): why for b, why in sorted(down.items())}, "left_out": left_out,
                    "seconds": round(time.monotonic() - started, 3)}
        return schema.write_snapshot(schema.snapshot_dir(root, cluster_id, taken_at), tables, manifest), left_out


@contextlib.contextmanager
def _pandas_not_imported() -> Iterator[None]:
    """pyarrow looks for pandas when it converts or computes, to know pandas objects when it
    meets them, and imports it when installed (the pipeline extra has it, for Spark Connect):
    0.4 s of a one-shot snapshot, whose tables hold no pandas objects. So while they are made
    and written, pandas cannot be imported (pyarrow then takes it as absent; a later
    conversion to pandas imports it)."""
    import sys
    if "pandas" in sys.modules:
        yield
        return
    sys.meta_path.insert(0, _NoPandas)  # type: ignore[arg-type]
    try:
        yield
    finally:
        sys.meta_path.remove(_NoPandas)  # type: ignore[arg-type]


class _NoPandas:
    @staticmethod
    def find_spec(name: str, path: Any, target: Any = None) -> None:
        if name == "pandas":
            raise ImportError("pandas is not imported while a snapshot's tables are written")


# The two large tables are built a column at a time (a list of 100,000s of values each), not a
# row at a time: no tuple per row.

def _partition_columns(parts: list[PartitionInfo], elr: dict[Key, list[int]]) -> dict[str, list]:
    return {"topic": [p.topic for p in parts], "partition": [p.partition for p in parts],
            "leader": [p.leader for p in parts], "leader_epoch": [p.leader_epoch for p in parts],
            "replicas": [p.replicas for p in parts], "isr": [p.isr for p in parts],
            "elr": [elr.get((p.topic, p.partition), ()) for p in parts] if elr else [()] * len(parts),
            "offline_replicas": [p.offline_replicas for p in parts]}


def _replica_columns(dirs: list[log_dirs.LogDir], log_ends: dict[tuple[str, int, int], tuple[int, int]],
                     given: pa.Schema) -> dict[str, Any]:
    """Every replica in `dirs` (not a future one), as the columns of the `given` schema, in the
    order the brokers listed them (the table is sorted after, by REPLICA_ORDER)."""
    import pyarrow as pa
    columns: dict[str, list] = {"topic": [], "partition": [], "size": [], "offset_lag": []}
    brokers, paths, ends = [], [], []
    for d in dirs:
        replicas = [r for r in d.replicas if not r.is_future]
        if replicas:
            topic, partition, size, lag, _ = zip(*replicas)
            columns["topic"] += topic
            columns["partition"] += partition
            columns["size"] += size
            columns["offset_lag"] += lag
            # The dir's broker and path in each of its rows: repeated as Arrow values, not listed
            brokers.append(pa.repeat(pa.scalar(d.broker, given.field("broker_id").type), len(replicas)))
            paths.append(pa.repeat(pa.scalar(d.path, given.field("log_dir").type), len(replicas)))
            if log_ends:
                ends += [log_ends.get((t, p, d.broker), (None, None)) for t, p in zip(topic, partition)]
    unknown = [None] * len(columns["topic"])
    return {**columns,
            "broker_id": pa.concat_arrays(brokers) if brokers else pa.array([], given.field("broker_id").type),
            "log_end_offset": [e[0] for e in ends] if log_ends else unknown,
            "last_epoch": [e[1] for e in ends] if log_ends else unknown,
            "log_dir": pa.concat_arrays(paths) if paths else pa.array([], given.field("log_dir").type)}


# Sorted by Arrow (in C++, without the GIL): a third of the time of sorting 300,000 rows in Python.
REPLICA_ORDER = [("topic", "ascending"), ("partition", "ascending"), ("broker_id", "ascending")]


def _columns(names: list[str], rows: Iterable[tuple]) -> dict[str, list]:
    rows = list(rows)
    return {n: [r[i] for r in rows] for i, n in enumerate(names)}


def _down_brokers(session: Session, snap: ClusterSnapshot, left_out: list[str]) -> dict[int, str]:
    """Brokers the cluster knows that are not up: registered but fenced (KRaft), or named by
    replica sets while no live broker has the id."""
    try:
        fenced = cluster.registrations(session.conn, snap).fenced
    except ShellError as exc:  # the registrations are a detail: the snapshot goes on without them
        left_out.append(f"The brokers' registrations are left out ({exc}).")
        fenced = {}
    down = {b: "fenced" for b in fenced}
    named = set(itertools.chain.from_iterable(p.replicas for t in snap.topics.values() for p in t.partitions))
    down.update({b: "not live" for b in sorted(named - set(snap.brokers) - set(down))})
    return down


def _log_dirs(session: Session, brokers: list[int]) -> tuple[list[log_dirs.LogDir], dict[int, str], list[str]]:
    """The log dirs of `brokers`; the brokers that refused the connection (they are down:
    Metadata lists a stopped broker until it is fenced), with why; and a line for each broker
    that did not answer (the snapshot is partial). One DescribeLogDirs per live broker, all at
    once."""
    if not log_dirs.supported(session.conn):
        return [], {}, []
    found = log_dirs.describe(session.conn, brokers)
    refused: dict[int, str] = {}
    unanswered: list[str] = []
    for b, error in sorted(found.errors.items()):
        line = failure_lines.log_dir_lines({b: error})[0]
        if "refused" in str(error):
            refused[b] = line.removeprefix(f"Broker {b} ")
        else:
            unanswered.append(f"{line}: its replicas and log dirs are left out.")
    return found.dirs, refused, unanswered


def _offsets(session: Session, snap: ClusterSnapshot, keys: list[Key]
             ) -> tuple[Answers[Key, offsets.LogOffset], Answers[Key, offsets.LogOffset]]:
    """(log starts, log ends) of `keys`, asked of each leader for all it leads: both at once, so
    that one is built and read while the leaders answer the other."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(1) as pool:
        asked = pool.submit(offsets.log_offsets, session.conn, snap, keys, EARLIEST)
        try:
            end = offsets.log_offsets(session.conn, snap, keys, LATEST)
        finally:
            start = asked.result()   # its failure first, as when they were asked one after the other
    return start, end


_first, _second = operator.itemgetter(0), operator.itemgetter(1)


def _offset_columns(keys: list[Key], start: Answers[Key, offsets.LogOffset], end: Answers[Key, offsets.LogOffset],
                    left_out: list[str]) -> dict[str, list]:
    """The offsets table of `keys` (sorted), as columns; a line in `left_out` for the partitions
    whose leader did not tell both offsets."""
    starts, ends = start.rows, end.rows
    if len(starts) == len(ends) == len(keys):
        # Every partition told both (the rows are in the order of `keys`): taken as they are.
        return {"topic": list(map(_first, keys)), "partition": list(map(_second, keys)),
                "log_start_offset": list(map(_first, starts.values())), "log_end_offset": list(map(_first, ends.values()))}
    told = [k for k in keys if k in starts and k in ends]
    if len(told) < len(keys):
        errors = {k: e for k in keys if (e := end.errors.get(k) or start.errors.get(k)) is not None}
        why = failure_lines.partition_lines(errors)
        left_out.append(f"The leaders did not list the offsets of {len(keys) - len(told)} partition(s) "
                        f"({'; '.join(why)}); they are left out.")
    return {"topic": [k[0] for k in told], "partition": [k[1] for k in told],
            "log_start_offset": [starts[k].offset for k in told], "log_end_offset": [ends[k].offset for k in told]}


def _offline_log_ends(session: Session, snap: ClusterSnapshot, offline: list[PartitionInfo],
                      live: set[int], left_out: list[str]) -> dict[tuple[str, int, int], tuple[int, int]]:
    """(topic, partition, broker) -> (log end offset, leader epoch) of the live replicas of
    offline partitions: what the recovery plan chooses by. GetReplicaLogInfo (KAFKA-20098)
    where the cluster has it (the epoch of the last write), else ListOffsets with replica id -2
    (the broker's current epoch)."""
    wanted: dict[int, list[Key]] = {}
    for p in offline:
        for b in p.replicas:
            if b in live:
                wanted.setdefault(b, []).append((p.topic, p.partition))
    if not wanted:
        return {}
    path = recovery.DESIGNATED_PATH if offsets.has_replica_log_info(session.conn) else recovery.STOCK_PATH
    told = recovery.replica_logs(session.conn, snap, wanted, path)
    for broker in sorted(wanted):
        if not any((broker, k) in told for k in wanted[broker]):
            left_out.append(f"Broker {broker} did not tell its log ends: they are left out.")
    return {(t, p, broker): (a.log_end, a.epoch) for (broker, (t, p)), a in told.items() if a.error is None}


def _group_offsets(session: Session, left_out: list[str]) -> list[tuple[str, str, int, int]]:
    """(group, topic, partition, committed offset) of every consumer group, batched per
    coordinator; a group whose coordinator does not answer is left out (and said)."""
    listed = groups.list_groups(session.conn)
    left_out += [f"{line}; its groups are left out." for line in failure_lines.group_listing_lines(listed.errors)]
    ids = [g.group_id for g in listed.groups]
    rows: list[tuple[str, str, int, int]] = []
    committed = offsets.committed(session.conn, ids, wait_for_coordinators=False) if ids else Answers()
    for gid, error in committed.errors.items():
        left_out.append(f"Group {gid}: {failure_lines.group_lines({gid: error})[0]}; left out.")
    for gid, held in committed.rows.items():
        rows += [(gid, t, p, offset) for (t, p), offset in held.items()]
    return sorted(rows)


def summary(directory: Path) -> dict[str, Any]:
    import json

    from kafka_shell.pipeline.schema import MANIFEST
    return json.loads((directory / MANIFEST).read_text())


def partition_rates(root: Path, cluster_id: str) -> dict[Key, float]:
    """Bytes written per second to each partition, from the two latest snapshots of the cluster
    under `root`: the records its log end gained between them over the time between them, times
    the bytes per record its log held in the latest (its largest replica over its records)."""
    import pyarrow.parquet as pq

    from kafka_shell.pipeline import schema
    taken = [m for m in schema.find_snapshots(root) if m["cluster_id"] == cluster_id]
    if len(taken) < 2:
        raise ValueError(f"it holds {len(taken)} snapshot(s) of cluster {cluster_id}: two are needed "
                         "(take them with snapshot, a while apart)")
    older, newer = taken[-2:]
    seconds = (newer["taken_at_ms"] - older["taken_at_ms"]) / 1000
    if seconds <= 0:
        raise ValueError("its two latest snapshots were taken at the same time")

    def ends(manifest: dict) -> dict[Key, tuple[int, int]]:
        t = pq.read_table(Path(manifest["path"]) / "offsets.parquet",
                          columns=["topic", "partition", "log_start_offset", "log_end_offset"]).to_pydict()
        return {(tp, p): (s, e) for tp, p, s, e in zip(t["topic"], t["partition"], t["log_start_offset"],
                                                        t["log_end_offset"]) if s is not None and e is not None}
    before, after = ends(older), ends(newer)
    sizes: dict[Key, int] = {}
    replicas = pq.read_table(Path(newer["path"]) / "replicas.parquet", columns=["topic", "partition", "size"]).to_pydict()
    for tp, p, size in zip(replicas["topic"], replicas["partition"], replicas["size"]):
        if size is not None and size > sizes.get((tp, p), -1):
            sizes[(tp, p)] = size
    rates = {}
    for key, (start, end) in after.items():
        if key in before:
            per_record = sizes.get(key, 0) / (end - start) if end > start else 0.0
            rates[key] = max(0, end - before[key][1]) / seconds * per_record
    return rates
