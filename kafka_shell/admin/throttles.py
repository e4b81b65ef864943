"""Replication throttles of reassignments: Kafka's config values, and the record of the throttles
kafka-shell set, so that a later shell session (a `--verify`, `--cancel` or `--blocking` run
after this process ended) removes them once the moves they served are over.

The record is one JSON file in the user's data dir (`$KAFKA_SHELL_DATA_DIR`, else
`$XDG_DATA_HOME/kafka-shell`), keyed by cluster id:

    {"<cluster id>": {"rate": 1000000, "brokers": [1, 2, 3],
                      "topics": {"t": {"leader": ["0:1", "0:2"], "follower": ["0:3"]}},
                      "partitions": ["t:0"],
                      "log_dirs": {"rate": 500000, "brokers": [1]}}}

`log_dirs` (optional) is the throttle of moves between the log dirs of a broker
(replica.alter.log.dirs.io.max.bytes.per.second), set on the brokers whose replicas move.

Setting and clearing them on the cluster is here too (reassign-partitions, balance and
drain-broker share it); what was done comes back as values (`Cleared`, the brokers not
reached), and the lines people read are made in kafka_shell/declarations/reassignment_lines.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.base.errors import ShellError
from kafka_shell.base.files import read_json_object, update_json_owned
from kafka_shell.base.paths import data_dir

from kafka_shell.admin import configs, log_dirs, reassignments
from kafka_shell.admin.runs import key_of

if TYPE_CHECKING:
    from kafka_shell.admin.reassignments import Move
    from kafka_shell.connection.manager import ConnectionManager

RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
FILE_NAME = "reassignment-throttles.json"
LOG_DIR_RATE_KEY = "replica.alter.log.dirs.io.max.bytes.per.second"
LOG_DIRS = "log_dirs"
Key = tuple[str, int]


def needed(current: dict[tuple[str, int], list[int]], target: dict[tuple[str, int], list[int]],
           rate: int) -> dict:
    """A record of the throttles for moving `current` to `target` (Kafka's choice: the rate on
    every broker involved; leader throttles on the replicas that send, follower throttles on
    the replicas being added, as `partition:broker` entries per topic)."""
    brokers: set[int] = set()
    topics: dict[str, dict[str, list[str]]] = {}
    partitions = []
    for (topic, p), new in sorted(target.items()):
        old = current[(topic, p)]
        if list(old) == list(new):
            continue
        partitions.append(f"{topic}:{p}")
        brokers |= set(old) | set(new)
        entry = topics.setdefault(topic, {"leader": [], "follower": []})
        entry["leader"] += [f"{p}:{b}" for b in old]
        entry["follower"] += [f"{p}:{b}" for b in new if b not in old]
    return {"rate": rate, "brokers": sorted(brokers), "topics": topics, "partitions": partitions}


def merge(old: dict | None, new: dict) -> dict:
    """Throttles of an --additional reassignment join those already set (the newer rate wins);
    a log dir throttle already recorded stays."""
    if not old:
        return new
    if old.get(LOG_DIRS):
        new = {**new, LOG_DIRS: old[LOG_DIRS]}
    if not old["brokers"] and not old["topics"]:   # only a log dir throttle was recorded
        return new
    topics = {t: {side: list(v) for side, v in e.items()} for t, e in old["topics"].items()}
    for t, e in new["topics"].items():
        mine = topics.setdefault(t, {"leader": [], "follower": []})
        for side in ("leader", "follower"):
            mine[side] = list(dict.fromkeys(mine[side] + e[side]))
    merged = {"rate": new["rate"], "brokers": sorted(set(old["brokers"]) | set(new["brokers"])),
              "topics": topics, "partitions": list(dict.fromkeys(old["partitions"] + new["partitions"]))}
    return {**merged, LOG_DIRS: new[LOG_DIRS]} if new.get(LOG_DIRS) else merged


def with_log_dir_throttle(old: dict | None, brokers: list[int], rate: int) -> dict:
    """The record with the log dir throttle of `brokers` added (the newer rate wins)."""
    base = old or {"rate": None, "brokers": [], "topics": {}, "partitions": []}
    known = (base.get(LOG_DIRS) or {}).get("brokers", [])
    return {**base, LOG_DIRS: {"rate": rate, "brokers": sorted(set(known) | set(brokers))}}


def topic_values(entry: dict) -> dict[str, str]:
    """The two topic configs of one record entry, in Kafka's `partition:broker,...` format."""
    return {LEADER_REPLICAS: ",".join(entry["leader"]), FOLLOWER_REPLICAS: ",".join(entry["follower"])}


# -- the record file ---------------------------------------------------------------------------


def record_path() -> Path:
    return data_dir() / FILE_NAME


def load(cluster_id: str) -> dict | None:
    return read_json_object(record_path()).get(cluster_id)


def save(cluster_id: str, record: dict | None) -> None:
    """Write (or with None, drop) the cluster's record, atomically, readable by its owner only."""
    update_json_owned(record_path(), cluster_id, record)


# -- on the cluster ------------------------------------------------------------------------------


def cluster_key(conn: ConnectionManager) -> str:
    """Where the shell keeps a cluster's record: its id, as read from the cluster (the cache of a
    one-shot run may not hold it yet, and a key that differs loses the record)."""
    return conn.cluster_id or conn.read([]).cluster_id or conn.bootstrap


def _alter_brokers(conn: ConnectionManager, brokers: list[int], set_: dict[str, str], delete: list[str]) -> list[int]:
    """Set or delete configs of each broker: the brokers that could not be reached (a down broker
    must not stop a move, nor the others' clean-up; Kafka's tool fails here)."""
    unreachable = []
    for b in brokers:
        try:
            configs.alter_or_fail(conn, configs.BROKERS, [str(b)], set_, delete, False)
        except ShellError:
            unreachable.append(b)
    return unreachable


def set_replication(conn: ConnectionManager, record: dict) -> list[int]:
    """Record, then set, the throttles of a move (`needed`; merged with those an earlier move
    left): the brokers that could not be throttled."""
    key = cluster_key(conn)
    merged = merge(load(key), record)
    save(key, merged)
    for topic in record["topics"]:
        configs.alter_or_fail(conn, configs.TOPICS, [topic], topic_values(merged["topics"][topic]), [], False)
    return _alter_brokers(conn, record["brokers"], {k: str(record["rate"]) for k in RATE_KEYS}, [])


def set_log_dirs(conn: ConnectionManager, brokers: list[int], rate: int) -> list[int]:
    """Record, then set, the throttle of the moves between log dirs on their brokers (Kafka's
    replica.alter.log.dirs.io.max.bytes.per.second): the brokers that could not be throttled."""
    key = cluster_key(conn)
    save(key, with_log_dir_throttle(load(key), brokers, rate))
    return _alter_brokers(conn, brokers, {LOG_DIR_RATE_KEY: str(rate)}, [])


class LogDirsCleared(NamedTuple):
    """The log dir throttle: kept while `moving` replicas still move between dirs, or while
    brokers (`undescribed`) did not describe theirs; else removed from the brokers `removed`,
    and kept (recorded for a later try) on those `unreachable`."""
    moving: int = 0
    undescribed: tuple[int, ...] = ()
    removed: tuple[int, ...] = ()
    unreachable: tuple[int, ...] = ()


class Cleared(NamedTuple):
    """What `clear` did: nothing when the shell recorded no throttles for the cluster, when told
    to keep them (`preserved`) or while `moving` throttled partitions still move; else the
    replication throttles removed from `brokers` and `topics` and kept (recorded for a later try)
    on the brokers `unreachable`, and what became of the log dir throttle."""
    recorded: bool = False
    preserved: bool = False
    moving: int = 0
    brokers: tuple[int, ...] = ()
    topics: tuple[str, ...] = ()
    unreachable: tuple[int, ...] = ()
    log_dirs: LogDirsCleared | None = None


def clear(conn: ConnectionManager, preserve: bool = False, moving: dict[Key, Move] | None = None) -> Cleared:
    """Remove the throttles the shell recorded for this cluster once none of the recorded
    partitions is still moving (`moving`: the moves in progress, read now when not given).
    What could not be removed stays recorded."""
    key = cluster_key(conn)
    record = load(key)
    if not record:
        return Cleared()
    if preserve:
        return Cleared(recorded=True, preserved=True)
    moving = reassignments.ongoing(conn) if moving is None else moving
    still = [p for p in record["partitions"] if key_of(p) in moving]
    if still:
        return Cleared(recorded=True, moving=len(still))
    dirs, dir_entry = _clear_log_dirs(conn, record.get(LOG_DIRS))
    unreachable = _alter_brokers(conn, record["brokers"], {}, list(RATE_KEYS))
    names = [t for t in record["topics"] if t in conn.read(list(record["topics"])).topics] if record["topics"] else []
    if names:
        configs.alter_or_fail(conn, configs.TOPICS, names, {}, [LEADER_REPLICAS, FOLLOWER_REPLICAS], False)
    kept = {**record, "brokers": unreachable, "topics": {}, "partitions": [], LOG_DIRS: dir_entry}
    save(key, kept if unreachable or dir_entry else None)
    return Cleared(recorded=True, brokers=tuple(b for b in record["brokers"] if b not in unreachable),
                   topics=tuple(names), unreachable=tuple(unreachable), log_dirs=dirs)


def _clear_log_dirs(conn: ConnectionManager, entry: dict | None) -> tuple[LogDirsCleared | None, dict | None]:
    """Remove the log dir throttle once no replica of its brokers is moving between dirs: (what
    was done, what stays recorded)."""
    if not entry:
        return None, None
    found = log_dirs.describe(conn, entry["brokers"])
    moving = sum(1 for _, r in found.replicas(include_future=True) if r.is_future)
    if moving or found.errors:
        return LogDirsCleared(moving=moving, undescribed=tuple(sorted(found.errors))), entry
    unreachable = _alter_brokers(conn, entry["brokers"], {}, [LOG_DIR_RATE_KEY])
    removed = tuple(b for b in entry["brokers"] if b not in unreachable)
    return (LogDirsCleared(removed=removed, unreachable=tuple(unreachable)),
            {**entry, "brokers": unreachable} if unreachable else None)
