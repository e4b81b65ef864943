"""The load of a cluster as the balance planner plans from it, read when the command runs:
Metadata (replicas, leaders, ISR, racks, which brokers are live), DescribeLogDirs (each replica's
size and log dir, each broker's disk size, log dirs and cordoned ones), and optionally the bytes written to each
partition per second, from two reads of its log end offset (`sample_rates`).

A broker that does not describe its log dirs is named in `missing`, with its AdminError: its
replicas take the size of the partition's other replicas, and whether it is cordoned is not known.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_shell.admin import balance, log_dirs, offsets, topics
from kafka_shell.base.answers import AdminError

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.connection.metadata import ClusterSnapshot

Key = tuple[str, int]


@dataclass(frozen=True)
class Load:
    layout: balance.Layout
    snapshot: ClusterSnapshot
    dirs: dict[int, list[log_dirs.LogDir]]          # each live broker's log dirs, as it described them
    missing: dict[int, AdminError] = field(default_factory=dict)   # brokers that did not describe them all: why
    cordoned: frozenset[int] = frozenset()          # brokers whose every log dir is cordoned

    @property
    def keys(self) -> list[Key]:
        return self.layout.keys


def read(conn: ConnectionManager, names: list[str] | None = None, drained: set[int] | frozenset[int] = frozenset(),
         no_leaders: set[int] | frozenset[int] = frozenset(), internal: bool = True) -> Load:
    """The load of the named topics (globs; all when None; internal ones only with `internal`).
    `drained` brokers are to end empty, `no_leaders` ones to lead nothing."""
    snap = topics.read_for(conn, names)
    chosen = topics.resolve(snap, names, internal) if names else \
        sorted(t for t, info in snap.topics.items() if internal or not info.internal)
    keys: list[Key] = []
    replicas: list[list[int]] = []
    leaders: list[int] = []
    isr: list[tuple[int, ...]] = []
    for name in chosen:
        info = snap.topics.get(name)
        if info is None:
            continue
        for p in info.partitions:
            keys.append((name, p.partition))
            replicas.append(list(p.replicas))
            leaders.append(p.leader)
            isr.append(p.isr)
    live = sorted(snap.brokers)
    found = log_dirs.describe(conn, live, None) if live and log_dirs.supported(conn) else None
    dirs: dict[int, list[log_dirs.LogDir]] = {}
    size_of: dict[Key, int] = {}
    dir_of: dict[Key, dict[int, str]] = {}
    # Each broker whose log dirs are not all told: it did not answer, refused, or a dir is offline.
    missing = dict(found.errors) if found is not None else {}
    if found is not None:
        for d in found.dirs:
            if d.error:   # an offline dir: what it holds is not told
                missing.setdefault(d.broker, d.error)
            dirs.setdefault(d.broker, []).append(d)
            for r in d.replicas:
                if not r.is_future:
                    key = (r.topic, r.partition)
                    if r.size > size_of.get(key, -1):
                        size_of[key] = r.size
                    dir_of.setdefault(key, {})[d.broker] = d.path
    cordoned = frozenset(b for b, ds in dirs.items() if ds and all(d.cordoned for d in ds))
    named = {b for r in replicas for b in r}
    brokers = {}
    for b in sorted(set(live) | named | set(drained) | set(no_leaders)):
        node = snap.brokers.get(b)
        described = [] if b in missing else dirs.get(b, [])
        brokers[b] = balance.Broker(b, node.rack if node else None, capacity=_capacity(dirs.get(b, [])),
                                    live=node is not None, cordoned=b in cordoned, drained=b in drained,
                                    leads=b not in no_leaders, log_dirs=tuple(d.path for d in described),
                                    cordoned_dirs=frozenset(d.path for d in described if d.cordoned),
                                    dir_sizes=tuple(d.total_bytes or 0 for d in described))
    layout = balance.Layout(brokers, keys, replicas, [size_of.get(k, 0) for k in keys], leaders=leaders, isr=isr,
                            dirs=[dir_of.get(k, {}) for k in keys])
    return Load(layout, snap, dirs, missing, cordoned)


def _capacity(dirs: list[log_dirs.LogDir]) -> int | None:
    """The bytes of a broker's disks: the total of each volume its log dirs are on (dirs that
    tell the same total and free bytes count as one volume); None when a dir does not tell."""
    if not dirs or any(d.total_bytes is None for d in dirs):
        return None
    volumes = {(d.total_bytes, d.usable_bytes) for d in dirs}
    return sum(total for total, _ in volumes if total is not None)


@dataclass(frozen=True)
class Rates:
    rates: dict[Key, float]              # bytes written per second
    unread: dict[Key, AdminError]        # partitions whose log end could not be read
    seconds: float


def sample_rates(conn: ConnectionManager, snap: ClusterSnapshot, keys: list[Key], sizes: dict[Key, int],
                 seconds: float, sleep=time.sleep) -> Rates:
    """Bytes written per second to each partition: its log end offset read twice `seconds` apart
    (records per second), times the bytes per record its log holds now (its size over the records
    between log start and log end; the cluster's mean for an empty log)."""
    start = offsets.log_offsets(conn, snap, keys, offsets.EARLIEST)
    first = offsets.log_offsets(conn, snap, keys, offsets.LATEST)
    began = time.monotonic()
    sleep(seconds)
    second = offsets.log_offsets(conn, snap, keys, offsets.LATEST)
    unread = {**start.errors, **first.errors, **second.errors}
    elapsed = max(time.monotonic() - began, 1e-3)
    held = {k: (first.rows[k].offset - start.rows[k].offset) for k in keys
            if k not in unread and first.rows[k].offset > start.rows[k].offset}
    total_bytes = sum(sizes.get(k, 0) for k in held)
    total_records = sum(held.values())
    mean = total_bytes / total_records if total_records else 0.0
    rates: dict[Key, float] = {}
    for k in keys:
        if k in unread:
            continue
        a, b = first.rows[k], second.rows[k]
        per_record = sizes.get(k, 0) / held[k] if held.get(k) else mean
        rates[k] = max(0, b.offset - a.offset) / elapsed * per_record
    return Rates(rates, unread, elapsed)
