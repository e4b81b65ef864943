"""Consumer lag: the offsets groups committed against their partitions' log ends, for many groups
at once. Committed offsets come from each coordinator (one OffsetFetch for all its groups where
the cluster can), log ends from each partition's leader, read once per partition however many
groups consume it (offsets.py does both; nothing here sends a request of its own). Share
groups keep no committed offsets: their lag is the share-partition lag their coordinator
answers (KIP-1226, DescribeShareGroupOffsets v1, Kafka 4.4).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.admin import offsets, share_groups
from kafka_shell.admin.offsets import LATEST

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

Key = tuple[str, int]


class PartitionLag(NamedTuple):
    key: Key
    committed: int | None      # None: the group committed nothing there (a partition it owns)
    log_end: int | None        # None: unknown (its failure is in GroupLags.failures) or the topic is gone

    @property
    def lag(self) -> int | None:
        return self.log_end - self.committed if self.log_end is not None and self.committed is not None else None


@dataclass(frozen=True)
class GroupLags:
    """Each group's partitions with their committed offset and log end, sorted; the lines of
    what could not be read (a group's offsets, a partition's log end); and per group the
    deleted topics it still holds offsets for (Kafka's tool shows them without a log end)."""
    partitions: dict[str, list[PartitionLag]]
    failures: list[str] = field(default_factory=list)
    gone: dict[str, list[str]] = field(default_factory=dict)

    def total(self, group: str) -> int | None:
        """The group's lag over the partitions whose lag is known (None when none is)."""
        known = [p.lag for p in self.partitions.get(group, ()) if p.lag is not None]
        return sum(known) if known else None

    def by_topic(self, group: str) -> list[tuple[str, int, int | None]]:
        """(topic, partitions, lag over those whose lag is known) of the group, by topic."""
        out: dict[str, tuple[int, int | None]] = {}
        for p in self.partitions.get(group, ()):
            count, lag = out.get(p.key[0], (0, None))
            out[p.key[0]] = (count + 1, lag if p.lag is None else (lag or 0) + p.lag)
        return [(t, n, lag) for t, (n, lag) in sorted(out.items())]


def read(conn: ConnectionManager, group_ids: list[str], owned: Mapping[str, Iterable[Key]] | None = None,
         topic: str | None = None) -> GroupLags:
    """Each group's committed offsets (and the partitions in `owned`, assigned to its members,
    whether committed or not) against the log end of each partition, read once for all groups.
    With `topic`, only that topic's partitions."""
    committed: dict[str, dict[Key, int]] = {}
    failures: list[str] = []
    for gid, c in (offsets.committed(conn, group_ids) if group_ids else {}).items():
        if c.problem is not None:
            failures.append(c.problem)
        committed[gid] = c.offsets
    keys_of = {gid: sorted(k for k in {*committed.get(gid, {}), *(owned or {}).get(gid, ())}
                           if topic is None or k[0] == topic) for gid in group_ids}
    wanted = {k for ks in keys_of.values() for k in ks}
    names = sorted({t for t, _ in wanted})
    ends = offsets.log_offsets(conn, conn.read(names), wanted, LATEST) if names else {}
    reported = set()
    gone: dict[str, list[str]] = {}
    partitions: dict[str, list[PartitionLag]] = {}
    for gid in group_ids:
        rows = []
        for key in keys_of[gid]:
            end = ends[key]
            if end.gone:
                if key[0] not in gone.setdefault(gid, []):
                    gone[gid].append(key[0])
            elif end.error and key not in reported:
                reported.add(key)
                failures.append(end.error)
            rows.append(PartitionLag(key, committed.get(gid, {}).get(key), None if end.error else end.offset))
        partitions[gid] = rows
    return GroupLags(partitions, failures, {g: ts for g, ts in gone.items() if ts})


@dataclass(frozen=True)
class ShareLag:
    """A share group's lag (the sum over its share-partitions whose lag is known), or the line
    why it could not be read."""
    lag: int | None
    problem: str | None = None


def share_group_lags(conn: ConnectionManager, group_ids: list[str]) -> dict[str, ShareLag]:
    """Each share group's lag, as its coordinator answers it (KIP-1226: Kafka 4.4's
    DescribeShareGroupOffsets v1; before it the lag is unknown)."""
    out = {}
    for gid in group_ids:
        problem, parts = share_groups.offsets(conn, gid)
        known = [p.lag for p in parts if p.lag is not None and p.error is None]
        errors = [p.error for p in parts if p.error is not None]
        out[gid] = ShareLag(sum(known) if known else None, problem or (errors[0] if errors else None))
    return out
