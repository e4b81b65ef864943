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
"""

from __future__ import annotations

import json
from pathlib import Path

from kafka_shell.base.files import read_owned, write_json_owned
from kafka_shell.base.paths import data_dir

RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
FILE_NAME = "reassignment-throttles.json"
LOG_DIR_RATE_KEY = "replica.alter.log.dirs.io.max.bytes.per.second"
LOG_DIRS = "log_dirs"


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


def _read() -> dict:
    """The whole record (brought to mode 0600); {} when missing or unreadable."""
    try:
        data = json.loads(read_owned(record_path()) or "{}")
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def load(cluster_id: str) -> dict | None:
    return _read().get(cluster_id)


def save(cluster_id: str, record: dict | None) -> None:
    """Write (or with None, drop) the cluster's record, atomically, readable by its owner only."""
    data = _read()
    if record:
        data[cluster_id] = record
    else:
        data.pop(cluster_id, None)
    write_json_owned(record_path(), data)
