"""A synthetic fleet in exactly the snapshot format, for tests and benchmarks:

    python -m kafka_shell.pipeline.synth --clusters C --brokers B --partitions P --snapshots S --out D

Vectorised (numpy and pyarrow, no per-partition Python), with the faults a fleet shows:
- a dead broker (from the middle of the series on) in every other cluster: it is absent from
  the brokers table while replicas still name it (KIP-426's missing id); partitions it led fail
  over, and it leaves every ISR;
- offline partitions among those: the dead broker was their only ISR member, and the live
  replicas hold divergent logs (leader epochs and log end offsets) for the recovery plan;
- skewed racks (cluster 1: most brokers in one rack, and replicas placed without rack care);
- leaders off their preferred replica (about 2% of partitions);
- controller moves between snapshots (KRaft voters 100-102, the epoch rising at each move);
- growing lag: one consumer group per cluster falls further behind at every snapshot, by a
  known number of messages an hour (`lag_growth_per_hour`);
- disks filling at a known rate: each broker has two log dirs, each replica's bytes grow
  linearly, and each dir's capacity is set so that at the last snapshot it is `days_left`
  days from full (broker 1's first dir: 1.5 days).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from kafka_shell.pipeline import schema

RF = 3
PARTITIONS_PER_TOPIC = 100
RACKS = ("rack-a", "rack-b", "rack-c")
CONTROLLERS = (100, 101, 102)
GROUPS = ("orders-app", "billing-app", "slow-consumer")   # the last one's lag grows
SLOW_GROUP = GROUPS[-1]
LOG_DIRS = ("/var/lib/kafka/data-0", "/var/lib/kafka/data-1")
TOPICS_PER_GROUP = 10
OFFLINE_FRACTION = 0.0002
NOT_PREFERRED_FRACTION = 0.02
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def _strings(indices: np.ndarray, values: list[str]) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(values, pa.string()))


def _lists(matrix: np.ndarray, keep: np.ndarray | None = None) -> pa.Array:
    """A list<int32> column from a (rows, width) matrix; `keep` masks out cells."""
    keep = np.ones(matrix.shape, bool) if keep is None else keep
    counts = keep.sum(axis=1)
    offsets = np.zeros(len(matrix) + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(matrix[keep].astype(np.int32)))


class Cluster:
    """One synthetic cluster's fixed layout; `snapshot(s)` gives its tables at step s."""

    def __init__(self, index: int, brokers: int, partitions: int, snapshots: int, seed: int):
        self.id = f"synth-cluster-{index:02d}"
        self.index, self.n_brokers, self.n_parts, self.n_snaps = index, brokers, partitions, snapshots
        rng = np.random.default_rng(seed + index)
        self.broker_ids = np.arange(1, brokers + 1, dtype=np.int32)
        self.skewed = index == 1
        if self.skewed:  # most brokers in the first rack
            self.racks = np.where(np.arange(brokers) < brokers * 2 // 3, 0, 1 + np.arange(brokers) % 2)
        else:
            self.racks = np.arange(brokers) % len(RACKS)
        rf = min(RF, brokers)
        self.rf = rf
        n_topics = -(-partitions // PARTITIONS_PER_TOPIC)
        self.topics = [f"topic-{t:05d}" for t in range(n_topics)]
        self.topic_of = (np.arange(partitions) // PARTITIONS_PER_TOPIC).astype(np.int32)
        self.part_of = (np.arange(partitions) % PARTITIONS_PER_TOPIC).astype(np.int32)
        # Placement: consecutive brokers of a rack-alternated order from a random first one (one
        # replica per rack when the racks are even; loads vary, as a fleet's do); the skewed
        # cluster's order is by broker id, so its replicas crowd into its big rack.
        order = np.arange(brokers) if self.skewed else np.argsort(
            (np.arange(brokers) // len(RACKS)) * len(RACKS) + self.racks, kind="stable")
        arranged = self.broker_ids[order]
        first = rng.integers(0, brokers, partitions)
        self.replicas = arranged[np.stack([(first + j) % brokers for j in range(rf)], axis=1)]
        self.not_preferred = rng.random(partitions) < NOT_PREFERRED_FRACTION
        self.dead = int(self.broker_ids[-1]) if index % 2 == 0 and brokers > rf else None
        holds_dead = (self.replicas == self.dead).any(axis=1) if self.dead else np.zeros(partitions, bool)
        self.offline = holds_dead & (rng.random(partitions) < OFFLINE_FRACTION * 10)
        if self.dead and not self.offline.any():
            self.offline[np.flatnonzero(holds_dead)[:1]] = True
        self.rate = rng.integers(50, 500, partitions)          # messages per snapshot step
        self.msg_bytes = rng.integers(100, 1000, partitions)
        self.base = rng.integers(0, 10_000, partitions)
        # Log dirs: a replica's dir alternates with its partition and position (JBOD of two).
        self.dir_of = (np.arange(partitions)[:, None] + np.arange(rf)[None, :]) % len(LOG_DIRS)
        slot = (np.searchsorted(self.broker_ids, self.replicas) * len(LOG_DIRS) + self.dir_of).reshape(-1)
        per_replica = np.repeat(np.arange(partitions), rf)
        slots = brokers * len(LOG_DIRS)
        # Bytes a dir gains per step, and what it holds at the last step when every replica is in sync.
        self.dir_growth = np.bincount(slot, (self.rate * self.msg_bytes)[per_replica], slots)
        self.dir_used_last = np.bincount(slot, ((self.base + self.rate * snapshots) * self.msg_bytes)[per_replica], slots)
        self.dir_days_left = 20.0 + 5 * np.arange(slots)
        self.dir_days_left[0] = 1.5
        steps_per_day = 24  # snapshots are an hour apart
        self.dir_capacity = (self.dir_used_last + self.dir_growth * steps_per_day * self.dir_days_left).astype(np.int64)

    def days_left(self, broker: int, log_dir: str) -> float:
        """Days until the dir is full at the last snapshot (exact where no broker dies)."""
        return float(self.dir_days_left[(broker - 1) * len(LOG_DIRS) + LOG_DIRS.index(log_dir)])

    def disk_growth_per_day(self, broker: int, log_dir: str) -> float:
        return float(self.dir_growth[(broker - 1) * len(LOG_DIRS) + LOG_DIRS.index(log_dir)] * 24)

    def lag_growth_per_hour(self, group: str) -> int:
        """Messages an hour the group falls further behind (while its partitions stay online)."""
        if group != SLOW_GROUP:
            return 0
        g = GROUPS.index(group)
        mask = np.isin(self.topic_of, np.arange(g * TOPICS_PER_GROUP, (g + 1) * TOPICS_PER_GROUP) % len(self.topics))
        return int((self.rate[mask] // 2).sum())

    def dead_at(self, s: int) -> bool:
        return self.dead is not None and s >= self.n_snaps // 2

    def controller(self, s: int) -> tuple[int, int]:
        """Controller id and epoch at step s: it moves every 6 steps (and at step 1 in cluster 0)."""
        moves = s // 6 + (1 if self.index == 0 and s >= 1 else 0)
        return CONTROLLERS[moves % len(CONTROLLERS)], 1 + moves

    def snapshot(self, s: int) -> tuple[dict[str, pa.Table], dict]:
        taken_at = START + datetime.timedelta(hours=s)
        P, rf = self.n_parts, self.rf
        reps = self.replicas
        dead = self.dead_at(s)
        in_isr = np.ones(reps.shape, bool)
        leader = np.where(self.not_preferred, reps[:, 1 % rf], reps[:, 0])
        offline = self.offline if dead else np.zeros(P, bool)
        if dead:
            on_dead = reps == self.dead
            in_isr &= ~on_dead
            # Offline: only the dead broker was in the ISR; the live replicas fell behind earlier.
            in_isr[offline] = on_dead[offline]
            first_live = np.where(on_dead, rf, np.arange(rf)).min(axis=1)
            fail_over = leader == self.dead
            leader = np.where(fail_over, reps[np.arange(P), np.minimum(first_live, rf - 1)], leader)
            leader = np.where(offline, -1, leader)
        epoch = 1 + (leader != reps[:, 0]).astype(np.int32)  # one election off the preferred replica
        end = self.base + self.rate * (s + 1)
        partitions = {
            "topic": _strings(self.topic_of, self.topics), "partition": self.part_of,
            "leader": leader.astype(np.int32), "leader_epoch": epoch.astype(np.int32),
            "replicas": _lists(reps), "isr": _lists(reps, in_isr),
            "elr": _lists(reps, np.zeros(reps.shape, bool)),
            "offline_replicas": _lists(reps, np.broadcast_to(reps == self.dead, reps.shape) if dead
                                       else np.zeros(reps.shape, bool)),
        }
        # Replicas: what live brokers describe (the dead one answers nothing).
        flat = reps.reshape(-1)
        live = flat != self.dead if dead else np.ones(len(flat), bool)
        row = np.repeat(np.arange(P), rf)[live]
        pos = np.tile(np.arange(rf), P)[live]
        behind = (~in_isr.reshape(-1)[live]) * (self.rate[row] * (1 + pos))
        leo = end[row] - behind
        off_row = offline[row]
        # Divergent logs of offline partitions: a later replica may have written in a later epoch.
        last_epoch = np.where(off_row, 5 + (row + pos) % 3, -1)
        size = (leo * self.msg_bytes[row]).astype(np.int64)
        dir_index = self.dir_of.reshape(-1)[live]
        replicas = {
            "topic": _strings(self.topic_of[row], self.topics), "partition": self.part_of[row],
            "broker_id": flat[live].astype(np.int32), "size": size,
            "offset_lag": np.where(off_row, 0, behind).astype(np.int64),
            "log_end_offset": pa.array(leo.astype(np.int64), mask=~off_row),
            "last_epoch": pa.array(last_epoch.astype(np.int32), mask=~off_row),
            "log_dir": _strings(dir_index.astype(np.int32), list(LOG_DIRS)),
        }
        online = ~offline
        offsets = {"topic": _strings(self.topic_of[online], self.topics), "partition": self.part_of[online],
                   "log_start_offset": (self.base[online] // 2).astype(np.int64),
                   "log_end_offset": end[online].astype(np.int64)}
        groups = self._groups(s, end, online)
        live_brokers = self.broker_ids != self.dead if dead else np.ones(self.n_brokers, bool)
        ids = self.broker_ids[live_brokers]
        slots = self.n_brokers * len(LOG_DIRS)
        used = np.bincount(np.searchsorted(self.broker_ids, flat[live]) * len(LOG_DIRS) + dir_index, size, slots)
        dir_live = np.repeat(live_brokers, len(LOG_DIRS))
        log_dirs = {"broker_id": np.repeat(self.broker_ids, len(LOG_DIRS))[dir_live],
                    "log_dir": np.tile(np.array(LOG_DIRS), self.n_brokers)[dir_live].tolist(),
                    "total_bytes": self.dir_capacity[dir_live],
                    "usable_bytes": (self.dir_capacity - used.astype(np.int64))[dir_live]}
        brokers = {"broker_id": ids, "host": [f"broker-{b}.{self.id}" for b in ids],
                   "port": np.full(len(ids), 9092, np.int32),
                   "rack": [RACKS[r] for r in self.racks[live_brokers]], "state": ["live"] * len(ids)}
        n_topics = len(self.topics)
        topics = {"topic": self.topics, "topic_id": [f"{self.index:08x}-0000-4000-8000-{t:012x}" for t in range(n_topics)],
                  "partitions": np.bincount(self.topic_of, minlength=n_topics).astype(np.int32),
                  "replication_factor": np.full(n_topics, rf, np.int32),
                  "min_isr": np.full(n_topics, min(2, rf), np.int32),
                  "configs": pa.array([[("min.insync.replicas", str(min(2, rf)))]] * n_topics,
                                      pa.map_(pa.string(), pa.string()))}
        controller, controller_epoch = self.controller(s)
        cluster = {"mode": ["KRaft"], "controller_id": [controller], "controller_epoch": [controller_epoch]}
        tables = {name: self._table(name, cols, taken_at) for name, cols in (
            ("cluster", cluster), ("brokers", brokers), ("topics", topics), ("partitions", partitions),
            ("replicas", replicas), ("log_dirs", log_dirs), ("offsets", offsets), ("group_offsets", groups))}
        manifest = {"cluster_id": self.id, "mode": "KRaft", "taken_at": taken_at.isoformat(),
                    "taken_at_ms": int(taken_at.timestamp() * 1000), "controller_id": controller,
                    "controller_epoch": controller_epoch, "source": "kafka_shell.pipeline.synth"}
        return tables, manifest

    def _groups(self, s: int, end: np.ndarray, online: np.ndarray) -> dict:
        rows = []
        for g, name in enumerate(GROUPS):
            topics = np.arange(g * TOPICS_PER_GROUP, (g + 1) * TOPICS_PER_GROUP) % len(self.topics)
            mask = np.isin(self.topic_of, topics) & online
            lag = self.rate[mask] // 2 * ((s + 1) if name == SLOW_GROUP else 1)
            rows.append((g, mask, np.maximum(0, end[mask] - lag)))
        mask_all = [(np.full(int(m.sum()), g, np.int32), np.flatnonzero(m), c) for g, m, c in rows]
        group_idx = np.concatenate([m[0] for m in mask_all])
        parts = np.concatenate([m[1] for m in mask_all])
        return {"group": _strings(group_idx, list(GROUPS)), "topic": _strings(self.topic_of[parts], self.topics),
                "partition": self.part_of[parts], "committed_offset": np.concatenate([m[2] for m in mask_all]).astype(np.int64)}

    def _table(self, name: str, columns: dict, taken_at: datetime.datetime) -> pa.Table:
        n = len(next(iter(columns.values())))
        key = {"cluster_id": _strings(np.zeros(n, np.int32), [self.id]),
               "taken_at": pa.array(np.full(n, int(taken_at.timestamp() * 1000), np.int64)).cast(
                   pa.timestamp("ms", tz="UTC"))}
        arrays = {**key, **{k: v if isinstance(v, pa.Array) else pa.array(v) for k, v in columns.items()}}
        return pa.table(arrays)


def generate(out: Path, clusters: int, brokers: int, partitions: int, snapshots: int, seed: int = 7,
             progress=None) -> list[Path]:
    written = []
    for c in range(clusters):
        cluster = Cluster(c, brokers, partitions, snapshots, seed)
        for s in range(snapshots):
            tables, manifest = cluster.snapshot(s)
            written.append(schema.write_snapshot(
                schema.snapshot_dir(out, cluster.id, START + datetime.timedelta(hours=s)), tables, manifest))
            if progress is not None:
                progress.write(f"synth: {cluster.id} snapshot {s + 1}/{snapshots}\n")
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kafka_shell.pipeline.synth",
                                description="Write a synthetic fleet of cluster snapshots (the snapshot format).")
    p.add_argument("--clusters", type=int, default=2, help="number of clusters (default 2)")
    p.add_argument("--brokers", type=int, default=6, help="brokers per cluster (default 6)")
    p.add_argument("--partitions", type=int, default=1000, help="partitions per cluster (default 1000)")
    p.add_argument("--snapshots", type=int, default=4, help="snapshots per cluster, an hour apart (default 4)")
    p.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    p.add_argument("--out", required=True, help="directory to write (must not hold these snapshots yet)")
    args = p.parse_args(argv)
    for name in ("clusters", "brokers", "partitions", "snapshots"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    t0 = time.perf_counter()
    try:
        written = generate(Path(args.out), args.clusters, args.brokers, args.partitions, args.snapshots, args.seed)
    except FileExistsError as exc:
        p.error(f"{exc.filename} already exists: give an empty --out directory")
    sys.stderr.write(f"Wrote {len(written)} snapshot(s) to {args.out} in {time.perf_counter() - t0:.1f} s\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
