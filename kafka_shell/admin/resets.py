"""Planning an offset reset as Kafka's tools do (GroupOffsetsResetter, behind kafka-consumer-groups,
kafka-streams-groups and kafka-share-groups --reset-offsets): each partition's new offset for a
reset specifier, kept within the log (Kafka's checkOffsetsRange). Consumer, streams and share
groups' commands all plan here; the plan's CSV (--export, --from-file) is read and written in
kafka_shell/declarations/group_offsets.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.base.answers import AdminError, Answers

from kafka_shell.admin import offsets, topics
from kafka_shell.admin.offsets import EARLIEST, LATEST

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.connection.metadata import ClusterSnapshot

Key = tuple[str, int]
# What a reset goes to (the specifiers --to-earliest ... --from-file).
TO_EARLIEST, TO_LATEST, TO_CURRENT, TO_OFFSET, SHIFT_BY, TO_TIME, FROM_FILE = (
    "earliest", "latest", "current", "offset", "shift", "time", "file")


class Spec(NamedTuple):
    """A reset specifier: where to (one of the TO_... kinds) and its value (the offset, the shift,
    the time in epoch ms: --to-datetime, or now minus --by-duration)."""
    to: str
    value: int | None = None


class Note(NamedTuple):
    """What Kafka's tool says about a partition's target: the offset asked was past the log end
    ("higher") or before its start ("lower") and becomes `to`; or no record is at or after the
    time ("empty"): the log end instead."""
    key: Key
    kind: str
    requested: int
    to: int


@dataclass(frozen=True)
class Plan(Answers[Key, tuple["int | None", int]]):
    """Each partition's (committed offset or None, new offset); the partitions whose log could
    not be read; and what Kafka's tool says about the targets. A shift (SHIFT_BY) of partitions
    without a committed offset is refused whole, as Kafka's tool refuses it: `unshiftable` names
    them and nothing else is planned."""
    notes: tuple[Note, ...] = field(default=())
    unshiftable: tuple[Key, ...] = field(default=())


def targets(conn: ConnectionManager, snap: ClusterSnapshot, keys: list[Key], committed: dict[Key, int],
            spec: Spec, from_file: dict[Key, int] | None = None) -> Plan:
    """The new offset of each of `keys` (in the command's read `snap`) for `spec` (FROM_FILE:
    `from_file`'s offsets), as Kafka's tools compute it."""
    if not keys:
        return Plan()
    errors: dict[Key, AdminError] = {}
    notes: list[Note] = []

    def log_at(timestamp: int) -> dict[Key, int]:
        found = offsets.log_offsets(conn, snap, keys, timestamp)
        errors.update(found.errors)
        return {key: a.offset for key, a in found.rows.items()}

    if spec.to == TO_EARLIEST:
        new = log_at(EARLIEST)
    elif spec.to == TO_LATEST:
        new = log_at(LATEST)
    elif spec.to == TO_CURRENT:
        ends = log_at(LATEST) if any(k not in committed for k in keys) else {}
        new = {k: committed[k] if k in committed else ends[k] for k in keys if k in committed or k in ends}
    elif spec.to == TO_TIME:
        found = log_at(spec.value or 0)
        empty = [k for k, offset in found.items() if offset < 0]
        ends = log_at(LATEST) if empty else {}
        notes += [Note(k, "empty", -1, ends[k]) for k in empty if k in ends]
        new = {k: (ends[k] if offset < 0 else offset) for k, offset in found.items() if offset >= 0 or k in ends}
    else:
        if spec.to == FROM_FILE:
            requested = dict(from_file or {})
        elif spec.to == TO_OFFSET:
            requested = dict.fromkeys(keys, spec.value or 0)
        else:
            without = tuple(k for k in keys if k not in committed)
            if without:
                return Plan(unshiftable=without)
            requested = {k: committed[k] + (spec.value or 0) for k in keys}
        new, clamped = clamp(requested, log_at(EARLIEST), log_at(LATEST))
        notes += clamped
    return Plan({k: (committed.get(k), new[k]) for k in keys if k in new}, errors, tuple(notes))


def clamp(requested: dict[Key, int], starts: dict[Key, int], ends: dict[Key, int]) -> tuple[dict[Key, int], list[Note]]:
    """Kafka's checkOffsetsRange: an offset past the log end becomes the log end, one before the
    log start the log start (each noted). A partition without both bounds is left out: its
    error is said already."""
    out: dict[Key, int] = {}
    notes: list[Note] = []
    for key, offset in requested.items():
        if key not in starts or key not in ends:
            continue
        if offset > ends[key]:
            notes.append(Note(key, "higher", offset, ends[key]))
            offset = ends[key]
        elif offset < starts[key]:
            notes.append(Note(key, "lower", offset, starts[key]))
            offset = starts[key]
        out[key] = offset
    return out, notes


def read_partitions(conn: ConnectionManager, keys: list[Key]) -> ClusterSnapshot:
    """A fresh read of the topics of `keys`; a topic or partition that does not exist is an
    error (a plan naming one is refused whole)."""
    snap = conn.read(sorted({t for t, _ in keys}))
    topics.check_partitions(snap, sorted(keys))
    return snap
