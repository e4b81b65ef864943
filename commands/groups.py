"""Consumer group commands, after Kafka's kafka-consumer-groups: list-groups, describe-group,
reset-offsets, delete-group, delete-offsets.

Each group is served by its coordinator (the connection manager finds it and asks again while
it moves; kafka_shell/admin/groups.py and offsets.py say what is asked). Every failure is one
line and makes the exit code 1; the rest of the command still runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.declarations import failure_lines
from kafka_shell.admin import groups, lag, offsets, resets, share_groups, streams_groups, topics
from kafka_shell.admin.errors import no_such_group
from kafka_shell.base.answers import Answers
from kafka_shell.base.errors import KafkaCallError, ShellError, UsageError, shown
from kafka_shell.declarations.group_offsets import (EXECUTE_CONFIRM, PLAN_OPTIONS, RESET_SPECIFIERS, SPECIFIERS,
                                                   deletion_result, named_partitions, planned, read_csv, reset_spec,
                                                   to_csv)
from kafka_shell.declarations.option_types import group_id, topic_partitions
from kafka_shell.declarations.registry import Confirm, Option, command
from kafka_shell.declarations.render import Proposal, Result, Table

if TYPE_CHECKING:
    from collections.abc import Callable

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
    if listed.errors:
        raise ShellError(" ".join(failure_lines.group_listing_lines(listed.errors)))
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
         Option("--lag", flag=True,
                help="Each group's total lag: its committed offsets against the log ends, each partition's log end "
                     "read once for all groups (share groups: their share-partition lag, Kafka 4.4)."),
         help="List groups with their state, type (classic, consumer, share, streams), protocol and member count "
              "(--lag: and total lag).",
         examples=("list-groups", "list-groups --state Stable", "list-groups --type consumer,classic", "list-groups --lag"),
         tables=("groups",))
def list_groups(session: Session, args: dict) -> Result:
    listed = groups.list_groups(session.conn, args["state"] or (), args["type"] or ())
    # Each type's own describe API: its state and members now (a group it cannot describe keeps
    # what ListGroups says, without a member count).
    of_type = {kind: [g.group_id for g in listed.groups if g.group_type in kinds]
               for kind, kinds in (("consumer", ("classic", "consumer")), ("share", ("share",)),
                                   ("streams", ("streams",)))}
    found: dict[str, tuple[str | None, int]] = {}
    if of_type["consumer"]:
        found.update({gid: (d.state, len(d.members))
                      for gid, d in groups.describe(session.conn, of_type["consumer"]).rows.items()})
    for kind, module in (("share", share_groups), ("streams", streams_groups)):
        if of_type[kind]:
            found.update({gid: (d.state, len(d.members))
                          for gid, d in module.describe(session.conn, of_type[kind]).rows.items()})
    failures = failure_lines.group_listing_lines(listed.errors)
    lags = _group_lags(session, listed.groups, failures) if args["lag"] else {}
    rows = []
    for g in listed.groups:
        state, members = found.get(g.group_id, (g.state, None))
        rows.append([g.group_id, state or None, g.group_type, g.protocol_type or None, members]
                    + ([lags.get(g.group_id)] if args["lag"] else []))
    columns = ["Group", "State", "Type", "ProtocolType", "Members"] + (["Lag"] if args["lag"] else [])
    return Result.outcome([Table(columns, rows, name="groups")], [], failures)


def _group_lags(session: Session, listed: list[groups.GroupListing], failures: list[str]) -> dict[str, int | None]:
    """Each group's total lag: committed offsets (classic, consumer and streams groups) against
    log ends read once per partition, or the share-partition lag of share groups."""
    share = [g.group_id for g in listed if g.group_type == "share"]
    committing = [g.group_id for g in listed if g.group_type != "share"]
    lags = lag.read(session.conn, committing)
    failures += _lag_lines(lags)
    shared = lag.share_group_lags(session.conn, share)
    failures += failure_lines.group_lines(shared.errors, kind="share")
    return {**{gid: lags.total(gid) for gid in committing}, **shared.rows}


def _lag_lines(lags: lag.GroupLags) -> list[str]:
    """What a lag read could not read: groups' committed offsets, partitions' log ends."""
    return failure_lines.group_lines(lags.offset_errors) + failure_lines.partition_lines(lags.log_end_errors)


# -- describe-group ----------------------------------------------------------------------------


@command("describe-group",
         Option("group", type=group_id, repeatable=True, metavar="GROUP", completer="group", help="Consumer group id."),
         ALL_GROUPS,
         Option("--members", flag=True, help="Members: consumer id, host, client id, assigned partitions."),
         Option("--state", flag=True, help="State, coordinator, assignment strategy and member count."),
         Option("--offsets", flag=True,
                help="Per partition: current offset, log end offset, lag and member (the default)."),
         Option("--by-topic", flag=True,
                help="Lag per topic and per group, without a row per partition (for groups of thousands of "
                     "partitions)."),
         Option("--topic", metavar="NAME", completer="topic",
                help="Only this topic's partitions (the context topic does not narrow a group's description)."),
         Option("--verbose", flag=True,
                help="With --members or --state: KIP-848 epochs, targets, subscriptions (consumer groups)."),
         exclusive_groups=(("--members", "--state", "--offsets"), ("--members", "--state", "--by-topic")),
         required_groups=(("group", "--all-groups"),),
         help="Describe consumer groups (classic and KIP-848): offsets and lag (default) with lag per topic, per "
              "group and (several groups) in total; --by-topic without the partitions; --members or --state.",
         examples=("describe-group orders-app", "describe-group --all-groups --by-topic",
                   "describe-group orders-app --members", "describe-group orders-app --members --verbose",
                   "describe-group a b --state"),
         tables=("groups", "members", "offsets", "topic_totals", "group_totals", "total"))
def describe_group(session: Session, args: dict) -> Result:
    ids = chosen_groups(session, args["group"], args["all_groups"])
    offsets_view = not args["state"] and not args["members"]
    # The offsets view: the committed offsets and their log ends read while the groups are described.
    held = lag.read_meanwhile(session.conn, ids, args["topic"]) if offsets_view and ids else None
    described = groups.describe(session.conn, ids)
    failures = failure_lines.group_lines(described.errors)
    found = list(described.rows.values())
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
    return _describe_offsets(session, found, topic, failures, args["by_topic"], held)


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
                      failures: list[str], by_topic: bool, held: Callable[[], lag.Read] | None = None) -> Result:
    """Per partition: committed offset, log end, lag and owner (unless `by_topic`); then lag per
    topic, per group, and with several groups the total of everything shown."""
    owners: dict[str, dict[Key, groups.Member]] = {
        d.group_id: {k: m for m in d.members for k in m.assignment} for d in found}
    lags = lag.read(session.conn, [d.group_id for d in found], owners, topic, held)
    failures += _lag_lines(lags)
    # As Kafka's tool: a deleted topic's offsets show without a log end, no failure.
    messages = [f"Topic {t} no longer exists: group '{shown(gid)}' still has offsets for it "
                "(delete-offsets removes them)."
                for gid, deleted in lags.gone.items() for t in deleted]
    rows: list[list] = []
    nobody = (None, None, None)
    for d in found:
        gid = d.group_id
        owner_of = {k: (m.member_id, m.host, m.client_id) for k, m in owners[gid].items()}
        rows += [[gid, key[0], key[1], committed, log_end, lag_, *owner_of.get(key, nobody)]
                 for key, committed, log_end, lag_ in lags.partitions[gid]]
        if not d.members:
            messages.append(f"Consumer group '{shown(d.group_id)}' has no active members.")
    totals = [lags.total(d.group_id) for d in found]
    by_group = [[d.group_id, d.state, len(d.members), len(lags.partitions[d.group_id]), total]
                for d, total in zip(found, totals)]
    known = [t for t in totals if t is not None]
    tables = [] if by_topic else [Table(["Group", "Topic", "Partition", "CurrentOffset", "LogEndOffset", "Lag", "ConsumerId",
                                         "Host", "ClientId"], rows, name="offsets")]
    tables += [Table(["Group", "Topic", "Partitions", "Lag"],
                     [[d.group_id, t, n, total] for d in found for t, n, total in lags.by_topic(d.group_id)],
                     name="topic_totals"),
               Table(["Group", "State", "Members", "Partitions", "Lag"], by_group, name="group_totals")]
    if len(found) > 1:   # one group's line above is its total
        tables.append(Table(["Groups", "Topics", "Partitions", "Lag"],
                            [[len(found), len({p.key[0] for ps in lags.partitions.values() for p in ps}),
                              sum(len(ps) for ps in lags.partitions.values()), sum(known) if known else None]],
                            name="total"))
    return Result.outcome(tables, messages, failures)


# -- reset-offsets -----------------------------------------------------------------------------

@command("reset-offsets",
         Option("--group", type=group_id, repeatable=True, metavar="GROUP", completer="group",
                help="Consumer group whose offsets to reset."),
         ALL_GROUPS,
         Option("--topic", type=topic_partitions, repeatable=True, metavar="TOPIC[:P,P]", completer="topic",
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
                   "reset-offsets --group app --from-file plan.csv --execute"),
         tables=("offsets",))
def reset_offsets(session: Session, args: dict) -> Result | Proposal:
    group_ids = chosen_groups(session, args["group"], args["all_groups"])
    plan_file = read_csv(args["from_file"], group_ids) if args["from_file"] else None
    if not (args["topic"] or args["all_topics"] or plan_file is not None):
        raise UsageError("reset-offsets needs a scope: --topic, --all-topics or --from-file")
    execute = args["execute"] and not args["dry_run"]
    described = groups.describe(session.conn, group_ids)
    failures: list[str] = []
    notes: list[str] = []
    plans: dict[str, dict[Key, tuple[int | None, int]]] = {}
    inactive = []
    for gid in group_ids:
        d, error = described.rows.get(gid), described.errors.get(gid)
        if error is not None and not no_such_group(error):
            failures += failure_lines.group_lines({gid: error})
        elif d is not None and d.active:
            failures.append(f"Assignments can only be reset if the group '{shown(gid)}' is inactive, but the current "
                            f"state is {d.state}.")
        else:
            inactive.append(gid)
    committed = offsets.committed(session.conn, inactive) if inactive else Answers()
    failures += failure_lines.group_lines(committed.errors)
    for gid in inactive:
        if gid not in committed.rows:
            continue
        try:
            plans[gid] = _plan(session, gid, committed.rows[gid], args, plan_file, notes, failures)
        except (KafkaCallError, topics.NoSuchPartition) as exc:
            failures.append(failure_lines.read_failure_line(exc))
    rows = [[gid, t, p, current, new] for gid, plan in plans.items() for (t, p), (current, new) in sorted(plan.items())]
    table = Table(["Group", "Topic", "Partition", "CurrentOffset", "NewOffset"], rows, name="offsets")
    text = to_csv(plans, len(group_ids) == 1) if args["export"] else None
    if execute and plans:
        def commit() -> Result:
            for gid, plan in plans.items():
                done = offsets.commit(session.conn, gid, {k: new for k, (_, new) in plan.items()})
                failures.extend(failure_lines.committed_lines(done.errors, gid))
                notes.append(f"Reset {len(done.rows)} offset(s) of group '{shown(gid)}'.")
            return Result.outcome([table], notes, failures, text)
        groups_named = ", ".join(sorted(shown(gid) for gid in plans))
        return Proposal(f"Reset {len(rows)} offset(s) of group(s) {groups_named}. Continue?",
                        "reset-offsets --execute changes committed offsets", commit)
    if plans and not args["export"]:
        notes.append("Dry run: nothing was changed (add --execute to apply).")
    return Result.outcome([table], notes, failures, text)


def _plan(session: Session, gid: str, committed: dict[Key, int], args: dict, plan_file: dict[str, dict[Key, int]] | None,
          notes: list[str], failures: list[str]) -> dict[Key, tuple[int | None, int]]:
    """The partitions of the reset's scope and their new offsets, planned as Kafka's tools plan
    them (admin/resets.py); its notes and the partitions it could not read go to `notes` and
    `failures`."""
    if plan_file is not None:
        if gid not in plan_file:
            failures.append(f"No reset plan for group {shown(gid)} found")
            return {}
        keys = list(plan_file[gid])
        snap = resets.read_partitions(session.conn, keys)
    elif args["all_topics"]:
        keys = sorted(committed)
        snap = resets.read_partitions(session.conn, keys)
    else:
        snap, keys = named_partitions(session.conn, args["topic"])
    from_file = plan_file[gid] if plan_file is not None else None
    return planned(resets.targets(session.conn, snap, keys, committed, reset_spec(args, from_file), from_file),
                   notes, failures)


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
    described = groups.describe(session.conn, ids) if ids else Answers()
    failures, deletable = [], []
    for gid in ids:
        d = described.rows.get(gid)
        if d is None:
            failures += failure_lines.group_lines({gid: described.errors[gid]})
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
    count = sum(len(held) for held in committed.rows.values())
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
        deleted = groups.delete(session.conn, deletable)
        failures += failure_lines.group_lines(deleted.errors)
        messages += [f"Deleted consumer group '{shown(gid)}'." for gid in deleted.rows]
    return Result.message(*messages, *failures, exit_code=1 if failures else 0)


def confirm_delete_offsets(session: Session, args: dict) -> str | None:
    """Names the group and each partition with the offset it would lose."""
    gid = args["group"]
    keys = named_partitions(session.conn, args["topic"])[1]
    committed = offsets.committed(session.conn, [gid])
    if committed.errors:
        raise ShellError(" ".join(failure_lines.group_lines(committed.errors)))
    held = committed.rows[gid]
    lost = [f"{t}-{p} at {held[(t, p)]}" for t, p in keys if (t, p) in held]
    if not lost:
        return None   # nothing committed there: the command says so, nothing to ask
    return f"Delete the committed offsets of group '{shown(gid)}' for {len(lost)} partition(s) ({_listed(lost)})?"


@command("delete-offsets",
         Option("--group", type=group_id, required=True, metavar="GROUP", completer="group", help="Consumer group."),
         Option("--topic", type=topic_partitions, repeatable=True, required=True, metavar="TOPIC[:P,P]",
                completer="topic",
                help=TOPIC_CONTEXT_HELP + " topic:0,1 names some of its partitions."),
         mutates=True, confirm=Confirm(question=confirm_delete_offsets), topic_context=True,
         help="Delete a group's committed offsets of topics it no longer consumes.",
         examples=("delete-offsets --group app --topic old-topic --yes",),
         tables=("offsets",))
def delete_offsets(session: Session, args: dict) -> Result:
    gid = args["group"]
    keys = named_partitions(session.conn, args["topic"])[1]
    if args["dry_run"]:
        return Result.message(*(f"Would delete the offset of {t}-{p} for group '{shown(gid)}' (dry run)."
                                for t, p in keys))
    return deletion_result(offsets.delete(session.conn, gid, keys), gid, keys)


# -- copy-offsets ------------------------------------------------------------------------------


@command("copy-offsets",
         Option("--from-group", type=group_id, required=True, metavar="GROUP", completer="group",
                help="The group whose committed offsets are copied (it may be active)."),
         Option("--to-group", type=group_id, required=True, metavar="GROUP", completer="group",
                help="The group that gets them: inactive (Empty), or a group that does not exist yet."),
         Option("--topic", type=topic_partitions, repeatable=True, metavar="TOPIC[:P,P]", completer="topic",
                help="Only these topics (topic:0,1: some of its partitions); default: every partition the source "
                     "group committed."),
         *PLAN_OPTIONS,
         mutates=True, confirm=EXECUTE_CONFIRM,
         help="Plan (default) or --execute giving one group the committed offsets of another (as rpk group seek "
              "--to-group); the target group must be inactive.",
         description="Offsets outside their log now are moved to its start or end, with Kafka's note, as "
                     "reset-offsets --from-file does; partitions of deleted topics are left out. --export prints "
                     "the plan as Kafka's CSV for reset-offsets --from-file.",
         examples=("copy-offsets --from-group app --to-group app-v2",
                   "copy-offsets --from-group app --to-group app-v2 --topic orders --execute",
                   "copy-offsets --from-group app --to-group app-v2 --export > plan.csv"),
         tables=("offsets",))
def copy_offsets(session: Session, args: dict) -> Result | Proposal:
    source, target = args["from_group"], args["to_group"]
    if source == target:
        raise UsageError("--from-group and --to-group name the same group: give two groups")
    described = groups.describe(session.conn, [target])
    if target in described.errors and not no_such_group(described.errors[target]):
        raise ShellError(" ".join(failure_lines.group_lines(described.errors)))
    d = described.rows.get(target)
    if d is not None and d.active:
        raise ShellError(f"Offsets can only be copied to group '{shown(target)}' if it is inactive, but the current "
                         f"state is {d.state}: stop its consumers first.")
    held = offsets.committed(session.conn, [source, target])
    if held.errors:
        raise ShellError(" ".join(failure_lines.group_lines(held.errors)))
    requested = held.rows.get(source, {})
    if args["topic"]:
        scope = set(named_partitions(session.conn, args["topic"])[1])
        requested = {k: v for k, v in requested.items() if k in scope}
    if not requested:
        where = f" for {', '.join(map(str, args['topic']))}" if args["topic"] else ""
        raise ShellError(f"Group '{shown(source)}' has no committed offsets{where}: nothing to copy.")
    snap = session.conn.read(sorted({t for t, _ in requested}))
    notes = [f"Topic {t} no longer exists: the offsets of group '{shown(source)}' for it are not copied."
             for t in sorted({t for t, _ in requested} - set(snap.topics))]
    present = {k: v for k, v in requested.items() if k[0] in snap.topics}
    plan = resets.targets(session.conn, snap, sorted(present), held.rows.get(target, {}),
                          resets.Spec(resets.FROM_FILE), present)
    failures = failure_lines.partition_lines(plan.errors)
    notes += [failure_lines.reset_note(n) for n in plan.notes]
    new = {k: offset for k, (_, offset) in plan.rows.items()}
    table = Table(["Group", "Topic", "Partition", "CurrentOffset", "NewOffset"],
                  [[target, t, p, was, offset] for (t, p), (was, offset) in sorted(plan.rows.items())], name="offsets")
    text = to_csv({target: dict(plan.rows)}, True) if args["export"] else None
    if args["execute"] and not args["dry_run"] and new:
        def commit() -> Result:
            committed = offsets.commit(session.conn, target, new)
            failures.extend(failure_lines.committed_lines(committed.errors, target))
            notes.append(f"Copied {len(committed.rows)} offset(s) of group '{shown(source)}' to group '{shown(target)}'.")
            return Result.outcome([table], notes, failures, text)
        return Proposal(f"Copy {len(new)} offset(s) of group '{shown(source)}' to group '{shown(target)}'. Continue?",
                        "copy-offsets --execute changes committed offsets", commit)
    if new and not args["export"]:
        notes.append("Dry run: nothing was changed (add --execute to apply).")
    return Result.outcome([table], notes, failures, text)
