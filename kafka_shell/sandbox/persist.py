"""`--data-dir` persistence: the sandbox's state as one JSON file, written atomically.

Saved: cluster id, mode, controller, KRaft controllers (id, host, port), cluster-wide configs, brokers (id, host, port, rack, configs),
topics with their configs and partitions (replicas, leader, epochs, ISR, ELR, log end offsets,
high watermark) and the record batches, base64-encoded, up to RECORD_BYTES_PER_PARTITION per
partition: older batches past that are dropped and the log start offset moves past them, as
retention would. Format 1 (before the KRaft mode) loads as a zk-mode cluster, which it was.
Brokers and controllers come back alive; state kept by other modules in `Cluster.extras`
(groups, reassignments) is not saved.

Use: `persist.load(dir)` before starting (None when the directory holds no state), and
`persist.save(cluster, dir)` from the loop thread (`sandbox.call(persist.save, cluster, dir)`).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import tempfile
import uuid
from pathlib import Path

from kafka_shell.sandbox.model import ZK, Batch, Broker, Cluster, Controller, Partition, Topic

STATE_FILE = "sandbox-state.json"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
RECORD_BYTES_PER_PARTITION = 1024 * 1024


class StateError(Exception):
    """The data directory holds a state file this version cannot read."""


def save(cluster: Cluster, data_dir: str | os.PathLike) -> Path:
    """Write the state to `data_dir/sandbox-state.json` (temp file + rename: never half-written)."""
    directory = Path(data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    state = {
        "version": FORMAT_VERSION,
        "cluster_id": cluster.cluster_id,
        "mode": cluster.mode,
        "controllers": [{"id": c.id, "host": c.host, "port": c.port, "configs": c.configs}
                        for c in cluster.controllers.values()],
        "controller_id": cluster.controller_id,
        "controller_epoch": cluster.controller_epoch,
        "cluster_configs": cluster.cluster_configs,
        "brokers": [{"id": b.id, "host": b.host, "port": b.port, "rack": b.rack, "epoch": b.epoch,
                     "configs": b.configs} for b in cluster.brokers.values()],
        "topics": [{"name": t.name, "id": str(t.id), "internal": t.internal, "configs": t.configs,
                    "partitions": [_partition_state(p) for p in t.partitions]}
                   for t in cluster.topics.values()],
    }
    target = directory / STATE_FILE
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".state-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(state, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    return target


def _partition_state(p: Partition) -> dict:
    kept: list[Batch] = []
    size = 0
    for b in reversed(p.batches):  # keep the newest batches that fit
        size += len(b.data)
        if size > RECORD_BYTES_PER_PARTITION:
            break
        kept.append(b)
    kept.reverse()
    dropped = len(kept) < len(p.batches)
    log_start = (kept[0].base_offset if kept else p.high_watermark) if dropped else p.log_start_offset
    state = {f.name: getattr(p, f.name) for f in dataclasses.fields(Partition)
             if f.name not in ("topic", "batches", "leo", "replica_epoch")}
    state.update(
        log_start_offset=max(log_start, p.log_start_offset),
        leo={str(r): v for r, v in p.leo.items()},
        replica_epoch={str(r): v for r, v in p.replica_epoch.items()},
        batches=[{"base_offset": b.base_offset, "last_offset": b.last_offset,
                  "max_timestamp": b.max_timestamp, "data": base64.b64encode(b.data).decode()}
                 for b in kept],
    )
    return state


def load(data_dir: str | os.PathLike) -> Cluster | None:
    """The saved cluster, or None when `data_dir` holds no state yet."""
    path = Path(data_dir) / STATE_FILE
    if not path.exists():
        return None
    try:
        state = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise StateError(f"{path} is not valid JSON ({exc}): move it away to start afresh") from None
    if state.get("version") not in READABLE_VERSIONS:
        raise StateError(f"{path} has format version {state.get('version')!r}; this sandbox reads "
                         f"versions {', '.join(map(str, READABLE_VERSIONS))}")
    brokers = {b["id"]: Broker(id=b["id"], host=b["host"], port=b["port"], rack=b["rack"],
                               epoch=b["epoch"] + 1, configs=b["configs"])  # a restart bumps the epoch
               for b in state["brokers"]}
    cluster = Cluster(cluster_id=state["cluster_id"], brokers=brokers,
                      controller_id=state["controller_id"], controller_epoch=state["controller_epoch"],
                      cluster_configs=state["cluster_configs"], mode=state.get("mode", ZK),
                      controllers={c["id"]: Controller(id=c["id"], host=c["host"], port=c["port"],
                                                       configs=c["configs"])
                                   for c in state.get("controllers", [])})
    for t in state["topics"]:
        cluster.topics[t["name"]] = Topic(
            name=t["name"], id=uuid.UUID(t["id"]), internal=t["internal"], configs=t["configs"],
            partitions=[_partition(t["name"], p) for p in t["partitions"]])
    return cluster


def _partition(topic: str, state: dict) -> Partition:
    fields = dict(state)
    fields["leo"] = {int(r): v for r, v in state["leo"].items()}
    fields["replica_epoch"] = {int(r): v for r, v in state["replica_epoch"].items()}
    fields["batches"] = [Batch(b["base_offset"], b["last_offset"], b["max_timestamp"],
                               base64.b64decode(b["data"])) for b in state["batches"]]
    return Partition(topic=topic, **fields)
