"""Planning an offset reset as Kafka's tools do (GroupOffsetsResetter, behind kafka-consumer-groups,
kafka-streams-groups and kafka-share-groups --reset-offsets): each partition's new offset for a
reset specifier, kept within the log (Kafka's checkOffsetsRange), and the plan's CSV (--export,
--from-file). Consumer, streams and share groups' commands all plan here.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.base.answers import AdminError, Answers
from kafka_shell.base.errors import UsageError, shown
from kafka_shell.base.files import read_text

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
    not be read; and what Kafka's tool says about the targets."""
    notes: tuple[Note, ...] = field(default=())


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
            without = [k for k in keys if k not in committed]
            if without:
                raise UsageError(f"Cannot shift offset for partition {without[0][0]}-{without[0][1]} since there is "
                                 "no current committed offset (use another specifier for it)")
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


# -- the plan's CSV ------------------------------------------------------------------------------


def read_csv(path: str, group_ids: list[str]) -> dict[str, dict[Key, int]]:
    """Kafka's reset CSV: `topic,partition,offset` lines (one group given) or
    `group,topic,partition,offset` lines."""
    text = read_text(path, "--from-file")
    plan: dict[str, dict[Key, int]] = {}
    for n, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if not row or not "".join(row).strip():
            continue
        if len(row) == 3 and len(group_ids) == 1:
            gid, (topic, partition, offset) = group_ids[0], row
        elif len(row) == 4:
            gid, topic, partition, offset = row
        else:
            want = "topic,partition,offset" if len(group_ids) == 1 else "group,topic,partition,offset"
            raise UsageError(f"{path}:{n}: expected {want}, got {shown(','.join(row))}")
        if not (partition.strip().isdigit() and offset.strip().lstrip("-").isdigit()):
            raise UsageError(f"{path}:{n}: partition and offset must be integers, got {shown(','.join(row))}")
        plan.setdefault(gid, {})[(topic, int(partition))] = int(offset)
    if not plan:
        raise UsageError(f"{path} holds no offsets (expected topic,partition,offset lines)")
    return plan


def to_csv(plans: dict[str, dict[Key, tuple[int | None, int]]], single_group: bool) -> str:
    """Kafka's --export CSV: topic,partition,offset for one group, else group first."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for gid, plan in plans.items():
        for (t, p), (_, new) in sorted(plan.items()):
            writer.writerow([t, p, new] if single_group else [gid, t, p, new])
    return out.getvalue()
