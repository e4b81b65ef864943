"""Topics: names, fresh reads of them, CreateTopics, DeleteTopics, CreatePartitions, the KIP-966
eligible leaders (DescribeTopicPartitions), one broker's own view of the leaders, and waiting
until every broker shows a change (`wait_until_shown`).

Every lookup reads the cluster when it runs (`ConnectionManager.read`): what a command shows or
plans from is never the metadata cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_shell.base.answers import CONTROLLER, AdminError, Answers, Target
from kafka_shell.base.deadline import Deadline
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.base.errors import KafkaCallError, shown
from kafka_shell.base.limits import MAX_PARTITIONS_PER_BATCH, MAX_RECORDS_PER_USER_OP, PARTITIONS_PER_PAGE
from kafka_shell.connection.metadata import ClusterSnapshot, PartitionInfo, TopicInfo, topics_from_metadata
from kafka_shell.base.names import TopicPartitions, check_pattern, check_topic_name, is_pattern, matcher

from kafka_shell.admin.errors import response_error

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager

Key = tuple[str, int]


# -- fresh reads -------------------------------------------------------------------------------


def read_for(conn: ConnectionManager, names: list[str] | None) -> ClusterSnapshot:
    """A fresh read scoped to `names`: just those topics, or every topic when a name is a
    pattern or no name is given."""
    for n in names or ():  # a name that cannot exist is refused before anything is sent
        if is_pattern(n):
            check_pattern(n)
        else:
            check_topic_name(n)
    if names is None or any(is_pattern(n) for n in names):
        return conn.read()
    return conn.read(names)


def read_keys(conn: ConnectionManager, keys: Iterable[Key]) -> ClusterSnapshot:
    """A fresh read of the topics that `keys` (topic, partition) name."""
    return read_for(conn, sorted({t for t, _ in keys}))


def resolve(snap: ClusterSnapshot, names: list[str], include_internal: bool = True) -> list[str]:
    """Names as given, with patterns (names.topic_pattern) expanded against the read `snap`."""
    known = snap.topics
    out: list[str] = []
    for name in names:
        if is_pattern(name):
            check_pattern(name)
            selected = matcher(name)
            out += [t for t in sorted(known) if selected(t) and (include_internal or not known[t].internal)]
        else:
            out.append(name)
    return list(dict.fromkeys(out))


def require(conn: ConnectionManager, name: str, snap: ClusterSnapshot | None = None) -> TopicInfo:
    """The topic `name` as the cluster has it now (from `snap`, a read this command made, or
    from a fresh read of that one topic); a clear error when it does not exist."""
    if snap is None:
        check_topic_name(name)  # before anything is sent
        snap = conn.read([name])
    topic = snap.topics.get(name)
    if name in snap.unauthorized:  # Metadata refused it: whether it exists is not ours to know
        raise response_error(ApiKey.METADATA, Error.topic_authorization_failed, topic=name)
    if topic is None:
        check_topic_name(name)
        raise missing(name)
    return topic


def missing(name: str) -> KafkaCallError:
    return KafkaCallError(f'Topic "{shown(name)}" does not exist (check the name with list-topics).',
                          code=Error.unknown_topic_or_partition)


def read_topics(conn: ConnectionManager, names: list[str],
                include_internal: bool = True) -> tuple[ClusterSnapshot, list[TopicInfo]]:
    """One fresh read for the named topics (patterns expanded) and each one's TopicInfo; a name
    that does not exist is an error."""
    snap = read_for(conn, names)
    return snap, [require(conn, n, snap) for n in resolve(snap, names, include_internal)]


class NoSuchPartition(ValueError):
    """A partition asked for that its topic lacks, by a fresh read (`count`: the partitions it has)."""

    def __init__(self, topic: str, partition: int, count: int):
        super().__init__(topic, partition, count)
        self.topic, self.partition, self.count = topic, partition, count


def partitions_of(snap: ClusterSnapshot, specs: list[TopicPartitions]) -> list[Key]:
    """Kafka's `--topic t` (every partition) or `--topic t:0,2` arguments as partitions, checked
    against the read `snap`: an unknown topic is an error, a partition the topic lacks a
    NoSuchPartition."""
    out: list[Key] = []
    for spec in specs:
        topic = snap.topics.get(spec.topic)
        if topic is None:
            raise missing(spec.topic)
        keys = [(spec.topic, p.partition) for p in topic.partitions] if spec.partitions is None else \
            [(spec.topic, p) for p in spec.partitions]
        check_partitions(snap, keys)
        out += keys
    return list(dict.fromkeys(out))


def check_partitions(snap: ClusterSnapshot, keys: list[Key]) -> None:
    """The first topic of `keys` the cluster does not have (an error), or partition (a
    NoSuchPartition): found before anything is sent for them."""
    for name, p in keys:
        topic = snap.topics.get(name)
        if topic is None:
            raise missing(name)
        if not 0 <= p < len(topic.partitions):
            raise NoSuchPartition(name, p, len(topic.partitions))


def names_of(specs: list[TopicPartitions]) -> list[str]:
    """The topics of `--topic t[:p,...]` arguments."""
    return list(dict.fromkeys(s.topic for s in specs))


def health_classes(p: PartitionInfo, live: Mapping[int, object], min_isr: int, adding: Sequence[int] = ()) -> dict[str, bool]:
    """kafka-topics' partition filters, by their describe-topic names: a partition without a
    live leader is unavailable (and under min ISR); replicas being added do not count towards
    the replication factor, as Kafka counts them."""
    leader_down = p.leader < 0 or p.leader not in live
    return {
        "under_replicated_partitions": len(p.isr) < len(p.replicas) - len(adding),
        "unavailable_partitions": leader_down,
        "under_min_isr_partitions": leader_down or len(p.isr) < min_isr,
        "at_min_isr_partitions": len(p.isr) == min_isr,
        "not_preferred_leader": p.leader != p.preferred_leader,
    }


# -- CreateTopics, DeleteTopics, CreatePartitions ----------------------------------------------


@dataclass(frozen=True)
class NewTopic:
    name: str
    partitions: int = -1                          # -1: the broker's num.partitions
    replication_factor: int = -1                  # -1: the broker's default.replication.factor
    assignment: tuple[tuple[int, ...], ...] = ()  # replicas per partition (then no counts)
    configs: tuple[tuple[str, str], ...] = ()

    @property
    def size(self) -> int:
        """Partitions it adds, as the controller counts them (at least one)."""
        return len(self.assignment) or max(self.partitions, 1)

    @property
    def records(self) -> int:
        """Metadata records its creation makes: the topic's, one per partition, one per config."""
        return 1 + self.size + len(self.configs)


@dataclass(frozen=True)
class TopicOutcome:
    """What the controller answered for one topic: done (no error), or its error."""
    name: str
    error: AdminError | None = None

    @property
    def exists(self) -> bool:
        """It already existed (CreateTopics: TOPIC_ALREADY_EXISTS)."""
        return self.error is not None and self.error.code == Error.topic_already_exists

    @property
    def absent(self) -> bool:
        """It did not exist (DeleteTopics: UNKNOWN_TOPIC_OR_PARTITION)."""
        return self.error is not None and self.error.code == Error.unknown_topic_or_partition


def _outcome(name: str, result: Any) -> TopicOutcome:
    """A topic's part of the controller's answer (None: left out of it)."""
    code = int(result.error_code) if result is not None else Error.unknown_server_error
    message = (getattr(result, "error_message", None) or "") if result is not None else "left out of the answer"
    return TopicOutcome(name, AdminError(code, Target(CONTROLLER, -1, (name,)), message) if code else None)


def create(conn: ConnectionManager, topics: list[NewTopic], validate_only: bool) -> list[TopicOutcome]:
    """CreateTopics at the controller, one outcome per topic in order. Topics go out in as few
    requests as Kafka accepts (`_batches`)."""
    timeout_ms = round(conn.timeout_s * 1000)
    out: list[TopicOutcome] = []
    for chunk in _batches(topics):
        conn.debug(f"CreateTopics request: {len(chunk)} topic(s)" + (" (validate only)" if validate_only else ""))
        body = {"topics": [_creatable(t) for t in chunk], "timeout": timeout_ms, "validate_only": validate_only}
        answer = conn.controller_request(ApiKey.CREATE_TOPICS, body, mutation=not validate_only)
        answered = {t.name: t for t in answer.topics}
        out += [_outcome(t.name, answered.get(t.name)) for t in chunk]
    return out


def _batches(topics: list[NewTopic]) -> list[list[NewTopic]]:
    """Topics in order, cut into requests the controller takes whole: each within
    MAX_PARTITIONS_PER_BATCH partitions and MAX_RECORDS_PER_USER_OP records, no name twice. A topic
    over a limit by itself goes alone, for the controller to answer."""
    chunks: list[list[NewTopic]] = []
    names: set[str] = set()
    partitions = records = MAX_RECORDS_PER_USER_OP + MAX_PARTITIONS_PER_BATCH   # a new chunk first
    for t in topics:
        if (partitions + t.size > MAX_PARTITIONS_PER_BATCH or records + t.records > MAX_RECORDS_PER_USER_OP
                or t.name in names):
            chunks.append([])
            names, partitions, records = set(), 0, 0
        chunks[-1].append(t)
        names.add(t.name)
        partitions += t.size
        records += t.records
    return chunks


def _creatable(t: NewTopic) -> dict:
    by_assignment = bool(t.assignment)
    return {"name": t.name,
            "num_partitions": -1 if by_assignment else t.partitions,
            "replication_factor": -1 if by_assignment else t.replication_factor,
            "assignments": [{"partition_index": i, "broker_ids": list(r)} for i, r in enumerate(t.assignment)],
            "configs": [{"name": k, "value": v} for k, v in t.configs]}


def deletion_refused(name: str) -> KafkaCallError:
    """The error for a topic Metadata refused to describe: its deletion would be refused the same
    way (DELETE implies DESCRIBE), so it is not sent."""
    return response_error(ApiKey.DELETE_TOPICS, Error.topic_authorization_failed, topic=name)


def delete(conn: ConnectionManager, names: list[str]) -> list[TopicOutcome]:
    """DeleteTopics at the controller, one outcome per name in order."""
    conn.debug(f"DeleteTopics request: {len(names)} topic(s)")
    body = {"topic_names": names, "topics": [{"name": n} for n in names], "timeout": round(conn.timeout_s * 1000)}
    answer = conn.controller_request(ApiKey.DELETE_TOPICS, body, mutation=True)
    answered = {r.name: r for r in answer.responses}
    return [_outcome(name, answered.get(name)) for name in names]


def add_partitions(conn: ConnectionManager, topics: list[str], total: int,
                   assignment: list[list[int]] | None, validate_only: bool) -> list[TopicOutcome]:
    """CreatePartitions: each topic grows to `total` partitions (the new ones placed as
    `assignment` says, else by the controller); one outcome per topic in order."""
    conn.require(ApiKey.CREATE_PARTITIONS, "Adding partitions")
    conn.debug(f"CreatePartitions request: {len(topics)} topic(s)")
    body = {"topics": [{"name": t, "count": total,
                        "assignments": [{"broker_ids": r} for r in assignment] if assignment else None}
                       for t in topics],
            "timeout": round(conn.timeout_s * 1000), "validate_only": validate_only}
    answer = conn.controller_request(ApiKey.CREATE_PARTITIONS, body, mutation=not validate_only)
    answered = {r.name: r for r in answer.results}
    return [_outcome(name, answered.get(name)) for name in topics]


# -- what Metadata lacks, and one broker's own view --------------------------------------------


def eligible_leaders(conn: ConnectionManager, topics: list[TopicInfo]) -> dict[Key, tuple[list[int], list[int]]]:
    """(topic, partition) -> (ELR, last known ELR) from DescribeTopicPartitions, page by page,
    where the cluster has it (KIP-966 fields that Metadata lacks). Only topics with a partition
    out of sync or offline are asked about: elsewhere both lists are empty by definition (the
    ELR holds replicas that left the ISR), which keeps a healthy describe one Metadata read."""
    names = [t.name for t in topics
             if any(p.leader < 0 or len(p.isr) < len(p.replicas) for p in t.partitions)]
    if not names or not conn.supports(ApiKey.DESCRIBE_TOPIC_PARTITIONS):
        return {}
    out: dict[Key, tuple[list[int], list[int]]] = {}
    cursor = None
    while True:
        conn.debug(f"DescribeTopicPartitions request: {len(names)} topic(s)")
        answer = conn.any_broker_request(
            ApiKey.DESCRIBE_TOPIC_PARTITIONS,
            {"topics": [{"name": n} for n in names], "response_partition_limit": PARTITIONS_PER_PAGE,
             "cursor": cursor})
        for t in answer.topics:
            for p in t.partitions:
                out[(t.name, p.partition_index)] = (list(p.eligible_leader_replicas or ()),
                                                    list(p.last_known_elr or ()))
        cursor = answer.next_cursor
        if cursor is None:
            return out


def views_by_broker(conn: ConnectionManager, brokers: list[int], topics: list[str],
                    deadline: Deadline | None = None) -> Answers[int, dict[str, TopicInfo]]:
    """Each broker's own metadata of `topics` (not the controller's: what clients of that broker
    are told; a topic it does not know, or still loads, is left out), all brokers at once."""
    answers = conn.each_broker(brokers, ApiKey.METADATA, {"topics": [{"name": t} for t in topics],
                                                          "allow_auto_topic_creation": False}, deadline=deadline)
    return Answers({b: topics_from_metadata(a.topics, skip_errors=True) for b, a in answers.rows.items()},
                   answers.errors)


def leaders_by_broker(conn: ConnectionManager, brokers: list[int],
                      topics: list[str]) -> Answers[int, dict[Key, tuple[int, int]]]:
    """(topic, partition) -> (leader, preferred replica) as each broker's own metadata has them."""
    views = views_by_broker(conn, brokers, topics)
    return Answers({b: {(t.name, p.partition): (p.leader, p.preferred_leader) for t in view.values()
                        for p in t.partitions} for b, view in views.rows.items()}, views.errors)


# -- KIP-4's --blocking: until every broker shows a change ---------------------------------------


Shows = Callable[[dict[str, TopicInfo], list[str]], bool]   # does a broker's view show the change to the topics?
POLL_S = 0.1


def created(view: dict[str, TopicInfo], names: list[str]) -> bool:
    return all(n in view and view[n].partitions and all(p.leader >= 0 for p in view[n].partitions) for n in names)


def deleted(view: dict[str, TopicInfo], names: list[str]) -> bool:
    return not any(n in view for n in names)


def altered(total: int | None, factor: int | None) -> Shows:
    """At least `total` partitions, and `factor` replicas in each (either None: not asked)."""
    def shows(view: dict[str, TopicInfo], names: list[str]) -> bool:
        return all(n in view and (not total or len(view[n].partitions) >= total)
                   and (not factor or all(len(p.replicas) == factor for p in view[n].partitions))
                   for n in names)
    return shows


class Showing(NamedTuple):
    """How `wait_until_shown` ended: the brokers that do not show the change yet (with the
    AdminError of one that did not answer; none: every broker shows it), and how long it waited."""
    lagging: dict[int, AdminError | None]
    elapsed: float


def wait_until_shown(conn: ConnectionManager, brokers: list[int], names: list[str], shows: Shows) -> Showing:
    """Ask each of `brokers` for its own metadata of `names` until each one `shows` the change,
    within --timeout."""
    deadline = Deadline(conn.timeout_s)
    while True:
        found = views_by_broker(conn, brokers, names, deadline)
        lagging = {b: found.errors.get(b) for b in brokers if b in found.errors or not shows(found.rows[b], names)}
        if not lagging or not deadline.pause(POLL_S):
            return Showing(lagging, deadline.elapsed())
