"""Consumer group commands, after Kafka's kafka-consumer-groups: list-groups, describe-group,
reset-offsets, delete-group, delete-offsets.

Each group is served by its coordinator (the connection manager finds it and asks again while
it moves; kafka_shell/admin/groups.py and offsets.py say what is asked). Every failure is one
line and makes the exit code 1; the rest of the command still runs.
"""

from __future__ import annotations

import csv
import io
import re
import time
from typing import TYPE_CHECKING

from kafka_shell.admin import groups, offsets, share_groups, streams_groups, topics
from kafka_shell.admin.offsets import EARLIEST, LATEST
from kafka_shell.base.errors import KafkaCallError, ShellError, UsageError, shown
from kafka_shell.base.files import read_text
from kafka_shell.declarations.option_types import group_id, iso_epoch_ms
from kafka_shell.declarations.registry import INT64_MAX, Confirm, Option, command, int_range
from kafka_shell.declarations.render import Proposal, Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.metadata import ClusterSnapshot
    from kafka_shell.connection.session import Session

Key = tuple[str, int]
GROUP_STATES = groups.STATES
TOPIC_CONTEXT_HELP = "Topic (default: the context topic)."


def group_states(text: str) -> list[str]:
    """Kafka's `--state` list: states separated by commas, any case."""
    by_lower = {s.lower(): s for s in GROUP_STATES}
    wanted = [s.strip().lower() for s in text.split(",")]
    if not all(s in by_lower for s in wanted):
        raise ValueError(f"states separated by commas, of {', '.join(GROUP_STATES)}")
    return [by_lower[s] for s in wanted]


ALL_GROUPS = Option("--all-groups", flag=True, help="Every group of the cluster.")


def chosen_groups(session: Session, given: list[str], all_groups: bool) -> list[str]:
    """The groups named, or with --all-groups every group the brokers list."""
    if not all_groups:
        return list(dict.fromkeys(given))
    listed = groups.list_groups(session.conn)
    if listed.failures:
        raise ShellError(" ".join(listed.failures))
    return [g.group_id for g in listed.groups]


# -- list-groups -------------------------------------------------------------------------------


def group_types(text: str) -> list[str]:
    """Kafka's `--type` list: group types separated by commas, any case."""
    wanted = [t.strip().lower() for t in text.split(",")]
    if not all(t in groups.TYPES for t in wanted):
        raise ValueError(f"group types separated by commas, of {', '.join(groups.TYPES)}")
    return wanted


@command("list-groups",
         Option("--state", type=group_states, metavar="STATE[,STATE]",
                help="Only groups in these states (e.g. Stable,Empty)."),
         Option("--type", type=group_types, metavar="TYPE[,TYPE]", aliases=("--group-type",),
                help="Only groups of these types: classic, consumer, share, streams."),
         help="List groups with their state, type (classic, consumer, share, streams), protocol and member count.",
         examples=("list-groups", "list-groups --state Stable", "list-groups --type consumer,classic"))
def list_groups(session: Session, args: dict) -> Result:
    listed = groups.list_groups(session.conn, args["state"] or (), args["type"] or ())
    # Each type's own describe API: its state and members now (a group it cannot describe keeps
    # what ListGroups says, without a member count).
    of_type = {kind: [g.group_id for g in listed.groups if g.group_type in kinds]
               for kind, kinds in (("consumer", ("classic", "consumer")), ("share", ("share",)),
                                   ("streams", ("streams",)))}
    found: dict[str, tuple[str | None, int]] = {}
    if of_type["consumer"]:
        found.update({gid: (d.state, len(d.members)) for gid, d in groups.describe(session.conn, of_type["consumer"]).items()
                      if d.problem is None})
    for kind, module in (("share", share_groups), ("streams", streams_groups)):
        if of_type[kind]:
            found.update({gid: (d.state, len(d.members)) for gid, d in module.describe(session.conn, of_type[kind]).items()
                          if not isinstance(d, str)})
    rows = []
    for g in listed.groups:
        state, members = found.get(g.group_id, (g.state, None))
        rows.append([g.group_id, state or None, g.group_type, g.protocol_type or None, members])
    return Result.outcome([Table(["Group", "State", "Type", "ProtocolType", "Members"], rows, name="groups")],
                          [], listed.failures)


# -- describe-group ----------------------------------------------------------------------------


@command("describe-group",
         Option("group", type=group_id, repeatable=True, metavar="GROUP", completer="group", help="Consumer group id."),
         ALL_GROUPS,
         Option("--members", flag=True, help="Members: consumer id, host, client id, assigned partitions."),
         Option("--state", flag=True, help="State, coordinator, assignment strategy and member count."),
         Option("--offsets", flag=True,
                help="Per partition: current offset, log end offset, lag and member (the default)."),
         Option("--topic", metavar="NAME", completer="topic",
                help=TOPIC_CONTEXT_HELP + " Only its partitions are shown."),
         Option("--verbose", flag=True,
                help="With --members or --state: KIP-848 epochs, targets, subscriptions (consumer groups)."),
         topic_context=True, exclusive_groups=(("--members", "--state", "--offsets"),),
         required_groups=(("group", "--all-groups"),),
         help="Describe consumer groups (classic and KIP-848): offsets and lag (default), --members or --state.",
         examples=("describe-group orders-app", "describe-group orders-app --members",
                   "describe-group orders-app --members --verbose", "describe-group a b --state"))
def describe_group(session: Session, args: dict) -> Result:
    ids = chosen_groups(session, args["group"], args["all_groups"])
    described = groups.describe(session.conn, ids)
    failures = [d.problem for d in described.values() if d.problem is not None]
    found = [d for d in described.values() if d.problem is None]
    verbose = args["verbose"]
    if args["state"]:
        rows = [[d.group_id, d.coordinator, d.protocol or None, d.state, len(d.members)]
                + ([d.group_type, *group_epochs(d)] if verbose else []) for d in found]
        table = Table(["Group", "Coordinator", "AssignmentStrategy", "State", "Members"]
                      + (["Type", "GroupEpoch", "TargetAssignmentEpoch"] if verbose else []), rows, name="groups")
        return Result.outcome([table], [], failures)
    topic = args["topic"]
    if args["members"]:
        rows = []
        for d in found:
            for m in d.members:
                mine = [k for k in m.assignment if topic is None or k[0] == topic]
                rows.append([d.group_id, m.member_id, m.instance_id, m.host, m.client_id, len(mine),
                             assignment(mine)] + (member_epochs(d, m.member_id, topic) if verbose else []))
        table = Table(["Group", "ConsumerId", "GroupInstanceId", "Host", "ClientId", "Partitions", "Assignment"]
                      + (VERBOSE_MEMBER_COLUMNS if verbose else []), rows, name="members",
                      kinds={"Assignment": "assignment", "TargetAssignment": "assignment"})
        return Result.outcome([table], [], failures)
    return _describe_offsets(session, found, topic, failures)


VERBOSE_MEMBER_COLUMNS = ["CurrentEpoch", "TargetEpoch", "TargetAssignment", "Reconciled", "Subscription",
                          "SubscriptionRegex", "Rack"]


def group_epochs(d: groups.GroupDescription) -> list[int | None]:
    """A KIP-848 group's epoch and target assignment epoch (none for classic groups)."""
    return [d.consumer.group_epoch, d.consumer.assignment_epoch] if d.consumer else [None, None]


def member_epochs(d: groups.GroupDescription, member_id: str, topic: str | None) -> list:
    """As Kafka's --members --verbose: the member's epoch and assignment beside the group's
    target epoch and the member's target; whether they agree; its subscription (topics or regex)."""
    m = next((m for m in d.consumer.members if m.member_id == member_id), None) if d.consumer else None
    if m is None:
        return [None] * len(VERBOSE_MEMBER_COLUMNS)
    target = [k for k in m.target_assignment if topic is None or k[0] == topic]
    return [m.member_epoch, d.consumer.assignment_epoch if d.consumer else None, assignment(target),
            m.reconciled, list(m.subscribed_topics), m.subscribed_regex or None, m.rack]


def assignment(keys: list[Key]) -> list[dict]:
    """Partitions as json gives an assignment: [{"topic": "t", "partitions": [0, 1]}] (the
    table shows "t(0,1)", render's assignment kind)."""
    by_topic: dict[str, list[int]] = {}
    for t, p in sorted(keys):
        by_topic.setdefault(t, []).append(p)
    return [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]


def _describe_offsets(session: Session, found: list[groups.GroupDescription], topic: str | None,
                      failures: list[str]) -> Result:
    committed: dict[str, dict[Key, int]] = {}
    for gid, c in offsets.committed(session.conn, [d.group_id for d in found]).items():
        if c.problem is not None:
            failures.append(c.problem)
        committed[gid] = c.offsets
    owners: dict[str, dict[Key, groups.Member]] = {
        d.group_id: {k: m for m in d.members for k in m.assignment} for d in found}
    keys_of = {d.group_id: sorted(k for k in {*committed[d.group_id], *owners[d.group_id]}
                                  if topic is None or k[0] == topic) for d in found}
    names = sorted({t for ks in keys_of.values() for t, _ in ks})
    ends = offsets.log_offsets(session.conn, session.conn.read(names), {k for ks in keys_of.values() for k in ks},
                               LATEST) if names else {}
    rows: list[list] = []
    by_topic: dict[tuple[str, str], list] = {}
    by_group: list[list] = []
    messages: list[str] = []
    for d in found:
        total: int | None = None
        for key in keys_of[d.group_id]:
            current = committed[d.group_id].get(key)
            end = ends[key]
            if end.gone:
                # As Kafka's tool: a deleted topic's offsets show without a log end, no failure.
                gone = (f"Topic {key[0]} no longer exists: group '{shown(d.group_id)}' still has offsets for it "
                        "(delete-offsets removes them).")
                if gone not in messages:
                    messages.append(gone)
            elif end.error:
                failures.append(end.error)
            leo = None if end.error else end.offset
            lag = leo - current if leo is not None and current is not None else None
            m = owners[d.group_id].get(key)
            rows.append([d.group_id, key[0], key[1], current, leo, lag, m.member_id if m else None,
                         m.host if m else None, m.client_id if m else None])
            entry = by_topic.setdefault((d.group_id, key[0]), [0, None])
            entry[0] += 1
            if lag is not None:
                entry[1] = (entry[1] or 0) + lag
                total = (total or 0) + lag
        by_group.append([d.group_id, d.state, len(d.members), len(keys_of[d.group_id]), total])
        if not d.members:
            messages.append(f"Consumer group '{shown(d.group_id)}' has no active members.")
    tables = [Table(["Group", "Topic", "Partition", "CurrentOffset", "LogEndOffset", "Lag", "ConsumerId",
                     "Host", "ClientId"], rows, name="offsets"),
              Table(["Group", "Topic", "Partitions", "Lag"],
                    [[g, t, n, lag] for (g, t), (n, lag) in sorted(by_topic.items())], name="topic_totals"),
              Table(["Group", "State", "Members", "Partitions", "Lag"], by_group, name="group_totals")]
    return Result.outcome(tables, messages, failures)


# -- reset-offsets -----------------------------------------------------------------------------

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


@command("reset-offsets",
         Option("--group", type=group_id, repeatable=True, metavar="GROUP", completer="group",
                help="Consumer group whose offsets to reset."),
         ALL_GROUPS,
         Option("--topic", repeatable=True, metavar="TOPIC[:P,P]", completer="topic",
                help=TOPIC_CONTEXT_HELP + " topic:0,1 names some of its partitions."),
         Option("--all-topics", flag=True, help="Every topic the group has committed offsets for."),
         *RESET_SPECIFIERS,
         *PLAN_OPTIONS,
         mutates=True, topic_context=True,
         confirm=EXECUTE_CONFIRM,
         required_groups=(SPECIFIERS, ("--group", "--all-groups")),
         exclusive_groups=(("--topic", "--all-topics", "--from-file"),),
         help="Plan (default) or --execute a reset of a group's committed offsets (the group must be inactive).",
         examples=("reset-offsets --group app --topic orders --to-earliest",
                   "reset-offsets --group app --topic orders:0,1 --shift-by -10 --execute",
                   "reset-offsets --group app --all-topics --to-datetime 2024-01-31T12:00:00.000 --execute",
                   "reset-offsets --group app --all-topics --to-current --export > plan.csv",
                   "reset-offsets --group app --from-file plan.csv --execute"))
def reset_offsets(session: Session, args: dict) -> Result | Proposal:
    group_ids = chosen_groups(session, args["group"], args["all_groups"])
    plan_file = read_plan(args["from_file"], group_ids) if args["from_file"] else None
    if not (args["topic"] or args["all_topics"] or plan_file is not None):
        raise UsageError("reset-offsets needs a scope: --topic, --all-topics or --from-file")
    execute = args["execute"] and not args["dry_run"]
    described = groups.describe(session.conn, group_ids)
    failures: list[str] = []
    notes: list[str] = []
    plans: dict[str, dict[Key, tuple[int | None, int]]] = {}
    inactive = []
    for gid in group_ids:
        d = described[gid]
        if d.problem is not None and not d.missing:
            failures.append(d.problem)
        elif d.active:
            failures.append(f"Assignments can only be reset if the group '{shown(gid)}' is inactive, but the current "
                            f"state is {d.state}.")
        else:
            inactive.append(gid)
    committed = offsets.committed(session.conn, inactive) if inactive else {}
    for gid in inactive:
        problem = committed[gid].problem
        if problem is not None:
            failures.append(problem)
            continue
        try:
            plans[gid] = _plan(session, gid, committed[gid].offsets, args, plan_file, notes, failures)
        except KafkaCallError as exc:
            failures.append(str(exc))
    rows = [[gid, t, p, current, new] for gid, plan in plans.items() for (t, p), (current, new) in sorted(plan.items())]
    table = Table(["Group", "Topic", "Partition", "CurrentOffset", "NewOffset"], rows, name="offsets")
    text = export_plan(plans, len(group_ids) == 1) if args["export"] else None
    if execute and plans:
        def commit() -> Result:
            for gid, plan in plans.items():
                refused = offsets.commit(session.conn, gid, {k: new for k, (_, new) in plan.items()})
                failures.extend(f"{t}-{p}: {why}" for (t, p), why in sorted(refused.items()) if why is not None)
                done = sum(1 for why in refused.values() if why is None)
                notes.append(f"Reset {done} offset(s) of group '{shown(gid)}'.")
            return Result.outcome([table], notes, failures, text)
        groups_named = ", ".join(sorted(shown(gid) for gid in plans))
        return Proposal(f"Reset {len(rows)} offset(s) of group(s) {groups_named}. Continue?",
                        "reset-offsets --execute changes committed offsets", commit)
    if plans and not args["export"]:
        notes.append("Dry run: nothing was changed (add --execute to apply).")
    return Result.outcome([table], notes, failures, text)


def _plan(session: Session, gid: str, committed: dict[Key, int], args: dict, plan_file: dict[str, dict[Key, int]] | None,
          notes: list[str], failures: list[str]) -> dict[Key, tuple[int | None, int]]:
    """The partitions of the reset's scope and their new offsets (reset_targets)."""
    if plan_file is not None:
        if gid not in plan_file:
            failures.append(f"No reset plan for group {shown(gid)} found")
            return {}
        requested = plan_file[gid]
        keys = list(requested)
        snap = read_partitions(session, keys)
    elif args["all_topics"]:
        keys = sorted(committed)
        snap = read_partitions(session, keys)
    else:
        snap = topics.read_for(session.conn, topics.names_of(args["topic"]))
        keys = topics.partitions_of(snap, args["topic"])
    return reset_targets(session, snap, keys, committed, args, notes, failures,
                         plan_file[gid] if plan_file is not None else None)


def reset_targets(session: Session, snap: ClusterSnapshot, keys: list[Key], committed: dict[Key, int], args: dict,
                  notes: list[str], failures: list[str],
                  from_file: dict[Key, int] | None = None) -> dict[Key, tuple[int | None, int]]:
    """(topic, partition) -> (committed offset or None, new offset) of `keys` for the reset
    specifier of `args` (--to-earliest, --shift-by, ...; `from_file`: --from-file's offsets),
    as Kafka's tools compute it."""
    targets: dict[Key, int] = {}

    def log_at(timestamp: int) -> dict[Key, int]:
        answers = offsets.log_offsets(session.conn, snap, keys, timestamp)
        good = {}
        for key, a in answers.items():
            if a.error:
                failures.append(a.error)
            else:
                good[key] = a.offset
        return good

    if not keys:
        return {}
    if args["to_earliest"]:
        targets = log_at(EARLIEST)
    elif args["to_latest"]:
        targets = log_at(LATEST)
    elif args["to_current"]:
        without = [k for k in keys if k not in committed]
        ends = log_at(LATEST) if without else {}
        targets = {k: committed[k] if k in committed else ends[k] for k in keys if k in committed or k in ends}
    elif args["to_datetime"] is not None or args["by_duration"] is not None:
        when = args["to_datetime"] if args["to_datetime"] is not None else int(time.time() * 1000) - args["by_duration"]
        found = log_at(when)
        empty = [k for k, offset in found.items() if offset < 0]
        ends = log_at(LATEST) if empty else {}
        for key in empty:
            notes.append(f"Warn: Partition {key[1]} from topic {key[0]} is empty. Falling back to latest known offset.")
        targets = {k: (ends[k] if offset < 0 else offset) for k, offset in found.items() if offset >= 0 or k in ends}
    else:
        if from_file is not None:
            requested = from_file
        elif args["to_offset"] is not None:
            requested = dict.fromkeys(keys, args["to_offset"])
        elif args["shift_by"] is not None:
            without = [k for k in keys if k not in committed]
            if without:
                raise UsageError(f"Cannot shift offset for partition {without[0][0]}-{without[0][1]} since there is "
                                 "no current committed offset (use another specifier for it)")
            requested = {k: committed[k] + args["shift_by"] for k in keys}
        targets = _clamp(requested, log_at(EARLIEST), log_at(LATEST), notes)
    return {k: (committed.get(k), targets[k]) for k in keys if k in targets}


def read_partitions(session: Session, keys: list[Key]) -> ClusterSnapshot:
    """A fresh read of the topics of `keys`; a topic that does not exist is an error."""
    snap = session.conn.read(sorted({t for t, _ in keys}))
    missing = sorted({t for t, _ in keys} - set(snap.topics))
    if missing:
        raise topics.missing(missing[0])
    return snap


def _clamp(requested: dict[Key, int], starts: dict[Key, int], ends: dict[Key, int], notes: list[str]) -> dict[Key, int]:
    """Kafka's checkOffsetsRange: an offset past the log end becomes the log end, one before the
    log start the log start, each with a note."""
    out = {}
    for key, offset in requested.items():
        if key not in starts or key not in ends:
            continue  # its error is already reported
        label = f"{key[0]}-{key[1]}"
        if offset > ends[key]:
            notes.append(f"New offset ({offset}) is higher than latest offset for topic partition {label}. "
                         f"Value will be set to {ends[key]}")
            offset = ends[key]
        elif offset < starts[key]:
            notes.append(f"New offset ({offset}) is lower than earliest offset for topic partition {label}. "
                         f"Value will be set to {starts[key]}")
            offset = starts[key]
        out[key] = offset
    return out


def read_plan(path: str, group_ids: list[str]) -> dict[str, dict[Key, int]]:
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


def export_plan(plans: dict[str, dict[Key, tuple[int | None, int]]], single_group: bool) -> str:
    """Kafka's --export CSV: topic,partition,offset for one group, else group first."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for gid, plan in plans.items():
        for (t, p), (_, new) in sorted(plan.items()):
            writer.writerow([t, p, new] if single_group else [gid, t, p, new])
    return out.getvalue()


# -- delete-group / delete-offsets -------------------------------------------------------------


def _listed(items: list[str], limit: int = 10) -> str:
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _delete_group_targets(session: Session, args: dict) -> tuple[list[str], list[str]]:
    """(groups that can be deleted, one line per group that cannot), read now."""
    if args["group"] and args["all_groups"]:
        raise UsageError("Give groups or --all-groups, not both")
    if not args["group"] and not args["all_groups"]:
        raise UsageError("delete-group needs groups or --all-groups")
    ids = chosen_groups(session, args["group"] or [], args["all_groups"])
    described = groups.describe(session.conn, ids) if ids else {}
    failures, deletable = [], []
    for gid in ids:
        d = described[gid]
        if d.problem is not None:
            failures.append(d.problem)
        elif d.members:
            failures.append(f"Consumer group '{shown(gid)}' has {len(d.members)} active member(s): stop its consumers "
                            "first (it was not deleted).")
        else:
            deletable.append(gid)
    return deletable, failures


def confirm_delete_group(session: Session, args: dict) -> str | None:
    """Names the groups and how many committed offsets go with them."""
    deletable, _ = _delete_group_targets(session, args)
    if not deletable:
        return None
    committed = offsets.committed(session.conn, deletable)
    count = sum(len(committed[g].offsets) for g in deletable if committed[g].problem is None)
    plural = "s" if len(deletable) > 1 else ""
    return (f"Delete {len(deletable)} consumer group{plural} ({_listed([shown(g) for g in deletable])}) "
            f"and {count} committed offset(s)?")


@command("delete-group", Option("group", type=group_id, repeatable=True, metavar="GROUP", completer="group",
                                help="Consumer group to delete."),
         Option("--all-groups", flag=True, help="Every group the brokers list (only empty ones are deleted)."),
         mutates=True, confirm=Confirm(question=confirm_delete_group),
         help="Delete consumer groups and their offsets (only empty groups; asks for confirmation).",
         examples=("delete-group old-app --yes", "delete-group a b --dry-run", "delete-group --all-groups --dry-run"))
def delete_group(session: Session, args: dict) -> Result:
    deletable, failures = _delete_group_targets(session, args)
    messages = []
    if args["dry_run"]:
        messages = [f"Would delete consumer group '{shown(gid)}' (dry run)." for gid in deletable]
    elif deletable:
        for gid, why in groups.delete(session.conn, deletable).items():
            if why is not None:
                failures.append(why)
            else:
                messages.append(f"Deleted consumer group '{shown(gid)}'.")
    return Result.message(*messages, *failures, exit_code=1 if failures else 0)


def confirm_delete_offsets(session: Session, args: dict) -> str | None:
    """Names the group and each partition with the offset it would lose."""
    gid = args["group"]
    keys = topics.partitions_of(topics.read_for(session.conn, topics.names_of(args["topic"])), args["topic"])
    held = offsets.committed(session.conn, [gid])[gid]
    if held.problem is not None:
        raise ShellError(held.problem)
    lost = [f"{t}-{p} at {held.offsets[(t, p)]}" for t, p in keys if (t, p) in held.offsets]
    if not lost:
        return None   # nothing committed there: the command says so, nothing to ask
    return f"Delete the committed offsets of group '{shown(gid)}' for {len(lost)} partition(s) ({_listed(lost)})?"


@command("delete-offsets",
         Option("--group", type=group_id, required=True, metavar="GROUP", completer="group", help="Consumer group."),
         Option("--topic", repeatable=True, required=True, metavar="TOPIC[:P,P]", completer="topic",
                help=TOPIC_CONTEXT_HELP + " topic:0,1 names some of its partitions."),
         mutates=True, confirm=Confirm(question=confirm_delete_offsets), topic_context=True,
         help="Delete a group's committed offsets of topics it no longer consumes.",
         examples=("delete-offsets --group app --topic old-topic --yes",))
def delete_offsets(session: Session, args: dict) -> Result:
    gid = args["group"]
    keys = topics.partitions_of(topics.read_for(session.conn, topics.names_of(args["topic"])), args["topic"])
    if args["dry_run"]:
        return Result.message(*(f"Would delete the offset of {t}-{p} for group '{shown(gid)}' (dry run)."
                                for t, p in keys))
    return deleted_offsets(session, gid, keys)


def deleted_offsets(session: Session, gid: str, keys: list[Key]) -> Result:
    """Delete a group's committed offsets of `keys` (OffsetDelete): a row per partition, a
    failure line per partition the coordinator refused."""
    refused, per_partition = offsets.delete(session.conn, gid, keys)
    if refused is not None:
        raise ShellError(refused)
    failures = [f"{t}-{p}: {why}" for (t, p), why in sorted(per_partition.items()) if why is not None]
    rows = [[t, p, "Error" if why else "Successful"] for (t, p), why in sorted(per_partition.items())]
    return Result.outcome([Table(["Topic", "Partition", "Status"], rows, name="offsets")], [], failures)
