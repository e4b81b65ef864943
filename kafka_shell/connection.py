"""The connection manager, one per cluster: a facade over the router (who serves what, by the
cluster's own rules: `router.py`) and the metadata cache (completion, toolbar, routing only:
`cache.py`).

Commands read what they show or plan from with `read()` (one fresh Metadata request, scoped to
the topics they name) and send requests with `controller_request` / `broker_request` (the
direct channel) or `admin_call` (confluent-kafka's AdminClient). Every call is bounded by one
deadline, `timeout_s` from its start (plus the broker's own operation timeout where the request
carries one), across its retries, whatever the brokers do.

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
- AdminClient calls are retried only when every result failed with NOT_CONTROLLER (or, for
  reads, a transport error): confluent-kafka does not say whether a lost mutation was sent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from kafka_shell import controller_history, protocol
from kafka_shell.acl import ADMIN_METHOD_APIS, authorization_message, is_authorization_error
from kafka_shell.cache import MetadataCache, read_snapshot
from kafka_shell.channel import Channel, ConnectionLost, NoAnswer
from kafka_shell.client_config import librdkafka_properties, parse_bootstrap, sasl_mechanism, scrub
from kafka_shell.codes import ApiKey, Error
from kafka_shell.errors import (NO_SASL_PROVIDER, ClusterUnreachable, KafkaCallError, NotSupported, UsageError,
                                librdkafka_cannot_log_in)
from kafka_shell.metadata import KRAFT, ClusterSnapshot, ControllerInfo
from kafka_shell.router import INITIAL_BACKOFF_S, MAX_BACKOFF_S, Router, left, unreachable_message

__all__ = ["ConnectionManager", "parse_bootstrap", "unreachable_message"]

log = logging.getLogger("kafka_shell.connection")
_librdkafka_log = logging.getLogger("kafka_shell.librdkafka")
_librdkafka_log.addHandler(logging.NullHandler())  # quiet unless --debug configures logging

MAX_ATTEMPTS = 5
T = TypeVar("T")
# Mutations that leave the same state when applied twice: safe to resend after a lost answer.
IDEMPOTENT_MUTATIONS = {ApiKey.ALTER_CONFIGS, ApiKey.ALTER_REPLICA_LOG_DIRS,
                        ApiKey.ELECT_LEADERS,  # a second run answers ELECTION_NOT_NEEDED
                        ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_PARTITION_REASSIGNMENTS}


class ConnectionManager:
    def __init__(self, bootstrap: str, properties: dict[str, str] | None = None,
                 timeout_s: float = 10.0, notify: Callable[[str], None] | None = None,
                 bootstrap_controllers: str | None = None):
        self.bootstrap = bootstrap
        self.properties = dict(properties or {})
        self.timeout_s = timeout_s
        self.notify = notify or (lambda message: None)
        self.router = Router(bootstrap, self.properties, timeout_s, self._notify, bootstrap_controllers)
        self.cache = MetadataCache(self.router, timeout_s)
        self._admin: Any = None
        self._admin_metadata_at = 0.0   # when the AdminClient last learned the cluster's brokers
        self.cluster_id: str | None = None   # from the last read (controller_history's key)

    def _notify(self, message: str) -> None:
        self.notify(message)  # looked up at call time: the session may set notify later

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
        self.router.from_any_broker(lambda ch: ch, self._deadline())

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
            snap = read_snapshot(self.router, self._deadline(), topics, controller)
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
        info = self.router.refresh_controller(self._deadline())
        controller_history.observe(self.cluster_id, info)
        return info

    def quorum(self) -> dict:
        """The __cluster_metadata partition of a fresh DescribeQuorum answer, with `nodes`."""
        self.require(ApiKey.DESCRIBE_QUORUM, "Describing the metadata quorum")
        return self.router.read_quorum(self._deadline())

    def greeting(self) -> str:
        """What the connection found: `Connected to cluster X (KRaft, active controller 100 at
        h:p, epoch 7)` or `(ZooKeeper mode, controller broker 2 at h:p)`."""
        snap = self.snapshot if self.snapshot.taken_at else self.connect()
        mode = "KRaft" if self.mode == KRAFT else "ZooKeeper mode"
        refused = self.cache.controller_refused
        controller = f"active controller not shown: {refused}" if refused else snap.controller.describe()
        return f"Connected to cluster {snap.cluster_id or '(no id)'} ({mode}, {controller})."

    def controller_address(self) -> str:
        controller = self.router.controller
        if controller.id < 0:
            controller = self.controller()
        return controller.address or f"node {controller.id}"

    # -- requests ----------------------------------------------------------------------------

    def controller_request(self, api_key: int, body: dict, version: int | None = None,
                           mutation: bool = False) -> dict:
        """Send to the controller (see the router for where that is); on NOT_CONTROLLER or a
        lost connection, find the controller again and retry (see the module docstring for
        what is resent), all within one deadline."""
        deadline = self._deadline(body)
        before = self.snapshot
        backoff = INITIAL_BACKOFF_S
        resent_after_loss = False
        reason = ""
        for attempt in range(MAX_ATTEMPTS):
            try:
                channel = self.router.controller_channel(api_key, body, deadline)
                response = channel.request(api_key, body, version, deadline=deadline)
            except NoAnswer as late:
                if mutation and late.sent:
                    raise KafkaCallError(f"{late}: the {protocol.api_name(api_key)} request may or may not "
                                         "have taken effect. Check the cluster state before retrying.",
                                         retriable=False) from None
                raise self._no_answer(late) from None
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
            if attempt + 1 == MAX_ATTEMPTS or time.monotonic() + backoff >= deadline:
                break
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)
            try:
                self.router.refresh_controller(deadline)
            except (ConnectionLost, KafkaCallError) as exc:
                log.debug("finding the controller again failed: %s", exc)
        raise KafkaCallError(f"{protocol.api_name(api_key)} failed: no controller answered within "
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
            f"{reason}, after the {protocol.api_name(api_key)} request was sent: it may or may not "
            "have taken effect. Check the cluster state before retrying.", retriable=False)

    def broker_request(self, broker_id: int, api_key: int, body: dict, version: int | None = None,
                       mutation: bool = False) -> dict:
        """Send to a named broker. A read is retried once on a fresh connection (after reading
        the brokers again, in case the broker moved); a mutation is not."""
        return self._at_broker(broker_id, body, mutation, lambda channel, deadline: refused_at_top(
            api_key, channel.request(api_key, body, version, deadline=deadline)))

    def broker_request_entity(self, broker_id: int, api_key: int, body: dict, version: int | None = None) -> Any:
        """A read like `broker_request`, answered as the kio entity itself: no conversion to
        dicts, for answers about thousands of partitions."""
        return self._at_broker(broker_id, body, False, lambda channel, deadline: refused_at_top(
            api_key, channel.request_entity(api_key, body, version, deadline=deadline)))

    def _at_broker(self, broker_id: int, body: dict, mutation: bool, send: Callable[[Channel, float], T]) -> T:
        deadline = self._deadline(body)
        for attempt in range(2):
            if attempt or broker_id not in self.router.brokers:
                self._read_brokers(deadline)
            try:
                channel = self.router.broker_channel(self.router.broker(broker_id), deadline)
                return send(channel, deadline)
            except NoAnswer as late:
                raise self._no_answer(late) from None
            except ConnectionLost as lost:
                if attempt or (mutation and lost.sent) or time.monotonic() >= deadline:
                    raise
        raise AssertionError("unreachable")

    def any_broker_request(self, api_key: int, body: dict, version: int | None = None) -> dict:
        """A read any broker answers (DescribeTopicPartitions, ...): the first live one."""
        deadline = self._deadline(body)
        try:
            return refused_at_top(api_key, self.router.from_any_broker(
                lambda ch: ch.request(api_key, body, version, deadline=deadline), deadline))
        except NoAnswer as late:
            raise self._no_answer(late) from None

    def _read_brokers(self, deadline: float) -> None:
        self.router.observe_metadata(self.router.from_any_broker(lambda ch: ch.request_entity(
            ApiKey.METADATA, {"topics": [], "allow_auto_topic_creation": False}, deadline=deadline), deadline))

    def _no_answer(self, late: NoAnswer) -> KafkaCallError:
        return KafkaCallError(f"{late} (waited {self.timeout_s:g} s; raise --timeout if it is just slow).",
                              retriable=True)

    def _deadline(self, body: dict | None = None) -> float:
        """Now + the timeout, plus the broker's own operation timeout when the body has one
        (so its answer is not cut off)."""
        ms = body.get("timeout_ms", body.get("timeout")) if isinstance(body, dict) else None
        extra = ms / 1000 if isinstance(ms, (int, float)) and ms > 0 else 0
        return time.monotonic() + self.timeout_s + extra

    def _versions_channel(self, broker_id: int | None) -> Channel:
        deadline = self._deadline()
        if broker_id is None:
            return self.router.from_any_broker(lambda ch: ch, deadline)
        if broker_id not in self.router.brokers:
            self._read_brokers(deadline)
        try:
            return self.router.broker_channel(self.router.broker(broker_id), deadline)
        except NoAnswer as late:
            raise self._no_answer(late) from None

    def api_versions(self, broker_id: int | None = None) -> dict[int, range]:
        return self._versions_channel(broker_id).versions()

    def supports(self, api_key: int, version: int = 0, broker_id: int | None = None) -> bool:
        """Whether the broker (default: any broker) advertises this API version."""
        return version in self.api_versions(broker_id).get(api_key, range(0))

    def require(self, api_key: int, action: str) -> None:
        """Fail up front, before anything is sent, when the cluster lacks the API (any version:
        some APIs, like DescribeLogDirs, start above v0)."""
        if not self.api_versions().get(api_key):
            raise NotSupported(f"{action} needs the {protocol.api_name(api_key)} API, which is not "
                               "supported by this cluster.")

    # -- the AdminClient ---------------------------------------------------------------------

    def client_config(self) -> dict:
        """Settings for a confluent-kafka Producer or Consumer of this session (its logs quiet
        unless --debug configures logging, as the AdminClient's)."""
        return {"bootstrap.servers": self.bootstrap, **librdkafka_properties(self.properties),
                "logger": _librdkafka_log}

    @property
    def admin(self):
        return self._admin_client()

    def _admin_client(self, method: str | None = None):
        """The AdminClient; `method` names the request in the message when it cannot log in."""
        if self._admin is None:
            from confluent_kafka import KafkaException
            from confluent_kafka.admin import AdminClient
            config: dict[str, Any] = {"bootstrap.servers": self.bootstrap,
                                      **librdkafka_properties(self.properties), "logger": _librdkafka_log}
            try:
                self._admin = AdminClient(config)
                self._admin_metadata_at = time.monotonic()
            except KafkaException as exc:
                text = scrub(exc.args[0].str() if exc.args else str(exc), self.properties)
                if NO_SASL_PROVIDER in text:
                    request = "".join(word.capitalize() for word in method.split("_")) if method else None
                    raise NotSupported(librdkafka_cannot_log_in(sasl_mechanism(self.properties), request)) from None
                raise UsageError(f"Invalid client setting: {text}") from None
        return self._admin

    def admin_call(self, method: str, *args, mutation: bool = False, **kwargs) -> dict:
        """Call `AdminClient.<method>` and wait for its futures: {key: result or AdminError}
        (key None for calls that return one future or a plain value). Retries, and every
        wait, end at one deadline."""
        from kafka_shell.admin_client import TRANSPORT_ERRORS, AdminError
        deadline = time.monotonic() + self.timeout_s + max(
            float(kwargs.get(k) or 0) for k in ("request_timeout", "operation_timeout", "timeout"))
        backoff = INITIAL_BACKOFF_S
        if self._admin is not None and time.monotonic() - self._admin_metadata_at > ADMIN_METADATA_MAX_AGE_S:
            # A long-lived AdminClient (the REPL's) may still route to a broker that has died
            # since (librdkafka waits for it until the deadline): let it learn the live ones first.
            self._refresh_admin_metadata(deadline)
        while True:
            results = self._admin_once(method, args, kwargs, deadline)
            self.admin.poll(0)  # librdkafka's log lines reach `logger` only when polled (--debug)
            errors = [r for r in results.values() if isinstance(r, AdminError)]
            retry = bool(errors) and len(errors) == len(results) and all(
                e.code == Error.not_controller or (not mutation and e.code in TRANSPORT_ERRORS)
                for e in errors)
            if not retry or time.monotonic() + backoff >= deadline:
                return results
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)
            try:
                self.router.refresh_controller(deadline)  # says so if the controller moved
            except (ConnectionLost, KafkaCallError) as exc:
                log.debug("finding the controller again failed: %s", exc)
            self._refresh_admin_metadata(deadline)

    def _refresh_admin_metadata(self, deadline: float) -> None:
        """librdkafka keeps routing to the controller of its last Metadata answer (refreshed
        every few minutes); a one-topic Metadata request makes it learn the new one now."""
        from confluent_kafka import KafkaException
        # A topic the cache knows keeps the request small; naming one that does not exist could
        # make a broker with auto.create.topics.enable create it, so without one ask for all.
        topic = next(iter(self.snapshot.topics), None)
        try:
            self.admin.list_topics(**({"topic": topic} if topic else {}), timeout=left(deadline))
            self._admin_metadata_at = time.monotonic()
        except KafkaException as exc:
            log.debug("AdminClient metadata refresh failed: %s", exc)

    def _admin_once(self, method: str, args: tuple, kwargs: dict, deadline: float) -> dict:
        import concurrent.futures

        from confluent_kafka import KafkaError, KafkaException

        from kafka_shell.admin_client import AdminError, admin_error
        api_key = ADMIN_METHOD_APIS.get(method)
        if method in TAKES_REQUEST_TIMEOUT and "request_timeout" not in kwargs:
            kwargs = {**kwargs, "request_timeout": left(deadline)}  # librdkafka stops waiting too
        try:
            outcome = getattr(self._admin_client(method), method)(*args, **kwargs)
        except KafkaException as exc:
            return {None: admin_error(exc, None, api_key)}
        futures = outcome if isinstance(outcome, dict) else {None: outcome}
        results: dict = {}
        for key, value in futures.items():
            if not isinstance(value, concurrent.futures.Future):
                results[key] = value
                continue
            try:
                results[key] = value.result(timeout=left(deadline))
            except KafkaException as exc:
                results[key] = admin_error(exc, key, api_key)
            except concurrent.futures.TimeoutError:
                results[key] = AdminError(KafkaError(KafkaError._TIMED_OUT,
                                                     f"no answer from the cluster within {self.timeout_s:g} s"), key)
        return results

    # -- connections -------------------------------------------------------------------------

    def close(self) -> None:
        self.cache.close()
        self.router.close()
        self._admin = None


# How old the AdminClient's view of the brokers may be before an admin call refreshes it (in a
# REPL a broker may have died since; a one-shot run's client is fresh).
ADMIN_METADATA_MAX_AGE_S = 1.0

# AdminClient methods whose request_timeout (seconds) we set to what is left of the deadline, so
# librdkafka gives up when we do. Not every method takes it, and elect_leaders' C binding fails
# on it (SystemError in confluent-kafka 2.16): only these get it.
TAKES_REQUEST_TIMEOUT = {"create_topics", "delete_topics", "create_partitions", "describe_configs",
                         "alter_configs", "incremental_alter_configs", "describe_cluster", "describe_topics"}


def _error_codes(tree: object):
    if isinstance(tree, dict):
        for k, v in tree.items():
            if k == "error_code":
                yield v
            elif isinstance(v, (dict, list)):
                yield from _error_codes(v)
    elif isinstance(tree, list):
        for v in tree:
            yield from _error_codes(v)


def _rejected_by_non_controller(response: dict, mutation: bool) -> bool:
    """A read is resent if anything says NOT_CONTROLLER; a mutation only if everything does
    (then nothing in it was applied)."""
    codes = list(_error_codes(response))
    if mutation:
        return bool(codes) and all(c == Error.not_controller for c in codes)
    return Error.not_controller in codes


def _settle(api_key: int, body: dict, response: dict, before: ClusterSnapshot,
            after: ClusterSnapshot) -> dict:
    """After resending CreateTopics/DeleteTopics whose first answer was lost: an "already
    exists" / "unknown topic" that our own first attempt caused counts as success, when the
    topic was absent / present before it and the cluster is now as the request asked."""
    if api_key == ApiKey.CREATE_TOPICS:
        wanted = {t.get("name"): t for t in body.get("topics", [])}
        for r in response.get("topics", []):
            name, now = r.get("name"), after.topics.get(r.get("name"))
            partitions = wanted.get(name, {}).get("num_partitions", -1)
            if (r.get("error_code") == Error.topic_already_exists and name not in before.topics
                    and now is not None and partitions in (-1, len(now.partitions))):
                r["error_code"], r["error_message"] = 0, None
    elif api_key == ApiKey.DELETE_TOPICS:
        for r in response.get("responses", []):
            name = r.get("name")
            if (r.get("error_code") == Error.unknown_topic_or_partition and name in before.topics
                    and name not in after.topics):
                r["error_code"], r["error_message"] = 0, None
    return response


def refused_at_top(api_key: int, answer: T) -> T:
    """The answer (plain data or a kio entity), unless its top-level error refuses the
    request's authorization: then the one line naming what was refused (every response's
    top-level error is read here)."""
    code = answer.get("error_code") if isinstance(answer, dict) else getattr(answer, "error_code", None)
    if code is not None and is_authorization_error(code):
        raise KafkaCallError(authorization_message(api_key, int(code)), code=int(code))
    return answer
