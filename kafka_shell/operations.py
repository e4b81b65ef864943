"""Operations that several command families share: topic lookup on a fresh read, config
changes, reassignments, error lines and --debug notes. Command modules call these and never
import each other (kafkactl's operation layer; see ../shared/STYLE.md).

Every lookup here reads the cluster when it runs (`ConnectionManager.read`): what a command
shows or plans from is never the metadata cache.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafka_shell import reassign_plan
from kafka_shell.acl import authorization_message, is_authorization_error
from kafka_shell.codes import AlterConfigOp, ApiKey, ElectionType, Error, ResourceType
from kafka_shell.errors import KafkaCallError, ShellError, UsageError, kafka_error_message, shown
from kafka_shell.metadata import ClusterSnapshot, TopicInfo
from kafka_shell.option_types import MAX_TOPIC_NAME, topic_pattern
from kafka_shell.protocol_ext import MAX_PARTITIONS_PER_REQUEST

if TYPE_CHECKING:
    from kafka_shell.session import Session

_LEGAL_NAME = re.compile(r"[A-Za-z0-9._-]+")
Key = tuple[str, int]
Entry = tuple[str, int, "int | None"]   # (topic, partition, designated leader)
REASSIGNMENT_TIMEOUT_MS = 30000


def error_line(api_key: int, code: int, message: str | None = None, purpose: str | None = None,
               **context: Any) -> str:
    """The one way an error code of a response becomes a line: an authorization error says which
    operation on which resource was refused (kafka_shell.acl.authorization_message), any other
    error its usual line (errors.kafka_error_message, with the `topic`, `entity`... context)."""
    if is_authorization_error(code):
        return authorization_message(api_key, code, context.get("topic"), purpose)
    try:
        name = Error(code).name
    except ValueError:
        name = ""
    return kafka_error_message(code, name, message or "", **context)


def response_error(api_key: int, code: int, message: str | None = None, purpose: str | None = None,
                   **context: Any) -> KafkaCallError:
    """`error_line` as the command's error."""
    return KafkaCallError(error_line(api_key, code, message, purpose, **context), code=code)


def debug(session: Session, text: str) -> None:
    """--debug shows each request the shell sends (how a script's lines were batched)."""
    if session.debug:
        session.stderr.write(f"debug: {text}\n")


def admin_error(error: BaseException, **context: Any) -> str:
    """One line for an AdminClient result error, with our context (topic, rf, ...)."""
    kafka_error: Any = getattr(error, "error", None) or (error.args[0] if error.args else None)
    if not hasattr(kafka_error, "code"):
        return str(error)
    api_key = getattr(error, "api_key", None)
    if api_key is not None and is_authorization_error(kafka_error.code()):
        return authorization_message(api_key, kafka_error.code(), context.get("topic"))
    return kafka_error_message(kafka_error.code(), kafka_error.name(), kafka_error.str(), **context)


# -- topics ------------------------------------------------------------------------------------


def check_topic_name(name: str) -> None:
    if (not name or len(name) > MAX_TOPIC_NAME or name in (".", "..")
            or not _LEGAL_NAME.fullmatch(name)):
        raise UsageError(f'Invalid topic name "{shown(name)}": use up to {MAX_TOPIC_NAME} letters, digits, '
                         f'".", "_" or "-"')


def has_collision_chars(name: str) -> bool:
    return "." in name or "_" in name


def is_pattern(name: str) -> bool:
    return any(c in name for c in "*?[")


def check_pattern(name: str) -> None:
    try:
        topic_pattern(name)
    except ValueError as exc:
        raise UsageError(f'Invalid topic pattern "{shown(name)}": expected {exc}') from None


def read_for(session: Session, names: list[str] | None) -> ClusterSnapshot:
    """A fresh read scoped to `names`: just those topics, or every topic when a name is a
    glob or no name is given."""
    for n in names or ():  # a name that cannot exist is refused before anything is sent
        if is_pattern(n):
            check_pattern(n)
        else:
            check_topic_name(n)
    if names is None or any(is_pattern(n) for n in names):
        return session.conn.read()
    return session.conn.read(names)


def resolve_topics(snap: ClusterSnapshot, names: list[str], include_internal: bool = True) -> list[str]:
    """Names as given, with glob patterns expanded against the read `snap`."""
    known = snap.topics
    out: list[str] = []
    for name in names:
        if is_pattern(name):
            check_pattern(name)
            out += [t for t in sorted(known) if fnmatch.fnmatchcase(t, name)
                    and (include_internal or not known[t].internal)]
        else:
            out.append(name)
    return list(dict.fromkeys(out))


def read_maybe_controller(session: Session, topics: list[str] | None = None) -> tuple[ClusterSnapshot, str | None]:
    """A fresh read with the active controller when the principal may learn it (KRaft:
    DescribeQuorum needs DESCRIBE on the cluster); when refused, the read without it and the
    line saying why (the controller of such a snapshot is not to be shown)."""
    try:
        return session.conn.read(topics, controller=True), None
    except KafkaCallError as exc:
        if not is_authorization_error(exc.code):
            raise
        return session.conn.read(topics), f"The active controller is not shown: {exc}."


def require_topic(session: Session, name: str, snap: ClusterSnapshot | None = None) -> TopicInfo:
    """The topic `name` as the cluster has it now (from `snap`, a read this command made, or
    from a fresh read of that one topic); a clear error when it does not exist."""
    if snap is None:
        check_topic_name(name)  # before anything is sent
        snap = session.conn.read([name])
    topic = snap.topics.get(name)
    if name in snap.unauthorized:  # Metadata refused it: whether it exists is not ours to know
        raise response_error(ApiKey.METADATA, Error.topic_authorization_failed, topic=name)
    if topic is None:
        check_topic_name(name)
        raise KafkaCallError(f'Topic "{name}" does not exist (check the name with list-topics).',
                             code=Error.unknown_topic_or_partition)
    return topic


def read_topics(session: Session, names: list[str],
                include_internal: bool = True) -> tuple[ClusterSnapshot, list[TopicInfo]]:
    """One fresh read for the named topics (globs expanded) and each one's TopicInfo; a name
    that does not exist is an error."""
    snap = read_for(session, names)
    return snap, [require_topic(session, n, snap) for n in resolve_topics(snap, names, include_internal)]


def require_brokers(session: Session, ids: list[int]) -> None:
    """Fail at once for broker ids the cluster does not have (a fresh read of its brokers),
    rather than let a request to them wait for a timeout."""
    known = session.conn.read([]).brokers
    unknown = [b for b in ids if b not in known]
    if unknown:
        which = f"Broker {unknown[0]} is" if len(unknown) == 1 else f"Brokers {', '.join(map(str, unknown))} are"
        raise UsageError(f"{which} not in the cluster (brokers: {', '.join(map(str, sorted(known)))})")


# -- configs -----------------------------------------------------------------------------------


def entity_label(entity_type: str, name: str) -> str:
    if entity_type == "topics":
        return f'topic "{name}"'
    return f"broker {name}" if name else "the cluster-wide broker defaults"


def alter_configs(session: Session, entity_type: str, names: list[str], changes: dict, dry_run: bool) -> list[str]:
    """Set and delete configs of topics or brokers with IncrementalAlterConfigs; one line each.
    `names` holds topic names or broker ids ("" is the cluster-wide broker default, which
    confluent-kafka cannot address: so this uses the direct channel). A broker's own configs go
    to that broker, the rest to the controller, as Kafka's tools do."""
    configs = ([{"name": k, "config_operation": AlterConfigOp.SET, "value": v} for k, v in changes["set"].items()]
               + [{"name": k, "config_operation": AlterConfigOp.DELETE, "value": None} for k in changes["delete"]])
    rtype = ResourceType.TOPIC if entity_type == "topics" else ResourceType.BROKER
    body = {"resources": [{"resource_type": rtype, "resource_name": str(n), "configs": configs} for n in names],
            "validate_only": dry_run}
    session.conn.require(ApiKey.INCREMENTAL_ALTER_CONFIGS, "Changing configs")
    debug(session, f"IncrementalAlterConfigs request: {len(names)} resource(s)")
    if entity_type == "brokers" and len(names) == 1 and names[0]:
        answer = session.conn.broker_request(int(names[0]), ApiKey.INCREMENTAL_ALTER_CONFIGS, body, mutation=True)
    else:
        answer = session.conn.controller_request(ApiKey.INCREMENTAL_ALTER_CONFIGS, body, mutation=True)
    messages, errors = [], []
    for r in answer.get("responses", []):
        name = r.get("resource_name", "")
        label = entity_label(entity_type, name)
        if r.get("error_code"):
            context = {"entity": label, **({"topic": name} if entity_type == "topics" else {})}
            errors.append(error_line(ApiKey.INCREMENTAL_ALTER_CONFIGS, r["error_code"], r.get("error_message"),
                                     **context))
        else:
            messages.append(f"{'Validated' if dry_run else 'Completed'} updating config for {label}"
                            + (" (dry run)." if dry_run else "."))
    if errors:
        raise KafkaCallError(" ".join(messages + errors))
    return messages


PREFERRED_CONTROLLER_KEY = "preferred.controller.id"   # KAFKA-1778, a cluster-wide broker config


def read_preferred_controller(session: Session) -> int | None:
    """The cluster's preferred controller (KAFKA-1778), or None when the cluster does not know
    the key or leaves it at -1: read now from the cluster-wide broker configs."""
    for c in broker_default_configs(session):
        if c["name"] == PREFERRED_CONTROLLER_KEY and c.get("value") not in (None, "", "-1"):
            return int(c["value"])
    return None


def broker_default_configs(session: Session) -> list[dict]:
    """The cluster-wide broker defaults (DescribeConfigs of broker resource ""), read through the
    shell's own channel: confluent-kafka refuses an empty resource name."""
    # Every key, not just ours: some brokers (Tansu) drop the connection on a key filter.
    body = {"resources": [{"resource_type": ResourceType.BROKER, "resource_name": "", "configuration_keys": None}]}
    debug(session, "DescribeConfigs request: cluster-wide broker defaults")
    answer = session.conn.controller_request(ApiKey.DESCRIBE_CONFIGS, body)
    for r in answer.get("results", []):
        if r.get("error_code"):
            raise response_error(ApiKey.DESCRIBE_CONFIGS, r["error_code"], r.get("error_message"),
                                 entity="the cluster-wide broker configs")
    return [c for r in answer.get("results", []) for c in r.get("configs", [])]


def config_entries(session: Session, entity_type: str, name: str) -> list:
    """A topic's or broker's config entries (confluent-kafka ConfigEntry objects, sorted by name);
    name "" of brokers: the cluster-wide broker defaults."""
    from confluent_kafka.admin import ConfigEntry, ConfigResource, ConfigSource
    from confluent_kafka.admin import ResourceType as AdminResourceType
    if entity_type == "brokers" and not name:
        return sorted((ConfigEntry(c["name"], c.get("value"), source=ConfigSource(c["config_source"]),
                                   is_read_only=c["read_only"], is_sensitive=c["is_sensitive"])
                       for c in broker_default_configs(session)), key=lambda e: e.name)
    rtype = AdminResourceType.TOPIC if entity_type == "topics" else AdminResourceType.BROKER
    debug(session, "DescribeConfigs request: 1 resource")
    answer = session.conn.admin_call("describe_configs", [ConfigResource(rtype, name)])
    entries = next(iter(answer.values()))
    if isinstance(entries, BaseException):
        raise KafkaCallError(admin_error(entries, entity=entity_label(entity_type, name),
                                         **({"topic": name} if entity_type == "topics" else {})))
    return sorted(entries.values(), key=lambda e: e.name)


# -- reassignments -----------------------------------------------------------------------------


def ongoing(session: Session) -> dict[Key, dict]:
    """Reassignments in progress: key -> {replicas, adding, removing} (from the controller)."""
    answer = session.conn.controller_request(ApiKey.LIST_PARTITION_REASSIGNMENTS,
                                             {"topics": None, "timeout_ms": REASSIGNMENT_TIMEOUT_MS})
    if answer.get("error_code"):
        raise response_error(ApiKey.LIST_PARTITION_REASSIGNMENTS, answer["error_code"], answer.get("error_message"))
    return {(t["name"], p["partition_index"]): {"replicas": p["replicas"], "adding": p["adding_replicas"],
                                                "removing": p["removing_replicas"]}
            for t in answer.get("topics", []) for p in t["partitions"]}


def alter_reassignments(session: Session, moves: Mapping[Key, list[int] | None]) -> list[str]:
    """Send AlterPartitionReassignments (None cancels); returns one line per failed partition."""
    topics: dict[str, list] = {}
    for (t, p), replicas in sorted(moves.items()):
        topics.setdefault(t, []).append({"partition_index": p, "replicas": replicas})
    body = {"timeout_ms": REASSIGNMENT_TIMEOUT_MS, "allow_replication_factor_change": True,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
    session.conn.require(ApiKey.ALTER_PARTITION_REASSIGNMENTS, "Reassigning partitions")
    answer = session.conn.controller_request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, body, mutation=True)
    if answer.get("error_code"):
        raise KafkaCallError(kafka_error_message(answer["error_code"], "", answer.get("error_message") or ""),
                             code=answer["error_code"])
    errors = []
    for t in answer.get("responses", []):
        for p in t["partitions"]:
            if p["error_code"]:
                errors.append(f"{t['name']}-{p['partition_index']}: " + error_line(
                    ApiKey.ALTER_PARTITION_REASSIGNMENTS, p["error_code"], p.get("error_message"), topic=t["name"],
                    entity=f"{t['name']}-{p['partition_index']}"))
    return errors


def change_replication_factor(session: Session, snap: ClusterSnapshot, topics: list[TopicInfo], rf: int,
                              dry_run: bool) -> list[str]:
    """Plan (minimal movement, rack-aware) from the command's read `snap`, and start the
    reassignment that gives `topics` `rf` replicas per partition; one line per topic."""
    brokers = sorted(snap.brokers)
    messages = []
    for topic in topics:
        current = {(topic.name, p.partition): list(p.replicas) for p in topic.partitions}
        old = len(topic.partitions[0].replicas) if topic.partitions else 0
        if old == rf and all(len(r) == rf for r in current.values()):
            messages.append(f'Topic "{topic.name}" already has replication factor {rf}: nothing to change.')
            continue
        try:
            racks = reassign_plan.rack_map(brokers, {b: i.rack for b, i in snap.brokers.items()}, True)
            proposed = reassign_plan.plan(current, brokers, racks, {topic.name: rf})
        except reassign_plan.PlanError as exc:
            raise UsageError(str(exc)) from None
        changed = {k: r for k, r in proposed.items() if r != current[k]}
        if dry_run:
            messages.append(f'Topic "{topic.name}" would go from replication factor {old} to {rf}, '
                            f"{reassign_plan.moved(current, proposed)} new replica(s) (dry run).")
            continue
        if ongoing(session):
            raise ShellError("A partition reassignment is in progress: wait for it (reassign-partitions "
                             "--blocking) or cancel it, then retry")
        errors = alter_reassignments(session, changed)
        if errors:
            raise KafkaCallError(" ".join(messages + errors))
        messages.append(f'Topic "{topic.name}": replication factor {old} -> {rf} started '
                        f"({len(changed)} partition(s), {reassign_plan.moved(current, proposed)} new replica(s)); "
                        "wait for it with reassign-partitions --blocking.")
    return messages


# -- leader elections --------------------------------------------------------------------------


def elect_partitions(session: Session, entries: list[Entry], kind: int, timeout_ms: int,
                     on_batch: Any = None) -> dict[Key, tuple[int, str]]:
    """ElectLeaders to the controller, at most 1000 partitions a request (v3 for designated
    elections): (topic, partition) -> (error code, reason) for every entry. `on_batch(done)` is
    called after each batch; when it returns False, the remaining batches are not sent."""
    outcomes: dict[Key, tuple[int, str]] = {}
    batches = [entries[i:i + MAX_PARTITIONS_PER_REQUEST]
               for i in range(0, len(entries), MAX_PARTITIONS_PER_REQUEST)]
    label = ElectionType(kind).name
    for n, batch in enumerate(batches, 1):
        debug(session, f"ElectLeaders request {n}/{len(batches)} to the controller: "
                       f"{len(batch)} partition(s), {label}")
        answer = session.conn.controller_request(
            ApiKey.ELECT_LEADERS, election_body(batch, kind, timeout_ms),
            version=3 if kind == ElectionType.DESIGNATED else None, mutation=True)
        top = answer.get("error_code", 0)
        outcomes.update(election_outcomes(answer))
        for topic, partition, _ in batch:  # left out of the answer
            outcomes.setdefault((topic, partition), (top, election_reason(top, None, topic)) if top
                                else (-1, "the controller did not answer for it: retry"))
        if on_batch is not None and not on_batch(n * MAX_PARTITIONS_PER_REQUEST) and n < len(batches):
            break
    debug(session, f"ElectLeaders: {len(batches)} request(s) sent for {len(entries)} partition(s)")
    return outcomes


def elect_all(session: Session, kind: int, timeout_ms: int) -> dict[Key, tuple[int, str]]:
    """ElectLeaders for every partition of the cluster (a null partition list), as
    kafka-leader-election --all-topic-partitions asks when no topic is visible to it: the
    controller answers for the partitions it elected or refuses the request."""
    debug(session, f"ElectLeaders request to the controller: every partition, {ElectionType(kind).name}")
    answer = session.conn.controller_request(ApiKey.ELECT_LEADERS, {
        "election_type": kind, "topic_partitions": None, "timeout": timeout_ms}, mutation=True)
    return election_outcomes(answer)


def election_outcomes(answer: dict) -> dict[Key, tuple[int, str]]:
    """(topic, partition) -> (error code, reason) of an ElectLeaders answer."""
    top = answer.get("error_code", 0)
    outcomes: dict[Key, tuple[int, str]] = {}
    for t in answer.get("replica_election_results", []):
        for r in t["partition_result"]:
            code = r["error_code"] or top
            why = "" if code in (0, Error.election_not_needed) else \
                election_reason(code, r.get("error_message"), t["topic"])
            outcomes[(t["topic"], r["partition_id"])] = (code, why)
    return outcomes


def election_body(batch: list[Entry], kind: int, timeout_ms: int) -> dict:
    by_topic: dict[str, tuple[list[int], list[int]]] = {}
    for topic, partition, leader in batch:
        parts, leaders = by_topic.setdefault(topic, ([], []))
        parts.append(partition)
        leaders.append(leader)  # type: ignore[arg-type]
    designated = kind == ElectionType.DESIGNATED
    topics = [{"topic": t, "partitions": ps, **({"designated_leaders": ls} if designated else {})}
              for t, (ps, ls) in by_topic.items()]
    return {"election_type": kind, "topic_partitions": topics, "timeout": timeout_ms}


def election_reason(code: int, detail: str | None, topic: str) -> str:
    return error_line(ApiKey.ELECT_LEADERS, code, detail, topic=topic)


def topic_min_isr(session: Session, names: list[str]) -> dict[str, int]:
    """topic -> its min.insync.replicas (1 when the cluster does not say), in one DescribeConfigs
    request over the direct channel (the AdminClient's per-resource futures cost ~1 ms a topic)."""
    if not names:
        return {}
    # Only the one key: every key of 1,000 topics is ~40,000 entries to decode.
    body = {"resources": [{"resource_type": ResourceType.TOPIC, "resource_name": n,
                           "configuration_keys": ["min.insync.replicas"]}
                          for n in names]}
    debug(session, f"DescribeConfigs request: {len(names)} topic(s)")
    answer = session.conn.controller_request(ApiKey.DESCRIBE_CONFIGS, body)
    out = {}
    for r in answer.get("results", []):
        name = r.get("resource_name", "")
        if r.get("error_code"):
            raise response_error(ApiKey.DESCRIBE_CONFIGS, r["error_code"], r.get("error_message"),
                                 topic=name, entity=f'topic "{name}"')
        value = next((c.get("value") for c in r.get("configs", []) if c["name"] == "min.insync.replicas"), None)
        out[name] = int(value) if value else 1
    return out


# Where an entity's removable overrides come from (what `--delete-config` can take back).
_OVERRIDE_SOURCES = {"topics": ("DYNAMIC_TOPIC_CONFIG",), "brokers": ("DYNAMIC_BROKER_CONFIG",),
                     "": ("DYNAMIC_DEFAULT_BROKER_CONFIG",)}


def config_overrides(session: Session, entity_type: str, name: str) -> list[str]:
    """The config keys a topic or broker (name "" : the broker defaults) overrides dynamically,
    in one DescribeConfigs request."""
    from confluent_kafka.admin import ConfigSource
    sources = _OVERRIDE_SOURCES["" if entity_type == "brokers" and not name else entity_type]
    return [e.name for e in config_entries(session, entity_type, name) if ConfigSource(e.source).name in sources]


PARTITIONS_PER_PAGE = 2000  # Kafka's default ResponsePartitionLimit


def eligible_leaders(session: Session, topics: list) -> dict[tuple[str, int], tuple[list[int], list[int]]]:
    """(topic, partition) -> (ELR, last known ELR) from DescribeTopicPartitions, page by page,
    where the cluster has it (KIP-966 fields that Metadata lacks). Only topics with a partition
    out of sync or offline are asked about: elsewhere both lists are empty by definition (the
    ELR holds replicas that left the ISR), which keeps a healthy describe one Metadata read."""
    names = [t.name for t in topics
             if any(p.leader < 0 or len(p.isr) < len(p.replicas) for p in t.partitions)]
    if not names or not session.conn.supports(ApiKey.DESCRIBE_TOPIC_PARTITIONS):
        return {}
    out, cursor = {}, None
    while True:
        debug(session, f"DescribeTopicPartitions request: {len(names)} topic(s)")
        answer = session.conn.any_broker_request(
            ApiKey.DESCRIBE_TOPIC_PARTITIONS,
            {"topics": [{"name": n} for n in names], "response_partition_limit": PARTITIONS_PER_PAGE,
             "cursor": cursor})
        for t in answer.get("topics", []):
            for p in t.get("partitions", []):
                out[(t["name"], p["partition_index"])] = (p.get("eligible_leader_replicas") or [],
                                                          p.get("last_known_elr") or [])
        cursor = answer.get("next_cursor")
        if not cursor:
            return out


def topic_configs(session: Session, names: list[str]) -> dict[str, tuple[dict[str, str], int]]:
    """topic -> (its config overrides, its min.insync.replicas), in one DescribeConfigs call."""
    if not names:
        return {}
    from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType
    debug(session, f"DescribeConfigs request: {len(names)} topic(s)")
    answer = session.conn.admin_call("describe_configs",
                                     [ConfigResource(ResourceType.TOPIC, n) for n in names])
    out = {}
    for resource, entries in answer.items():
        if isinstance(entries, BaseException):
            raise KafkaCallError(admin_error(entries, topic=getattr(resource, "name", "?")))
        overrides = {e.name: ("******" if e.is_sensitive else e.value) for e in entries.values()
                     if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}
        min_isr = entries.get("min.insync.replicas")
        out[resource.name] = (overrides, int(min_isr.value) if min_isr and min_isr.value else 1)
    return out


# -- the log ends of replicas (unclean recovery, snapshots) ---------------------------------------

DEBUGGING_REPLICA_ID = -2       # ListOffsets: answer from the local log, leader or not
LATEST_TIMESTAMP = -1           # ListOffsets: the log end offset


def replica_log_info(session: Session, snap: ClusterSnapshot, broker: int,
                     keys: list[Key]) -> dict[Key, tuple[int, int, str | None]]:
    """(topic, partition) -> (leader epoch of the last write, log end offset, error or None) of
    `broker`'s own replicas, from GetReplicaLogInfo (KAFKA-20098), <= 1000 partitions a
    request; what an answer leaves out (HasMoreData) is asked again."""
    ids = {snap.topics[topic].topic_id: topic for topic, _ in keys}
    left = list(keys)
    out: dict[Key, tuple[int, int, str | None]] = {}
    while left:
        page, left = left[:MAX_PARTITIONS_PER_REQUEST], left[MAX_PARTITIONS_PER_REQUEST:]
        by_topic: dict[str, list[int]] = {}
        for topic, partition in page:
            by_topic.setdefault(topic, []).append(partition)
        debug(session, f"GetReplicaLogInfo request to broker {broker}: {len(page)} partition(s)")
        answer = session.conn.broker_request(broker, ApiKey.GET_REPLICA_LOG_INFO, {"topic_partitions": [
            {"topic_id": snap.topics[t].topic_id, "partitions": ps} for t, ps in by_topic.items()]})
        for tl in answer.get("topic_partition_log_info_list", []):
            name = ids.get(tl["topic_id"])
            if name is None:
                continue
            for info in tl["partition_log_info"]:
                out[(name, info["partition"])] = (info["partition_leader_epoch"], info["log_end_offset"],
                                                  _log_error(info["error_code"], name))
        unanswered = [k for k in page if k not in out]
        if unanswered and not answer.get("has_more_data"):
            for k in unanswered:
                out[k] = (-1, -1, "left out of the broker's answer")
        elif unanswered:
            left = unanswered + left
    return out


def replica_log_ends(session: Session, snap: ClusterSnapshot, broker: int,
                     keys: list[Key]) -> dict[Key, tuple[int, int, str | None]]:
    """The same from ListOffsets with ReplicaId -2 and Timestamp -1 (where the cluster lacks
    GetReplicaLogInfo): `broker`'s own replica's log end and its current leader epoch."""
    out: dict[Key, tuple[int, int, str | None]] = {}
    for i in range(0, len(keys), MAX_PARTITIONS_PER_REQUEST):
        by_topic: dict[str, list[int]] = {}
        for topic, partition in keys[i:i + MAX_PARTITIONS_PER_REQUEST]:
            by_topic.setdefault(topic, []).append(partition)
        body = {"replica_id": DEBUGGING_REPLICA_ID, "isolation_level": 0, "topics": [
            {"name": t, "partitions": [{"partition_index": p, "current_leader_epoch": -1,
                                        "timestamp": LATEST_TIMESTAMP} for p in ps]}
            for t, ps in by_topic.items()]}
        debug(session, f"ListOffsets (replica id -2) request to broker {broker}: "
                       f"{sum(map(len, by_topic.values()))} partition(s)")
        answer = session.conn.broker_request(broker, ApiKey.LIST_OFFSETS, body)
        for t in answer.get("topics", []):
            for p in t["partitions"]:
                code = p["error_code"]
                out[(t["name"], p["partition_index"])] = (
                    p.get("leader_epoch", -1) if not code else -1,
                    p.get("offset", -1) if not code else -1, _log_error(code, t["name"]))
    return out


def _log_error(code: int, topic: str) -> str | None:
    if not code:
        return None
    try:
        return Error(code).name.upper()
    except ValueError:
        return f"error {code}"
