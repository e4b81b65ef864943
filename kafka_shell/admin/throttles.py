"""Replication throttles of reassignments: Kafka's config values, and the record of the throttles
kafka-shell set, so that a later shell session (a `--verify`, `--cancel` or `--blocking` run
after this process ended) removes them once the moves they served are over.

The record is one JSON file in the user's data dir (`$KAFKA_SHELL_DATA_DIR`, else
`$XDG_DATA_HOME/kafka-shell`), keyed by cluster id:

    {"<cluster id>": {"rate": 1000000, "brokers": [1, 2, 3],
                      "topics": {"t": {"leader": ["0:1", "0:2"], "follower": ["0:3"]}},
                      "partitions": ["t:0"]}}
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
    """Throttles of an --additional reassignment join those already set (the newer rate wins)."""
    if not old:
        return new
    topics = {t: {side: list(v) for side, v in e.items()} for t, e in old["topics"].items()}
    for t, e in new["topics"].items():
        mine = topics.setdefault(t, {"leader": [], "follower": []})
        for side in ("leader", "follower"):
            mine[side] = list(dict.fromkeys(mine[side] + e[side]))
    return {"rate": new["rate"], "brokers": sorted(set(old["brokers"]) | set(new["brokers"])),
            "topics": topics, "partitions": list(dict.fromkeys(old["partitions"] + new["partitions"]))}


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
