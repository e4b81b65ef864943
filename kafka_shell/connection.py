"""The connection manager, one per cluster: bootstrap, the metadata cache, controller routing.

Requests go to the current controller: standard admin operations through confluent-kafka's
AdminClient (`admin_call`), the rest through the direct channel (`controller_request`,
`broker_request`). Completion and the toolbar read `snapshot`, which never blocks; it is
rebuilt on a thread (`refresh_in_background`) and swapped in with one assignment.

Retries when the controller moves (NOT_CONTROLLER, or the connection to it is lost): refresh
metadata, tell the user through `notify`, and try the new controller, at most MAX_ATTEMPTS times
with exponential backoff. A mutation is never applied twice:

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

import concurrent.futures
import contextlib
import gc
import logging
import operator
import threading
import time
from collections.abc import Callable, Iterator

from kafka_shell import protocol
from kafka_shell.channel import Channel, ConnectionLost
from kafka_shell.client_config import librdkafka_properties, scrub
from kafka_shell.errors import ClusterUnreachable, KafkaCallError, NotSupported, ShellError, UsageError
from kafka_shell.metadata import EMPTY, BrokerInfo, ClusterSnapshot, PartitionInfo, TopicInfo

log = logging.getLogger("kafka_shell.connection")
_librdkafka_log = logging.getLogger("kafka_shell.librdkafka")
_librdkafka_log.addHandler(logging.NullHandler())  # quiet unless --debug configures logging

MAX_ATTEMPTS = 5
INITIAL_BACKOFF_S = 0.05
MAX_BACKOFF_S = 1.0

METADATA, LIST_GROUPS, CREATE_TOPICS, DELETE_TOPICS = 3, 16, 19, 20
UNKNOWN_TOPIC_OR_PARTITION, TOPIC_ALREADY_EXISTS, NOT_CONTROLLER = 3, 36, 41
# Mutations that leave the same state when applied twice: safe to resend after a lost answer.
IDEMPOTENT_MUTATIONS = {
    33,  # AlterConfigs
    34,  # AlterReplicaLogDirs
    43,  # ElectLeaders (a second run answers ELECTION_NOT_NEEDED)
    44,  # IncrementalAlterConfigs
    45,  # AlterPartitionReassignments
}


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Decoding a large cluster's metadata creates a few hundred thousand objects that all stay
    alive (the snapshot): the cyclic GC would only walk them over and over (up to half the
    refresh time at 100,000 partitions). Nothing built here forms cycles."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class ConnectionManager:
    def __init__(self, bootstrap: str, properties: dict[str, str] | None = None,
                 timeout_s: float = 10.0, notify: Callable[[str], None] | None = None):
        self.bootstrap = bootstrap
        self.bootstrap_addresses = parse_bootstrap(bootstrap)
        self.properties = dict(properties or {})
        self.timeout_s = timeout_s
        self.notify = notify or (lambda message: None)
        self._snapshot = EMPTY
        self._channels: dict[tuple[str, int], Channel] = {}
        self._lock = threading.Lock()
        self._refresh_lock = threading.Lock()  # one refresh at a time
        self._refreshing = False
        self._refresh_again = False
        self._refresh_thread: threading.Thread | None = None
        self._admin = None

    # -- the cache ---------------------------------------------------------------------------

    @property
    def snapshot(self) -> ClusterSnapshot:
        return self._snapshot

    @property
    def refreshing(self) -> bool:
        return self._refreshing

    def connect(self) -> ClusterSnapshot:
        return self.refresh()

    def refresh(self) -> ClusterSnapshot:
        """Fetch metadata (and group ids) now and swap in the new snapshot."""
        return self._refresh(retrying=False)

    def refresh_in_background(self) -> None:
        """Refresh on a thread; a request made while one runs starts another right after it, so
        a refresh asked for after a mutation always sees that mutation."""
        with self._lock:
            if self._refreshing:
                self._refresh_again = True
                return
            self._refreshing = True
            self._refresh_thread = threading.Thread(target=self._background_refresh,
                                                    name="kafka-shell-refresh", daemon=True)
            self._refresh_thread.start()

    def _background_refresh(self) -> None:
        while True:
            try:
                self._refresh(retrying=False)
            except Exception as exc:  # keep the old cache; the next command reports the problem
                log.debug("background refresh failed: %s", exc)
            with self._lock:
                if not self._refresh_again:
                    self._refreshing = False
                    return
                self._refresh_again = False

    def _refresh(self, retrying: bool) -> ClusterSnapshot:
        with self._refresh_lock, _gc_paused():
            old = self._snapshot
            new = self._fetch_snapshot()
            self._snapshot = new
        if old.controller_id >= 0 and new.controller_id >= 0 and new.controller_id != old.controller_id:
            suffix = "; retrying." if retrying else "."
            self.notify(f"Controller moved from broker {old.controller_id} to broker {new.controller_id}{suffix}")
        return new

    def _fetch_snapshot(self) -> ClusterSnapshot:
        """Metadata from any broker, then group ids, all within one `timeout_s`."""
        deadline = time.monotonic() + self.timeout_s
        metadata = self._from_any_broker(
            lambda ch: ch.request_entity(METADATA, {"topics": None, "allow_auto_topic_creation": False},
                                         timeout_s=_left(deadline)), deadline)
        brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port, getattr(b, "rack", None))
                   for b in metadata.brokers}
        return ClusterSnapshot(
            cluster_id=getattr(metadata, "cluster_id", None),
            controller_id=getattr(metadata, "controller_id", -1),
            brokers=brokers,
            topics=_topics(metadata.topics),
            groups=self._group_ids(brokers.values(), deadline),
        )

    def _group_ids(self, brokers, deadline: float) -> tuple[str, ...]:
        """Group ids from every broker (each lists the groups it coordinates); best effort:
        brokers that fail or do not answer before the deadline are left out."""
        ids: set[str] = set()
        for b in brokers:
            if time.monotonic() >= deadline:
                break
            try:
                channel = self._channel(b.host, b.port, _left(deadline))
                if LIST_GROUPS not in channel.versions():
                    continue
                answer = channel.request_entity(LIST_GROUPS, {}, timeout_s=_left(deadline))
                ids.update(g.group_id for g in answer.groups)  # type: ignore[attr-defined]
            except (ShellError, protocol.ProtocolError, OSError) as exc:
                log.debug("ListGroups on broker %s failed: %s", b.id, exc)
        return tuple(sorted(ids))

    # -- routing -----------------------------------------------------------------------------

    def controller_address(self) -> str:
        controller = self._known_controller()
        return controller.address

    def controller_request(self, api_key: int, body: dict, version: int | None = None,
                           mutation: bool = False) -> dict:
        """Send to the current controller; on NOT_CONTROLLER or a lost connection, find the new
        controller and retry (see the module docstring for what is resent)."""
        before = self._snapshot
        backoff = INITIAL_BACKOFF_S
        resent_after_loss = False
        reason = ""
        for attempt in range(MAX_ATTEMPTS):
            controller = self._known_controller()
            try:
                response = self._channel(controller.host, controller.port).request(api_key, body, version)
            except ConnectionLost as lost:
                self._drop(controller.host, controller.port)
                reason = f"lost connection to broker {controller.id}"
                if mutation and lost.sent:
                    self._resend_after_loss(api_key, controller.id)
                    resent_after_loss = True
            else:
                if resent_after_loss:
                    response = _settle(api_key, body, response, before, self._snapshot)
                if not _rejected_by_non_controller(response, mutation):
                    return response
                reason = f"NOT_CONTROLLER from broker {controller.id}"
            if attempt + 1 < MAX_ATTEMPTS:
                time.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
                self._refresh(retrying=True)
        raise KafkaCallError(f"{protocol.api_name(api_key)} failed: no controller answered after "
                             f"{MAX_ATTEMPTS} attempts (last: {reason}).",
                             code=NOT_CONTROLLER if reason.startswith("NOT_") else None, retriable=True)

    def _resend_after_loss(self, api_key: int, broker_id: int) -> None:
        """Decide whether a mutation whose answer was lost may be sent again (raises if not)."""
        if api_key in IDEMPOTENT_MUTATIONS or api_key in (CREATE_TOPICS, DELETE_TOPICS):
            return
        raise KafkaCallError(
            f"The connection to broker {broker_id} was lost after the {protocol.api_name(api_key)} "
            "request was sent: it may or may not have taken effect. Check the cluster state "
            "before retrying.", retriable=False)

    def broker_request(self, broker_id: int, api_key: int, body: dict, version: int | None = None,
                       mutation: bool = False) -> dict:
        """Send to a named broker. A read is retried once on a fresh connection (after a
        metadata refresh, in case the broker moved); a mutation is not."""
        for attempt in range(2):
            broker = self._broker(broker_id)
            try:
                return self._channel(broker.host, broker.port).request(api_key, body, version)
            except ConnectionLost as lost:
                self._drop(broker.host, broker.port)
                if attempt or (mutation and lost.sent):
                    raise
                self._try_refresh()
        raise AssertionError("unreachable")

    def api_versions(self, broker_id: int | None = None) -> dict[int, range]:
        broker = self._known_controller() if broker_id is None else self._broker(broker_id)
        return self._channel(broker.host, broker.port).versions()

    def supports(self, api_key: int, version: int = 0, broker_id: int | None = None) -> bool:
        """Whether the broker (default: the controller) advertises this API version."""
        return version in self.api_versions(broker_id).get(api_key, range(0))

    def require(self, api_key: int, action: str) -> None:
        """Fail up front, before anything is sent, when the controller lacks the API (any version:
        some APIs, like DescribeLogDirs, start above v0)."""
        if not self.api_versions().get(api_key):
            raise NotSupported(f"{action} needs the {protocol.api_name(api_key)} API, which is not "
                               "supported by this cluster.")

    # -- the AdminClient ---------------------------------------------------------------------

    @property
    def admin(self):
        if self._admin is None:
            from confluent_kafka import KafkaException
            from confluent_kafka.admin import AdminClient
            config = {"bootstrap.servers": self.bootstrap, **librdkafka_properties(self.properties),
                      "logger": _librdkafka_log}
            try:
                self._admin = AdminClient(config)
            except KafkaException as exc:
                raise UsageError(f"Invalid client setting: {scrub(str(exc.args[0]), self.properties)}") from None
        return self._admin

    def admin_call(self, method: str, *args, mutation: bool = False, **kwargs) -> dict:
        """Call `AdminClient.<method>` and wait for its futures: {key: result or AdminError}
        (key None for calls that return one future or a plain value)."""
        from kafka_shell.admin_client import TRANSPORT_ERRORS, AdminError
        backoff = INITIAL_BACKOFF_S
        for attempt in range(MAX_ATTEMPTS):
            results = self._admin_once(method, args, kwargs)
            errors = [r for r in results.values() if isinstance(r, AdminError)]
            retry = bool(errors) and len(errors) == len(results) and all(
                e.code == NOT_CONTROLLER or (not mutation and e.code in TRANSPORT_ERRORS)
                for e in errors)
            if not retry or attempt + 1 == MAX_ATTEMPTS:
                return results
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)
            self._try_refresh(retrying=True)
            self._refresh_admin_metadata()
        raise AssertionError("unreachable")

    def _refresh_admin_metadata(self) -> None:
        """librdkafka keeps routing to the controller of its last Metadata answer (refreshed
        every few minutes); a one-topic Metadata request makes it learn the new one now."""
        from confluent_kafka import KafkaException
        topic = next(iter(self._snapshot.topics), "__consumer_offsets")
        try:
            self.admin.list_topics(topic=topic, timeout=self.timeout_s)
        except KafkaException as exc:
            log.debug("AdminClient metadata refresh failed: %s", exc)

    def _admin_once(self, method: str, args: tuple, kwargs: dict) -> dict:
        from confluent_kafka import KafkaError, KafkaException

        from kafka_shell.admin_client import AdminError, admin_error
        wait_s = self.timeout_s + max(float(kwargs.get(k) or 0) for k in
                                      ("request_timeout", "operation_timeout", "timeout"))
        try:
            outcome = getattr(self.admin, method)(*args, **kwargs)
        except KafkaException as exc:
            return {None: admin_error(exc, None)}
        futures = outcome if isinstance(outcome, dict) else {None: outcome}
        results: dict = {}
        deadline = time.monotonic() + wait_s
        for key, value in futures.items():
            if not isinstance(value, concurrent.futures.Future):
                results[key] = value
                continue
            try:
                results[key] = value.result(timeout=max(0.0, deadline - time.monotonic()))
            except KafkaException as exc:
                results[key] = admin_error(exc, key)
            except concurrent.futures.TimeoutError:
                results[key] = AdminError(KafkaError(KafkaError._TIMED_OUT, f"no answer within {wait_s:g} s"), key)
        return results

    # -- connections -------------------------------------------------------------------------

    def close(self) -> None:
        # A refresh still running would be cut off mid-request at interpreter exit (a daemon
        # thread inside native decoding can abort the process): let it finish first.
        thread = self._refresh_thread
        if thread is not None:
            thread.join(self.timeout_s)
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
        for ch in channels:
            ch.close()
        self._admin = None

    def _channel(self, host: str, port: int, connect_timeout_s: float | None = None) -> Channel:
        with self._lock:
            ch = self._channels.get((host, port))
        if ch is not None and not ch.closed:
            return ch
        # Connect outside the lock, within what is left of the caller's deadline.
        ch = Channel(host, port, self.properties, min(self.timeout_s, connect_timeout_s or self.timeout_s))
        ch.timeout_s = self.timeout_s  # later requests get the full timeout
        with self._lock:
            current = self._channels.get((host, port))
            if current is not None and not current.closed:
                ch.close()  # another thread connected first
                return current
            self._channels[(host, port)] = ch
        return ch

    def _drop(self, host: str, port: int) -> None:
        with self._lock:
            ch = self._channels.pop((host, port), None)
        if ch is not None:
            ch.close()

    def _from_any_broker(self, fn: Callable[[Channel], object], deadline: float):
        """fn(channel) on the first broker that answers: open connections first, then known
        brokers, then the bootstrap list; retried with backoff until the deadline."""
        backoff = INITIAL_BACKOFF_S
        while True:
            for host, port in self._candidates():
                try:
                    return fn(self._channel(host, port, _left(deadline)))
                except ConnectionLost as exc:
                    self._drop(host, port)
                    log.debug("broker %s:%s: %s", host, port, exc)
                if time.monotonic() >= deadline:
                    break
            if time.monotonic() + backoff >= deadline:
                raise ClusterUnreachable(unreachable_message(self.bootstrap, self.timeout_s))
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    def _candidates(self) -> list[tuple[str, int]]:
        with self._lock:
            open_ = [a for a, ch in self._channels.items() if not ch.closed]
        known = [(b.host, b.port) for b in self._snapshot.brokers.values()]
        return list(dict.fromkeys(open_ + known + self.bootstrap_addresses))

    def _known_controller(self) -> BrokerInfo:
        controller = self._snapshot.controller
        if controller is None:
            controller = self.refresh().controller
        if controller is None:
            raise KafkaCallError("The cluster has no active controller right now; try again shortly.",
                                 code=NOT_CONTROLLER, retriable=True)
        return controller

    def _broker(self, broker_id: int) -> BrokerInfo:
        broker = self._snapshot.brokers.get(broker_id) or self.refresh().brokers.get(broker_id)
        if broker is None:
            live = ", ".join(map(str, sorted(self._snapshot.brokers))) or "none"
            raise ShellError(f"Broker {broker_id} is not live in the cluster (live brokers: {live}).")
        return broker

    def _try_refresh(self, retrying: bool = False) -> None:
        try:
            self._refresh(retrying)
        except ClusterUnreachable as exc:
            log.debug("refresh before retry failed: %s", exc)


# -- helpers --------------------------------------------------------------------------------------


def _left(deadline: float) -> float:
    """Seconds left before a monotonic deadline (at least a little, so a last try can run)."""
    return max(deadline - time.monotonic(), 0.001)


def unreachable_message(bootstrap: str, timeout_s: float) -> str:
    return f"Cannot reach any broker of {bootstrap} within {timeout_s:g} s"  # 10.0 -> "10"


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    """`h:p,h2:p2` (optionally `[v6]:p` or `PLAINTEXT://h:p`) as (host, port) pairs."""
    addresses = []
    for item in filter(None, (s.strip() for s in bootstrap.split(","))):
        item = item.split("://", 1)[-1]
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise UsageError(f"Bad bootstrap server {item!r}: use host:port[,host:port...]")
        addresses.append((host.strip("[]"), int(port)))
    if not addresses:
        raise UsageError("No bootstrap server given: use host:port[,host:port...]")
    return addresses


def _topics(entities) -> dict[str, TopicInfo]:
    """TopicInfo per topic straight from the kio entities (no dict conversion: 100,000
    partitions must stay fast)."""
    topics = {}
    for t in entities:
        if t.error_code and not t.partitions:
            continue  # e.g. a topic being deleted: nothing to show
        name = t.name
        topic_id = getattr(t, "topic_id", None)
        parts = sorted(t.partitions, key=_partition_index)
        topics[name] = TopicInfo(
            name=name,
            topic_id=None if topic_id in (None, protocol.ZERO_UUID) else topic_id,
            partitions=tuple([  # a list comprehension: faster than tuple(generator)
                PartitionInfo(name, p.partition_index, p.leader_id, tuple(p.replica_nodes),
                              tuple(p.isr_nodes), tuple(getattr(p, "offline_replicas", ())),
                              getattr(p, "leader_epoch", -1))
                for p in parts]),
            internal=bool(getattr(t, "is_internal", False)),
        )
    return topics


_partition_index = operator.attrgetter("partition_index")


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
        return bool(codes) and all(c == NOT_CONTROLLER for c in codes)
    return NOT_CONTROLLER in codes


def _settle(api_key: int, body: dict, response: dict, before: ClusterSnapshot,
            after: ClusterSnapshot) -> dict:
    """After resending CreateTopics/DeleteTopics whose first answer was lost: an "already
    exists" / "unknown topic" that our own first attempt caused counts as success, when the
    topic was absent / present before it and the cluster is now as the request asked."""
    if api_key == CREATE_TOPICS:
        wanted = {t.get("name"): t for t in body.get("topics", [])}
        for r in response.get("topics", []):
            name, now = r.get("name"), after.topics.get(r.get("name"))
            partitions = wanted.get(name, {}).get("num_partitions", -1)
            if (r.get("error_code") == TOPIC_ALREADY_EXISTS and name not in before.topics
                    and now is not None and partitions in (-1, len(now.partitions))):
                r["error_code"], r["error_message"] = 0, None
    elif api_key == DELETE_TOPICS:
        for r in response.get("responses", []):
            name = r.get("name")
            if (r.get("error_code") == UNKNOWN_TOPIC_OR_PARTITION and name in before.topics
                    and name not in after.topics):
                r["error_code"], r["error_message"] = 0, None
    return response
