"""The one place an admin call's AdminErrors (kafka_shell/base/answers.py) become the lines people read,
with what to do: a target that did not answer is named once, with what it was asked about
("Broker 1 (leader of keyed-0) did not answer ListOffsets within 3 s"); a thing answered with an
error code gets its own line ("keyed-0: ...", "Consumer group 'app' does not exist (see
list-groups).").

Commands (and the pipeline) call these; the admin layer returns the errors as values
(`partition_line` is also what the admin layer's own exceptions say of a partition).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kafka_shell.admin.errors import code_name, error_line, other_type_of, partition_line
from kafka_shell.base.answers import AdminError, Answers
from kafka_shell.protocol.authorization import authorization_message, is_authorization_error
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.base.errors import KafkaCallError, ShellError, UsageError, kafka_error_message, shown, suggest

if TYPE_CHECKING:
    from kafka_shell.admin import balance, resets
    from kafka_shell.admin.acls import Binding
    from kafka_shell.admin.assignment_plan import PlanError
    from kafka_shell.admin import cluster_configs
    from kafka_shell.admin.cluster import Absent
    from kafka_shell.admin.elections import Election
    from kafka_shell.admin.health import Unread
    from kafka_shell.admin.topics import NoSuchPartition
    from kafka_shell.admin.records import Unacked

Key = tuple[str, int]


def partition_name(key: Key) -> str:
    return f"{key[0]}-{key[1]}"


def lines(errors: Mapping[Any, AdminError], answered: Callable[[Any, AdminError], str]) -> list[str]:
    """One line per error, in the order given (an error covering many keys, such as a target
    that did not answer or a request refused as a whole, is said once): `answered(key, error)`
    for an error code, the error itself for a target that did not answer."""
    out: list[str] = []
    said: set[int] = set()
    for key, error in errors.items():
        if id(error) not in said:
            said.add(id(error))
            out.append(answered(key, error) if error.code is not None else str(error))
    return list(dict.fromkeys(out))   # a refusal that is the same everywhere (authorization) is said once


def partition_lines(errors: Mapping[Key, AdminError],
                    answered: Callable[[Key, AdminError], str] | None = None) -> list[str]:
    """`lines` of partitions: by default `topic-3: <the line for its code>`."""
    return lines(errors, answered or (lambda key, e: partition_line(key, e.code or 0)))


# -- the cluster's state -------------------------------------------------------------------------


def absent_error(absent: Absent) -> ShellError:
    """Broker ids asked for that the cluster does not have live (admin.cluster.absent): fenced
    ones are the cluster's state (exit 1), unknown ones a wrong id (exit 2, usage)."""
    def which(role: str, ids: tuple[int, ...]) -> str:
        return f"{role} {ids[0]} is" if len(ids) == 1 else f"{role}s {', '.join(map(str, ids))} are"
    live = ", ".join(map(str, absent.live))
    if absent.fenced:
        return KafkaCallError(f"{which('Broker', absent.fenced)} not live: registered but fenced (stopped, or cut off "
                              f"from the controller); live brokers: {live or 'none'}", code=Error.broker_not_available)
    return UsageError(f"{which(absent.role.capitalize(), absent.unknown)} not in the cluster ({absent.role}s: {live})")


def controller_unshown_line(refused: KafkaCallError, partial: bool) -> str:
    """Why the active controller is not shown (admin.cluster.read_maybe_controller): the quorum
    did not answer (`partial`), or the principal may not see it."""
    return f"The active controller is not shown: {refused}" + ("" if partial else ".")


def no_controller_error() -> KafkaCallError:
    return KafkaCallError("The cluster has no active controller right now; try again shortly.", code=Error.not_controller)


# -- per request: the lines that say what to do -------------------------------------------------


def _broker_lines(errors: Mapping[int, AdminError], doing: str, api_key: int) -> list[str]:
    """Each broker that did not answer, or refused the request (`Broker 2 did not describe its
    log dirs: <why>`; an authorization refusal, the principal's and not the broker's, alone)."""
    def line(b: int, e: AdminError) -> str:
        why = error_line(api_key, e.code or 0, e.message or None, entity=f"broker {b}")
        return why if is_authorization_error(e.code or 0) else f"Broker {b} did not {doing}: {why}"
    return lines(errors, line)


def log_dir_lines(errors: Mapping[int, AdminError]) -> list[str]:
    return _broker_lines(errors, "describe its log dirs", ApiKey.DESCRIBE_LOG_DIRS)


def log_dir_error_line(path: str, error: AdminError) -> str:
    """A log dir's own error, as the broker reported it (KAFKA_STORAGE_ERROR: the dir is offline)."""
    return kafka_error_message(error.code or 0, "", "", entity=f"log dir {path}")


def unread_log_dirs_line(broker: int, error: AdminError) -> str:
    """A broker whose log dirs a load was read without (admin.load's `missing`): it did not
    answer, refused, or one of its dirs is offline."""
    if error.code is None:
        return str(error)
    return f"Broker {broker} did not describe its log dirs ({error_line(ApiKey.DESCRIBE_LOG_DIRS, error.code)})"


def config_lines(errors: Mapping[int, AdminError]) -> list[str]:
    return _broker_lines(errors, "describe its configs", ApiKey.DESCRIBE_CONFIGS)


def group_listing_lines(errors: Mapping[int, AdminError]) -> list[str]:
    return _broker_lines(errors, "list its groups", ApiKey.LIST_GROUPS)


def transaction_listing_lines(errors: Mapping[int, AdminError]) -> list[str]:
    return _broker_lines(errors, "list its transactions", ApiKey.LIST_TRANSACTIONS)


def log_dir_move_lines(errors: Mapping[tuple[str, int, int], AdminError]) -> list[str]:
    """AlterReplicaLogDirs refused (`Failed to alter dir for t-0-1: why`, as Kafka's tool says)."""
    def line(key: tuple[str, int, int], e: AdminError) -> str:
        why = error_line(ApiKey.ALTER_REPLICA_LOG_DIRS, e.code or 0, e.message or None)
        return why if is_authorization_error(e.code or 0) else f"Failed to alter dir for {key[0]}-{key[1]}-{key[2]}: {why}"
    return lines(errors, line)


def reassignment_refusal(key: Key, error: AdminError) -> str:
    """Why the controller would not move (or stop moving) a partition."""
    return error_line(ApiKey.ALTER_PARTITION_REASSIGNMENTS, error.code or 0, error.message or None, topic=key[0],
                      entity=partition_name(key))


def election_line(election: Election) -> str | None:
    """Why a partition's election failed (None when it did not): the controller's code for it,
    as kafka-leader-election words it; that the controller left it out of its answer; or, in a
    stock recovery, that the reorder before the election was refused."""
    error = election.error
    if error is None:
        return None
    if election.refused_by == ApiKey.ALTER_PARTITION_REASSIGNMENTS:
        return f"the reorder was refused ({reassignment_refusal(election.key, error)})"
    if error.code is None:
        return "the controller did not answer for it: retry"
    return error_line(ApiKey.ELECT_LEADERS, error.code, error.message or None, topic=election.topic)


def election_refusal(exc: KafkaCallError) -> KafkaCallError:
    """ElectLeaders of every partition refused whole: not authorized as kafka-leader-election says
    it (rather than an empty success); another refusal as it came."""
    if exc.code is None or not is_authorization_error(exc.code):
        return exc
    needed = authorization_message(ApiKey.ELECT_LEADERS, exc.code, purpose="")
    return KafkaCallError(f"Not authorized to perform leader election: {needed.removeprefix('not authorized: ')}",
                          code=exc.code)


def reassignment_lines(errors: Mapping[Key, AdminError]) -> list[str]:
    """`topic-3: why` per partition the controller would not move."""
    return partition_lines(errors, lambda key, e: f"{partition_name(key)}: {reassignment_refusal(key, e)}")


def deletion_lines(errors: Mapping[Key, AdminError], wanted: Mapping[Key, int]) -> list[str]:
    """DeleteRecords: an offset past the end, or a compacted topic, says what to do instead."""
    def line(key: Key, e: AdminError) -> str:
        if e.code == Error.offset_out_of_range:
            return (f"{partition_name(key)}: offset {wanted[key]} is beyond the high watermark: give a lower "
                    "--before-offset (see get-offsets)")
        if e.code == Error.policy_violation:
            return (f"{partition_name(key)}: the topic is compacted (cleanup.policy without delete): Kafka "
                    "deletes records only from delete-policy topics")
        return partition_line(key, e.code or 0)
    return partition_lines(errors, line)


# -- ACLs ----------------------------------------------------------------------------------------


def acl_lines(created: Answers[Binding, None]) -> list[str]:
    """Each ACL CreateAcls did not add, as kafka-acls lists it, with why; when every one was
    refused for the same reason (not authorized, security disabled), that reason once."""
    def why(e: AdminError) -> str:
        return error_line(ApiKey.CREATE_ACLS, e.code or 0, e.message or None)
    reasons = {(e.code, e.message) for e in created.errors.values()}
    if not created.rows and len(reasons) == 1:
        first = next(iter(created.errors.values()))
        return [why(first) if is_authorization_error(first.code or 0) else f"No ACL was added: {why(first)}"]
    return lines(created.errors, lambda b, e: f"Not added: {' '.join(map(str, b.row()))}: {why(e)}")


# -- features ------------------------------------------------------------------------------------


def feature_lines(errors: Mapping[str, AdminError]) -> list[str]:
    """`feature: why` for each feature UpdateFeatures refused."""
    return lines(errors, lambda name, e: f"{name}: " + error_line(ApiKey.UPDATE_FEATURES, e.code or 0,
                                                                   e.message or None, entity=name))


# -- configs -----------------------------------------------------------------------------------
# kafka_shell.admin.configs is imported where used: it reads Kafka's release definitions, which
# list-topics starts without (see commands/topics.py's DEFERRED).


def config_change_lines(answers: Answers[str, None], kind: str, dry_run: bool) -> tuple[list[str], list[str]]:
    """What IncrementalAlterConfigs did, as kafka-configs says it: a line per entity changed
    (validated, in a dry run), and one per entity refused."""
    from kafka_shell.admin import configs
    done = [f"{'Validated' if dry_run else 'Completed'} updating config for {configs.label(kind, name)}"
            + (" (dry run)." if dry_run else ".") for name in answers.rows]
    return done, lines(answers.errors, lambda name, e: config_refusal_line(kind, name, e))


def config_refusal_line(kind: str, name: str, error: AdminError) -> str:
    """Why IncrementalAlterConfigs did not change an entity's configs."""
    from kafka_shell.admin import configs
    return error_line(ApiKey.INCREMENTAL_ALTER_CONFIGS, error.code or 0, error.message or None,
                      **configs.refusal_context(kind, name))


def snapshot_notes(snap: cluster_configs.Snapshot) -> list[str]:
    """What a configs snapshot was read without because the cluster lacks it."""
    return [f"Group configs were not read: {snap.groups_unread}"] if snap.groups_unread is not None else []


def import_refusal_lines(refused: Mapping[tuple[str, str], AdminError]) -> list[str]:
    """import-configs: one line per entity (section, name) the cluster refused or that did not
    answer, naming it (once: the line may name it already)."""
    from kafka_shell.admin import cluster_configs
    out = []
    for (section, name), error in refused.items():
        entity = cluster_configs.describe_entity(section, name)
        if error.code is None:
            why = error.message
        elif section == cluster_configs.QUOTAS:
            why = error_line(ApiKey.ALTER_CLIENT_QUOTAS, error.code, error.message or None)
        else:
            why = config_refusal_line(cluster_configs.KINDS[section], name, error)
        out.append(why if entity in why else f"{entity.capitalize()}: {why}")
    return out


def missing_config_line(kind: str, missing: Mapping[str, list[str]]) -> str:
    """The keys of a --delete-config that no entity named has and Kafka knows no config by, as
    kafka-configs refuses them ("Invalid config(s)"), with the nearest name Kafka knows."""
    from kafka_shell.admin import configs
    name, keys = next(iter(missing.items()))
    return (f"Invalid config(s): {', '.join(keys)}: {configs.label(kind, name)} has no such config "
            f"and Kafka knows none by that name{suggest(keys[0], sorted(configs.known_keys(kind) or ()))}")


# -- topics ------------------------------------------------------------------------------------


def no_partition_line(error: NoSuchPartition) -> str:
    return f'Topic "{shown(error.topic)}" has no partition {error.partition} (it has {error.count})'


def read_failure_line(exc: KafkaCallError | NoSuchPartition) -> str:
    """A fresh read of the partitions a plan names that failed (a partition its topic lacks, or
    the read's own error)."""
    from kafka_shell.admin.topics import NoSuchPartition
    return no_partition_line(exc) if isinstance(exc, NoSuchPartition) else str(exc)


def created_line(error: AdminError, topic: str, brokers: int, replication_factor: int = -1) -> str:
    """Why CreateTopics did not create `topic` (`brokers`: the live count, for what to do)."""
    context: dict[str, Any] = {"topic": topic, "brokers": brokers}
    if replication_factor > 0:
        context["rf"] = replication_factor
    return error_line(ApiKey.CREATE_TOPICS, error.code or 0, error.message or None, **context)


def deleted_line(error: AdminError, topic: str) -> str:
    return error_line(ApiKey.DELETE_TOPICS, error.code or 0, error.message or None, topic=topic)


def grown_line(error: AdminError, topic: str) -> str:
    return error_line(ApiKey.CREATE_PARTITIONS, error.code or 0, error.message or None, topic=topic)


# -- groups ----------------------------------------------------------------------------------

# One line per group error code, saying what to do.
GROUP_ERRORS: dict[int, str] = {
    Error.group_id_not_found: "Consumer group '{group}' does not exist (see list-groups).",
    Error.non_empty_group: "Consumer group '{group}' is not empty: stop its consumers first.",
    Error.group_subscribed_to_topic: ("Consumer group '{group}' is subscribed to the topic: stop its "
                                      "consumers (or change their subscription) first."),
    Error.invalid_group_id: "'{group}' is not a valid group id.",
    Error.group_authorization_failed: "Not authorized to access group '{group}': ask an administrator for the ACL.",
    Error.not_coordinator: "The coordinator of group '{group}' moved and did not settle in time: retry.",
    Error.coordinator_load_in_progress: "The coordinator of group '{group}' is still loading: retry shortly.",
    Error.coordinator_not_available: ("No coordinator is available for group '{group}' (its __consumer_offsets "
                                      "partition has no leader): bring brokers back, then retry."),
    Error.unknown_member_id: "Consumer group '{group}' has active members: stop its consumers first.",
    Error.rebalance_in_progress: "Consumer group '{group}' is rebalancing: stop its consumers first.",
}
# A group of another type that does not exist: where its kind is listed.
MISSING = {"share": "Share group '{group}' does not exist (list-share-groups lists them).",
           "streams": "Streams group '{group}' does not exist (list-streams-groups lists them)."}
def group_line(code: int, group: str, detail: str | None = None, kind: str = "consumer") -> str:
    """The line for a group's error code: its template, else the usual line naming the group."""
    other = other_type_of(code, detail)
    if other is not None:
        return (f"'{shown(group)}' is a {other} group, not a consumer group: see describe-{other}-group and "
                f"delete-{other}-group.")
    template = MISSING.get(kind) if code == Error.group_id_not_found else None
    template = template or GROUP_ERRORS.get(code)
    if template is not None:
        return template.format(group=shown(group))
    return f"Group '{shown(group)}': " + kafka_error_message(code, code_name(code), detail or "")


def group_lines(errors: Mapping[str, AdminError], kind: str = "consumer") -> list[str]:
    """Each group's error (a partition named in it says `topic-3: ` first); each coordinator
    that did not answer, once."""
    def line(gid: str, e: AdminError) -> str:
        if _about_partition(e):
            return f"{partition_name(e.target.asked[0])}: " + group_line(e.code or 0, gid)
        return group_line(e.code or 0, gid, e.message, kind)
    return lines(errors, line)


def committed_lines(errors: Mapping[Key, AdminError], group: str) -> list[str]:
    """A group's partitions refused (`topic-3: <the group's line>`), or its one line when the
    request was refused as a whole; each coordinator that did not answer, once."""
    def line(key: Key, e: AdminError) -> str:
        if _about_partition(e):
            return f"{partition_name(key)}: " + group_line(e.code or 0, group)
        return group_line(e.code or 0, group, e.message)
    return lines(errors, line)


def group_refusal(answers: Answers[Any, Any], group: str) -> str | None:
    """The group's line when its coordinator refused the request as a whole (not partition by
    partition), else None."""
    whole = answers.whole()
    if whole is None or whole.code is None or _about_partition(whole):
        return None
    return group_line(whole.code, group, whole.message)


def _about_partition(error: AdminError) -> bool:
    """The error concerns one partition (not its group as a whole)."""
    return bool(error.target.asked) and isinstance(error.target.asked[0], tuple)


# -- transactions ------------------------------------------------------------------------------


def transaction_line(code: int, transactional_id: str, detail: str | None = None) -> str:
    if code == Error.transactional_id_not_found:
        return f"Transactional id '{shown(transactional_id)}' does not exist (see list-transactions)."
    line = error_line(ApiKey.DESCRIBE_TRANSACTIONS, code, detail, purpose="describe the transaction")
    return f"Transactional id '{shown(transactional_id)}': {line}"


def transaction_lines(errors: Mapping[str, AdminError]) -> list[str]:
    return lines(errors, lambda tid, e: transaction_line(e.code or 0, tid, e.message or None))


# -- health ----------------------------------------------------------------------------------------


def health_unread_line(part: str, why: Unread) -> str:
    """Why a part of health (admin.health's PARTS) is not read whole, naming what did not answer."""
    from kafka_shell.admin import health
    if why.reason == health.TIMED_OUT:
        return "not read: the --timeout ran out first"
    if why.reason == health.NO_METADATA:
        return "not read: the cluster's metadata could not be read"
    if why.failure is not None:
        return f"not read: {why.failure}"
    if part == "balance":
        told = "; ".join(unread_log_dirs_line(b, e) for b, e in why.without.items())
        return f"not read: the balance goals are judged without some brokers' log dirs ({told})"
    if part == "transactions":
        kinds = [sum(isinstance(k, kind) for k in why.without) for kind in (tuple, int, str)]
        return (f"not read: hanging transactions searched without {kinds[0]} partition(s), {kinds[1]} broker(s) "
                f"and {kinds[2]} transactional id(s): {next(iter(why.without.values()))}")
    return "not read: " + "; ".join(group_listing_lines(why.without))   # lag: brokers that did not list their groups


# -- plans -----------------------------------------------------------------------------------------


def plan_line(error: PlanError) -> str:
    """Why a reassignment plan cannot be made (admin.assignment_plan.PlanError), and what to do."""
    from kafka_shell.admin import assignment_plan as plan
    if error.reason == plan.NO_SUCH_TOPIC:
        return f'Topic "{shown(error.topic)}" does not exist (check the name with list-topics)'
    if error.reason == plan.PARTIAL_RACKS:
        return (f"Brokers {','.join(map(str, error.brokers))} have no rack while others do: give every broker a "
                "rack, or use --disable-rack-aware")
    if error.reason == plan.NO_BROKERS:
        return "The broker list is empty: give the brokers to place replicas on"
    if error.reason == plan.FACTOR_ABOVE_BROKERS:
        count = len(error.brokers)
        return (f'Replication factor {error.factor} of topic "{shown(error.topic)}" is larger than the {count} '
                f"broker(s) to place it on: use {count} or fewer")
    return f'Replication factor of topic "{shown(error.topic)}" must be at least 1'


def balance_error_line(error: balance.BalanceError) -> str:
    """Why a layout cannot be balanced (admin.balance.BalanceError)."""
    from kafka_shell.admin import balance
    if error.reason == balance.UNKNOWN_GOAL:
        return f"Unknown goal {error.goal!r}: the goals are {', '.join(balance.GOALS)}"
    if error.reason == balance.UNKNOWN_BROKER:
        return f"A replica names broker {error.broker}, which the layout lacks"
    return "No broker may hold replicas (every one is down or drained)"


# -- notes: what is said beside a plan (in Kafka's tools' words where they have them) -------------


def reset_note(note: resets.Note) -> str:
    """Kafka's GroupOffsetsResetter's words for a target it moved."""
    t, p = note.key
    if note.kind == "empty":
        return f"Warn: Partition {p} from topic {t} is empty. Falling back to latest known offset."
    return (f"New offset ({note.requested}) is {note.kind} than {'latest' if note.kind == 'higher' else 'earliest'} "
            f"offset for topic partition {t}-{p}. Value will be set to {note.to}")


def balance_note(note: balance.Note) -> str:
    """What the balance planner could not do, and why (admin.balance.Plan.notes)."""
    from kafka_shell.admin import balance
    if isinstance(note, balance.NoRack):
        return f"The rack goal is not judged: broker(s) {', '.join(map(str, note.brokers))} have no rack."
    if isinstance(note, balance.LeaderKept):
        why = "a replica of it is on a cordoned broker (Kafka refuses the reorder)" if note.cordoned \
            else "no other replica is in sync and may lead"
        return f"{partition_name(note.key)} stays led by broker {note.broker}: {why}."
    if isinstance(note, balance.ReplicaKept):
        why = "another of its replicas is on a cordoned broker (Kafka refuses the move)" if note.cordoned \
            else "no other broker may take it"
        return f"{partition_name(note.key)} keeps its replica on drained broker {note.broker}: {why}."
    if isinstance(note, balance.DirsUnknown):
        return f"The log_dirs goal leaves out broker {note.broker}: it did not tell the log dir of each replica it holds."
    return f"Goal {note.goal} ({balance.TITLES[note.goal]}) is not met after the plan: {_unmet(note)}."


def _unmet(note: balance.GoalUnmet) -> str:
    """Why a goal is not met after the plan."""
    from kafka_shell.admin import balance
    if note.dirs_kept:
        return "the replicas each broker keeps stay in their dir (balance moves them between dirs)"
    if note.goal == balance.LOG_DIRS:
        return "its replicas do not divide more evenly over its dirs (a replica larger than the gap, or cordoned dirs)"
    if note.goal in (balance.REPLICAS, balance.DISK, balance.BYTES_IN):
        return "a higher goal (the rack rule, cordoned or drained brokers) leaves no move that helps"
    if note.goal == balance.LEADERS:
        return "the replicas allowed to lead (in sync, not drained) leave no better order"
    if note.goal == balance.TOPICS:
        return "no move helps without making a higher goal worse"
    return "no broker that may take replicas mends the partitions left"


def unacked_lines(unacked: Iterable[Unacked]) -> list[str]:
    """One line per partition and reason records were not acknowledged for."""
    return [f"{_record_numbers(u.records)}{f' (partition {u.partition})' if u.partition is not None else ''}: "
            f"{u.reason}" for u in unacked]


def _record_numbers(records: list[int]) -> str:
    """"Record 3", "Records 1-1000 (1000)", "Records 1, 4 (2)"."""
    if len(records) == 1:
        return f"Record {records[0]}"
    span = records[-1] - records[0] + 1 == len(records)
    listed = f"{records[0]}-{records[-1]}" if span else ", ".join(map(str, records[:5])) + (", ..." if len(records) > 5 else "")
    return f"Records {listed} ({len(records)})"
