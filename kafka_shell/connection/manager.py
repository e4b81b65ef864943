"""The connection manager, one per cluster: a facade over the router (who serves what, by the
cluster's own rules: `router.py`) and the metadata cache (completion, toolbar, routing only:
`cache.py`).

Everything the shell asks of a cluster goes through here, over the shell's own channel
(`channel.py`): one route per request, one deadline, one retry policy, one error converter.
Callers (the admin layer) name *what* they ask; the route names *whom*:

- `read()`: one fresh Metadata request, scoped to the topics named (what commands show and plan
  from); `controller()` and `quorum()`: the active controller and the metadata quorum.
- `controller_request`, `broker_request`, `any_broker_request`: one request and its answer (a kio entity);
  `each_broker`: one request per broker, all at once; `leader_requests`: partitions at their
  leaders; `replica_requests`: partitions at named brokers' own replicas;
  `coordinator_requests`: group requests at each group's coordinator. What several targets
  answer comes back as `Answers` (kafka_shell/base/answers.py): the rows of those that answered
  beside an AdminError for each that did not, naming it.

The routes to many targets (leaders, replicas, coordinators) are one machine, `_route`: locate
what each key is held by, ask every node at once (a slow one holds up only its own keys), and
locate and ask again the keys whose holder moved (LEADER_MOVED, COORDINATOR_RETRIABLE) or could
not be reached, with backoff.

Every call is bounded by one `Deadline`: --timeout from its start (plus the broker's own
operation timeout where the request carries one) across its retries, whatever the brokers do,
and never past what is left of the running command's --timeout (`budget`, set by the runner:
each request's wait is the smaller of the two); a caller may pass its own to bound several
calls together.

Retries when the controller moves (NOT_CONTROLLER, or the connection to it is lost): find the
controller again and retry with exponential backoff until the deadline, at most MAX_ATTEMPTS
times. A mutation is never applied twice:

- NOT_CONTROLLER means the broker rejected the request before changing anything, so resending
  is safe. A mutation is resent only when *every* error code in the answer is NOT_CONTROLLER;
  a mixed answer (some items applied) is returned as it is.
- A connection lost *after* a mutation was fully sent is ambiguous: it may have taken effect.
  `_resend_after_loss` is the one place that decides: idempotent APIs (setting configs,
  elections, reassignments) are simply resent; CreateTopics and DeleteTopics are resent and an
  "already exists" / "unknown topic" answer counts as success when the topic was absent /
  present before the first attempt and the cluster is now in the state the request asked for;
  any other mutation is not resent and fails with "outcome unknown: check before retrying".

Group requests retry NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS and COORDINATOR_NOT_AVAILABLE
with the coordinator looked up again, and partition requests Kafka's leader-moved codes with the
leader read again, as Kafka's AdminClient does, within the same deadline.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import operator
import queue
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, NamedTuple, TypeVar

from kafka_shell.protocol import codec
from kafka_shell.protocol.authorization import authorization_message, is_authorization_error
from kafka_shell.connection.cache import MetadataCache, read_snapshot
from kafka_shell.base.answers import (BROKER, COORDINATOR, LEADER, REPLICA, TRANSACTION_COORDINATOR, AdminError, Answers,
                                 Target)
from kafka_shell.connection.channel import Channel, ConnectionLost, ConnectionRefused, NoAnswer, operation_seconds
from kafka_shell.connection.client_config import librdkafka_properties, parse_bootstrap
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.base.debug_log import DebugLog
from kafka_shell.base.deadline import Budget, Deadline
from kafka_shell.base.errors import ClusterUnreachable, KafkaCallError, NotSupported, ShellError
from kafka_shell.connection.metadata import KRAFT, BrokerInfo, ClusterSnapshot, ControllerInfo, Quorum
from kafka_shell.connection.router import Router, unreachable_message

__all__ = ["ConnectionManager", "parse_bootstrap", "unreachable_message"]

log = DebugLog("kafka_shell.connection.manager")

MAX_ATTEMPTS = 5
REFRESH_AFTER_CHANGE_S = 1.0   # the longest the prompt waits for the cache to learn a change
LAST_WORD_S = 0.2     # past the deadline, for brokers still asked to say why they did not answer
T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
Key = tuple[str, int]
# Mutations that leave the same state when applied twice: safe to resend after a lost answer.
IDEMPOTENT_MUTATIONS = {ApiKey.ALTER_CONFIGS, ApiKey.ALTER_REPLICA_LOG_DIRS,
                        ApiKey.ELECT_LEADERS,  # a second run answers ELECTION_NOT_NEEDED
                        ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_PARTITION_REASSIGNMENTS}
# Errors that mean "ask again, maybe elsewhere" (Kafka's AdminClient retries these).
COORDINATOR_RETRIABLE = frozenset(int(e) for e in (Error.not_coordinator, Error.coordinator_load_in_progress,
                                                   Error.coordinator_not_available))
# A partition whose leader moved or is not known yet where it was asked: located again by a fresh
# read and asked again. Kafka's AdminClient unmaps these in its partition-leader handlers
# (DeleteRecordsHandler: every InvalidMetadataException; AbortTransactionHandler;
# PartitionLeaderStrategy's lookup), and retries the leader epoch errors. Ints: they are compared
# with 100,000s of answers.
LEADER_MOVED = frozenset(int(e) for e in (
    Error.not_leader_or_follower, Error.leader_not_available, Error.replica_not_available,
    Error.broker_not_available, Error.kafka_storage_error, Error.fenced_leader_epoch,
    Error.unknown_leader_epoch, Error.unknown_topic_or_partition))
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1        # FindCoordinator's key type of a transactional id
BATCHED_FIND_COORDINATOR = 4    # FindCoordinator takes many keys from v4


class Then(NamedTuple):
    """A second request at the same coordinator for the ids whose part of the first `needs` it
    (DescribeGroups for the groups ConsumerGroupDescribe does not know), so a slow coordinator
    holds up only its own groups."""
    api_key: int
    body_for: Callable[[list[str], int], dict]
    split: Callable[[Any, list[str]], dict[str, Any]]
    needs: Callable[[Any], bool]


class Silent(KafkaCallError):
    """A broker did not answer before the deadline (`sent`: after the request was sent)."""

    def __init__(self, message: str, sent: bool):
        super().__init__(message, retriable=True)
        self.sent = sent


# A KRaft broker that took a request it forwards to the active controller and said nothing
# points at the controller.
FORWARD_HINT = (" (the broker forwards it to the KRaft controller: if the brokers answer other requests, the "
                "controller is down or slow; describe-quorum tells)")
# What the shell sends to any broker that a KRaft broker forwards (the others go through
# controller_request).
FORWARDED_BY_ANY_BROKER = frozenset({ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN,
                                     ApiKey.EXPIRE_DELEGATION_TOKEN})


@functools.cache
def _librdkafka_log() -> Any:
    """The logger of the Producers' and Consumers' librdkafka (only the records commands load
    logging for it): quiet unless --debug configures logging."""
    import logging
    logger = logging.getLogger("kafka_shell.librdkafka")
    logger.addHandler(logging.NullHandler())
    return logger


def _observe_controller(cluster_id: str | None, controller: ControllerInfo) -> None:
    """The controller history's record of what a read learned (loaded by the first read of the
    controller: a one-shot line that reads none starts without its files' modules)."""
    from kafka_shell.connection import controller_history
    controller_history.observe(cluster_id, controller)


class ConnectionManager:
    def __init__(self, bootstrap: str, properties: dict[str, str] | None = None,
                 timeout_s: float = 10.0, notify: Callable[[str], None] | None = None,
                 bootstrap_controllers: str | None = None, debug: Callable[[str], None] | None = None,
                 budget: Budget | None = None):
        self.bootstrap = bootstrap
        self.budget = budget or Budget()   # the running command's: caps every deadline made here
        self.properties = dict(properties or {})
        self.timeout_s = timeout_s
        self.notify = notify or (lambda message: None)
        self.debug = debug or (lambda text: None)   # --debug: what is sent (how lines were batched)
        self.router = Router(bootstrap, self.properties, timeout_s, self._notify, bootstrap_controllers)
        self.cache = MetadataCache(self.router, timeout_s)
        self.cluster_id: str | None = None   # from the last read (controller_history's key)
        # Routing memory, like the router's controller: each group's coordinator as last found;
        # a group answered with a coordinator error (it moved) is looked up again. Keyed by
        # (FindCoordinator key type, key): a group and a transactional id may share a name.
        self._coordinators: dict[tuple[int, str], int] = {}
        # Threads of one command (describe-group reads offsets while it describes) look up the
        # same coordinators and brokers at once: the second waits for the first's answer.
        self._lookups = threading.RLock()   # a lookup may read the brokers first

    def _notify(self, message: str) -> None:
        self.notify(message)  # looked up at call time: the session may set notify later

    def deadline(self, operation_ms: float = 0) -> Deadline:
        """--timeout from now, plus a broker's own operation timeout (so its answer is not cut
        off), within what is left of the running command's --timeout (`budget`)."""
        return self.budget.cap(Deadline(self.timeout_s, operation_ms / 1000))

    def _deadline_for(self, body: dict | None, given: Deadline | None) -> Deadline:
        return given if given is not None else self.budget.cap(Deadline(self.timeout_s, operation_seconds(body)))

    # -- the cache (completion, toolbar, routing) --------------------------------------------

    @property
    def snapshot(self) -> ClusterSnapshot:
        return self.cache.snapshot

    @property
    def refreshing(self) -> bool:
        return self.cache.refreshing

    @property
    def unreachable_since(self) -> float | None:
        return self.cache.unreachable_since

    @property
    def mode(self) -> str | None:
        return self.router.mode

    @property
    def bootstrap_addresses(self) -> list[tuple[str, int]]:
        return self.router.bootstrap_addresses

    def open(self) -> None:
        """Connect to a bootstrap broker (which tells the cluster's mode); nothing more, so a
        one-shot command pays only for the reads it makes itself."""
        self.router.from_any_broker(lambda ch: ch, self.deadline())

    def connect(self) -> ClusterSnapshot:
        """Connect and fill the cache (the REPL, for completion and the toolbar)."""
        return self.refresh()

    def refresh(self) -> ClusterSnapshot:
        return self.cache.refresh()

    def refresh_in_background(self) -> None:
        self.cache.refresh_in_background()

    def refresh_after_change(self) -> None:
        self.cache.refresh_after_change(REFRESH_AFTER_CHANGE_S)

    # -- fresh reads (what commands show and plan from) --------------------------------------

    def read(self, topics: Iterable[str] | None = None, controller: bool = False,
             deadline: Deadline | None = None) -> ClusterSnapshot:
        """The cluster as it is now: one Metadata request for the named topics (all when None;
        a missing topic is simply absent) with its live brokers, and with `controller` the
        active controller by the cluster's own rules. A full read also refreshes the cache."""
        try:
            snap = read_snapshot(self.router, deadline or self.deadline(), topics, controller)
        except ClusterUnreachable:
            self.cache.mark_unreachable()
            raise
        if topics is None and controller:
            self.cache.offer(snap)
        self.cluster_id = snap.cluster_id or self.cluster_id
        if controller:
            _observe_controller(self.cluster_id, snap.controller)
        return snap

    def controller(self) -> ControllerInfo:
        """The active controller now (KRaft: DescribeQuorum; ZooKeeper: Metadata)."""
        info = self.router.refresh_controller(self.deadline())
        _observe_controller(self.cluster_id, info)
        return info

    def quorum(self) -> Quorum:
        """The metadata quorum from a fresh DescribeQuorum (KRaft)."""
        return self.router.read_quorum(self.deadline())

    @property
    def controllers_only(self) -> bool:
        """Only --bootstrap-controller was given: the shell talks to the controllers alone."""
        return self.router.controllers_only

    def controllers(self) -> Any:
        """A fresh DescribeCluster of the controllers (KIP-919): cluster id, active controller, nodes."""
        return self.router.read_controllers(self.deadline())

    def greeting(self) -> str:
        """What the connection found: `Connected to cluster X (KRaft, active controller 100 at
        h:p, epoch 7)` or `(ZooKeeper mode, controller broker 2 at h:p)`; with controllers only,
        the controllers it reached."""
        if self.controllers_only:
            snap = self.connect()
            return (f"Connected to the controllers of cluster {snap.cluster_id or '(no id)'} (KRaft, "
                    f"{len(self.router.brokers)} controller(s): {', '.join(map(str, sorted(self.router.brokers)))}; "
                    f"{snap.controller.describe()}). No broker given: commands that need one say so.")
        snap = self.snapshot if self.snapshot.taken_at else self.connect()
        mode = "KRaft" if self.mode == KRAFT else "ZooKeeper mode"
        refused = self.cache.controller_refused
        controller = f"active controller not shown: {refused}" if refused else snap.controller.describe()
        return f"Connected to cluster {snap.cluster_id or '(no id)'} ({mode}, {controller})."

    # -- requests ----------------------------------------------------------------------------

    def controller_request(self, api_key: int, body: dict, *, version: int | None = None, mutation: bool = False,
                      deadline: Deadline | None = None) -> Any:
        """Send to the controller (see the router for where that is); on NOT_CONTROLLER or a
        lost connection, find the controller again and retry (see the module docstring for
        what is resent), all within one deadline."""
        deadline = self._deadline_for(body, deadline)
        before = self.snapshot
        resent_after_loss = False
        reason = ""
        for attempt in range(MAX_ATTEMPTS):
            try:
                channel = self.router.controller_channel(api_key, body, deadline)
                response = channel.request_entity(api_key, body, version, deadline=deadline)
            except NoAnswer as late:
                # KRaft: a broker forwards the request to the active controller; a broker that
                # took it and said nothing points at the controller.
                forwarded = self.mode == KRAFT and not self.router.uses_controller_listener(api_key, body)
                hint = FORWARD_HINT if forwarded else ""
                if mutation and late.sent:
                    raise KafkaCallError(f"{late}: the {codec.api_name(api_key)} request may or may not "
                                         f"have taken effect{hint}. Check the cluster state before retrying.",
                                         retriable=False) from None
                raise self._no_answer(late, deadline, hint) from None
            except ConnectionLost as lost:
                reason = str(lost)
                if mutation and lost.sent:
                    self._resend_after_loss(api_key, reason)
                    resent_after_loss = True
            else:
                if resent_after_loss:
                    response = _settle(api_key, body, response, before, self._read_after(body))
                if not _rejected_by_non_controller(response, mutation):
                    return refused_at_top(api_key, response)
                reason = f"NOT_CONTROLLER from {channel.name}"
            if attempt + 1 == MAX_ATTEMPTS or not deadline.backoff():
                break
            try:
                self.router.refresh_controller(deadline)
            except (ConnectionLost, KafkaCallError) as exc:
                log.debug("finding the controller again failed: %s", exc)
        raise KafkaCallError(f"{codec.api_name(api_key)} failed: no controller answered within "
                             f"{self.timeout_s:g} s (last: {reason}).",
                             code=Error.not_controller if reason.startswith("NOT_") else None, retriable=True)

    def _read_after(self, body: dict) -> ClusterSnapshot:
        """The named topics now (CreateTopics / DeleteTopics bodies, any version)."""
        names = [t.get("name") for t in body.get("topics", []) if isinstance(t, dict)]
        return self.read([n for n in names + list(body.get("topic_names") or []) if n])

    def _resend_after_loss(self, api_key: int, reason: str) -> None:
        """Decide whether a mutation whose answer was lost may be sent again (raises if not)."""
        if api_key in IDEMPOTENT_MUTATIONS or api_key in (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS):
            return
        raise KafkaCallError(
            f"{reason}, after the {codec.api_name(api_key)} request was sent: it may or may not "
            "have taken effect. Check the cluster state before retrying.", retriable=False)

    def broker_request(self, broker_id: int, api_key: int, body: dict, *, version: int | None = None,
                  max_version: int | None = None, mutation: bool = False, deadline: Deadline | None = None) -> Any:
        """Send to a named broker. A read is retried once on a fresh connection (after reading
        the brokers again, in case the broker moved); a mutation is not."""
        deadline = self._deadline_for(body, deadline)
        for attempt in range(2):
            if attempt or not self.router.knows(broker_id):
                self._read_brokers(deadline)
            try:
                channel = self._broker_channel(broker_id, deadline)
                return refused_at_top(api_key, channel.request_entity(api_key, body, version, deadline=deadline,
                                                                      max_version=max_version))
            except NoAnswer as late:
                self.budget.silent.add(broker_id)
                raise self._no_answer(late, deadline) from None
            except ConnectionLost as lost:
                if attempt or (mutation and lost.sent) or deadline.expired:
                    raise
        raise AssertionError("unreachable")

    def any_broker_request(self, api_key: int, body: dict, *, version: int | None = None, mutation: bool = False,
                           deadline: Deadline | None = None) -> Any:
        """A request any broker serves (DescribeTopicPartitions, DescribeAcls, CreateDelegationToken...):
        a read at the first broker that answers (a slow one has the next asked beside it); a
        `mutation` is sent once, to the first broker connected."""
        deadline = self._deadline_for(body, deadline)
        try:
            return refused_at_top(api_key, self.router.from_any_broker(
                lambda ch: ch.request_entity(api_key, body, version, deadline=deadline), deadline, hedge=not mutation))
        except NoAnswer as late:
            forwarded = self.mode == KRAFT and api_key in FORWARDED_BY_ANY_BROKER
            raise self._no_answer(late, deadline, FORWARD_HINT if forwarded else "") from None

    def each_broker(self, brokers: Iterable[int], api_key: int, body: dict | Callable[[int, int], dict], *,
                    max_version: int | None = None, deadline: Deadline | None = None) -> Answers[int, Any]:
        """The same read of each broker, all at once: `body` a request body, or body(broker,
        version) for one per broker. A broker that fails or does not answer in time has an
        AdminError (no code) saying how; the others' answers are the rows."""
        brokers = list(dict.fromkeys(brokers))
        deadline = self._deadline_for(body if isinstance(body, dict) else None, deadline)
        if any(b not in self.router.brokers for b in brokers):
            self._read_brokers(deadline)

        def ask(broker: int) -> Any:
            if isinstance(body, dict):
                return self.broker_request(broker, api_key, body, max_version=max_version, deadline=deadline)
            version = self._version_within(api_key, broker, max_version, deadline)
            return self.broker_request(broker, api_key, body(broker, version), version=version, deadline=deadline)

        fan = _FanOut(deadline)
        for b in brokers:
            fan.submit(b, [b], functools.partial(ask, b))
        rows: dict[int, Any] = {}
        errors: dict[int, AdminError] = {}
        for b, _, outcome in fan.results():
            if isinstance(outcome, BaseException):
                errors[b] = _failure(outcome, Target(BROKER, b), api_key, deadline)
            else:
                rows[b] = outcome
        return Answers({b: rows[b] for b in brokers if b in rows}, {b: errors[b] for b in brokers if b in errors})

    # -- routes: partition leaders, named brokers' replicas, group coordinators ---------------

    def leader_requests(self, keys: Iterable[Key], api_key: int, body_for: Callable[[list[Key], int], dict],
                        parts_of: Callable[[Any], Iterable[tuple[Key, Any]]], *, snap: ClusterSnapshot | None = None,
                        batch: int | None = None, mutation: bool = False, max_version: int | None = None,
                        deadline: Deadline | None = None) -> Answers[Key, Any]:
        """Each partition's part of its leader's answer: the partitions grouped by leader (from
        `snap`, the caller's fresh read, else a read now), one request per leader (`batch`
        partitions at most), all leaders at once. Partitions answered with a leader-moved code
        (LEADER_MOVED), or whose leader could not be reached, are located again by a fresh read
        and asked again with backoff, within one deadline. `body_for(partitions, version)` makes
        a request; `parts_of(answer)` gives its (partition, part) pairs. A part with an error
        code, a leader that did not answer (named with the partitions it was asked about), a
        partition without a leader or that does not exist: an AdminError in `errors`."""
        deadline = deadline or self.deadline()
        given = [snap] if snap is not None else []

        def locate(pending: list[Key], again: bool) -> tuple[dict[int, list[Key]], dict[Key, AdminError]]:
            now = given.pop() if given else self.read(sorted({t for t, _ in pending}), deadline=deadline)
            by_leader: dict[int, list[Key]] = {}
            lost: dict[Key, AdminError] = {}
            for key in pending:
                topic = now.topics.get(key[0])
                if topic is None or not 0 <= key[1] < len(topic.partitions):
                    lost[key] = AdminError(Error.unknown_topic_or_partition, Target(LEADER, -1, (key,)))
                elif topic.partitions[key[1]].leader < 0:
                    lost[key] = AdminError(Error.leader_not_available, Target(LEADER, -1, (key,)))
                else:
                    by_leader.setdefault(topic.partitions[key[1]].leader, []).append(key)
            return by_leader, lost

        ask = self._asker(api_key, body_for, lambda answer, _: parts_of(answer), lambda _: batch,
                          mutation, max_version, deadline, "partition(s)")
        return self._route(list(dict.fromkeys(keys)), locate, ask, LEADER, api_key, LEADER_MOVED,
                           not_yet=frozenset({int(Error.leader_not_available)}), mutation=mutation, deadline=deadline)

    def replica_requests(self, wanted: dict[int, list[Key]], api_key: int,
                         body_for: Callable[[list[Key], int], dict],
                         parts_of: Callable[[Any], Iterable[tuple[Key, Any]]], *, batch: int | None = None,
                         max_version: int | None = None, patient: bool = False,
                         deadline: Deadline | None = None) -> Answers[tuple[int, Key], Any]:
        """Each named broker's part for its own replicas of the partitions `wanted` of it
        (broker -> partitions), all brokers at once: (broker, partition) -> part. A broker that
        does not answer is named with the partitions it was asked about; `patient`: a broker
        that failed is asked again with backoff until the deadline (a replica that answers
        late still counts)."""
        deadline = deadline or self.deadline()
        pairs = [(b, k) for b, keys in sorted(wanted.items()) for k in dict.fromkeys(keys)]

        def locate(pending: list[tuple[int, Key]], again: bool) -> tuple[dict[int, list[tuple[int, Key]]], dict]:
            by_broker: dict[int, list[tuple[int, Key]]] = {}
            for pair in pending:
                by_broker.setdefault(pair[0], []).append(pair)
            return by_broker, {}

        def parts(answer: Any, chunk: list[tuple[int, Key]]) -> Iterator[tuple[tuple[int, Key], Any]]:
            return (((chunk[0][0], k), part) for k, part in parts_of(answer))

        ask = self._asker(api_key, lambda chunk, version: body_for([k for _, k in chunk], version), parts,
                          lambda _: batch, False, max_version, deadline, "partition(s)")
        return self._route(pairs, locate, ask, REPLICA, api_key, frozenset(), patient=patient,
                           attempts=None if patient else 1, deadline=deadline, named=lambda pair: pair[1])

    def coordinator_requests(self, group_ids: list[str], api_key: int,
                             body_for: Callable[[list[str], int], dict], split: Callable[[Any, list[str]], dict[str, Any]],
                             *, mutation: bool = False, max_version: int | None = None,
                             batched_from: int | None = 0, patient: bool = True,
                             deadline: Deadline | None = None, key_type: int = GROUP_KEY_TYPE,
                             then: Then | None = None) -> Answers[str, tuple[Any, int]]:
        """Each group's part of its coordinator's answer, with the coordinator's id: one request
        per coordinator for the groups it holds (where the version, from `batched_from` on,
        takes several; else one per group), all coordinators at once. Groups answered with a
        coordinator error, or whose coordinator could not be reached, are looked up again and
        asked again with backoff, within one deadline (a mutation only where nothing was
        applied); past it, their last answer stands. Not `patient`: a coordinator that failed
        is not asked again. `key_type` TRANSACTION_KEY_TYPE: the ids are transactional ids, at
        their transaction coordinators. `then`: a second request at the same coordinator for the
        ids whose part needs it (their part is then its)."""
        deadline = deadline or self.deadline()
        role = COORDINATOR if key_type == GROUP_KEY_TYPE else TRANSACTION_COORDINATOR

        def locate(pending: list[str], again: bool) -> tuple[dict[int, list[str]], dict[str, AdminError]]:
            # A mutation asks where the group is now: a stale answer is no safe first try for it.
            found = self._find_coordinators(pending, deadline, remembered=not (mutation or again), key_type=key_type)
            by_node: dict[int, list[str]] = {}
            lost: dict[str, AdminError] = {}
            for gid, (node, code) in found.items():
                if code or node < 0:
                    lost[gid] = AdminError(code or Error.coordinator_not_available, Target(role, -1, (gid,)))
                else:
                    by_node.setdefault(node, []).append(gid)
            return by_node, lost

        first = self._asker(api_key, body_for, lambda answer, chunk: split(answer, chunk).items(),
                            lambda version: None if batched_from is not None and version >= batched_from else 1,
                            mutation, max_version, deadline, "group(s)")
        ask = first
        if then is not None:
            second = self._asker(then.api_key, then.body_for, lambda answer, chunk: then.split(answer, chunk).items(),
                                 lambda version: None, mutation, None, deadline, "group(s)")

            def ask(node: int, ids: list[str]) -> dict:
                parts = first(node, ids)
                again = [gid for gid in ids if gid in parts and then.needs(parts[gid])]
                return {**parts, **second(node, again)} if again else parts
        # Patient, until the deadline as Kafka's AdminClient: a new cluster's __consumer_offsets
        # takes seconds to get leaders, and each group's first request waits for them.
        found = self._route(list(dict.fromkeys(group_ids)), locate, ask, role, api_key, COORDINATOR_RETRIABLE,
                            not_yet=COORDINATOR_RETRIABLE, mutation=mutation, patient=patient,
                            attempts=None if patient else MAX_ATTEMPTS, deadline=deadline)
        for gid, error in found.errors.items():
            if error.code is None or error.code in COORDINATOR_RETRIABLE:
                self._coordinators.pop((key_type, gid), None)   # it moved, or did not answer: find it anew
        return Answers({gid: (part, self._coordinators.get((key_type, gid), -1)) for gid, part in found.rows.items()},
                       found.errors)

    def _asker(self, api_key: int, body_for: Callable[[list, int], dict],
               parts_of: Callable[[Any, list], Iterable[tuple[Any, Any]]], batch_for: Callable[[int], int | None],
               mutation: bool, max_version: int | None, deadline: Deadline, what: str) -> Callable[[int, list], dict]:
        """ask(node, keys): the node's parts for `keys`, in as many requests as its version of
        the API takes them (`batch_for(version)` at most each; None: all in one)."""
        def ask(node: int, keys: list) -> dict:
            version = self._version_within(api_key, node, max_version, deadline)
            step = batch_for(version) or len(keys) or 1
            parts: dict = {}
            for start in range(0, len(keys), step):
                chunk = keys[start:start + step]
                self.debug(f"{codec.api_name(api_key)} request to broker {node}: {len(chunk)} {what}")
                answer = self.broker_request(node, api_key, body_for(chunk, version), version=version,
                                             mutation=mutation, deadline=deadline)
                parts.update(parts_of(answer, chunk))
            return parts
        return ask

    def _route(self, keys: list[K], locate: Callable[[list[K], bool], tuple[dict[int, list[K]], dict[K, AdminError]]],
               ask: Callable[[int, list[K]], dict[K, Any]], role: str, api_key: int, retry: frozenset[int], *,
               not_yet: frozenset[int] = frozenset(), mutation: bool = False, patient: bool = True,
               attempts: int | None = MAX_ATTEMPTS, deadline: Deadline,
               named: Callable[[K], Any] | None = None) -> Answers[K, Any]:
        """The one way a request goes to the nodes that hold what it names (partition leaders,
        replicas, coordinators): `locate` the keys (`again`: not from memory), `ask` each node
        for its keys, all nodes at once, and sort the parts into rows and errors. Keys answered
        with a `retry` code, or whose node could not be reached (`patient`; a mutation only
        when nothing was sent), or that `locate` could not place for a `not_yet` code, are
        located (and asked) again after a backoff, at most `attempts` times (None: until the
        deadline), within `deadline`. Errors name each key as `named` gives it (None: as it is)."""
        rows: dict[K, Any] = {}
        errors: dict[K, AdminError] = {}
        fan = _FanOut(deadline)
        rounds = 1

        def send(pending: list[K], again: bool) -> None:
            """Locate `pending` and ask their nodes; those that cannot be located now (a code of
            `not_yet`: no leader, no coordinator yet) are located again after a backoff."""
            while pending:
                try:
                    by_node, lost = locate(pending, again)
                except (ClusterUnreachable, KafkaCallError, ConnectionLost) as exc:
                    if not again:
                        raise
                    log.debug("locating %d key(s) again failed: %s", len(pending), exc)
                    return
                errors.update(lost)
                for node, mine in sorted(by_node.items()):
                    fan.submit(node, mine, functools.partial(ask, node, mine))
                pending = [k for k, e in lost.items() if e.code in not_yet]
                if not pending or not again_allowed():
                    return
                self.debug(f"{len(pending)} to locate again: not held anywhere yet")
                again = True

        def again_allowed() -> bool:
            nonlocal rounds
            if (attempts is not None and rounds >= attempts) or not deadline.backoff():
                return False
            rounds += 1
            return True

        send(keys, False)
        for node, asked, outcome in fan.results():
            names = tuple(asked) if named is None else tuple(map(named, asked))
            again = _settle_parts(node, asked, outcome, Target(role, node, names), api_key,
                                  deadline, rows, errors, retry, mutation, patient)
            if again and again_allowed():
                self.debug(f"{len(again)} to ask again: {_why_again(outcome)}")
                send(again, True)
        # In the order of `keys`; when every key has a row (the common case), in one pass in C.
        ordered = dict(zip(keys, map(rows.__getitem__, keys))) if len(rows) == len(keys) else \
            {k: rows[k] for k in keys if k in rows}
        return Answers(ordered, {k: errors[k] for k in keys if k in errors} if errors else {})

    # -- group coordinators -------------------------------------------------------------------

    def coordinator_of(self, group_id: str, deadline: Deadline | None = None) -> int:
        """The group's coordinator as found now (one FindCoordinator), -1 when none was told in time."""
        try:
            node, code = self._find_coordinators([group_id], deadline or self.deadline(), remembered=False)[group_id]
        except ShellError:   # no broker told it in time
            return -1
        return -1 if code else node

    def _find_coordinators(self, group_ids: list[str], deadline: Deadline, remembered: bool = True,
                           key_type: int = GROUP_KEY_TYPE) -> dict[str, tuple[int, int]]:
        """group -> (coordinator node id, error code): as last found (when `remembered`), else one
        batched FindCoordinator (v4+), or one request per group on clusters without batching. What
        is found is remembered; a group whose coordinator was not found is forgotten."""
        with self._lookups:
            known = {gid: (self._coordinators[(key_type, gid)], 0) for gid in group_ids
                     if remembered and (key_type, gid) in self._coordinators}
            asked = [gid for gid in group_ids if gid not in known]
            found = self._find_coordinators_now(asked, deadline, key_type) if asked else {}
            for gid, (node, code) in found.items():
                if code or node < 0:
                    self._coordinators.pop((key_type, gid), None)
                else:
                    self._coordinators[(key_type, gid)] = node
        return {**known, **found}

    def _find_coordinators_now(self, group_ids: list[str], deadline: Deadline, key_type: int) -> dict[str, tuple[int, int]]:
        self.debug(f"FindCoordinator request: {len(group_ids)} group(s)")
        if self.supports(ApiKey.FIND_COORDINATOR, BATCHED_FIND_COORDINATOR):
            answer = self.any_broker_request(ApiKey.FIND_COORDINATOR, {"key_type": key_type,
                                                                  "coordinator_keys": group_ids}, deadline=deadline)
            answers = {c.key: c for c in answer.coordinators}
        else:
            answers = {gid: self.any_broker_request(ApiKey.FIND_COORDINATOR, {"key": gid, "key_type": key_type},
                                                    deadline=deadline) for gid in group_ids}
        found: dict[str, tuple[int, int]] = {}
        for gid, c in answers.items():
            found[gid] = (c.node_id, int(c.error_code))
            if not c.error_code and c.node_id >= 0:
                self.router.learn_coordinator(BrokerInfo(c.node_id, c.host, c.port))
        return {gid: found.get(gid, (-1, Error.coordinator_not_available)) for gid in group_ids}

    # -- versions ---------------------------------------------------------------------------

    def _read_brokers(self, deadline: Deadline) -> None:
        if self.router.controllers_only:  # the nodes there are: the controllers
            self.router.read_controllers(deadline)
            return
        self.router.observe_metadata(self.router.from_any_broker(lambda ch: ch.request_entity(
            ApiKey.METADATA, {"topics": [], "allow_auto_topic_creation": False}, deadline=deadline), deadline))

    def _no_answer(self, late: NoAnswer, deadline: Deadline, hint: str = "") -> KafkaCallError:
        """The one line for a broker that did not answer in time (the deadline remembers it);
        `hint`: whom it waited for in turn (a KRaft controller it forwards to)."""
        deadline.silent = late.peer
        return Silent(f"{late}{hint} (waited {deadline.seconds:g} s; raise --timeout if it is just slow).", late.sent)

    def _version_within(self, api_key: int, broker_id: int, max_version: int | None, deadline: Deadline) -> int:
        """The newest version of the API the broker and the shell share, asked within `deadline`."""
        version = self._versions_channel(broker_id, deadline).pick_version(api_key, max_version=max_version)
        return version

    def _versions_channel(self, broker_id: int | None, deadline: Deadline | None = None) -> Channel:
        deadline = deadline or self.deadline()
        if broker_id is None:
            return self.router.from_any_broker(lambda ch: ch, deadline)
        if not self.router.knows(broker_id):
            with self._lookups:
                if not self.router.knows(broker_id):
                    self._read_brokers(deadline)
        try:
            return self._broker_channel(broker_id, deadline)
        except NoAnswer as late:
            self.budget.silent.add(broker_id)
            raise self._no_answer(late, deadline) from None

    def _broker_channel(self, broker_id: int, deadline: Deadline) -> Channel:
        """The channel to a broker; NoAnswer at once for one that was silent earlier in this
        command when its time is spent (each request would wait LAST_ASK_S more, in turn)."""
        if self.budget.gave_up_on(broker_id):
            raise NoAnswer(f"Broker {broker_id} did not answer earlier in this command", f"broker {broker_id}")
        return self.router.broker_channel(self.router.broker(broker_id), deadline)

    def api_versions(self, broker_id: int | None = None) -> dict[int, range]:
        return self._versions_channel(broker_id).versions()

    def supports(self, api_key: int, version: int = 0, broker_id: int | None = None) -> bool:
        """Whether the broker (default: any broker) advertises this API version."""
        return version in self.api_versions(broker_id).get(api_key, range(0))

    def version(self, api_key: int, broker_id: int | None = None, max_version: int | None = None) -> int | None:
        """The newest version of the API both the broker and the shell have (up to
        `max_version`), or None when they share none."""
        try:
            return self._versions_channel(broker_id).pick_version(api_key, max_version=max_version)
        except NotSupported:
            return None

    def require(self, api_key: int, action: str) -> None:
        """Fail up front, before anything is sent, when the cluster lacks the API (any version:
        some APIs, like DescribeLogDirs, start above v0)."""
        if not self.api_versions().get(api_key):
            raise NotSupported(f"{action} needs the {codec.api_name(api_key)} API, which is not "
                               "supported by this cluster.")

    def probe(self, host: str, port: int) -> bool:
        """Whether a listener at host:port answers: connects, logs in and serves ApiVersions."""
        try:
            Channel(host, port, self.properties, timeout_s=min(self.timeout_s, 5.0)).close()
        except (ConnectionLost, OSError):
            return False
        return True

    # -- records (confluent-kafka's Producer and Consumer) ------------------------------------

    def client_config(self) -> dict:
        """Settings for a confluent-kafka Producer or Consumer of this session (its logs quiet
        unless --debug configures logging)."""
        return {"bootstrap.servers": self.bootstrap, **librdkafka_properties(self.properties),
                "logger": _librdkafka_log()}

    # -- connections -------------------------------------------------------------------------

    def close(self) -> None:
        self.cache.close()
        self.router.close()


class _FanOut:
    """Work for several brokers at once, a thread each (a broker that does not answer holds up
    none of the others): `submit` it, and `results` gives each (broker, keys, parts or the
    exception) as it ends, more work may be submitted meanwhile. What is still running when the
    deadline has passed (and a moment for it to say why) is given as NoAnswer."""

    def __init__(self, deadline: Deadline):
        self.deadline = deadline
        self._done: queue.Queue[tuple[int, list, Any]] = queue.Queue()
        self._running: dict[int, tuple[int, list]] = {}
        self._ids = itertools.count()

    def submit(self, node: int, keys: list, work: Callable[[], Any]) -> None:
        task = next(self._ids)
        self._running[task] = (node, keys)

        def run() -> None:
            try:
                self._done.put((task, keys, work()))
            except (KafkaCallError, ConnectionLost, ClusterUnreachable) as exc:
                self._done.put((task, keys, exc))
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                self._done.put((task, keys, _Raised(exc)))
        threading.Thread(target=run, daemon=True, name=f"broker-{node}").start()

    def results(self) -> Iterator[tuple[int, list, Any]]:
        while self._running:
            try:
                task, keys, outcome = self._done.get(timeout=max(self.deadline.at + LAST_WORD_S - time.monotonic(), 0))
            except queue.Empty:
                for node, keys in self._running.values():
                    yield node, keys, NoAnswer("no answer in time", f"broker {node}", sent=True)
                return
            node, _ = self._running.pop(task)
            if isinstance(outcome, _Raised):
                raise outcome.error
            yield node, keys, outcome


class _Raised(NamedTuple):
    error: BaseException


def _settle_parts(node: int, asked: list[K], outcome: Any, target: Target, api_key: int, deadline: Deadline,
                  rows: dict[K, Any], errors: dict[K, AdminError], retry: frozenset[int], mutation: bool,
                  patient: bool) -> list[K]:
    """Sort one node's outcome (its parts, or why it failed) into rows and errors; the keys to
    locate and ask again: those answered with a `retry` code, and (`patient`) all of a node that
    failed but not for want of time, unless a mutation was sent to it (it may have acted).
    `target` is the node with what it was asked, as errors name them."""
    if isinstance(outcome, BaseException):
        sent = bool(getattr(outcome, "sent", False))
        error = _failure(outcome, target, api_key, deadline, mutation and sent)
        for key in asked:
            errors[key] = error
        silent = isinstance(outcome, (NoAnswer, Silent))
        return list(asked) if patient and error.code is None and not silent and not (mutation and sent) else []
    try:   # 10,000s of partitions: when each has a part without an error, all in one go (in C)
        parts = list(map(outcome.__getitem__, asked))
        failed = any(map(_error_code, parts))
    except (KeyError, AttributeError):   # a part left out, or without an error code: one by one below
        failed = True
    if not failed:
        rows.update(zip(asked, parts))
        if errors:
            for key in asked:
                errors.pop(key, None)
        return []
    again: list[K] = []
    for key, name in zip(asked, target.asked):
        part = outcome.get(key)
        code = Error.unknown_server_error if part is None else getattr(part, "error_code", 0)
        if not code:
            rows[key] = part
            if errors:
                errors.pop(key, None)
            continue
        code = int(code)
        message = "left out of the broker's answer" if part is None else getattr(part, "error_message", None)
        errors[key] = AdminError(code, Target(target.role, node, (name,)), message or "")
        if code in retry:
            again.append(key)
    return again


_error_code = operator.attrgetter("error_code")


def _failure(exc: BaseException, target: Target, api_key: int, deadline: Deadline,
             maybe_applied: bool = False) -> AdminError:
    """The AdminError of a request that raised: the broker's refusal of the whole request (an
    authorization error, with its code), else how it failed to answer."""
    code = getattr(exc, "code", None)
    if isinstance(exc, KafkaCallError) and not isinstance(exc, Silent) and code is not None:
        return AdminError(int(code), target)
    return AdminError(None, target, _how_it_failed(exc, api_key, deadline, maybe_applied))


def _why_again(outcome: Any) -> str:
    return "could not be reached" if isinstance(outcome, BaseException) else "moved or not ready yet"


def _how_it_failed(exc: BaseException, api_key: int, deadline: Deadline, maybe_applied: bool = False) -> str:
    """What a broker that gave no answer did, said of it: "did not answer ListOffsets within 3 s"."""
    api = codec.api_name(api_key)
    unsure = ": it may or may not have taken effect (check before retrying)" if maybe_applied else ""
    if isinstance(exc, (NoAnswer, Silent)):
        return f"did not answer {api} within {deadline.seconds:g} s{unsure}"
    if isinstance(exc, ConnectionRefused):
        return "refused the connection (is it down?)"
    return f"could not be asked {api}: {exc}{unsure}"


def _error_codes(entity: Any) -> Iterable[int]:
    """Every error code in an answer (a kio entity), at any depth."""
    if isinstance(entity, tuple):
        for v in entity:
            yield from _error_codes(v)
    elif dataclasses.is_dataclass(entity):
        for f in dataclasses.fields(entity):
            value = getattr(entity, f.name)
            if f.name == "error_code":
                yield int(value)
            elif isinstance(value, tuple) or dataclasses.is_dataclass(value):
                yield from _error_codes(value)


def _rejected_by_non_controller(response: Any, mutation: bool) -> bool:
    """A read is resent if anything says NOT_CONTROLLER; a mutation only if everything does
    (then nothing in it was applied)."""
    codes = list(_error_codes(response))
    if mutation:
        return bool(codes) and all(c == Error.not_controller for c in codes)
    return Error.not_controller in codes


def _settle(api_key: int, body: dict, response: Any, before: ClusterSnapshot, after: ClusterSnapshot) -> Any:
    """After resending CreateTopics/DeleteTopics whose first answer was lost: an "already
    exists" / "unknown topic" that our own first attempt caused counts as success, when the
    topic was absent / present before it and the cluster is now as the request asked."""
    ok = {"error_code": Error.none, "error_message": None}
    if api_key == ApiKey.CREATE_TOPICS:
        wanted = {t.get("name"): t for t in body.get("topics", [])}

        def created(r: Any) -> bool:
            now = after.topics.get(r.name)
            partitions = wanted.get(r.name, {}).get("num_partitions", -1)
            return (r.error_code == Error.topic_already_exists and r.name not in before.topics
                    and now is not None and partitions in (-1, len(now.partitions)))
        return dataclasses.replace(response, topics=tuple(dataclasses.replace(r, **ok) if created(r) else r
                                                          for r in response.topics))
    if api_key == ApiKey.DELETE_TOPICS:
        def deleted(r: Any) -> bool:
            return (r.error_code == Error.unknown_topic_or_partition and r.name in before.topics
                    and r.name not in after.topics)
        return dataclasses.replace(response, responses=tuple(dataclasses.replace(r, **ok) if deleted(r) else r
                                                             for r in response.responses))
    return response


def refused_at_top(api_key: int, answer: T) -> T:
    """The answer, unless its top-level error refuses the request's authorization: then the
    one line naming what was refused (every response's top-level error is read here)."""
    code = getattr(answer, "error_code", None)
    if code is not None and is_authorization_error(code):
        raise KafkaCallError(authorization_message(api_key, int(code)), code=int(code))
    return answer
