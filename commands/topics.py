"""KIP-4's topic commands: create-topic, alter-topic, delete-topic, list-topics, describe-topic.

Option names follow Kafka's kafka-topics tool. What a command shows or plans from it reads from
the cluster when it runs (one read per command); every change goes to the controller through
the connection manager. create-topic is batchable: a run of
create-topic lines in a script becomes one CreateTopics request (see runner.run_lines).
"""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any

from kafka_shell.codes import ApiKey, Error
from kafka_shell.errors import KafkaCallError, ShellError, UsageError, kafka_error_message, shown
from kafka_shell.acl import is_authorization_error
from kafka_shell.operations import (admin_error, alter_configs, change_replication_factor, check_topic_name, debug,
                                    eligible_leaders, has_collision_chars, is_pattern, ongoing, read_for, read_topics, topic_configs,
                                    resolve_topics,
                                    response_error)
from kafka_shell.option_types import config_name, key_value, positive_int, replica_assignment, replication_factor, topic_pattern
from kafka_shell.registry import Option, command
from kafka_shell.render import Result, Table

if TYPE_CHECKING:
    from kafka_shell.metadata import ClusterSnapshot
    from kafka_shell.session import Session

# Kafka's controller refuses requests creating more partitions than this in total.
# KRaft's controller writes a CreateTopics request as metadata records (one per topic, per
# partition and per config) into a list bounded at 10,000, and fails the whole request beyond it
# ("Unable to perform excessively large batch operation."). ZooKeeper-mode Kafka has no bound.
MAX_RECORDS_PER_REQUEST = 10_000
CLIENT_MAX_REPLICATION_FACTOR = 10_000   # librdkafka's bound (a Kafka int16 goes to 32767)
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


@command("create-topic", *CREATE_OPTIONS, mutates=True,
         help="Create topics (one CreateTopics request for all of them).",
         exclusive_groups=(("--replica-assignment", "--partitions"),
                           ("--replica-assignment", "--replication-factor")),
         examples=("create-topic --topic orders --partitions 6 --replication-factor 3",
                   "create-topic --topic a --topic b --config cleanup.policy=compact",
                   "create-topic --topic pinned --replica-assignment 1:2,2:3,3:1"))
def create_topic(session: Session, args: dict) -> Result:
    outcome = create_topics(session, [args])[0]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def create_topics(session, lines: list[dict]) -> list[Result | ShellError]:
    """Create the topics of many create-topic lines with as few requests as Kafka allows."""
    from confluent_kafka.admin import NewTopic
    outcomes: list[Result | ShellError | None] = [None] * len(lines)
    wanted: list[tuple[int, NewTopic, dict]] = []    # (line index, topic, error context)
    skipped: dict[int, list[str]] = {}
    wanted_names = [n for args in lines for n in args["topic"]]
    snap = session.conn.read([n for n in wanted_names if _valid_name(n)])
    existing, brokers = snap.topics, len(snap.brokers)
    for i, args in enumerate(lines):
        try:
            for name in args["topic"]:
                check_topic_name(name)
            partitions = len(args["replica_assignment"]) if args["replica_assignment"] else args["partitions"]
            if partitions and _records(partitions, args["config"]) > MAX_RECORDS_PER_REQUEST:
                most = MAX_RECORDS_PER_REQUEST - _records(0, args["config"])
                raise UsageError(f"--partitions {partitions} is more than Kafka creates in one request ({most}: "
                                 f"{MAX_RECORDS_PER_REQUEST} metadata records, one for the topic, each partition "
                                 "and each config): create fewer, then grow the topic with alter-topic")
        except UsageError as exc:
            outcomes[i] = exc
            continue
        for name in args["topic"]:
            if args["if_not_exists"] and name in existing:
                skipped.setdefault(i, []).append(name)
                continue
            kwargs: dict[str, Any] = {"config": dict(args["config"])}
            if args["replica_assignment"]:
                kwargs["replica_assignment"] = args["replica_assignment"]
                kwargs["num_partitions"] = len(args["replica_assignment"])
            else:
                kwargs["num_partitions"] = args["partitions"] or -1
                kwargs["replication_factor"] = args["replication_factor"] or -1
            context = {"topic": name, "brokers": brokers}
            if args["replication_factor"]:
                context["rf"] = args["replication_factor"]
            if (args["replication_factor"] or 0) > CLIENT_MAX_REPLICATION_FACTOR:
                # librdkafka refuses to send it (a ValueError); Kafka would answer this error.
                code = Error.invalid_replication_factor
                outcomes[i] = KafkaCallError(kafka_error_message(code, **context), code=code)
                break
            wanted.append((i, NewTopic(name, **kwargs), context))
    dry_run = bool(lines and lines[0].get("dry_run"))
    results = _send_create(session, [t for _, t, _ in wanted], dry_run)
    done: dict[int, list[str]] = {}
    failed: dict[int, list[str]] = {}
    for (i, topic, context), (_, error) in zip(wanted, results):
        if error is None:
            verb = "Topic {} would be created (dry run)." if dry_run else "Created topic {}."
            if has_collision_chars(topic.topic):
                done.setdefault(i, []).append(COLLISION_WARNING)
            done.setdefault(i, []).append(verb.format(topic.topic))
        elif getattr(error, "code", None) == Error.topic_already_exists and lines[i]["if_not_exists"]:
            skipped.setdefault(i, []).append(topic.topic)
        else:
            failed.setdefault(i, []).append(admin_error(error, **context))
    for i in range(len(lines)):
        if outcomes[i] is not None:
            continue
        messages = done.get(i, []) + [f"Topic {n} already exists: skipped." for n in skipped.get(i, [])]
        if i in failed:
            messages += failed[i]
        outcomes[i] = Result.message(*messages, exit_code=1 if i in failed else 0)
    return outcomes  # type: ignore[return-value]


def _send_create(session: Session, topics: list, dry_run: bool) -> list[tuple[str, BaseException | None]]:
    """(name, error or None) per topic, in order. Topics go out in as few CreateTopics requests
    as Kafka accepts: a request holds each name once and at most 10,000 metadata records in all
    (which bounds its partitions to 10,000 too)."""
    chunks: list[list] = []
    names: set[str] = set()
    total = MAX_RECORDS_PER_REQUEST + 1
    for t in topics:
        size = _records(len(t.replica_assignment or []) or max(t.num_partitions, 1), t.config)
        if total + size > MAX_RECORDS_PER_REQUEST or t.topic in names:
            chunks.append([])
            names, total = set(), 0
        chunks[-1].append(t)
        names.add(t.topic)
        total += size
    out = []
    for chunk in chunks:
        debug(session, f"CreateTopics request: {len(chunk)} topic(s)" + (" (validate only)" if dry_run else ""))
        answer = session.conn.admin_call("create_topics", chunk, mutation=True, validate_only=dry_run,
                                         operation_timeout=session.conn.timeout_s)
        for t in chunk:
            result = answer.get(t.topic, answer.get(None))
            out.append((t.topic, result if isinstance(result, BaseException) else None))
    return out


create_topic.batch = create_topics  # type: ignore[attr-defined]


def _records(partitions: int, configs: dict | None) -> int:
    """The metadata records KRaft writes for creating a topic (see MAX_RECORDS_PER_REQUEST)."""
    return 1 + partitions + len(configs or {})


def _valid_name(name: str) -> bool:
    try:
        check_topic_name(name)
    except UsageError:
        return False
    return True


# -- alter-topic -----------------------------------------------------------------------------


@command("alter-topic",
         Option("--topic", repeatable=True, required=True, metavar="NAME", completer="topic",
                help="Topic to change (a glob such as 'logs-*' selects many)."),
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
         mutates=True, topic_context=True,
         help="Add partitions to topics, change their replication factor or their configs.",
         examples=("alter-topic --topic orders --partitions 12",
                   "alter-topic --topic orders --config retention.ms=86400000",
                   "alter-topic --topic orders --delete-config retention.ms",
                   "alter-topic --topic orders --replication-factor 3"))
def alter_topic(session: Session, args: dict) -> Result:
    if not (args["partitions"] or args["config"] or args["delete_config"] or args["replication_factor"]):
        raise UsageError("alter-topic needs --partitions, --replication-factor, --config or --delete-config")
    if args["replica_assignment"] and not args["partitions"]:
        raise UsageError("--replica-assignment of alter-topic needs --partitions (the new total)")
    dry_run = args["dry_run"]
    snap, topics = read_topics(session, args["topic"])
    if not topics:
        raise ShellError(f'No topic matches {", ".join(map(shown, args["topic"]))} (see list-topics)')
    messages: list[str] = []
    if args["partitions"]:
        messages += _add_partitions(session, topics, args["partitions"], args["replica_assignment"], dry_run)
    if args["replication_factor"]:
        messages += change_replication_factor(session, snap, topics, args["replication_factor"], dry_run)
    if args["config"] or args["delete_config"]:
        changes = {"set": dict(args["config"]), "delete": args["delete_config"]}
        messages += alter_configs(session, "topics", [t.name for t in topics], changes, dry_run)
    return Result.message(*messages)


def _add_partitions(session, topics, total: int, assignment, dry_run: bool) -> list[str]:
    from confluent_kafka.admin import NewPartitions
    for t in topics:
        if total < len(t.partitions):
            raise UsageError(f'Topic "{t.name}" has {len(t.partitions)} partitions and Kafka cannot '
                             f"decrease them: give --partitions {len(t.partitions) + 1} or more")
        if assignment and len(assignment) != total - len(t.partitions):
            raise UsageError(f"--replica-assignment lists {len(assignment)} partition(s) but "
                             f'"{t.name}" gains {total - len(t.partitions)}: list the new ones only')
    grow = [t for t in topics if total > len(t.partitions)]
    messages = [f'Topic "{t.name}" already has {total} partitions: nothing to change.'
                for t in topics if total == len(t.partitions)]
    if not grow:
        return messages
    session.conn.require(ApiKey.CREATE_PARTITIONS, "Adding partitions")
    debug(session, f"CreatePartitions request: {len(grow)} topic(s)")
    answer = session.conn.admin_call(
        "create_partitions", [NewPartitions(t.name, total, *([assignment] if assignment else []))
                              for t in grow],
        mutation=True, validate_only=dry_run, operation_timeout=session.conn.timeout_s)
    errors = []
    for t in grow:
        result = answer.get(t.name, answer.get(None))
        if isinstance(result, BaseException):
            errors.append(admin_error(result, topic=t.name))
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
    snap = read_for(session, args["topic"])
    known = snap.topics
    names = resolve_topics(snap, args["topic"], include_internal=False)
    missing_patterns = [p for p in args["topic"] if is_pattern(p)
                        and not any(fnmatch.fnmatchcase(n, p) for n in names)]
    if missing_patterns and not args["if_exists"]:
        raise ShellError(f"No topic matches {', '.join(map(shown, missing_patterns))} (use --if-exists to allow that)")
    internal = [n for n in names if n in known and known[n].internal]
    if internal:
        raise UsageError(f"{', '.join(internal)} is an internal topic: kafka-shell does not delete it")
    for n in names:
        check_topic_name(n)
    refused = [n for n in names if n in snap.unauthorized]
    if refused:  # Metadata refused it: the deletion would be refused the same way (DELETE implies DESCRIBE)
        raise response_error(ApiKey.DELETE_TOPICS, Error.topic_authorization_failed, topic=refused[0])
    missing = [n for n in names if n not in known]
    if missing and not args["if_exists"]:
        raise KafkaCallError(f'Topic "{missing[0]}" does not exist (check the name with list-topics, '
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
                help="Topic to delete (a glob such as 'tmp-*' selects many)."),
         Option("--if-exists", flag=True, help="Do nothing for topics that do not exist."),
         mutates=True, destructive=True, topic_context=True, confirm=confirm_delete,
         help="Delete topics (asks for confirmation; --yes outside the REPL).",
         examples=("delete-topic --topic orders --yes", "delete-topic --topic 'tmp-*' --yes"))
def delete_topic(session: Session, args: dict) -> Result:
    _, names, skipped = delete_targets(session, args)
    messages = [f"Topic {n} does not exist: skipped." for n in skipped]
    if args["dry_run"]:
        return Result.message(*messages, *(f"Would delete topic {n} (dry run)." for n in names))
    if not names:
        return Result.message(*messages)
    debug(session, f"DeleteTopics request: {len(names)} topic(s)")
    answer = session.conn.admin_call("delete_topics", names, mutation=True,
                                     operation_timeout=session.conn.timeout_s)
    errors = []
    for n in names:
        result = answer.get(n, answer.get(None))
        if isinstance(result, BaseException):
            if args["if_exists"] and getattr(result, "code", None) == Error.unknown_topic_or_partition:
                messages.append(f"Topic {n} does not exist: skipped.")
            else:
                errors.append(admin_error(result, topic=n))
        else:
            messages.append(f"Deleted topic {n}.")
            if session.topic == n:
                session.topic = None
    if errors:
        raise KafkaCallError(" ".join(messages + errors))
    return Result.message(*messages)


# -- list-topics / describe-topic --------------------------------------------------------------


@command("list-topics",
         Option("pattern", type=topic_pattern, metavar="PATTERN", help="Only topics matching this glob ('orders-*')."),
         Option("--exclude-internal", flag=True, help="Leave out internal topics."),
         help="List topics.",
         examples=("list-topics", "list-topics 'orders-*' --exclude-internal"))
def list_topics(session: Session, args: dict) -> Result:
    topics = session.conn.read().topics
    rows = [[t.name, len(t.partitions), len(t.partitions[0].replicas) if t.partitions else 0]
            for name, t in sorted(topics.items())
            if (not args["pattern"] or fnmatch.fnmatchcase(name, args["pattern"]))
            and not (args["exclude_internal"] and t.internal)]
    return Result.table(["Topic", "Partitions", "ReplicationFactor"], rows, name="topics")


FILTERS = ("under_replicated_partitions", "unavailable_partitions", "under_min_isr_partitions",
           "at_min_isr_partitions", "not_preferred_leader")


@command("describe-topic",
         Option("--topic", repeatable=True, metavar="NAME", completer="topic",
                help="Topic to describe (a glob selects many; default: all)."),
         Option("--under-replicated-partitions", flag=True, help="Partitions with replicas out of the ISR."),
         Option("--unavailable-partitions", flag=True, help="Partitions without a live leader."),
         Option("--under-min-isr-partitions", flag=True, help="Partitions with ISR below min.insync.replicas."),
         Option("--at-min-isr-partitions", flag=True, help="Partitions with ISR at min.insync.replicas."),
         Option("--not-preferred-leader", flag=True, help="Partitions led by another than their preferred replica."),
         Option("--topics-with-overrides", flag=True, help="Only topics with config overrides (topic lines only)."),
         Option("--exclude-internal", flag=True, help="Leave out internal topics."),
         topic_context=True,
         help="Describe topics and their partitions (Kafka's fields), with Kafka's filters.",
         examples=("describe-topic --topic orders", "describe-topic --under-replicated-partitions"))
def describe_topic(session: Session, args: dict) -> Result:
    if args["topic"]:
        snapshot, topics = read_topics(session, args["topic"])
        if not topics:  # as kafka-topics --describe: a pattern matching nothing is an error
            raise ShellError(f'No topic matches {", ".join(map(shown, args["topic"]))} (see list-topics)')
    else:
        snapshot = session.conn.read()
        topics = [t for _, t in sorted(snapshot.topics.items())]
    topics = [t for t in topics if not (args["exclude_internal"] and t.internal)]
    filters = [f for f in FILTERS if args[f]]
    need_configs = not filters or args["under_min_isr_partitions"] or args["at_min_isr_partitions"]
    configs = topic_configs(session, [t.name for t in topics]) if need_configs or args["topics_with_overrides"] else {}
    if args["topics_with_overrides"]:
        topics = [t for t in topics if configs.get(t.name, ({}, 1))[0]]
    topic_rows = [[t.name, str(t.topic_id) if t.topic_id else None, len(t.partitions),
                   len(t.partitions[0].replicas) if t.partitions else 0,
                   ",".join(f"{k}={v}" for k, v in sorted(configs.get(t.name, ({}, 1))[0].items()))]
                  for t in topics]
    tables = []
    if not filters:
        tables.append(Table(["Topic", "TopicId", "PartitionCount", "ReplicationFactor", "Configs"],
                            topic_rows, name="topics"))
    if not args["topics_with_overrides"]:
        live = snapshot.brokers
        moving = moving_replicas(session)
        elr = eligible_leaders(session, topics)
        rows = []
        for t in topics:
            min_isr = configs.get(t.name, ({}, 1))[1]
            for p in t.partitions:
                adding, removing = moving.get((t.name, p.partition), ((), ()))
                if filters and not _matches(p, filters, live, min_isr, adding):
                    continue
                eligible, last_known = elr.get((t.name, p.partition), ((), ()))
                rows.append([t.name, p.partition, p.leader if p.leader >= 0 else "none", p.replicas,
                             p.isr, adding, removing, eligible, last_known, p.offline_replicas])
        tables.append(Table(["Topic", "Partition", "Leader", "Replicas", "Isr", "AddingReplicas",
                             "RemovingReplicas", "Elr", "LastKnownElr", "Offline"], rows,
                            name="partitions"))
    elif filters:
        tables.append(Table(["Topic", "TopicId", "PartitionCount", "ReplicationFactor", "Configs"],
                            topic_rows, name="topics"))
    return Result(tables=tables)


def moving_replicas(session) -> dict[tuple[str, int], tuple[list[int], list[int]]]:
    """(topic, partition) -> (adding, removing) replicas of the moves in progress, where the
    cluster can say (Metadata does not carry them; Kafka's describe shows them)."""
    if not session.conn.supports(ApiKey.LIST_PARTITION_REASSIGNMENTS):
        return {}
    try:
        moves = ongoing(session)
    except KafkaCallError as exc:
        if is_authorization_error(exc.code):  # kafka-topics ignores it too: the topic without them
            return {}
        raise
    return {key: (m["adding"], m["removing"]) for key, m in moves.items()}


def _matches(p, filters: list[str], live: dict, min_isr: int, adding=()) -> bool:
    leader_down = p.leader < 0 or p.leader not in live
    checks = {
        # As Kafka: replicas being added do not count towards the replication factor.
        "under_replicated_partitions": len(p.isr) < len(p.replicas) - len(adding),
        "unavailable_partitions": leader_down,
        "under_min_isr_partitions": leader_down or len(p.isr) < min_isr,
        "at_min_isr_partitions": len(p.isr) == min_isr,
        "not_preferred_leader": p.leader != p.preferred_leader,
    }
    return any(checks[f] for f in filters)


