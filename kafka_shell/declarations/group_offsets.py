"""What the offset commands of the group families share above the admin layer: the reset
specifiers (--to-earliest ... --from-file) and plan options of reset-offsets, copy-offsets,
reset-share-group-offsets and reset-streams-group-offsets, the reset specifier they give
(planned by kafka_shell/admin/resets.py), the plan's CSV, and the answer of an offset deletion
(delete-offsets, delete-streams-group-offsets).
"""

from __future__ import annotations

import csv
import io
import re
import time

from typing import TYPE_CHECKING

from kafka_shell.admin import resets, topics
from kafka_shell.base.answers import Answers
from kafka_shell.base.errors import ShellError, UsageError, shown
from kafka_shell.base.files import read_text
from kafka_shell.declarations import failure_lines
from kafka_shell.declarations.option_types import iso_epoch_ms
from kafka_shell.declarations.registry import INT64_MAX, Confirm, Option, int_range
from kafka_shell.declarations.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.base.names import TopicPartitions
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.connection.metadata import ClusterSnapshot

Key = tuple[str, int]

SPECIFIERS = ("--to-earliest", "--to-latest", "--to-current", "--to-offset", "--shift-by", "--to-datetime",
              "--by-duration", "--from-file")
offset_value = int_range(0, INT64_MAX, "an offset")
shift_value = int_range(-INT64_MAX, INT64_MAX, "a number of offsets (negative moves back)")
# Java's Duration.parse: PnDTnHnMn.nS (each part optional, a sign allowed on each).
_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
                       re.IGNORECASE)


def iso_datetime(text: str) -> int:
    """Kafka's --to-datetime: 'YYYY-MM-DDTHH:mm:SS.sss', UTC unless it gives a zone; epoch ms."""
    expected = "an ISO 8601 date and time such as 2024-01-31T12:00:00.000 (UTC unless a zone such as +02:00 or Z is given)"
    if "T" not in text.upper():
        raise ValueError(expected)
    return iso_epoch_ms(text, expected)


def iso_duration(text: str) -> int:
    """Kafka's --by-duration (Java's Duration.parse, e.g. PT1H30M or P1DT2H): milliseconds."""
    m = _DURATION.fullmatch(text.strip())
    if not m or not any(m.group(i) for i in (2, 3, 4, 5)) or text.strip().upper().endswith("T"):
        raise ValueError("an ISO 8601 duration such as PT15M, PT1H30M or P1DT2H")
    sign = -1 if m.group(1) == "-" else 1
    days, hours, minutes, seconds = (int(m.group(i) or 0) for i in (2, 3, 4, 5))
    fraction = (m.group(6) or "").ljust(3, "0")[:3]
    ms = (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000
    ms += (-1 if (m.group(5) or "").startswith("-") else 1) * int(fraction or 0)
    return sign * ms


# The reset specifiers (--to-earliest ... --from-file) of reset-offsets and reset-streams-group-offsets.
RESET_SPECIFIERS = (
    Option("--to-earliest", flag=True, help="The log start offset."),
    Option("--to-latest", flag=True, help="The log end offset."),
    Option("--to-current", flag=True, help="The committed offset (the log end where there is none)."),
    Option("--to-offset", type=offset_value, metavar="N", help="Offset N (kept within the log)."),
    Option("--shift-by", type=shift_value, metavar="N", help="The committed offset plus N (may be negative)."),
    Option("--to-datetime", type=iso_datetime, metavar="YYYY-MM-DDTHH:mm:SS.sss",
           help="The first offset at or after this time (UTC unless a zone is given)."),
    Option("--by-duration", type=iso_duration, metavar="PnDTnHnM",
           help="The first offset at or after now minus this duration (e.g. PT1H)."),
    Option("--from-file", metavar="CSV", completer="path",
           help="Offsets from a CSV file: topic,partition,offset (or group,topic,partition,offset)."),
)
# What every reset command takes after its scope and specifiers, and how it asks: the plan is
# shown unless --execute, which the handler's Proposal names (--export prints Kafka's CSV).
PLAN_OPTIONS = (
    Option("--execute", flag=True, help="Apply the plan (without it the plan is only shown)."),
    Option("--export", flag=True, help="Print the plan as Kafka's CSV (for --from-file)."),
    Option("--yes", flag=True, help="In the REPL: do not ask for confirmation before --execute."),
)
EXECUTE_CONFIRM = Confirm(applies=lambda args: args["execute"], proposed=True, opt_in="--execute")


def named_partitions(conn: ConnectionManager, specs: list[TopicPartitions]) -> tuple[ClusterSnapshot, list[Key]]:
    """A fresh read of the topics `--topic t[:p,...]` names, and the partitions named; a
    partition its topic lacks is bad input."""
    snap = topics.read_for(conn, topics.names_of(specs))
    try:
        return snap, topics.partitions_of(snap, specs)
    except topics.NoSuchPartition as exc:
        raise UsageError(failure_lines.no_partition_line(exc)) from None


def reset_spec(args: dict, from_file: dict[Key, int] | None = None) -> resets.Spec:
    """The reset specifier the options give (`from_file`: --from-file's offsets, read)."""
    if from_file is not None:
        return resets.Spec(resets.FROM_FILE)
    if args["to_earliest"]:
        return resets.Spec(resets.TO_EARLIEST)
    if args["to_latest"]:
        return resets.Spec(resets.TO_LATEST)
    if args["to_current"]:
        return resets.Spec(resets.TO_CURRENT)
    if args["to_datetime"] is not None:
        return resets.Spec(resets.TO_TIME, args["to_datetime"])
    if args.get("by_duration") is not None:
        return resets.Spec(resets.TO_TIME, int(time.time() * 1000) - args["by_duration"])
    if args["to_offset"] is not None:
        return resets.Spec(resets.TO_OFFSET, args["to_offset"])
    return resets.Spec(resets.SHIFT_BY, args["shift_by"])


def planned(plan: resets.Plan, notes: list[str], failures: list[str]) -> dict[Key, tuple[int | None, int]]:
    """A reset plan's rows (committed offset or None, new offset); Kafka's notes on its targets
    go to `notes`, the partitions whose log could not be read to `failures`. A shift of
    partitions without a committed offset is a UsageError, in kafka-consumer-groups' words."""
    if plan.unshiftable:
        topic, partition = plan.unshiftable[0]
        raise UsageError(f"Cannot shift offset for partition {topic}-{partition} since there is no current "
                         "committed offset (use another specifier for it)")
    failures += failure_lines.partition_lines(plan.errors)
    notes += [failure_lines.reset_note(n) for n in plan.notes]
    return plan.rows


def deletion_result(deleted: Answers[Key, None], gid: str, keys: list[Key]) -> Result:
    """A group's offsets deleted (admin offsets.delete, OffsetDelete): a row per partition, a
    failure line per partition the coordinator refused; its one line when it refused all."""
    refused = failure_lines.group_refusal(deleted, gid)
    if refused is not None:
        raise ShellError(refused)
    rows = [[t, p, "Successful" if (t, p) in deleted.rows else "Error"] for t, p in sorted(keys)]
    return Result.outcome([Table(["Topic", "Partition", "Status"], rows, name="offsets")], [],
                          failure_lines.committed_lines(deleted.errors, gid))


# -- the plan's CSV (--from-file, --export), as Kafka's tools read and write it --------------------


def read_csv(path: str, group_ids: list[str]) -> dict[str, dict[Key, int]]:
    """Kafka's reset CSV: `topic,partition,offset` lines (one group given) or
    `group,topic,partition,offset` lines; a UsageError naming the line of the first thing wrong."""
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
