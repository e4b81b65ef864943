"""The connection manager, one per cluster: a facade over the router (who serves what, by the
cluster's own rules: `router.py`) and the metadata cache (completion, toolbar, routing only:
`cache.py`).

Everything the shell asks of a cluster goes through here, over the shell's own channel
(`channel.py`): one route per request, one deadline, one retry policy, one error converter.
Callers (the admin layer) name *what* they ask; the route names *whom*:

- `read()`: one fresh Metadata request, scoped to the topics named (what commands show and plan
  from); `controller()` and `quorum()`: the active controller and the metadata quorum.
- `controller_request`, `broker_request`, `any_broker_request`: one request and its answer (a kio entity);
  `each_broker`: one request per broker, all at once, the answers of those that answered beside
  the ones that did not; `coordinator_requests`: group requests at each group's coordinator.

Every call is bounded by one `Deadline`: --timeout from its start (plus the broker's own
operation timeout where the request carries one) across its retries, whatever the brokers do;
a caller may pass its own to bound several calls together.

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
with the coordinator looked up again, as Kafka's AdminClient does, within the same deadline.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import logging
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeVar

from kafka_shell.connection import controller_history
from kafka_shell.protocol import codec
from kafka_shell.protocol.authorization import authorization_message, is_authorization_error
from kafka_shell.connection.cache import MetadataCache, read_snapshot
from kafka_shell.connection.channel import Channel, ConnectionLost, NoAnswer, operation_seconds
from kafka_shell.connection.client_config import librdkafka_properties, parse_bootstrap
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.base.deadline import Deadline
from kafka_shell.base.errors import ClusterUnreachable, KafkaCallError, NotSupported
from kafka_shell.connection.metadata import KRAFT, ClusterSnapshot, ControllerInfo, Quorum
from kafka_shell.connection.router import Router, unreachable_message

__all__ = ["ConnectionManager", "BrokerAnswers", "parse_bootstrap", "unreachable_message"]

log = logging.getLogger("kafka_shell.connection.manager")
_librdkafka_log = logging.getLogger("kafka_shell.librdkafka")
_librdkafka_log.addHandler(logging.NullHandler())  # quiet unless --debug configures logging

MAX_ATTEMPTS = 5
MAX_PARALLEL = 16     # brokers asked at once by each_broker
T = TypeVar("T")
# Mutations that leave the same state when applied twice: safe to resend after a lost answer.
IDEMPOTENT_MUTATIONS = {ApiKey.ALTER_CONFIGS, ApiKey.ALTER_REPLICA_LOG_DIRS,
                        ApiKey.ELECT_LEADERS,  # a second run answers ELECTION_NOT_NEEDED
                        ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_PARTITION_REASSIGNMENTS}
# Errors that mean "ask again, maybe elsewhere" (Kafka's AdminClient retries these).
COORDINATOR_RETRIABLE = {Error.not_coordinator, Error.coordinator_load_in_progress,
                         Error.coordinator_not_available}
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1        # FindCoordinator's key type of a transactional id
BATCHED_FIND_COORDINATOR = 4    # FindCoordinator takes many keys from v4


class BrokerAnswers(NamedTuple):
    """Per broker its answer, or why it did not answer (partial failure is a value)."""
    answers: dict[int, Any]
    failed: dict[int, str]


class Unanswered(NamedTuple):
    """A group's part when its coordinator could not be found or asked: an error code, and why
    when the coordinator did not answer."""
    error_code: int
    why: str | None = None


class ConnectionManager:
    def __init__(self, bootstrap: str, properties: dict[str, str] | None = None,
                 timeout_s: float = 10.0, notify: Callable[[str], None] | None = None,
                 bootstrap_controllers: str | None = None, debug: Callable[[str], None] | None = None):
        self.bootstrap = bootstrap
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

    def _notify(self, message: str) -> None:
        self.notify(message)  # looked up at call time: the session may set notify later

    def deadline(self, operation_ms: float = 0) -> Deadline:
        """--timeout from now, plus a broker's own operation timeout (so its answer is not cut off)."""
        return Deadline(self.timeout_s, operation_ms / 1000)

    def _deadline_for(self, body: dict | None, given: Deadline | None) -> Deadline:
        return given if given is not None else Deadline(self.timeout_s, operation_seconds(body))

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

    # -- fresh reads (what commands show and plan from) --------------------------------------

    def read(self, topics: Iterable[str] | None = None, controller: bool = False) -> ClusterSnapshot:
        """The cluster as it is now: one Metadata request for the named topics (all when None;
        a missing topic is simply absent) with its live brokers, and with `controller` the
        active controller by the cluster's own rules. A full read also refreshes the cache."""
        try:
            snap = read_snapshot(self.router, self.deadline(), topics, controller)
        except ClusterUnreachable:
            self.cache.mark_unreachable()
            raise
        if topics is None and controller:
            self.cache.offer(snap)
        self.cluster_id = snap.cluster_id or self.cluster_id
        if controller:
            controller_history.observe(self.cluster_id, snap.controller)
        return snap

    def controller(self) -> ControllerInfo:
        """The active controller now (KRaft: DescribeQuorum; ZooKeeper: Metadata)."""
        info = self.router.refresh_controller(self.deadline())
        controller_history.observe(self.cluster_id, info)
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
                hint = (" (the broker forwards it to the KRaft controller: if the brokers answer other "
                        "requests, the controller is down or slow; describe-quorum tells)") if forwarded else ""
                if mutation and late.sent:
                    raise KafkaCallError(f"{late}: the {codec.api_name(api_key)} request may or may not "
                                         f"have taken effect{hint}. Check the cluster state before retrying.",
                                         retriable=False) from None
                raise self._no_answer(late, deadline) from None
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
            if attempt or broker_id not in self.router.brokers:
                self._read_brokers(deadline)
            try:
                channel = self.router.broker_channel(self.router.broker(broker_id), deadline)
                return refused_at_top(api_key, channel.request_entity(api_key, body, version, deadline=deadline,
                                                                      max_version=max_version))
            except NoAnswer as late:
                raise self._no_answer(late, deadline) from None
            except ConnectionLost as lost:
                if attempt or (mutation and lost.sent) or deadline.expired:
                    raise
        raise AssertionError("unreachable")

    def any_broker_request(self, api_key: int, body: dict, *, version: int | None = None,
                      deadline: Deadline | None = None) -> Any:
        """A read any broker answers (DescribeTopicPartitions, DescribeAcls...): the first live one."""
        deadline = self._deadline_for(body, deadline)
        try:
            return refused_at_top(api_key, self.router.from_any_broker(
                lambda ch: ch.request_entity(api_key, body, version, deadline=deadline), deadline))
        except NoAnswer as late:
            raise self._no_answer(late, deadline) from None

    def each_broker(self, brokers: Iterable[int], api_key: int, body: dict | Callable[[int, int], dict], *,
                    max_version: int | None = None, deadline: Deadline | None = None) -> BrokerAnswers:
        """The same read of each broker, all at once: `body` a request body, or body(broker,
        version) for one per broker. A broker that fails or does not answer in time is named
        in `failed` with the line why; the others' answers are kept."""
        brokers = list(dict.fromkeys(brokers))
        deadline = self._deadline_for(body if isinstance(body, dict) else None, deadline)
        if any(b not in self.router.brokers for b in brokers):
            self._read_brokers(deadline)

        def ask(broker: int) -> Any:
            if isinstance(body, dict):
                return self.broker_request(broker, api_key, body, max_version=max_version, deadline=deadline)
            version = self.version(api_key, broker, max_version)
            if version is None:
                raise NotSupported(f"Broker {broker} does not support {codec.api_name(api_key)}.")
            return self.broker_request(broker, api_key, body(broker, version), version=version, deadline=deadline)

        answers: dict[int, Any] = {}
        failed: dict[int, str] = {}

        def settle(broker: int, work: Callable[[], Any]) -> None:
            try:
                answers[broker] = work()
            except (KafkaCallError, ConnectionLost, ClusterUnreachable) as exc:
                failed[broker] = str(exc)

        if len(brokers) <= 1:
            for b in brokers:
                settle(b, functools.partial(ask, b))
        else:
            with concurrent.futures.ThreadPoolExecutor(max_workers=min(len(brokers), MAX_PARALLEL)) as pool:
                futures = {b: pool.submit(ask, b) for b in brokers}
                for b, future in futures.items():
                    settle(b, future.result)
        return BrokerAnswers({b: answers[b] for b in brokers if b in answers},
                             {b: failed[b] for b in brokers if b in failed})

    # -- group coordinators -------------------------------------------------------------------

    def coordinator_requests(self, group_ids: list[str], api_key: int,
                             body_for: Callable[[list[str], int], dict], split: Callable[[Any, list[str]], dict[str, Any]],
                             *, mutation: bool = False, max_version: int | None = None,
                             batched_from: int | None = 0, patient: bool = True,
                             deadline: Deadline | None = None,
                             key_type: int = GROUP_KEY_TYPE) -> dict[str, tuple[Any, int]]:
        """Each group's part of its coordinator's answer, with the coordinator's id: one request
        per coordinator for the groups it holds (where the version, from `batched_from` on,
        takes several; else one per group). Groups answered with a coordinator error are looked
        up again and asked again with backoff, within one deadline; past it, their last answer
        stands (an `Unanswered` part when the coordinator could not be found or asked). Not
        `patient`: a coordinator that does not answer is not waited for (its groups' parts say why).
        `key_type` TRANSACTION_KEY_TYPE: the ids are transactional ids, at their transaction
        coordinators."""
        deadline = deadline or self.deadline()
        out: dict[str, tuple[Any, int]] = {}
        pending = list(dict.fromkeys(group_ids))
        while pending:
            retry: list[str] = []
            by_node: dict[int, list[str]] = {}
            # A mutation asks where the group is now: a stale answer is no safe first try for it.
            found = self._find_coordinators(pending, deadline, remembered=not mutation, key_type=key_type)
            for gid, (node, code) in found.items():
                self._coordinators.pop((key_type, gid), None)
                if code or node < 0:
                    out[gid] = (Unanswered(code or Error.coordinator_not_available), -1)
                    retry.append(gid)
                else:
                    self._coordinators[(key_type, gid)] = node
                    by_node.setdefault(node, []).append(gid)
            for node, ids in by_node.items():
                try:
                    version = self.version(api_key, node, max_version)
                    if version is None:
                        raise NotSupported(f"Broker {node} does not support {codec.api_name(api_key)} "
                                           "in a version the shell has.")
                    batches = [ids] if batched_from is not None and version >= batched_from else [[g] for g in ids]
                    for batch in batches:
                        self.debug(f"{ApiKey(api_key).name} request to coordinator {node}: {len(batch)} group(s)")
                        answer = self.broker_request(node, api_key, body_for(batch, version), version=version,
                                                mutation=mutation, deadline=deadline)
                        parts = split(answer, batch)
                        for gid in batch:
                            part = parts.get(gid, Unanswered(Error.unknown_server_error))
                            out[gid] = (part, node)
                            if int(getattr(part, "error_code", 0)) in COORDINATOR_RETRIABLE:
                                self._coordinators.pop((key_type, gid), None)
                                retry.append(gid)
                except (KafkaCallError, ConnectionLost) as exc:
                    if mutation or (patient and not deadline.can_retry()):
                        raise
                    self.debug(f"coordinator {node} did not answer: {exc}")
                    for gid in ids:
                        self._coordinators.pop((key_type, gid), None)
                        if gid not in out or out[gid][1] != node:
                            out[gid] = (Unanswered(Error.coordinator_not_available, str(exc)), node)
                    if patient:
                        retry += [g for g in ids if g not in retry]
            if not retry or not deadline.backoff():
                break
            self.debug(f"{len(retry)} group(s) to ask again: the coordinator moved or is loading")
            pending = retry
        return out

    def _find_coordinators(self, group_ids: list[str], deadline: Deadline, remembered: bool = True,
                           key_type: int = GROUP_KEY_TYPE) -> dict[str, tuple[int, int]]:
        """group -> (coordinator node id, error code): as last found (when `remembered`), else one
        batched FindCoordinator (v4+), or one request per group on clusters without batching."""
        known = {gid: (self._coordinators[(key_type, gid)], 0) for gid in group_ids
                 if remembered and (key_type, gid) in self._coordinators}
        group_ids = [gid for gid in group_ids if gid not in known]
        if not group_ids:
            return known
        self.debug(f"FindCoordinator request: {len(group_ids)} group(s)")
        if self.supports(ApiKey.FIND_COORDINATOR, BATCHED_FIND_COORDINATOR):
            answer = self.any_broker_request(ApiKey.FIND_COORDINATOR, {"key_type": key_type,
                                                                  "coordinator_keys": group_ids}, deadline=deadline)
            found = {c.key: (c.node_id, int(c.error_code)) for c in answer.coordinators}
        else:
            found = {}
            for gid in group_ids:
                answer = self.any_broker_request(ApiKey.FIND_COORDINATOR, {"key": gid, "key_type": key_type},
                                            deadline=deadline)
                found[gid] = (answer.node_id, int(answer.error_code))
        return {**known, **{gid: found.get(gid, (-1, Error.coordinator_not_available)) for gid in group_ids}}

    # -- versions ---------------------------------------------------------------------------

    def _read_brokers(self, deadline: Deadline) -> None:
        if self.router.controllers_only:  # the nodes there are: the controllers
            self.router.read_controllers(deadline)
            return
        self.router.observe_metadata(self.router.from_any_broker(lambda ch: ch.request_entity(
            ApiKey.METADATA, {"topics": [], "allow_auto_topic_creation": False}, deadline=deadline), deadline))

    def _no_answer(self, late: NoAnswer, deadline: Deadline) -> KafkaCallError:
        """The one line for a broker that did not answer in time (the deadline remembers it)."""
        deadline.silent = late.peer
        return KafkaCallError(f"{late} (waited {deadline.seconds:g} s; raise --timeout if it is just slow).",
                              retriable=True)

    def _versions_channel(self, broker_id: int | None) -> Channel:
        deadline = self.deadline()
        if broker_id is None:
            return self.router.from_any_broker(lambda ch: ch, deadline)
        if broker_id not in self.router.brokers:
            self._read_brokers(deadline)
        try:
            return self.router.broker_channel(self.router.broker(broker_id), deadline)
        except NoAnswer as late:
            raise self._no_answer(late, deadline) from None

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
                "logger": _librdkafka_log}

    # -- connections -------------------------------------------------------------------------

    def close(self) -> None:
        self.cache.close()
        self.router.close()


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
