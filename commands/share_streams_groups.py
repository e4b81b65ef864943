"""Share group and streams group commands, after Kafka's kafka-share-groups (KIP-932) and
kafka-streams-groups (KIP-1071): list-share-groups, describe-share-group, delete-share-group,
list-streams-groups, describe-streams-group, delete-streams-group. A cluster without the group
type is told in one line (exit 1) before anything else is asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_shell.declarations import failure_lines
from kafka_shell.admin import groups, offsets, resets, share_groups, streams_groups, topics
from kafka_shell.admin.errors import gone
from kafka_shell.admin.offsets import EARLIEST, LATEST
from kafka_shell.base.answers import Answers
from kafka_shell.base.errors import KafkaCallError, ShellError, UsageError, shown
from kafka_shell.declarations.group_offsets import (EXECUTE_CONFIRM, PLAN_OPTIONS, RESET_SPECIFIERS, SPECIFIERS,
                                                   deletion_result, named_partitions, planned, read_csv, reset_spec,
                                                   to_csv)
from kafka_shell.declarations.option_types import choice_list, group_id, topic_partitions
from kafka_shell.declarations.registry import Confirm, Option, command
from kafka_shell.declarations.render import Proposal, Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.metadata import ClusterSnapshot
    from kafka_shell.connection.session import Session

Key = tuple[str, int]

share_states = choice_list(("Empty", "Stable", "Dead", "Unknown"), "states")


@command("list-share-groups",
         Option("--state", type=share_states, metavar="STATE[,STATE]", help="Only groups in these states."),
         help="List share groups (KIP-932) with their state.",
         examples=("list-share-groups", "list-share-groups --state Stable"),
         tables=("groups",))
def list_share_groups(session: Session, args: dict) -> Result:
    share_groups.require(session.conn)
    return listed_of_type(session, "share", args["state"])


def listed_of_type(session: Session, kind: str, states: list[str] | None) -> Result:
    listed = groups.list_groups(session.conn, states or (), [kind])
    rows = [[g.group_id, g.state or None] for g in listed.groups]
    return Result.outcome([Table(["Group", "State"], rows, name="groups")], [],
                          failure_lines.group_listing_lines(listed.errors))


@command("describe-share-group",
         Option("group", type=group_id, repeatable=True, required=True, metavar="GROUP", completer="group",
                help="Share group id."),
         Option("--members", flag=True, help="Members: consumer id, host, client id, assigned partitions."),
         Option("--state", flag=True, help="State, coordinator, assignor and member count."),
         Option("--offsets", flag=True, help="Per partition: start offset and lag (the default)."),
         Option("--verbose", flag=True, help="With --members or --state: epochs and racks."),
         Option("--topic", metavar="NAME", completer="topic", help="Only this topic's partitions (the context "
                "topic does not narrow a group's description)."),
         exclusive_groups=(("--members", "--state", "--offsets"),),
         help="Describe share groups: start offsets and lag (default), --members or --state.",
         examples=("describe-share-group orders-queue", "describe-share-group orders-queue --members --verbose"),
         tables=("groups", "members", "offsets"))
def describe_share_group(session: Session, args: dict) -> Result:
    ids = list(dict.fromkeys(args["group"]))
    described = share_groups.describe(session.conn, ids)
    failures = failure_lines.group_lines(described.errors, "share")
    found = list(described.rows.values())
    verbose, topic = args["verbose"], args["topic"]
    if args["state"]:
        rows = [[d.group_id, d.coordinator, d.state, len(d.members)]
                + ([d.assignor, d.group_epoch, d.assignment_epoch] if verbose else []) for d in found]
        columns = ["Group", "Coordinator", "State", "Members"] + (
            ["Assignor", "GroupEpoch", "AssignmentEpoch"] if verbose else [])
        return Result.outcome([Table(columns, rows, name="groups")], [], failures)
    if args["members"]:
        rows = []
        for d in found:
            for m in d.members:
                mine = [k for k in m.assignment if topic is None or k[0] == topic]
                rows.append([d.group_id, m.member_id, m.host, m.client_id, len(mine), _assignment(mine)]
                            + ([m.member_epoch, m.rack, list(m.subscribed_topics)] if verbose else []))
        columns = ["Group", "ConsumerId", "Host", "ClientId", "Partitions", "Assignment"] + (
            ["MemberEpoch", "Rack", "Subscription"] if verbose else [])
        return Result.outcome([Table(columns, rows, name="members", kinds={"Assignment": "assignment"})], [], failures)
    rows, notes = [], []
    for d in found:
        held = share_groups.offsets(session.conn, [d.group_id])
        failures += failure_lines.group_lines(held.errors)
        for p in held.rows.get(d.group_id, ()):
            if p.error_code:
                failures.append(failure_lines.partition_line(p.key, p.error_code))
            elif topic is None or p.key[0] == topic:
                rows.append([d.group_id, p.key[0], p.key[1], p.leader_epoch, p.start_offset, p.lag])
        if not d.members:
            notes.append(f"Share group '{shown(d.group_id)}' has no active members.")
    table = Table(["Group", "Topic", "Partition", "LeaderEpoch", "StartOffset", "Lag"], rows, name="offsets")
    return Result.outcome([table], notes, failures)


def _tasks(tasks: streams_groups.Tasks) -> list[dict]:
    """A member's tasks as json gives them: [{"subtopology": "0", "partitions": [0, 1]}] (the
    table shows Kafka's "0:[0,1]")."""
    return [{"subtopology": s, "partitions": list(ps)} for s, ps in tasks]


def _assignment(keys: list[tuple[str, int]]) -> list[dict]:
    """As json gives an assignment: [{"topic": "t", "partitions": [0, 1]}]."""
    by_topic: dict[str, list[int]] = {}
    for t, p in sorted(keys):
        by_topic.setdefault(t, []).append(p)
    return [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]


def _group_deletion(kind: str, groups: list[str]) -> str:
    ids = list(dict.fromkeys(groups))
    held = "their share state" if kind == "share" else "their committed offsets"
    return f"Delete {len(ids)} {kind} group(s) ({', '.join(map(shown, ids))}) and {held}?"


@command("delete-share-group",
         Option("group", type=group_id, repeatable=True, required=True, metavar="GROUP", completer="group",
                help="Share group to delete."),
         mutates=True, confirm=Confirm(asks=lambda args: _group_deletion("share", args["group"])),
         help="Delete share groups and their state (only groups without members; asks for confirmation).",
         examples=("delete-share-group old-queue --yes",))
def delete_share_group(session: Session, args: dict) -> Result:
    ids = list(dict.fromkeys(args["group"]))
    return delete_empty(session, ids, "share", share_groups.describe(session.conn, ids), args["dry_run"])


# kafka-share-groups --reset-offsets takes these of the consumer groups' specifiers (no --shift-by
# or --by-duration), computed by the same GroupOffsetsResetter.
SHARE_SPECIFIERS = ("--to-earliest", "--to-latest", "--to-current", "--to-offset", "--to-datetime", "--from-file")


@command("reset-share-group-offsets",
         Option("--group", type=group_id, required=True, metavar="GROUP", completer="group",
                help="Share group whose start offsets to reset."),
         Option("--topic", type=topic_partitions, repeatable=True, metavar="TOPIC", completer="topic",
                help="Topic (repeatable)."),
         Option("--all-topics", flag=True, help="Every topic the group has state for."),
         *(o for o in RESET_SPECIFIERS if o.name in SHARE_SPECIFIERS),
         *PLAN_OPTIONS,
         mutates=True,
         confirm=EXECUTE_CONFIRM,
         required_groups=(SHARE_SPECIFIERS,),
         exclusive_groups=(("--topic", "--all-topics", "--from-file"),),
         help="Plan (default) or --execute a reset of a share group's start offsets (the group must be empty), "
              "as kafka-share-groups --reset-offsets.",
         examples=("reset-share-group-offsets --group queue --topic orders --to-earliest",
                   "reset-share-group-offsets --group queue --all-topics --to-current --export",
                   "reset-share-group-offsets --group queue --from-file plan.csv --execute"),
         tables=("offsets",))
def reset_share_group_offsets(session: Session, args: dict) -> Result | Proposal:
    gid = args["group"]
    from_file = read_csv(args["from_file"], [gid]).get(gid, {}) if args["from_file"] else None
    if not (args["topic"] or args["all_topics"] or from_file is not None):
        raise UsageError("reset-share-group-offsets needs a scope: --topic, --all-topics or --from-file")
    not_empty = _not_empty(session, gid, "offsets can only be reset")
    if not_empty:
        return Result.outcome([], [], not_empty)
    held = share_groups.offsets(session.conn, [gid])
    if gid not in held.rows:
        return Result.outcome([], [], failure_lines.group_lines(held.errors))
    current = [o for o in held.rows[gid] if not o.error_code]
    starts = {o.key: o.start_offset for o in current if o.start_offset is not None and o.start_offset >= 0}
    if from_file is not None:
        keys = sorted(from_file)
    elif args["all_topics"]:
        keys = sorted(o.key for o in current)
    else:
        keys = named_partitions(session.conn, args["topic"])[1]
    notes: list[str] = []
    failures: list[str] = []
    try:
        snap = resets.read_partitions(session.conn, keys) if keys else session.conn.read([])
        spec = reset_spec({**args, "shift_by": None, "by_duration": None}, from_file)
        plan = planned(resets.targets(session.conn, snap, keys, starts, spec, from_file), notes, failures)
    except (KafkaCallError, topics.NoSuchPartition) as exc:
        return Result.outcome([], [], [failure_lines.read_failure_line(exc)])
    rows = [[gid, t, p, current_start, new] for (t, p), (current_start, new) in sorted(plan.items())]
    table = Table(["Group", "Topic", "Partition", "StartOffset", "NewStartOffset"], rows, name="offsets")
    text = to_csv({gid: plan}, True) if args["export"] else None
    if args["execute"] and not args["dry_run"] and plan:
        def apply() -> Result:
            done = share_groups.alter_offsets(session.conn, gid, {k: new for k, (_, new) in plan.items()})
            refused = failure_lines.group_refusal(done, gid)
            if refused is not None:
                return Result.outcome([table], notes, [refused, *failures], text)
            failures.extend(failure_lines.partition_lines(done.errors))
            return Result.outcome([table], [*notes, f"Reset {len(done.rows)} start offset(s) of share group "
                                            f"'{shown(gid)}'."], failures, text)
        return Proposal(f"Reset {len(rows)} start offset(s) of share group {shown(gid)}. Continue?",
                        "reset-share-group-offsets --execute changes start offsets", apply)
    if plan and not args["export"]:
        notes.append("Dry run: nothing was changed (add --execute to apply).")
    return Result.outcome([table], notes, failures, text)


def _not_empty(session: Session, gid: str, what: str) -> list[str]:
    """Why the share group's offsets cannot be changed now (it could not be described, or has
    members), or nothing."""
    described = share_groups.describe(session.conn, [gid])
    if gid not in described.rows:
        return failure_lines.group_lines(described.errors, "share")
    members = described.rows[gid].members
    if members:
        return [f"Share group '{shown(gid)}' is not empty: it has {len(members)} active member(s); {what} when it "
                "is empty."]
    return []


@command("delete-share-group-offsets",
         Option("--group", type=group_id, required=True, metavar="GROUP", completer="group",
                help="Share group whose state to delete."),
         Option("--topic", repeatable=True, required=True, metavar="TOPIC", completer="topic",
                help="Topic whose start offsets and delivery state to delete (repeatable)."),
         mutates=True, confirm=Confirm(asks=lambda args: f"Delete the share state of group '{shown(args['group'])}' for "
                                                          f"topic(s) {', '.join(map(shown, args['topic']))}?"),
         help="Delete a share group's offsets (its state) for topics (the group must be empty; asks for "
              "confirmation).",
         examples=("delete-share-group-offsets --group queue --topic orders --yes",),
         tables=("topics",))
def delete_share_group_offsets(session: Session, args: dict) -> Result:
    gid, topics = args["group"], list(dict.fromkeys(args["topic"]))
    not_empty = _not_empty(session, gid, "its offsets can only be deleted")
    if not_empty:
        return Result.outcome([], [], not_empty)
    if args["dry_run"]:
        return Result.outcome([Table(["Group", "Topic"], [[gid, t] for t in topics], name="topics")],
                              ["Dry run: nothing was deleted."], [])
    done = share_groups.delete_offsets(session.conn, gid, topics)
    refused = failure_lines.group_refusal(done, gid)
    if refused is not None:
        return Result.outcome([], [], [refused])
    deleted = [t for t in topics if t in done.rows]
    failures = failure_lines.lines(done.errors, lambda t, e: f"{t}: {e.message or f'error code {e.code}'}")
    table = Table(["Group", "Topic"], [[gid, t] for t in deleted], name="topics")
    return Result.outcome([table], [f"Deleted the offsets of {len(deleted)} topic(s) of share group '{shown(gid)}'."]
                          if deleted else [], failures)


# -- streams groups --------------------------------------------------------------------------

streams_states = choice_list(("Empty", "NotReady", "Assigning", "Reconciling", "Stable", "Dead"), "states")


@command("list-streams-groups",
         Option("--state", type=streams_states, metavar="STATE[,STATE]", help="Only groups in these states."),
         help="List streams groups (KIP-1071) with their state.",
         examples=("list-streams-groups",),
         tables=("groups",))
def list_streams_groups(session: Session, args: dict) -> Result:
    streams_groups.require(session.conn)
    return listed_of_type(session, "streams", args["state"])


@command("describe-streams-group",
         Option("group", type=group_id, repeatable=True, required=True, metavar="GROUP", completer="group",
                help="Streams group id (the application id)."),
         Option("--members", flag=True, help="Members: process, client id, active, standby and warm-up tasks."),
         Option("--state", flag=True, help="State, coordinator, assignor, member count, and the subtopologies' topics."),
         Option("--offsets", flag=True, help="Per input partition: committed offset, log end, lag (the default)."),
         Option("--verbose", flag=True, help="With --members or --state: epochs and target assignments."),
         Option("--topic", metavar="NAME", completer="topic", help="Only this topic's partitions (the context "
                "topic does not narrow a group's description)."),
         exclusive_groups=(("--members", "--state", "--offsets"),),
         help="Describe streams groups: offsets and lag (default), --members or --state.",
         examples=("describe-streams-group word-count", "describe-streams-group word-count --members --verbose"),
         tables=("groups", "subtopologies", "members", "offsets"))
def describe_streams_group(session: Session, args: dict) -> Result:
    ids = list(dict.fromkeys(args["group"]))
    described = streams_groups.describe(session.conn, ids)
    failures = failure_lines.group_lines(described.errors, "streams")
    found = list(described.rows.values())
    verbose, topic = args["verbose"], args["topic"]
    if args["state"]:
        rows = [[d.group_id, d.coordinator, d.assignor or None, d.state, len(d.members)]
                + ([d.group_epoch, d.assignment_epoch, d.topology_epoch] if verbose else []) for d in found]
        columns = ["Group", "Coordinator", "Assignor", "State", "Members"] + (
            ["GroupEpoch", "TargetAssignmentEpoch", "TopologyEpoch"] if verbose else [])
        subs = [[d.group_id, s.subtopology_id, list(s.source_topics), list(s.repartition_source_topics),
                 list(s.repartition_sink_topics), list(s.changelog_topics)] for d in found for s in d.subtopologies]
        return Result.outcome([Table(columns, rows, name="groups"),
                               Table(["Group", "Subtopology", "SourceTopics", "RepartitionSourceTopics",
                                      "RepartitionSinkTopics", "ChangelogTopics"], subs, name="subtopologies")],
                              [], failures)
    if args["members"]:
        rows = [[d.group_id, m.member_id, m.process_id, m.client_id, _tasks(m.active), _tasks(m.standby),
                 _tasks(m.warmup)]
                + ([m.member_epoch, "classic" if m.classic else "streams", _tasks(m.target_active),
                    _tasks(m.target_standby), _tasks(m.target_warmup)] if verbose else [])
                for d in found for m in d.members]
        columns = ["Group", "Member", "Process", "ClientId", "ActiveTasks", "StandbyTasks", "WarmupTasks"] + (
            ["MemberEpoch", "MemberProtocol", "TargetActiveTasks", "TargetStandbyTasks", "TargetWarmupTasks"]
            if verbose else [])
        kinds = {c: "assignment" for c in columns if c.endswith("Tasks")}
        return Result.outcome([Table(columns, rows, name="members", kinds=kinds)], [], failures)
    return _offsets(session, found, topic, failures)


def _offsets(session: Session, found: list[streams_groups.StreamsGroup], topic: str | None,
             failures: list[str]) -> Result:
    """As Kafka's tool: the partitions the members' active tasks read, their committed offset
    and log end; the lag of a partition without a committed offset is its whole log. A group
    without members shows its committed offsets of the topology's topics instead."""
    committed = offsets.committed(session.conn, [d.group_id for d in found]) if found else Answers()
    failures += failure_lines.group_lines(committed.errors)
    keys: dict[str, list[Key]] = {}
    for d in found:
        held = committed.rows.get(d.group_id, {})
        topology = {t for s in d.subtopologies for t in (*s.source_topics, *s.repartition_source_topics)}
        wanted = d.task_partitions() if d.members else {k for k in held if k[0] in topology}
        keys[d.group_id] = sorted(k for k in wanted if topic is None or k[0] == topic)
    every = {k for ks in keys.values() for k in ks}
    snap = session.conn.read(sorted({t for t, _ in every})) if every else None
    ends = offsets.log_offsets(session.conn, snap, every, LATEST) if snap else Answers()
    starts = offsets.log_offsets(session.conn, snap, every, EARLIEST) if snap else Answers()
    failures += failure_lines.partition_lines({k: e for k, e in {**starts.errors, **ends.errors}.items() if not gone(e)})
    rows, deleted = [], set()
    for d in found:
        for key in keys[d.group_id]:
            current, end, start = committed.rows.get(d.group_id, {}).get(key), ends.rows.get(key), starts.rows.get(key)
            if gone(ends.errors.get(key)) or gone(starts.errors.get(key)):
                deleted.add(key[0])   # an internal topic deleted with a reset: its offsets stay
                rows.append([d.group_id, key[0], key[1], current, None, None])
            elif end is None or start is None:
                rows.append([d.group_id, key[0], key[1], current, None, None])
            else:
                rows.append([d.group_id, key[0], key[1], current, end.offset,
                             end.offset - (current if current is not None else start.offset)])
    notes = [f"Streams group '{shown(d.group_id)}' has no active members." for d in found if not d.members]
    notes += [f"Topic '{shown(t)}' does not exist (any more); the group still holds offsets for it."
              for t in sorted(deleted)]
    return Result.outcome([Table(["Group", "Topic", "Partition", "CurrentOffset", "LogEndOffset", "Lag"], rows,
                                 name="offsets")], notes, failures)


@command("delete-streams-group",
         Option("group", type=group_id, repeatable=True, required=True, metavar="GROUP", completer="group",
                help="Streams group to delete."),
         mutates=True, confirm=Confirm(asks=lambda args: _group_deletion("streams", args["group"])),
         help="Delete streams groups and their offsets (only groups without members; asks for confirmation).",
         examples=("delete-streams-group old-app --yes",))
def delete_streams_group(session: Session, args: dict) -> Result:
    ids = list(dict.fromkeys(args["group"]))
    return delete_empty(session, ids, "streams", streams_groups.describe(session.conn, ids), args["dry_run"])


def delete_empty(session: Session, ids: list[str], noun: str,
                 described: Answers[str, share_groups.ShareGroup] | Answers[str, streams_groups.StreamsGroup],
                 dry_run: bool) -> Result:
    """Delete the groups of `ids` that have no members (DeleteGroups), as `described` has them."""
    failures, deletable = [], []
    for gid in ids:
        d = described.rows.get(gid)
        if d is None:
            failures += failure_lines.group_lines({gid: described.errors[gid]}, noun)
        elif d.members:
            failures.append(f"{noun.capitalize()} group '{shown(gid)}' has {len(d.members)} active member(s): stop "
                            "its clients first (it was not deleted).")
        else:
            deletable.append(gid)
    messages = []
    if dry_run:
        messages = [f"Would delete {noun} group '{shown(gid)}' (dry run)." for gid in deletable]
    elif deletable:
        deleted = groups.delete(session.conn, deletable)
        failures += failure_lines.group_lines(deleted.errors, noun)
        messages += [f"Deleted {noun} group '{shown(gid)}'." for gid in deleted.rows]
    return Result.message(*messages, *failures, exit_code=1 if failures else 0)


# -- reset-streams-group-offsets / delete-streams-group-offsets -------------------------------

INPUT_TOPIC = Option("--input-topic", type=topic_partitions, repeatable=True, metavar="TOPIC[:P,P]", completer="topic",
                     help="An input topic of the group (topic:0,1 names some of its partitions).")
ALL_INPUT_TOPICS = Option("--all-input-topics", flag=True,
                          help="Every source topic of the group's topology that it has committed offsets for.")


def topic_names(text: str) -> list[str]:
    """Topic names separated by commas."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise ValueError("topic names separated by commas")
    return names


def _streams_group_ids(session: Session, given: list[str], all_groups: bool) -> list[str]:
    if not all_groups:
        return list(dict.fromkeys(given))
    listed = groups.list_groups(session.conn, (), ["streams"])
    if listed.errors:
        raise ShellError(" ".join(failure_lines.group_listing_lines(listed.errors)))
    return [g.group_id for g in listed.groups]


def _scope(session: Session, d: streams_groups.StreamsGroup, held: dict[Key, int], args: dict,
           plan_file: dict[str, dict[Key, int]] | None) -> tuple[ClusterSnapshot, list[Key]] | str:
    """The partitions a reset or offset deletion of `d` covers, as Kafka's tool picks them (or
    the line why none): --all-input-topics: the committed partitions of its source topics;
    --input-topic: the partitions named, each of which the group must have committed."""
    if plan_file is not None:
        if d.group_id not in plan_file:
            return f"No reset plan for group {shown(d.group_id)} found"
        keys = sorted(plan_file[d.group_id])
        return resets.read_partitions(session.conn, keys), keys
    if args["all_input_topics"]:
        keys = sorted(k for k in held if k[0] in d.source_topics)
        return resets.read_partitions(session.conn, keys), keys
    snap, keys = named_partitions(session.conn, args["input_topic"])
    uncommitted = [f"{t}-{p}" for t, p in keys if (t, p) not in held]
    if uncommitted:
        return (f"Streams group '{shown(d.group_id)}' has no committed offset for {', '.join(uncommitted[:10])}"
                f"{' and more' if len(uncommitted) > 10 else ''}: Kafka's tool resets only partitions the group "
                "has committed (--all-input-topics takes those of every source topic).")
    return snap, keys


@command("reset-streams-group-offsets",
         Option("--group", type=group_id, repeatable=True, metavar="GROUP", completer="group",
                help="Streams group (application id) whose offsets to reset."),
         Option("--all-groups", flag=True, help="Every streams group of the cluster."),
         INPUT_TOPIC, ALL_INPUT_TOPICS,
         *RESET_SPECIFIERS,
         Option("--delete-internal-topic", type=topic_names, metavar="TOPIC[,TOPIC]", completer="topic",
                help="With --execute: also delete these internal topics of the group."),
         Option("--delete-all-internal-topics", flag=True,
                help="With --execute: also delete the group's internal topics (repartition and changelog)."),
         *PLAN_OPTIONS,
         mutates=True,
         confirm=EXECUTE_CONFIRM,
         required_groups=(SPECIFIERS, ("--group", "--all-groups")),
         exclusive_groups=(("--input-topic", "--all-input-topics", "--from-file"), ("--group", "--all-groups"),
                           ("--delete-internal-topic", "--delete-all-internal-topics")),
         help="Plan (default) or --execute a reset of a streams group's committed offsets (the application "
              "must be stopped), as kafka-streams-groups --reset-offsets.",
         examples=("reset-streams-group-offsets --group word-count --all-input-topics --to-earliest",
                   "reset-streams-group-offsets --group word-count --all-input-topics --to-earliest --execute "
                   "--delete-all-internal-topics",
                   "reset-streams-group-offsets --group word-count --input-topic lines:0 --shift-by -10 --execute"),
         tables=("offsets",))
def reset_streams_group_offsets(session: Session, args: dict) -> Result | Proposal:
    streams_groups.require(session.conn)
    group_ids = _streams_group_ids(session, args["group"], args["all_groups"])
    plan_file = read_csv(args["from_file"], group_ids) if args["from_file"] else None
    if not (args["input_topic"] or args["all_input_topics"] or plan_file is not None):
        raise UsageError("reset-streams-group-offsets needs a scope: --input-topic, --all-input-topics or --from-file")
    execute = args["execute"] and not args["dry_run"]
    described = streams_groups.describe(session.conn, group_ids) if group_ids else Answers()
    failures: list[str] = failure_lines.group_lines(described.errors, "streams")
    notes: list[str] = []
    inactive: list[streams_groups.StreamsGroup] = []
    for gid in group_ids:
        d = described.rows.get(gid)
        if d is None:
            continue
        if d.state not in ("Empty", "Dead"):
            failures.append(f"Assignments can only be reset if the group '{shown(gid)}' is inactive, but the current "
                            f"state is {d.state}.")
        else:
            inactive.append(d)
    committed = offsets.committed(session.conn, [d.group_id for d in inactive]) if inactive else Answers()
    failures += failure_lines.group_lines(committed.errors)
    plans: dict[str, dict[Key, tuple[int | None, int]]] = {}
    doomed: dict[str, list[str]] = {}      # the internal topics --execute deletes, per group
    for d in inactive:
        held = committed.rows.get(d.group_id)
        if held is None:
            continue
        try:
            scope = _scope(session, d, held, args, plan_file)
            if isinstance(scope, str):
                failures.append(scope)
                continue
            snap, keys = scope
            from_file = plan_file.get(d.group_id) if plan_file is not None else None
            plans[d.group_id] = planned(resets.targets(session.conn, snap, keys, held, reset_spec(args, from_file),
                                                       from_file), notes, failures) if keys else {}
        except (KafkaCallError, topics.NoSuchPartition) as exc:
            failures.append(failure_lines.read_failure_line(exc))
            continue
        doomed[d.group_id] = (list(d.internal_topics) if args["delete_all_internal_topics"]
                              else list(dict.fromkeys(args["delete_internal_topic"] or ())))
    rows = [[gid, t, p, current, new] for gid, plan in plans.items() for (t, p), (current, new) in sorted(plan.items())]
    table = Table(["Group", "Topic", "Partition", "CurrentOffset", "NewOffset"], rows, name="offsets")
    text = to_csv(plans, len(group_ids) == 1) if args["export"] else None
    internal = sorted({t for gid in plans for t in doomed[gid]})
    if execute and plans:
        def apply() -> Result:
            for gid, plan in plans.items():
                done = offsets.commit(session.conn, gid, {k: new for k, (_, new) in plan.items()})
                failures.extend(failure_lines.committed_lines(done.errors, gid))
                notes.append(f"Reset {len(done.rows)} offset(s) of streams group '{shown(gid)}'.")
            for outcome in topics.delete(session.conn, internal) if internal else []:
                if outcome.error is not None:
                    failures.append(f"Internal topic '{shown(outcome.name)}' was not deleted: "
                                    + failure_lines.deleted_line(outcome.error, outcome.name))
                else:
                    notes.append(f"Deleted internal topic '{shown(outcome.name)}'.")
            return Result.outcome([table], notes, failures, text)
        also = f" and delete {len(internal)} internal topic(s) ({', '.join(map(shown, internal))})" if internal else ""
        return Proposal(f"Reset {len(rows)} offset(s) of streams group(s) "
                        f"{', '.join(sorted(shown(g) for g in plans))}{also}. Continue?",
                        "reset-streams-group-offsets --execute changes committed offsets", apply)
    if plans and not args["export"]:
        would = f" (--execute would also delete {', '.join(map(shown, internal))})" if internal else ""
        notes.append(f"Dry run: nothing was changed (add --execute to apply){would}.")
    return Result.outcome([table], notes, failures, text)


def _offsets_to_delete(session: Session, args: dict) -> tuple[str, list[Key]]:
    """The group and the partitions delete-streams-group-offsets covers, read now."""
    gid = args["group"]
    described = streams_groups.describe(session.conn, [gid])
    if gid not in described.rows:
        raise ShellError(" ".join(failure_lines.group_lines(described.errors, "streams")))
    d = described.rows[gid]
    committed = offsets.committed(session.conn, [gid])
    if gid not in committed.rows:
        raise ShellError(" ".join(failure_lines.group_lines(committed.errors)))
    if args["all_input_topics"]:
        return gid, sorted(k for k in committed.rows[gid] if k[0] in d.source_topics)
    return gid, named_partitions(session.conn, args["input_topic"])[1]


def confirm_delete_streams_offsets(session: Session, args: dict) -> str | None:
    gid, keys = _offsets_to_delete(session, args)
    held = offsets.committed(session.conn, [gid]).rows.get(gid, {})
    lost = [f"{t}-{p} at {held[(t, p)]}" for t, p in keys if (t, p) in held]
    if not lost:
        return None
    shown_lost = ", ".join(lost[:10]) + (f" and {len(lost) - 10} more" if len(lost) > 10 else "")
    return f"Delete the committed offsets of streams group '{shown(gid)}' for {len(lost)} partition(s) ({shown_lost})?"


@command("delete-streams-group-offsets",
         Option("--group", type=group_id, required=True, metavar="GROUP", completer="group", help="Streams group."),
         INPUT_TOPIC, ALL_INPUT_TOPICS,
         mutates=True, confirm=Confirm(question=confirm_delete_streams_offsets),
         required_groups=(("--input-topic", "--all-input-topics"),),
         exclusive_groups=(("--input-topic", "--all-input-topics"),),
         help="Delete a streams group's committed offsets (of topics it no longer reads, or all of an "
              "inactive group), as kafka-streams-groups --delete-offsets.",
         examples=("delete-streams-group-offsets --group word-count --input-topic old-lines --yes",
                   "delete-streams-group-offsets --group word-count --all-input-topics --dry-run"),
         tables=("offsets",))
def delete_streams_group_offsets(session: Session, args: dict) -> Result:
    gid, keys = _offsets_to_delete(session, args)
    if args["dry_run"]:
        return Result.message(*(f"Would delete the offset of {t}-{p} for streams group '{shown(gid)}' (dry run)."
                                for t, p in keys))
    if not keys:
        return Result.message(f"Streams group '{shown(gid)}' has no committed offsets of its source topics.")
    return deletion_result(offsets.delete(session.conn, gid, keys), gid, keys)
