"""The router: which node serves a request, by Kafka's own rules.

It holds the open channels, finds out what kind of cluster it talks to, and knows the active
controller:

- **ZooKeeper mode** (brokers do not list DescribeQuorum in ApiVersions): the controller is a
  broker, the one Metadata names; controller requests go to it, and other brokers answer them
  with NOT_CONTROLLER.
- **KRaft mode** (brokers list DescribeQuorum): the controllers are a Raft quorum of their own.
  A broker's Metadata names a *random live broker* as controller (on purpose), so that field is
  never read here: the active controller is the quorum leader of DescribeQuorum, with its epoch.
  Admin requests go to any live broker, which forwards them to the active controller. With
  `--bootstrap-controller`, what the controller listener serves (DescribeQuorum, DescribeCluster,
  broker and cluster configs, features, UnregisterBroker) goes straight to the active controller.

A controller change is announced (through `notify`) only when the active controller or its
epoch really changed, once per change.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from kafka_shell.protocol.authorization import authorization_message, is_authorization_error
from kafka_shell.connection.channel import Channel, ConnectionLost, ConnectionRefused, MalformedAnswer, NoAnswer, Unresolvable
from kafka_shell.connection.client_config import parse_bootstrap
from kafka_shell.protocol.codes import ApiKey, Error, ResourceType
from kafka_shell.base.debug_log import DebugLog
from kafka_shell.base.deadline import Deadline
from kafka_shell.base.errors import ClusterUnreachable, KafkaCallError, kafka_error_message
from kafka_shell.connection.metadata import KRAFT, NO_CONTROLLER, ZOOKEEPER, BrokerInfo, ControllerInfo, Quorum, quorum_from

log = DebugLog("kafka_shell.connection.router")

METADATA_TOPIC = "__cluster_metadata"
QUORUM_REQUEST = {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}
# What Kafka's controller listener serves to admin clients (ControllerApis), when the user gives
# --bootstrap-controller. Config requests only when every resource is a broker (or the cluster).
CONTROLLER_LISTENER_APIS = {ApiKey.DESCRIBE_QUORUM, ApiKey.DESCRIBE_CLUSTER, ApiKey.DESCRIBE_CONFIGS,
                            ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_CONFIGS,
                            ApiKey.UPDATE_FEATURES, ApiKey.UNREGISTER_BROKER,
                            ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER}
CONTROLLER_ENDPOINTS = 2    # DescribeCluster's endpoint type CONTROLLER (KIP-919, v1+)
CONTROLLERS_REQUEST = {"include_cluster_authorized_operations": False, "endpoint_type": CONTROLLER_ENDPOINTS}
CONFIG_APIS = {ApiKey.DESCRIBE_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_CONFIGS}

T = TypeVar("T")
# Failing over between brokers (from_any_broker): an address that has not answered within this
# has the next one tried beside it. A new connection (connect, ApiVersions, login) is quick
# when the broker is up, even on a loaded machine with TLS and SASL; the first address answers
# first then, so one-shot commands in a row ask the same broker (read after write). A request
# on an open connection may be a big read, so it is given longer.
CONNECT_PATIENCE_S = 1.0
REQUEST_PATIENCE_S = 1.0
LAST_WORD_S = 0.2   # past the deadline, for the attempts in flight to say why they failed


class _Raise(NamedTuple):
    """An error other than a lost connection, from an attempt's thread, to raise in the caller's."""
    error: BaseException


class Router:
    def __init__(self, bootstrap: str, properties: dict[str, str], timeout_s: float,
                 notify: Callable[[str], None], bootstrap_controllers: str | None = None):
        self.bootstrap = bootstrap
        self.controller_addresses = (parse_bootstrap(bootstrap_controllers, "--bootstrap-controller")
                                     if bootstrap_controllers else [])
        # --bootstrap-controller alone (KIP-919): every request goes to the controllers, and
        # what only a broker serves is refused in one line (channel.needs_broker).
        self.controllers_only = not bootstrap and bool(self.controller_addresses)
        self.bootstrap_addresses = [] if self.controllers_only else parse_bootstrap(bootstrap)
        self.properties = properties
        self.timeout_s = timeout_s
        self.notify = notify
        self.mode: str | None = KRAFT if self.controllers_only else None  # KRAFT or ZOOKEEPER, once a broker answered
        self.controller: ControllerInfo = NO_CONTROLLER
        self.brokers: dict[int, BrokerInfo] = {}   # the latest Metadata's live brokers
        # Brokers a FindCoordinator answer named (with their address) since that Metadata: a
        # coordinator is reached without reading every broker first.
        self.coordinators: dict[int, BrokerInfo] = {}
        self._channels: dict[tuple[str, int], Channel] = {}
        self._connecting: dict[tuple[str, int], threading.Lock] = {}   # held while one thread connects there
        self._lock = threading.Lock()

    # -- channels ----------------------------------------------------------------------------

    def channel(self, host: str, port: int, deadline: Deadline, name: str | None = None) -> Channel:
        address = (host, port)
        with self._lock:
            ch = self._channels.get(address)
            if ch is not None and not ch.closed:
                return ch
            connecting = self._connecting.setdefault(address, threading.Lock())
        # One thread at a time connects to an address: the others wait for its channel (each
        # within its own deadline; past it, a try of its own fails as the connection would).
        waited = connecting.acquire(timeout=max(min(self.timeout_s, deadline.left()), 0))
        try:
            with self._lock:
                ch = self._channels.get(address)
            if ch is not None and not ch.closed:
                return ch
            # Connect outside the lock, within what is left of the caller's deadline.
            ch = Channel(host, port, self.properties, min(self.timeout_s, deadline.left()),
                         name=name or self._name_of(host, port))
            ch.timeout_s = self.timeout_s  # later requests get the full timeout
            ch.controllers_only = self.controllers_only
            with self._lock:
                current = self._channels.get(address)
                if current is not None and not current.closed:
                    ch.close()  # another thread connected first (one that waited no more)
                    return current
                self._channels[address] = ch
        finally:
            if waited:
                connecting.release()
        if self.mode is None and not self._is_controller_address(host, port):
            self.mode = KRAFT if ApiKey.DESCRIBE_QUORUM in ch.versions() else ZOOKEEPER
        return ch

    def broker_channel(self, broker: BrokerInfo, deadline: Deadline) -> Channel:
        role = "controller" if self.controllers_only else "broker"
        return self.channel(broker.host, broker.port, deadline, f"{role} {broker.id} at {broker.address}")

    def _drop_address(self, host: str, port: int) -> None:
        with self._lock:
            ch = self._channels.pop((host, port), None)
        if ch is not None:
            ch.close()

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
        for ch in channels:
            ch.close()

    def _name_of(self, host: str, port: int) -> str:
        for b in self.brokers.values():
            if (b.host, b.port) == (host, port):
                return f"broker {b.id} at {b.address}"
        if self._is_controller_address(host, port):
            return f"controller at {host}:{port}"
        return f"{host}:{port}"

    def _is_controller_address(self, host: str, port: int) -> bool:
        return (host, port) in self.controller_addresses or (
            self.controller.mode == KRAFT and (self.controller.host, self.controller.port) == (host, port))

    # -- brokers -----------------------------------------------------------------------------

    def from_any_broker(self, fn: Callable[[Channel], T], deadline: Deadline, hedge: bool = True) -> T:
        """fn(channel) on the first broker that answers: open connections first, then known
        brokers, then the bootstrap list, as librdkafka fails over. An address that has not
        answered within its patience (`_patience`) gets the next one tried beside it, so a hung
        address costs little when another answers; the round is retried with backoff until the
        deadline. When every address refused the connection, does not resolve, or answered with
        bytes that are no Kafka message, that is said at once: waiting would not change it.
        Without `hedge`, fn runs once (a request that must not be sent twice): on the first
        connection made. With controllers only, the controllers."""
        if self.controllers_only:
            return self._from_controllers(fn, deadline)
        if not hedge:
            return fn(self.from_any_broker(lambda ch: ch, deadline))
        reasons: dict[str, ConnectionLost] = {}
        while True:
            candidates = self._candidates()
            answered, failed = self._first_answer(candidates, fn, deadline)
            if answered:
                return answered[0]
            reasons.update(failed)
            this_round = {f"{h}:{p}": failed.get(f"{h}:{p}") for h, p in candidates}
            if all(isinstance(r, (ConnectionRefused, Unresolvable, MalformedAnswer)) for r in this_round.values()):
                raise _unreachable_at_once(self.bootstrap, failed)
            if not deadline.backoff():
                last = f" (last: {list(reasons.values())[-1]})" if reasons else ""
                raise ClusterUnreachable(unreachable_message(self.bootstrap, self.timeout_s) + last)

    def _first_answer(self, candidates: list[tuple[str, int]], fn: Callable[[Channel], T],
                      deadline: Deadline) -> tuple[list[T], dict[str, ConnectionLost]]:
        """One round over `candidates`: ([the first answer] or [], each failed address's reason).
        Each attempt runs on a thread of its own; the next starts when the last one failed or
        has been waited for its patience. An error that is no lost connection (a refused login,
        a security setting) is raised at once."""
        done: queue.Queue[tuple[str, bool, Any]] = queue.Queue()

        def attempt(host: str, port: int) -> None:
            try:
                done.put((f"{host}:{port}", True, fn(self.channel(host, port, deadline))))
            except ConnectionLost as exc:
                self._drop_address(host, port)
                done.put((f"{host}:{port}", False, exc))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                done.put((f"{host}:{port}", False, _Raise(exc)))

        failed: dict[str, ConnectionLost] = {}
        waiting = list(candidates)
        running = 0
        next_at = 0.0   # when the next address is tried beside those in flight
        while running or (waiting and not deadline.expired):
            now = time.monotonic()
            if waiting and not deadline.expired and (not running or now >= next_at):
                host, port = waiting.pop(0)
                next_at = now + self._patience(host, port, deadline)
                threading.Thread(target=attempt, args=(host, port), daemon=True,
                                 name=f"connect {host}:{port}").start()
                running += 1
                continue
            # Past the deadline, a moment for the attempts in flight to say why they failed.
            until = next_at if waiting and not deadline.expired else deadline.at + LAST_WORD_S
            try:
                address, ok, value = done.get(timeout=max(until - now, 0.0))
            except queue.Empty:
                if time.monotonic() >= deadline.at + LAST_WORD_S:
                    break
                continue
            running -= 1
            if ok:
                return [value], failed
            if isinstance(value, _Raise):
                raise value.error
            failed[address] = value
            log.debug("%s: %s", address, value)
        return [], failed

    def _patience(self, host: str, port: int, deadline: Deadline) -> float:
        """How long an attempt is waited for before the next address is tried beside it: a new
        connection briefly (happy eyeballs); an open one, which answered before, longer."""
        with self._lock:
            ch = self._channels.get((host, port))
        wait = CONNECT_PATIENCE_S if ch is None or ch.closed else max(REQUEST_PATIENCE_S, deadline.seconds / 4)
        return min(wait, deadline.left())

    def _candidates(self) -> list[tuple[str, int]]:
        with self._lock:
            open_ = [a for a, ch in self._channels.items()
                     if not ch.closed and not self._is_controller_address(*a)]
        known = [(b.host, b.port) for b in self.brokers.values()]
        return list(dict.fromkeys(open_ + known + self.bootstrap_addresses))

    def knows(self, broker_id: int) -> bool:
        """The broker's address is known (from the latest Metadata or a FindCoordinator answer)."""
        return broker_id in self.brokers or broker_id in self.coordinators

    def learn_coordinator(self, broker: BrokerInfo) -> None:
        if broker.id not in self.brokers:
            self.coordinators[broker.id] = broker

    def broker(self, broker_id: int) -> BrokerInfo:
        broker = self.brokers.get(broker_id) or self.coordinators.get(broker_id)
        if broker is None and self.controllers_only:
            known = ", ".join(map(str, sorted(self.brokers))) or "none"
            raise KafkaCallError(f"Node {broker_id} is not a controller of this cluster (controllers: {known}); "
                                 "a broker's own requests need --bootstrap-server.")
        if broker is None:
            live = ", ".join(map(str, sorted(self.brokers))) or "none"
            raise KafkaCallError(f"Broker {broker_id} is not live in the cluster (live brokers: {live}).")
        return broker

    # -- the controller ----------------------------------------------------------------------

    def observe_metadata(self, metadata: Any) -> None:
        """Take the live brokers from a Metadata answer, and in ZooKeeper mode the controller
        (in KRaft mode Metadata's controller_id is a random broker: ignored)."""
        brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port, getattr(b, "rack", None))
                   for b in metadata.brokers}
        self.brokers = brokers
        self.coordinators = {}
        with self._lock:  # a bootstrap connection learns which broker it reaches
            for b in brokers.values():
                ch = self._channels.get((b.host, b.port))
                if ch is not None:
                    ch.name = f"broker {b.id} at {b.address}"
        if self.mode == ZOOKEEPER:
            cid = getattr(metadata, "controller_id", -1)
            where = brokers.get(cid)
            self.set_controller(ControllerInfo(cid, -1, where.host if where else None, where.port if where else None,
                                               ZOOKEEPER) if cid >= 0 else NO_CONTROLLER)

    def read_controllers(self, deadline: Deadline) -> Any:
        """DescribeCluster of the controllers (KIP-919, endpoint type CONTROLLER) from a
        controller listener; with controllers only, its nodes are the ones requests by node id
        go to (`brokers`)."""
        answer: Any = self._from_controllers(lambda ch: ch.request_entity(
            ApiKey.DESCRIBE_CLUSTER, CONTROLLERS_REQUEST, deadline=deadline), deadline)
        if answer.error_code:
            raise KafkaCallError("DescribeCluster failed: " + kafka_error_message(
                int(answer.error_code), "", answer.error_message or "", entity="the controllers"),
                code=int(answer.error_code))
        if self.controllers_only:
            self.brokers = {b.broker_id: BrokerInfo(b.broker_id, b.host, b.port, b.rack) for b in answer.brokers}
        return answer

    def read_quorum(self, deadline: Deadline) -> Quorum:
        """The metadata quorum (KRaft) from a fresh DescribeQuorum, asked of the controller
        listener when --bootstrap-controller was given, else through a broker; updates the
        active controller from it."""
        silent: list[str] = []   # brokers that took the request and forwarded it to no answer

        def ask(ch: Channel) -> object:
            try:
                return ch.request_entity(ApiKey.DESCRIBE_QUORUM, QUORUM_REQUEST, deadline=deadline)
            except NoAnswer:
                silent.append(ch.name)
                raise

        if self.controller_addresses:
            answer: Any = self._quorum_at_controllers(ask, deadline)
        else:
            try:
                answer = self.from_any_broker(ask, deadline)
            except ClusterUnreachable:
                if not silent:
                    raise
                # The brokers are up (they took the request); the controller they forward it to is not.
                raise KafkaCallError(
                    f"The brokers answer, but the KRaft controller quorum does not: DescribeQuorum, which the "
                    f"broker at {silent[0]} forwards to the active controller, got no answer within "
                    f"{self.timeout_s:g} s (is every controller down? with --bootstrap-controller the shell "
                    "asks the controllers directly).",
                    code=Error.not_controller, retriable=True) from None
        part = answer.topics[0].partitions[0] if answer.topics and answer.topics[0].partitions else None
        code = int(answer.error_code) or (int(part.error_code) if part is not None else Error.unknown_server_error)
        if is_authorization_error(code):
            raise KafkaCallError(authorization_message(ApiKey.DESCRIBE_QUORUM, code, purpose=
                                 "to find the active controller (DescribeQuorum)"), code=code)
        if code or part is None:
            message = getattr(answer, "error_message", None) or getattr(part, "error_message", None) or ""
            raise KafkaCallError("DescribeQuorum failed: " + kafka_error_message(
                code, "", message, entity="the metadata quorum"), code=code, retriable=True)
        quorum = quorum_from(part, getattr(answer, "nodes", ()))
        leader = quorum.leader_id
        where = next(iter(quorum.listeners.get(leader, ())), None)
        host, port = (where[1], where[2]) if where else (None, None)
        if where is None and leader == self.controller.id:
            host, port = self.controller.host, self.controller.port
        self.set_controller(ControllerInfo(leader, quorum.leader_epoch, host, port, KRAFT) if leader >= 0
                            else NO_CONTROLLER)
        return quorum

    def _quorum_at_controllers(self, ask: Callable[[Channel], Any], deadline: Deadline) -> Any:
        """DescribeQuorum from the controller listeners: only the quorum's leader answers it (a
        follower: NOT_LEADER_OR_FOLLOWER), so a follower's refusal sends it to the active
        controller the registrations name (DescribeCluster, KIP-919)."""
        answer = self._from_controllers(ask, deadline)
        if _quorum_code(answer) != Error.not_leader_or_follower:
            return answer
        registered = self.read_controllers(deadline)
        active = next((b for b in registered.brokers if b.broker_id == registered.controller_id), None)
        if active is None:
            return answer
        return ask(self.channel(active.host, active.port, deadline, f"controller {active.broker_id} at "
                                                                     f"{active.host}:{active.port}"))

    def refresh_controller(self, deadline: Deadline, metadata: object | None = None) -> ControllerInfo:
        """Find the active controller now (KRaft: DescribeQuorum; ZooKeeper: Metadata)."""
        if metadata is not None:
            self.observe_metadata(metadata)
        if self.mode is None:
            self.from_any_broker(lambda ch: ch, deadline)  # connecting tells the mode
        if self.mode == KRAFT:
            self.read_quorum(deadline)
        elif metadata is None:
            self.observe_metadata(self.from_any_broker(lambda ch: ch.request_entity(
                ApiKey.METADATA, {"topics": [], "allow_auto_topic_creation": False},
                deadline=deadline), deadline))
        return self.controller

    def set_controller(self, new: ControllerInfo) -> None:
        old, self.controller = self.controller, new
        if old.id < 0 or new.id < 0:
            if old.id >= 0 > new.id:
                self.notify(f"The cluster has no active controller right now (was {old.id}).")
            return
        if (old.id, old.epoch) == (new.id, new.epoch):
            return
        if new.mode == KRAFT:
            if old.id == new.id:
                self.notify(f"Controller {new.id} was elected again (epoch {old.epoch} -> {new.epoch}).")
            else:
                self.notify(f"Active controller changed from {old.id} to {new.id} (epoch {new.epoch}).")
        elif old.id != new.id:
            self.notify(f"Controller moved from broker {old.id} to broker {new.id}.")

    def _from_controllers(self, fn: Callable[[Channel], T], deadline: Deadline) -> T:
        """fn(channel) on the active controller's listener if known, else the first bootstrap
        controller that answers."""
        addresses = list(self.controller_addresses)
        if self.controller.mode == KRAFT and self.controller.host is not None:
            addresses.insert(0, (self.controller.host, self.controller.port or 0))
        reasons = []
        for host, port in dict.fromkeys(addresses):
            try:
                ch = self.channel(host, port, deadline)
                return fn(ch)
            except ConnectionLost as exc:
                reasons.append(str(exc))
                self._drop_address(host, port)
        raise ClusterUnreachable("Cannot reach any controller of the --bootstrap-controller list: "
                                 + "; ".join(reasons))

    # -- routing -----------------------------------------------------------------------------

    def uses_controller_listener(self, api_key: int, body: dict) -> bool:
        if not self.controller_addresses or api_key not in CONTROLLER_LISTENER_APIS:
            return False
        if api_key in CONFIG_APIS:
            return all(r.get("resource_type") in (ResourceType.BROKER, ResourceType.BROKER_LOGGER)
                       for r in body.get("resources", []))
        return True

    def controller_channel(self, api_key: int, body: dict, deadline: Deadline) -> Channel:
        """Where a controller request goes: the active controller's own listener (KRaft with
        --bootstrap-controller, for what it serves), the controller broker (ZooKeeper), or any
        live broker, which forwards it (KRaft)."""
        if self.uses_controller_listener(api_key, body):
            if self.controller.host is None:
                self.read_quorum(deadline)
            if self.controller.host is None:
                raise KafkaCallError("The metadata quorum does not tell the active controller's "
                                     "address; try again shortly.", code=Error.not_controller, retriable=True)
            return self.channel(self.controller.host, self.controller.port or 0, deadline,
                                f"controller {self.controller.id} at {self.controller.address}")
        if self.mode == ZOOKEEPER:
            if self.controller.id < 0 or self.controller.id not in self.brokers:
                self.refresh_controller(deadline)
            if self.controller.id not in self.brokers:
                raise KafkaCallError("The cluster has no active controller right now; try again shortly.",
                                     code=Error.not_controller, retriable=True)
            return self.broker_channel(self.brokers[self.controller.id], deadline)
        return self.from_any_broker(lambda ch: ch, deadline)


# -- helpers --------------------------------------------------------------------------------------


def _quorum_code(answer: Any) -> int:
    """A DescribeQuorum answer's error: its own, else its partition's."""
    part = answer.topics[0].partitions[0] if answer.topics and answer.topics[0].partitions else None
    return int(answer.error_code) or (int(part.error_code) if part is not None else 0)


def _unreachable_at_once(bootstrap: str, failed: dict[str, ConnectionLost]) -> ClusterUnreachable:
    """Every address refused, did not resolve, or answered with no Kafka message: the one line."""
    reasons = list(failed.values())
    if all(isinstance(r, ConnectionRefused) for r in reasons):
        return ClusterUnreachable(f"Cannot reach any broker of {bootstrap}: connection refused by {', '.join(failed)} "
                                  "(check the address and that the brokers are up)")
    malformed = [r for r in reasons if isinstance(r, MalformedAnswer)]
    if malformed:
        return ClusterUnreachable(str(malformed[0]))
    return ClusterUnreachable(f"Cannot reach any broker of {bootstrap}: {'; '.join(map(str, reasons))} "
                              "(check the address and that the brokers are up)")


def unreachable_message(bootstrap: str, timeout_s: float) -> str:
    return f"Cannot reach any broker of {bootstrap} within {timeout_s:g} s"  # 10.0 -> "10"
