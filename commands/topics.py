"""KIP-4's topic commands: create-topic, alter-topic, delete-topic, list-topics, describe-topic.

Option names follow Kafka's kafka-topics tool. What a command shows or plans from it reads from
the cluster when it runs (one read per command); every change goes to the controller through
the connection manager. create-topic is batchable: a run of
create-topic lines in a script becomes one CreateTopics request (see runner.run_lines).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafka_shell.declarations import failure_lines
from kafka_shell.admin import topics
from kafka_shell.admin.topics import NewTopic
from kafka_shell.base.errors import KafkaCallError, ShellError, UsageError, shown
from kafka_shell.base.limits import MAX_PARTITIONS_PER_BATCH
from kafka_shell.connection.metadata import ZOOKEEPER, kafka_uuid
from kafka_shell.base.names import (PATTERN_HELP, check_topic_name, has_collision_chars, is_pattern, matcher, pattern_notes,
                               topic_pattern, valid_topic_name)
from kafka_shell.declarations.option_types import config_name, key_value, positive_int, replica_assignment, replication_factor
from kafka_shell.declarations.registry import Confirm, Option, command
from kafka_shell.declarations.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.connection.metadata import ClusterSnapshot, PartitionInfo, TopicInfo
    from kafka_shell.connection.session import Session

# DEFERRED: kafka_shell.admin.configs and .reassignments (Kafka's release definitions, the
# reassignment planner) are imported by the commands that use them, so that list-topics, the
# commonest one-shot line, starts without them.

# kafka-topics prints this for a name with '.' or '_' (Topic.hasCollisionChars).
COLLISION_WARNING = ("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore "
                     "('_') could collide. To avoid issues it is best to use either, but not both.")


# -- create-topic ----------------------------------------------------------------------------

CREATE_OPTIONS = (
    Option("--topic", repeatable=True, required=True, metavar="NAME", help="Topic to create."),
    Option("--partitions", type=positive_int, metavar="N",
           help="Number of partitions (default: the broker's num.partitions)."),
    Option("--replication-factor", type=replication_factor, metavar="N",
           help="Replicas per partition (default: the broker's default.replication.factor)."),
    Option("--replica-assignment", type=replica_assignment, metavar="B:B,B:B",
           help="Explicit replicas: partitions separated by ',', their brokers by ':'."),
    Option("--config", type=key_value, repeatable=True, metavar="KEY=VALUE", completer="config_key",
           help="A topic config override."),
    Option("--if-not-exists", flag=True, help="Do nothing for topics that already exist."),
)
# KIP-4's --blocking: the command returns once every live broker's metadata shows the change.
BLOCKING = Option("--blocking", flag=True,
                  help="Wait until every live broker's metadata shows the change (at most --timeout); "
                       "name the brokers that lag.")


def create_topics(session: Session, lines: list[dict]) -> list[Result | ShellError]:
    """Create the topics of many create-topic lines with as few requests as Kafka allows."""
    conn = session.conn
    outcomes: dict[int, Result | ShellError] = {}
    wanted: list[tuple[int, NewTopic]] = []    # (line index, topic)
    skipped: dict[int, list[str]] = {}
    snap = conn.read([n for args in lines for n in args["topic"] if valid_topic_name(n)])
    for i, args in enumerate(lines):
        try:
            for name in args["topic"]:
                check_topic_name(name)
            partitions = len(args["replica_assignment"]) if args["replica_assignment"] else args["partitions"]
            if partitions and partitions > MAX_PARTITIONS_PER_BATCH:
                raise UsageError(f"--partitions {partitions} is more than Kafka creates in one request "
                                 f"({MAX_PARTITIONS_PER_BATCH}): create fewer, then grow the topic "
                                 "with alter-topic")
        except UsageError as exc:
            outcomes[i] = exc
            continue
        for name in args["topic"]:
            if args["if_not_exists"] and name in snap.topics:
                skipped.setdefault(i, []).append(name)
                continue
            wanted.append((i, NewTopic(name, args["partitions"] or -1, args["replication_factor"] or -1,
                                       tuple(map(tuple, args["replica_assignment"] or ())),
                                       tuple(args["config"]))))
    dry_run = bool(lines and lines[0].get("dry_run"))
    results = topics.create(conn, [t for _, t in wanted], dry_run) if wanted else []
    done: dict[int, list[str]] = {}
    failed: dict[int, list[str]] = {}
    for (i, topic), result in zip(wanted, results):
        if result.error is None:
            verb = "Topic {} would be created (dry run)." if dry_run else "Created topic {}."
            if has_collision_chars(topic.name):
                done.setdefault(i, []).append(COLLISION_WARNING)
            done.setdefault(i, []).append(verb.format(topic.name))
        elif result.exists and lines[i]["if_not_exists"]:
            skipped.setdefault(i, []).append(topic.name)
        else:
            failed.setdefault(i, []).append(failure_lines.created_line(result.error, topic.name, len(snap.brokers),
                                                                       topic.replication_factor))
    for i in range(len(lines)):
        if i in outcomes:
            continue
        messages = done.get(i, []) + [f"Topic {n} already exists: skipped." for n in skipped.get(i, [])]
        if i in failed:
            messages += failed[i]
        outcome = Result.message(*messages, exit_code=1 if i in failed else 0)
        created = [t.name for j, t in wanted if j == i]
        if created and not dry_run and i not in failed:
            outcome = _joined(outcome, settle(session, snap, created, topics.created, "the new topic(s)",
                                              lines[i].get("blocking", False)))
        outcomes[i] = outcome
    return [outcomes[i] for i in range(len(lines))]


# -- --blocking ----------------------------------------------------------------------------------


def settle(session: Session, snap: ClusterSnapshot, names: list[str], shows: topics.Shows, what: str,
           blocking: bool) -> Result:
    """After a topic change: with --blocking, every live broker shows it; without, in ZooKeeper
    mode, the controller broker does (reads go to it, and it learns the change from ZooKeeper a
    moment after the request was answered), said only when it does not within --timeout."""
    if blocking:
        return wait_until_shown(session, snap, names, shows, what)
    controller = snap.controller.id
    if session.conn.mode == ZOOKEEPER and controller in snap.brokers:
        waited = wait_until_shown(session, snap, names, shows, what, [controller])
        return waited if waited.exit_code else Result()
    return Result()


def wait_until_shown(session: Session, snap: ClusterSnapshot, names: list[str], shows: topics.Shows, what: str,
                     brokers: list[int] | None = None) -> Result:
    """KIP-4's --blocking: every broker live in the command's read (or `brokers`) shows the
    change within --timeout; on timeout name the brokers that lag (or did not answer, and why)."""
    brokers = brokers or sorted(snap.brokers)
    showing = topics.wait_until_shown(session.conn, brokers, names, shows)
    if not showing.lagging:
        return Result.message(f"Every live broker ({len(brokers)}) shows {what} (waited {showing.elapsed:.1f} s).")
    ids = ", ".join(map(str, showing.lagging))
    why = "".join(f"; broker {b}: {error.message}" for b, error in showing.lagging.items() if error is not None and error.message)
    return Result.message(f"Timed out after {session.conn.timeout_s:g} s waiting for the brokers to show "
                          f"{what}: broker(s) {ids} do not yet{why} (raise --timeout to wait longer).",
                          exit_code=1)


def _joined(first: Result, then: Result) -> Result:
    return Result(messages=[*first.messages, *then.messages], exit_code=max(first.exit_code, then.exit_code))


@command("create-topic", *CREATE_OPTIONS, BLOCKING, mutates=True, batch=create_topics,
         help="Create topics (one CreateTopics request for all of them).",
         exclusive_groups=(("--replica-assignment", "--partitions"),
                           ("--replica-assignment", "--replication-factor")),
         examples=("create-topic --topic orders --partitions 6 --replication-factor 3",
                   "create-topic --topic a --topic b --config cleanup.policy=compact",
                   "create-topic --topic pinned --replica-assignment 1:2,2:3,3:1",
                   "create-topic --topic orders --partitions 6 --blocking"))
def create_topic(session: Session, args: dict) -> Result:
    outcome = create_topics(session, [args])[0]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome




# -- alter-topic -----------------------------------------------------------------------------


def _change_replication_factor(session: Session, snap: ClusterSnapshot, found: list[TopicInfo], rf: int,
                               dry_run: bool) -> list[str]:
    """Start the reassignment that gives each topic `rf` replicas per partition (planned with
    minimal movement); one line per topic."""
    from kafka_shell.admin import reassignments  # see DEFERRED
    from kafka_shell.admin.assignment_plan import PlanError
    messages = []
    for topic in found:
        try:
            change = reassignments.plan_replication_factor(snap, topic, rf)
        except PlanError as exc:
            raise UsageError(failure_lines.plan_line(exc)) from None
        if not change.changed:
            messages.append(f'Topic "{topic.name}" already has replication factor {rf}: nothing to change.')
            continue
        if dry_run:
            messages.append(f'Topic "{topic.name}" would go from replication factor {change.old} to {rf}, '
                            f"{change.added} new replica(s) (dry run).")
            continue
        if reassignments.ongoing(session.conn):
            raise ShellError("A partition reassignment is in progress: wait for it (reassign-partitions "
                             "--blocking) or cancel it, then retry")
        done = reassignments.alter(session.conn, change.changed)
        if done.errors:
            raise KafkaCallError(" ".join(messages + failure_lines.reassignment_lines(done.errors)))
        messages.append(f'Topic "{topic.name}": replication factor {change.old} -> {rf} started '
                        f"({len(change.changed)} partition(s), {change.added} new replica(s)); "
                        "wait for it with reassign-partitions --blocking.")
    return messages


@command("alter-topic",
         Option("--topic", repeatable=True, required=True, metavar="NAME", completer="topic",
                help=f"Topic to change ({PATTERN_HELP})."),
         Option("--partitions", type=positive_int, metavar="N",
                help="New total partition count (Kafka cannot decrease it)."),
         Option("--replica-assignment", type=replica_assignment, metavar="B:B,B:B",
                help="Replicas of the added partitions only, partitions separated by ','."),
         Option("--config", type=key_value, repeatable=True, metavar="KEY=VALUE",
                completer="config_key", help="Set a topic config."),
         Option("--delete-config", type=config_name, repeatable=True, metavar="KEY", completer="config_key",
                help="Remove a topic config override."),
         Option("--replication-factor", type=replication_factor, metavar="N",
                help="New replication factor (a minimal-movement, rack-aware reassignment)."),
         BLOCKING,
         mutates=True, topic_context=True,
         help="Add partitions to topics, change their replication factor or their configs.",
         examples=("alter-topic --topic orders --partitions 12",
                   "alter-topic --topic orders --config retention.ms=86400000",
                   "alter-topic --topic orders --delete-config retention.ms",
                   "alter-topic --topic orders --replication-factor 3",
                   "alter-topic --topic orders --partitions 24 --blocking"))
def alter_topic(session: Session, args: dict) -> Result:
    from kafka_shell.admin import configs  # see DEFERRED
    if not (args["partitions"] or args["config"] or args["delete_config"] or args["replication_factor"]):
        raise UsageError("alter-topic needs --partitions, --replication-factor, --config or --delete-config")
    if args["replica_assignment"] and not args["partitions"]:
        raise UsageError("--replica-assignment of alter-topic needs --partitions (the new total)")
    dry_run = args["dry_run"]
    conn = session.conn
    snap, found = topics.read_topics(conn, args["topic"])
    if not found:
        raise no_match(args["topic"], snap)
    if args["delete_config"]:
        missing = configs.missing_deletions(conn, configs.TOPICS, [t.name for t in found], args["delete_config"])
        if missing:
            raise UsageError(failure_lines.missing_config_line(configs.TOPICS, missing))
    messages: list[str] = pattern_notes(args["topic"], list(snap.topics))
    if args["partitions"]:
        messages += _add_partitions(session, found, args["partitions"], args["replica_assignment"], dry_run)
    if args["replication_factor"]:
        messages += _change_replication_factor(session, snap, found, args["replication_factor"], dry_run)
    refused: list[str] = []
    if args["config"] or args["delete_config"]:
        done, refused = failure_lines.config_change_lines(
            configs.alter(conn, configs.TOPICS, [t.name for t in found], dict(args["config"]), args["delete_config"],
                          dry_run), configs.TOPICS, dry_run)
        messages += done
    result = Result.outcome([], messages, refused)
    if not dry_run and (args["partitions"] or args["replication_factor"]):
        total, factor = args["partitions"], args["replication_factor"]
        what = " and ".join(x for x in (f"{total} partitions" if total else "",
                                         f"{factor} replicas a partition" if factor else "") if x)
        result = _joined(result, settle(session, snap, [t.name for t in found], topics.altered(total, factor), what,
                                         args["blocking"]))
    elif args["blocking"] and not dry_run:
        result.messages.append("--blocking waits for what brokers' metadata shows (partitions, replicas): "
                               "configs are not in it, nothing to wait for.")
    return result


def _add_partitions(session: Session, found: list, total: int, assignment: list[list[int]] | None,
                    dry_run: bool) -> list[str]:
    for t in found:
        if total < len(t.partitions):
            raise UsageError(f'Topic "{t.name}" has {len(t.partitions)} partitions and Kafka cannot '
                             f"decrease them: give --partitions {len(t.partitions) + 1} or more")
        if assignment and len(assignment) != total - len(t.partitions):
            raise UsageError(f"--replica-assignment lists {len(assignment)} partition(s) but "
                             f'"{t.name}" gains {total - len(t.partitions)}: list the new ones only')
    grow = [t for t in found if total > len(t.partitions)]
    messages = [f'Topic "{t.name}" already has {total} partitions: nothing to change.'
                for t in found if total == len(t.partitions)]
    if not grow:
        return messages
    results = topics.add_partitions(session.conn, [t.name for t in grow], total, assignment, dry_run)
    errors = []
    for t, result in zip(grow, results):
        if result.error is not None:
            errors.append(failure_lines.grown_line(result.error, t.name))
        else:
            messages.append(f'Topic "{t.name}" {"would grow" if dry_run else "grew"} from '
                            f"{len(t.partitions)} to {total} partitions" + (" (dry run)." if dry_run else "."))
    if errors:
        raise KafkaCallError(" ".join(messages + errors))
    return messages


# -- delete-topic ----------------------------------------------------------------------------


def delete_targets(session: Session, args: dict) -> tuple[ClusterSnapshot, list[str], list[str]]:
    """(the read, topics to delete, topics skipped by --if-exists): patterns resolved and
    existence checked, for the confirmation and the deletion alike."""
    snap = topics.read_for(session.conn, args["topic"])
    known = snap.topics
    names = topics.resolve(snap, args["topic"], include_internal=False)
    missing_patterns = [p for p in args["topic"] if is_pattern(p) and not any(map(matcher(p), names))]
    if missing_patterns and not args["if_exists"]:
        notes = "".join(f" {n}" for n in pattern_notes(missing_patterns, list(known)))
        raise ShellError(f"No topic matches {', '.join(map(shown, missing_patterns))} (use --if-exists to allow "
                         f"that){notes}")
    internal = [n for n in names if n in known and known[n].internal]
    if internal:
        raise UsageError(f"{', '.join(internal)} is an internal topic: kafka-shell does not delete it")
    for n in names:
        check_topic_name(n)
    refused = [n for n in names if n in snap.unauthorized]
    if refused:  # Metadata refused it: the deletion would be refused the same way (DELETE implies DESCRIBE)
        raise topics.deletion_refused(refused[0])
    missing = [n for n in names if n not in known]
    if missing and not args["if_exists"]:
        raise ShellError(f'Topic "{missing[0]}" does not exist (check the name with list-topics, '
                         "or use --if-exists)")
    return snap, [n for n in names if n in known], missing


def confirm_delete(session: Session, args: dict) -> str | None:
    snap, names, _ = delete_targets(session, args)
    if not names:
        return None
    partitions = sum(len(snap.topics[n].partitions) for n in names)
    listed = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    plural = "s" if len(names) > 1 else ""
    return f"Delete {len(names)} topic{plural} ({listed}; {partitions} partition{'s' if partitions != 1 else ''})?"


@command("delete-topic",
         Option("--topic", repeatable=True, required=True, metavar="NAME", completer="topic",
                help=f"Topic to delete ({PATTERN_HELP})."),
         Option("--if-exists", flag=True, help="Do nothing for topics that do not exist."),
         BLOCKING,
         mutates=True, topic_context=True, confirm=Confirm(question=confirm_delete),
         help="Delete topics (asks for confirmation; --yes outside the REPL).",
         examples=("delete-topic --topic orders --yes", "delete-topic --topic 'tmp-.*' --yes"))
def delete_topic(session: Session, args: dict) -> Result:
    snap, names, skipped = delete_targets(session, args)
    messages = [*pattern_notes(args["topic"], list(snap.topics)), *(f"Topic {n} does not exist: skipped." for n in skipped)]
    if args["dry_run"]:
        return Result.message(*messages, *(f"Would delete topic {n} (dry run)." for n in names))
    if not names:
        return Result.message(*messages)
    errors = []
    for result in topics.delete(session.conn, names):
        if result.error is None:
            messages.append(f"Deleted topic {result.name}.")
            if session.topic == result.name:
                session.topic = None
        elif args["if_exists"] and result.absent:
            messages.append(f"Topic {result.name} does not exist: skipped.")
        else:
            errors.append(failure_lines.deleted_line(result.error, result.name))
    if errors:
        raise KafkaCallError(" ".join(messages + errors))
    return _joined(Result.message(*messages), settle(session, snap, names, topics.deleted, "the deletion", args["blocking"]))


# -- list-topics / describe-topic --------------------------------------------------------------


@command("list-topics",
         Option("pattern", type=topic_pattern, metavar="PATTERN", help="Only topics matching this Java regular "
                "expression, as kafka-topics --list --topic ('orders-.*'; a glob such as '*-events' where it is no "
                "regular expression)."),
         Option("--exclude-internal", flag=True, help="Leave out internal topics."),
         help="List topics.",
         examples=("list-topics", "list-topics 'orders-.*' --exclude-internal"), tables=("topics",))
def list_topics(session: Session, args: dict) -> Result:
    known = session.conn.read().topics
    selected = matcher(args["pattern"]) if args["pattern"] else None
    rows = [[t.name, len(t.partitions), len(t.partitions[0].replicas) if t.partitions else 0]
            for name, t in sorted(known.items())
            if (selected is None or selected(name)) and not (args["exclude_internal"] and t.internal)]
    notes = pattern_notes([args["pattern"]], list(known)) if args["pattern"] else []
    return Result.table(["Topic", "Partitions", "ReplicationFactor"], rows, *notes, name="topics")


FILTERS = ("under_replicated_partitions", "unavailable_partitions", "under_min_isr_partitions",
           "at_min_isr_partitions", "not_preferred_leader")


# describe-topic's filters that make it a cluster-wide check: the context topic does not narrow them.
HEALTH_CHECKS = ("--under-replicated-partitions", "--unavailable-partitions", "--under-min-isr-partitions",
                 "--at-min-isr-partitions", "--not-preferred-leader", "--topics-with-overrides", "--exclude-internal")


@command("describe-topic",
         Option("--topic", repeatable=True, metavar="NAME", completer="topic",
                help=f"Topic to describe ({PATTERN_HELP}; without one: every topic, or the context topic)."),
         Option("--under-replicated-partitions", flag=True, help="Partitions with replicas out of the ISR."),
         Option("--unavailable-partitions", flag=True, help="Partitions without a live leader."),
         Option("--under-min-isr-partitions", flag=True, help="Partitions with ISR below min.insync.replicas."),
         Option("--at-min-isr-partitions", flag=True, help="Partitions with ISR at min.insync.replicas."),
         Option("--not-preferred-leader", flag=True, help="Partitions led by another than their preferred replica."),
         Option("--topics-with-overrides", flag=True, help="Only topics with config overrides (topic lines only)."),
         Option("--exclude-internal", flag=True, help="Leave out internal topics."),
         topic_context=True, context_narrows=True, context_without=HEALTH_CHECKS,
         help="Describe topics and their partitions (Kafka's fields), with Kafka's filters.",
         examples=("describe-topic --topic orders", "describe-topic --under-replicated-partitions"), tables=("topics", "partitions"))
def describe_topic(session: Session, args: dict) -> Result:
    from kafka_shell.admin import configs, reassignments  # see DEFERRED
    conn = session.conn
    if args["topic"]:
        snapshot, found = topics.read_topics(conn, args["topic"])
        if not found:  # as kafka-topics --describe: a pattern matching nothing is an error
            raise no_match(args["topic"], snapshot)
    else:
        snapshot = conn.read()
        found = [t for _, t in sorted(snapshot.topics.items())]
    found = [t for t in found if not (args["exclude_internal"] and t.internal)]
    filters = [f for f in FILTERS if args[f]]
    need_configs = not filters or args["under_min_isr_partitions"] or args["at_min_isr_partitions"]
    settings = (configs.topic_configs(conn, [t.name for t in found])
                if need_configs or args["topics_with_overrides"] else {})
    if args["topics_with_overrides"]:
        found = [t for t in found if t.name in settings and settings[t.name].overrides]
    topic_rows = [[t.name, kafka_uuid(t.topic_id) if t.topic_id else None, len(t.partitions),
                   len(t.partitions[0].replicas) if t.partitions else 0,
                   dict(sorted(settings[t.name].overrides.items())) if t.name in settings else {}]
                  for t in found]
    tables = []
    missing: list[str] = []
    if not filters:
        tables.append(Table(["Topic", "TopicId", "PartitionCount", "ReplicationFactor", "Configs"],
                            topic_rows, name="topics"))
    if not args["topics_with_overrides"]:
        live = snapshot.brokers
        try:
            moving = reassignments.moving(conn)
        except ShellError as exc:   # the moves come from the controller: the rest is still told
            moving = {}
            missing.append(f"Replicas being added or removed are not shown: {exc}")
        elr = topics.eligible_leaders(conn, found)
        rows = []
        for t in found:
            min_isr = settings[t.name].min_isr if t.name in settings else 1
            for p in t.partitions:
                move = moving.get((t.name, p.partition))
                adding, removing = (move.adding, move.removing) if move else ((), ())
                if filters and not _matches(p, filters, live, min_isr, adding):
                    continue
                eligible, last_known = elr.get((t.name, p.partition), ((), ()))
                rows.append([t.name, p.partition, p.leader if p.leader >= 0 else None, p.replicas,
                             p.isr, adding, removing, eligible, last_known, p.offline_replicas])
        tables.append(Table(["Topic", "Partition", "Leader", "Replicas", "Isr", "AddingReplicas",
                             "RemovingReplicas", "Elr", "LastKnownElr", "Offline"], rows,
                            name="partitions", kinds={"Leader": "id", "Isr": "kept"}))
    elif filters:
        tables.append(Table(["Topic", "TopicId", "PartitionCount", "ReplicationFactor", "Configs"],
                            topic_rows, name="topics"))
    return Result(tables=tables, messages=[*pattern_notes(args["topic"], list(snapshot.topics)), *missing],
                  exit_code=1 if missing else 0)


def no_match(patterns: list[str], snap: ClusterSnapshot) -> ShellError:
    """As kafka-topics: a pattern that selects no topic is an error (with how a glob reads)."""
    notes = pattern_notes(patterns, list(snap.topics))
    return ShellError(f'No topic matches {", ".join(map(shown, patterns))} (see list-topics)'
                      + "".join(f" {n}" for n in notes))


def _matches(p: PartitionInfo, filters: list[str], live: dict, min_isr: int, adding: Sequence[int] = ()) -> bool:
    classes = topics.health_classes(p, live, min_isr, adding)
    return any(classes[f] for f in filters)


