"""Leader elections (ElectLeaders, read here and nowhere else): preferred, unclean and
KAFKA-20098's designated elections, at the controller, at most MAX_PARTITIONS_PER_ELECTION
partitions a request."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.admin import topics
from kafka_shell.base.answers import CONTROLLER, AdminError, Target
from kafka_shell.base.deadline import Deadline
from kafka_shell.protocol import leader_election
from kafka_shell.protocol.codes import ApiKey, ElectionType, Error
from kafka_shell.base.errors import NotSupported
from kafka_shell.base.limits import MAX_PARTITIONS_PER_ELECTION


if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.connection.metadata import ClusterSnapshot

Key = tuple[str, int]
Entry = tuple[str, int, "int | None"]   # (topic, partition, designated leader)
PREFERRED, UNCLEAN, DESIGNATED = ElectionType.PREFERRED, ElectionType.UNCLEAN, ElectionType.DESIGNATED
# Election types came in ElectLeaders v1, designated elections in v3.
MIN_VERSION: dict[int, int] = {PREFERRED: 0, UNCLEAN: 1, DESIGNATED: 3}
ELECTED, NOT_NEEDED, FAILED = "elected", "already elected", "failed"
# Why a predicted election would be refused (`refusal`).
PREFERRED_NOT_LIVE, NOT_A_REPLICA, NONE_LIVE = "preferred not live", "not a replica", "none live"
POLL_S = 0.1   # --blocking asks the brokers again this often


class Election(NamedTuple):
    """One partition's outcome: ELECTED, NOT_NEEDED (a valid leader was already elected) or
    FAILED with its AdminError (the controller's code for it; None as code: the controller left
    it out of its answer); `retriable` when trying again may succeed. `refused_by`: the request
    that failed it (a stock recovery's reorder is refused by AlterPartitionReassignments)."""
    topic: str
    partition: int
    state: str
    error: AdminError | None = None
    retriable: bool = False
    refused_by: int = ApiKey.ELECT_LEADERS

    @property
    def key(self) -> Key:
        return (self.topic, self.partition)


def failed(key: Key, error: AdminError, retriable: bool = False, refused_by: int = ApiKey.ELECT_LEADERS) -> Election:
    return Election(key[0], key[1], FAILED, error, retriable, refused_by)


def reorder_refused(key: Key, error: AdminError) -> Election:
    """A stock recovery's partition whose reorder (AlterPartitionReassignments, before its
    election) was refused."""
    return failed(key, error, refused_by=ApiKey.ALTER_PARTITION_REASSIGNMENTS)


def require(conn: ConnectionManager, kind: int) -> None:
    """Fail before anything is sent when the cluster cannot run this kind of election."""
    conn.require(ApiKey.ELECT_LEADERS, "Leader elections")
    if kind == DESIGNATED and not conn.supports(ApiKey.ELECT_LEADERS, MIN_VERSION[DESIGNATED]):
        raise NotSupported("Designated elections need ElectLeaders v3 (KAFKA-20098), which this cluster "
                           "does not support: use --election-type unclean to let the controller pick a replica.")
    if not conn.supports(ApiKey.ELECT_LEADERS, MIN_VERSION[kind]):
        raise NotSupported(f"{ElectionType(kind).name.title()} elections need ElectLeaders v{MIN_VERSION[kind]}, "
                           "which this cluster does not support.")


def supports(conn: ConnectionManager, kind: int) -> bool:
    return conn.supports(ApiKey.ELECT_LEADERS, MIN_VERSION[kind])


def elect(conn: ConnectionManager, entries: list[Entry], kind: int, timeout_ms: int,
          on_batch: Callable[[int], bool] | None = None) -> dict[Key, Election]:
    """Elect leaders for `entries`, a request per MAX_PARTITIONS_PER_ELECTION partitions (v3
    for designated elections): an outcome for every entry. `on_batch(done)` is called after each
    batch; when it returns False, the remaining batches are not sent."""
    outcomes: dict[Key, Election] = {}
    step = MAX_PARTITIONS_PER_ELECTION
    batches = [entries[i:i + step] for i in range(0, len(entries), step)]
    label = ElectionType(kind).name
    for n, batch in enumerate(batches, 1):
        conn.debug(f"ElectLeaders request {n}/{len(batches)} to the controller: {len(batch)} partition(s), {label}")
        answer = conn.controller_request(ApiKey.ELECT_LEADERS, _body(batch, kind, timeout_ms),
                                         version=3 if kind == DESIGNATED else None, mutation=True)
        top = int(answer.error_code)
        outcomes.update(_outcomes(answer))
        for topic, partition, _ in batch:  # left out of the answer
            if (topic, partition) not in outcomes:
                about = Target(CONTROLLER, asked=((topic, partition),))
                outcomes[(topic, partition)] = (failed((topic, partition), AdminError(top, about)) if top else
                                                failed((topic, partition), AdminError(None, about), retriable=True))
        if on_batch is not None and not on_batch(n * step) and n < len(batches):
            break
    conn.debug(f"ElectLeaders: {len(batches)} request(s) sent for {len(entries)} partition(s)")
    return outcomes


def elect_all(conn: ConnectionManager, kind: int, timeout_ms: int) -> dict[Key, Election]:
    """ElectLeaders for every partition of the cluster (a null partition list), as
    kafka-leader-election --all-topic-partitions asks when no topic is visible to it: the
    controller answers for the partitions it elected or refuses the request (a KafkaCallError
    with its code: not authorized, among others)."""
    conn.debug(f"ElectLeaders request to the controller: every partition, {ElectionType(kind).name}")
    answer = conn.controller_request(ApiKey.ELECT_LEADERS, {"election_type": kind, "topic_partitions": None,
                                                            "timeout": timeout_ms}, mutation=True)
    return _outcomes(answer)


def _outcomes(answer: object) -> dict[Key, Election]:
    top = int(getattr(answer, "error_code", 0))
    out: dict[Key, Election] = {}
    for t in getattr(answer, "replica_election_results", ()):
        for r in t.partition_result:
            code = int(r.error_code) or top
            key = (t.topic, r.partition_id)
            if code == 0:
                out[key] = Election(key[0], key[1], ELECTED)
            elif code == Error.election_not_needed:
                out[key] = Election(key[0], key[1], NOT_NEEDED)
            else:
                out[key] = failed(key, AdminError(code, Target(CONTROLLER, asked=(key,)), r.error_message or ""),
                                  _retriable(code))
    return out


def _body(batch: list[Entry], kind: int, timeout_ms: int) -> dict:
    by_topic: dict[str, tuple[list[int], list[int | None]]] = {}
    for topic, partition, leader in batch:
        parts, leaders = by_topic.setdefault(topic, ([], []))
        parts.append(partition)
        leaders.append(leader)
    designated = kind == DESIGNATED
    topics = [{"topic": t, "partitions": ps, **({"designated_leaders": ls} if designated else {})}
              for t, (ps, ls) in by_topic.items()]
    return {"election_type": kind, "topic_partitions": topics, "timeout": timeout_ms}


def _retriable(code: int) -> bool:
    try:
        return bool(Error(code).retriable)
    except ValueError:
        return False


# -- --blocking: until every broker shows the new leaders ---------------------------------------


class Shown(NamedTuple):
    """`wait_for_leaders` so far: the partitions every broker shows with their new leader, of `total`."""
    shown: int
    total: int


class LeadersShown(NamedTuple):
    """How `wait_for_leaders` ended: the brokers that answered throughout (none: no broker did),
    the partitions some of them do not show with their new leader yet (none: every one is shown),
    of `total`, and how long it waited."""
    brokers: list[int]
    pending: list[Key]
    total: int
    elapsed: float


def wait_for_leaders(conn: ConnectionManager, brokers: list[int], elected: list[Entry], kind: int, timeout_ms: int,
                     report: Callable[[Shown | AdminError], None]) -> LeadersShown:
    """Ask each of `brokers` for metadata until all of them show the elected leaders (not the
    controller: waiting goes on if the controller moves meanwhile), within `timeout_ms`. A
    broker that does not answer is left out from then on (`report`ed, as each round's `Shown`).
    Unlike `reassignments.agreed`, which settles on what most brokers show, this waits for a
    known leader and goes on without a broker that fails."""
    deadline = Deadline(timeout_ms / 1000)
    brokers = sorted(brokers)
    pending = {(t, p): d for t, p, d in elected}
    total = len(pending)
    while pending:
        views = topics.leaders_by_broker(conn, brokers, sorted({t for t, _ in pending}))
        for b, error in views.errors.items():
            brokers.remove(b)
            report(error)
        if not brokers:
            break
        for key in list(pending):
            if _shown_everywhere(kind, key, pending[key], [views.rows[b] for b in brokers]):
                del pending[key]
        report(Shown(total - len(pending), total))
        if pending and not deadline.pause(POLL_S):
            break
    return LeadersShown(brokers, sorted(pending), total, deadline.elapsed())


def _shown_everywhere(kind: int, key: Key, designated: int | None, views: list[dict]) -> bool:
    seen = [v[key] for v in views if key in v]
    if len(seen) < len(views) or len({s[0] for s in seen}) != 1:
        return False
    leader, preferred = seen[0]
    if kind == PREFERRED:
        return leader == preferred
    if kind == DESIGNATED:
        return leader == designated
    return leader >= 0


# -- --dry-run: what the controller would do, by its own rule ------------------------------------


class Prediction(NamedTuple):
    """What an election would do to one partition (`kafka_shell.protocol.leader_election`, from the
    command's read): ELECTED (a new leader), NOT_NEEDED, or FAILED, `refused` saying why
    (PREFERRED_NOT_LIVE, NOT_A_REPLICA or NONE_LIVE)."""
    key: Key
    state: str
    leader: int                 # the leader it would have
    refused: str | None = None


def predict(snap: ClusterSnapshot, entries: list[Entry], kind: int) -> dict[Key, Prediction]:
    """Each entry's election as the controller would run it on the partitions of `snap`."""
    live = set(snap.brokers)
    out: dict[Key, Prediction] = {}
    for topic, partition, designated in entries:
        p = snap.topics[topic].partitions[partition]
        outcome = leader_election.elect(kind, p.leader, p.replicas, p.isr, live, designated=designated)
        if outcome.elected:
            out[(topic, partition)] = Prediction((topic, partition), ELECTED, outcome.leader)
        elif outcome.code == Error.election_not_needed:
            out[(topic, partition)] = Prediction((topic, partition), NOT_NEEDED, outcome.leader)
        else:
            why = (PREFERRED_NOT_LIVE if outcome.code == Error.preferred_leader_not_available
                   else NOT_A_REPLICA if outcome.code == Error.invalid_request else NONE_LIVE)
            out[(topic, partition)] = Prediction((topic, partition), FAILED, outcome.leader, why)
    return out
