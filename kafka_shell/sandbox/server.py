"""The sandbox: N brokers in one process, each on its own loopback port, served by one asyncio
loop on a background thread. In KRaft mode (the default) a quorum of controllers with their own
node ids and CONTROLLER listeners runs beside them; in zk mode the controller is a broker.

Python callers (tests, the shell's `sandbox` commands) use `Sandbox`; every state change runs in
the loop thread through `Sandbox.call`, so handlers never see concurrent mutation.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import random
import socket
import ssl
import threading
import time
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Awaitable, Callable

from kio.schema.errors import ErrorCode

from kafka_shell.protocol import codec, definitions
from kafka_shell.protocol.definitions import releases
from kafka_shell.protocol.codes import ApiKey, Error
from kafka_shell.protocol.broker_identity import MAPPING_TOPIC, mapping_value
from kafka_shell.sandbox import (apis, cleaner, configs, consumer_groups, control, groups, handlers, identity, journal, persist,
                                  quorum, replication, security, share_groups, tls, transactions)
from kafka_shell.sandbox.handlers import features
from kafka_shell.sandbox.authenticator import SaslAuthenticator
from kafka_shell.protocol.authorization import OPERATIONS_NOT_REQUESTED, SUPPORTED_OPERATIONS
from kafka_shell.sandbox.authorizer import API_NEEDS, CLUSTER_NAME, AclBinding, Authorizer, acl_store, binding_problem
from kafka_shell.protocol.codes import AclOperation, AclResourceType
from kafka_shell.sandbox.model import KRAFT, MODES, ZK, Broker, Cluster, Controller

log = logging.getLogger("kafka_shell.sandbox")

API_VERSIONS_KEY = ApiKey.API_VERSIONS
CONTROLLER_ID_BASE = 100
# What a KRaft broker forwards to the active controller (KafkaApis' maybeForwardToController,
# forwardToControllerOrFail and the config APIs' forwarding).
FORWARDED_APIS = frozenset({
    ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS, ApiKey.ELECT_LEADERS,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS,
    ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.DESCRIBE_QUORUM,
    ApiKey.UNREGISTER_BROKER, ApiKey.UPDATE_FEATURES, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS,
    ApiKey.ALTER_CLIENT_QUOTAS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER,
    ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN,
    ApiKey.UNREGISTER_CONTROLLER})
# Kafka's forwarding channel gives up after 60 s (BrokerServer's retryTimeoutMs) with
# REQUEST_TIMED_OUT; the sandbox also stops at the request's own timeout when it is shorter.
FORWARD_TIMEOUT_S = 60.0
FORWARD_POLL_S = 0.02

Node = Broker | Controller | control.ControlNode

ANONYMOUS = "User:ANONYMOUS"  # Kafka's principal for a connection that did not authenticate
# A listener's name is its security protocol (Kafka's default listener.security.protocol.map).
LISTENERS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
PLAINTEXT = "PLAINTEXT"


@dataclass
class RequestContext:
    sandbox: Sandbox
    broker: Broker | Controller   # the node whose listener took the request (broker or controller)
    header: object
    request: object
    api_key: int
    version: int
    # For a request a KRaft broker forwards: whether the active controller took it (None: not
    # forwarded).
    forwarded: bool | None = None
    # Who sent it, as Kafka's KafkaPrincipal string: the SASL or TLS identity of the connection.
    principal: str = ANONYMOUS
    # The listener it came in on: Metadata and the like advertise that listener's endpoints.
    listener: str = PLAINTEXT
    client_host: str = "127.0.0.1"   # the client's address, which ACL hosts match
    token_authenticated: bool = False   # logged in with a delegation token (sandbox.tokens)

    @property
    def cluster(self) -> Cluster:
        return self.sandbox.cluster

    def authorize(self, op: AclOperation, resource_type: AclResourceType, name: str = CLUSTER_NAME) -> bool:
        """Whether the authorizer (if any) lets this request's principal do `op` on the resource."""
        auth = self.sandbox.authorizer
        return auth is None or auth.authorize(self.cluster, self.principal, self.client_host, op,
                                              resource_type, name)

    def authorized_operations(self, asked: bool, resource_type: AclResourceType, name: str = CLUSTER_NAME) -> int:
        """An `*_authorized_operations` field: when `asked`, the bit field of the operations allowed
        on the resource, of those its type has (all of them without an authorizer, as Kafka
        answers); else Kafka's "not requested" value."""
        if not asked:
            return OPERATIONS_NOT_REQUESTED
        allowed = [op for op in SUPPORTED_OPERATIONS[resource_type] if self.authorize(op, resource_type, name)]
        return sum(1 << op for op in allowed)

    def permits(self, resource_type: AclResourceType, name: str = CLUSTER_NAME) -> bool:
        """`authorize` with the operation this request's API needs on that resource type
        (authorizer.API_NEEDS)."""
        return self.authorize(API_NEEDS[self.api_key][resource_type], resource_type, name)

    @property
    def on_controller_listener(self) -> bool:
        return isinstance(self.broker, Controller)

    @property
    def is_controller(self) -> bool:
        """Whether the active controller serves this request: a forwarded one once a controller
        took it, else the node itself being the active controller."""
        if self.forwarded is not None:
            return self.forwarded
        return self.broker.id == self.cluster.controller_id

    def served_apis(self) -> dict[int, range]:
        """What this listener's ApiVersions lists: api key -> versions."""
        return self.sandbox.served_apis(self.broker)

    def port_of(self, broker: Broker) -> int:
        """The broker's port on the listener this request came in on (as Kafka advertises the
        endpoints of the client's listener)."""
        return broker.listener_ports.get(self.listener, broker.port)

    def advertised_controller_id(self) -> int:
        """The `controller_id` of Metadata and DescribeCluster: the controller broker in zk mode;
        through a KRaft broker a random live broker, drawn per request (KRaftMetadataCache);
        on a controller listener the active controller (KIP-919)."""
        if not self.cluster.kraft or self.on_controller_listener:
            return self.cluster.controller_id
        live = [b.id for b in self.cluster.live_brokers()]
        return random.choice(live) if live else -1


class _RequestMemory:
    """queued.max.request.bytes for the whole sandbox process: the bytes of requests being read
    or waiting for their answer. Counted as they arrive (a declared 100 MiB frame holds what has
    come so far), so a few large partial frames cannot starve everyone else. While the total is
    at or over the limit, a connection that holds more than the request it is being served for
    stops reading (like Kafka's memory pool muting channels) until the total drops."""

    def __init__(self, sandbox: Sandbox):
        self.sandbox = weakref.ref(sandbox)  # a strong one would keep the sandbox in `_memory` for good
        self.used = 0
        self.paused: set[_Connection] = set()

    def limit(self) -> int:
        sandbox = self.sandbox()
        return -1 if sandbox is None else _config_int(sandbox, None, "queued.max.request.bytes")

    def over(self) -> bool:
        limit = self.limit()
        return 0 <= limit <= self.used

    def add(self, size: int) -> None:
        self.used += size

    def release(self, size: int) -> None:
        self.used -= size
        if self.paused and not self.over():
            waiting, self.paused = self.paused, set()
            for conn in waiting:
                conn.resume()


_memory: weakref.WeakKeyDictionary[Sandbox, _RequestMemory] = weakref.WeakKeyDictionary()


def _request_memory(sandbox: Sandbox) -> _RequestMemory:
    memory = _memory.get(sandbox)
    if memory is None:
        memory = _memory[sandbox] = _RequestMemory(sandbox)
    return memory


def _config_int(sandbox: Sandbox, broker_id: int | None, key: str) -> int:
    return int(configs.broker_value(sandbox.cluster, broker_id, key) or -1)


class _Connection(asyncio.Protocol):
    """One client connection: frames its bytes into requests and serves them one at a time, in
    order, on its own task. The task is cancelled when the client leaves, so nothing (a
    long-polling Fetch, an acks=all Produce) keeps waiting for a client that is gone."""

    def __init__(self, server: _BrokerServer, ip: str):
        self.server = server
        self.ip = ip
        self.principal = ANONYMOUS  # until SASL or a TLS client certificate says who it is
        self.sasl = server.authenticator()  # None on a listener without SASL
        self.closing = False  # close once the answers written so far are sent
        self.memory = _request_memory(server.sandbox)
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()  # received bytes not yet cut into requests
        self.requests: collections.deque[bytes] = collections.deque()
        self.held = 0  # bytes counted in self.memory for this connection
        self.serving = 0  # size of the request being served (0: none)
        self.last_active = asyncio.get_running_loop().time()
        self.arrived = asyncio.Event()
        self.writable = asyncio.Event()
        self.writable.set()
        self.task = asyncio.ensure_future(self._serve())

    # -- asyncio.Protocol -----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if self.sasl is None:
            self.principal = tls.peer_principal(transport.get_extra_info("ssl_object")) or ANONYMOUS

    def data_received(self, data: bytes) -> None:
        self.last_active = asyncio.get_running_loop().time()
        self.buffer += data
        self.held += len(data)
        self.memory.add(len(data))
        try:
            self._cut_requests()
        except codec.ProtocolError as exc:
            self.server.sandbox.closed_connections.report(logging.INFO, self.server.broker.id, self.ip, str(exc))
            self.close()
            return
        if self.held > self.serving and self.memory.over():
            self.pause()

    def eof_received(self) -> bool:
        return False  # Kafka closes a connection its client has closed: the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        self.close()

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.last_active = asyncio.get_running_loop().time()
        self.writable.set()

    # -- framing --------------------------------------------------------------------------------

    def _cut_requests(self) -> None:
        buffer = self.buffer
        while len(buffer) >= 4:
            size = int.from_bytes(buffer[:4], "big", signed=True)
            max_bytes = _config_int(self.server.sandbox, self.server.broker.id, "socket.request.max.bytes")
            # A request has an 8-byte header at least; a bare SASL token (v0 handshake) need not.
            smallest = 0 if self.sasl is not None and self.sasl.raw_tokens else 8
            if size < smallest or size > max_bytes:
                # Closed before its body is read, as Kafka's InvalidReceiveException does.
                raise codec.ProtocolError(f"frame size {size} out of bounds (socket.request.max.bytes "
                                             f"is {max_bytes})")
            if len(buffer) < 4 + size:
                return
            with memoryview(buffer) as view:
                body = bytes(view[4:4 + size])
            del buffer[:4 + size]
            # The 4 size bytes were counted too; they are released with the request.
            self.requests.append(body)
            self.arrived.set()

    def pause(self) -> None:
        if self.transport is not None and self.transport.is_reading():
            self.transport.pause_reading()
            self.memory.paused.add(self)

    def resume(self) -> None:
        if self.transport is not None and not self.transport.is_closing() and not self.transport.is_reading():
            self.transport.resume_reading()

    def left_while_paused(self) -> bool:
        """Whether the client reset or closed the connection while it was not reading (it cannot
        see the end of the stream then). Linux only, from the socket's TCP state. A client that
        closes with bytes still unsent behind the stalled ones is only seen by the idle timeout,
        as in Kafka."""
        if self.transport is None or self.transport.is_reading() or not hasattr(socket, "TCP_INFO"):
            return False
        sock = self.transport.get_extra_info("socket")
        try:
            return sock is not None and sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] in _TCP_PEER_GONE
        except OSError:
            return False

    # -- serving --------------------------------------------------------------------------------

    async def _serve(self) -> None:
        try:
            while True:
                if not self.requests:
                    self.arrived.clear()
                    await self.arrived.wait()
                body = self.requests.popleft()
                self.serving = 4 + len(body)
                if self.transport is not None and self.held <= self.serving:
                    self.resume()  # it held nothing else: let the next request in
                try:
                    answer = self.sasl.receive(body) if self.sasl is not None else None
                    if self.sasl is not None and self.sasl.principal is not None:
                        self.principal = self.sasl.principal
                    if answer is not None:
                        response, self.closing = answer.response, answer.close
                    else:
                        response = await self.server.sandbox.dispatch(
                            self.server.broker, body, self.principal, self.server.listener, self.ip,
                            token_authenticated=self.sasl is not None and self.sasl.token_authenticated)
                finally:
                    self._release(self.serving)
                    self.serving = 0
                    self.last_active = asyncio.get_running_loop().time()
                if response is not None and self.transport is not None:
                    self.transport.write(response)
                    # A client that does not read its answer stalls here; the idle timeout ends it.
                    await self.writable.wait()
                if self.closing:
                    return
        except asyncio.CancelledError:
            # close() cancels the task (the client left, or the broker stops). Ending normally
            # keeps asyncio from logging it.
            pass
        except codec.ProtocolError as exc:
            self.server.sandbox.closed_connections.report(logging.INFO, self.server.broker.id, self.ip, str(exc))
        except Exception as exc:
            # A bug: one line (a flood of hostile requests must not flood the log); the
            # traceback at debug level.
            self.server.sandbox.closed_connections.report(
                logging.ERROR, self.server.broker.id, self.ip, f"a request failed ({type(exc).__name__}: {exc})")
            log.debug("request failure", exc_info=True)
        finally:
            self.close()

    def _release(self, size: int) -> None:
        self.held -= size
        self.memory.release(size)

    def close(self) -> None:
        """Drop the connection and whatever it holds (idempotent)."""
        if self.transport is not None:
            if self.closing:
                self.transport.close()  # what was written still goes out (an error answer)
            else:
                self.transport.abort()
            self.transport = None
            self.server.forget(self)
            self.memory.paused.discard(self)
            self._release(self.held - self.serving)
            self.buffer.clear()
            self.requests.clear()
            if self.task is not asyncio.current_task():
                self.task.cancel()


class _BrokerServer:
    """The listening socket and open connections of one node: a broker, a controller (its
    CONTROLLER listener) or the control endpoint, with Kafka's socket-server limits read from
    the broker configs: socket.request.max.bytes, queued.max.request.bytes (shared by the whole
    sandbox), max.connections, max.connections.per.ip and connections.max.idle.ms."""

    def __init__(self, sandbox: Sandbox, broker: Node, listener: str = PLAINTEXT):
        self.sandbox = sandbox
        self.broker = broker
        # A broker's first listener is on broker.port, the others on broker.listener_ports.
        self.listener = listener
        self.primary = not isinstance(broker, Broker) or listener == sandbox.listeners[0]
        self.sock: socket.socket | None = None
        self.connections: dict[_Connection, asyncio.Task] = {}
        self.per_ip: collections.Counter[str] = collections.Counter()
        self._tasks: list[asyncio.Task] = []

    @property
    def port(self) -> int:
        if self.primary:
            return self.broker.port
        return self.broker.listener_ports.get(self.listener, 0)  # type: ignore[union-attr]

    @port.setter
    def port(self, port: int) -> None:
        if self.primary:
            self.broker.port = port
        else:
            self.broker.listener_ports[self.listener] = port  # type: ignore[union-attr]

    @property
    def tls(self) -> bool:
        return isinstance(self.broker, Broker) and self.listener.endswith("SSL")

    def authenticator(self) -> SaslAuthenticator | None:
        if not isinstance(self.broker, Broker) or not self.listener.startswith("SASL"):
            return None
        return SaslAuthenticator(self.sandbox, self.broker.id, self.sandbox.sasl_mechanisms)

    async def listen(self, sock: socket.socket | None = None) -> None:
        if sock is None:
            sock = _bind(self.broker.host, self.port)
        self.sock = sock
        self.port = sock.getsockname()[1]
        self._tasks = [asyncio.ensure_future(self._accept()), asyncio.ensure_future(self._expire_idle())]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        # Drop every connection and cancel its task (a long-polling Fetch may be waiting in it).
        for conn in list(self.connections):
            conn.close()
        self.connections.clear()

    def forget(self, conn: _Connection) -> None:
        if self.connections.pop(conn, None) is not None:
            self.per_ip[conn.ip] -= 1
            if not self.per_ip[conn.ip]:
                del self.per_ip[conn.ip]

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        assert self.sock is not None
        while True:
            try:
                client, address = await loop.sock_accept(self.sock)
            except (ConnectionAbortedError, InterruptedError):
                continue  # the client gave up before we accepted it
            except OSError as exc:
                # At the fd limit (EMFILE) the pending connection stays queued and every retry
                # fails alike: log it at most once a second, and retry a little later.
                _accept_errors.report(self.broker.id, exc)
                await asyncio.sleep(0.1)
                continue
            refusal = self._refusal(address[0])
            if refusal:
                log.info("broker %d refuses a connection from %s: %s", self.broker.id, address[0], refusal)
                client.close()
                continue
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Connection(self, address[0])
            self.connections[conn] = conn.task
            self.per_ip[conn.ip] += 1
            if self.tls:
                # The TLS handshake runs beside the accept loop: a slow client holds up no one.
                self.sandbox.spawn(self._connect(conn, client))
            else:
                await self._connect(conn, client)

    async def _connect(self, conn: _Connection, client: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.connect_accepted_socket(lambda c=conn: c, client,  # type: ignore[misc]
                                               ssl=self.sandbox.tls_context(self.listener) if self.tls else None)
        except OSError as exc:
            if self.tls:
                log.info("broker %d: TLS handshake with %s failed: %s", self.broker.id, conn.ip, exc)
            conn.transport = None
            self.forget(conn)
            conn.task.cancel()
            client.close()

    def _refusal(self, ip: str) -> str | None:
        """Why a new connection from `ip` is over a limit, or None."""
        total = _config_int(self.sandbox, self.broker.id, "max.connections")
        if len(self.connections) >= total:
            return f"max.connections ({total}) reached"
        per_ip = _config_int(self.sandbox, self.broker.id, "max.connections.per.ip")
        if self.per_ip[ip] >= per_ip:
            return f"max.connections.per.ip ({per_ip}) reached"
        return None

    async def _expire_idle(self) -> None:
        """connections.max.idle.ms: close connections with no request in service and no bytes
        in or out for longer than that (a negative value turns it off, as in Kafka). Also close
        connections that stopped reading (queued.max.request.bytes) whose client has left."""
        loop = asyncio.get_running_loop()
        while True:
            idle_s = _config_int(self.sandbox, self.broker.id, "connections.max.idle.ms") / 1000
            await asyncio.sleep(1.0 if idle_s < 0 else min(max(idle_s / 4, 0.05), 1.0))
            for conn in [c for c in self.connections if c.left_while_paused()]:
                conn.close()
            if idle_s < 0:
                continue
            cutoff = loop.time() - idle_s
            for conn in [c for c in self.connections if not c.serving and c.last_active < cutoff]:
                log.info("broker %d closes a connection from %s idle for over %d ms", self.broker.id,
                         conn.ip, idle_s * 1000)
                conn.close()


_TCP_PEER_GONE = {7, 8}  # Linux's tcp_states.h: TCP_CLOSE (reset by the peer), TCP_CLOSE_WAIT


class _AcceptErrors:
    """Accept failures (at the fd limit: EMFILE), logged at most once a second for the whole
    process."""

    def __init__(self) -> None:
        self.last = 0.0
        self.suppressed = 0

    def report(self, broker_id: int, exc: OSError) -> None:
        now = time.monotonic()
        if now - self.last < 1.0:
            self.suppressed += 1
            return
        more = f" ({self.suppressed} more since the last message)" if self.suppressed else ""
        log.warning("broker %d cannot accept connections: %s%s", broker_id, exc.strerror or exc, more)
        self.last, self.suppressed = now, 0


_accept_errors = _AcceptErrors()


class _ClosedConnections:
    """Connections closed over a bad request (or a handler's failure), logged per client address
    at most once a second: the first at once, the others of that second as one line with their
    count when it is over (a flood of hostile requests must not flood the log)."""

    WINDOW_S = 1.0

    def __init__(self) -> None:
        # ip -> [closes since the last line, broker id, level, message, timer] of the open window
        self.windows: dict[str, list] = {}

    def report(self, level: int, broker_id: int, ip: str, message: str) -> None:
        window = self.windows.get(ip)
        if window is not None:
            window[:4] = [window[0] + 1, broker_id, max(level, window[2]), message]
            return
        log.log(level, "broker %d closes a connection from %s: %s", broker_id, ip, message)
        self._open(ip, broker_id, level, message)

    def _open(self, ip: str, broker_id: int, level: int, message: str) -> None:
        timer = asyncio.get_running_loop().call_later(self.WINDOW_S, self._end, ip)
        self.windows[ip] = [0, broker_id, level, message, timer]

    def _end(self, ip: str, reopen: bool = True) -> None:
        count, broker_id, level, message, timer = self.windows.pop(ip)
        timer.cancel()
        if count:
            log.log(level, "broker %d closes connections from %s: %d more like it in the last %.0f s "
                    "(the last: %s)", broker_id, ip, count, self.WINDOW_S, message)
            if reopen:  # a flood goes on: one line a window
                self._open(ip, broker_id, logging.INFO, message)

    def flush(self) -> None:
        """Log the counts of the open windows (at stop; loop thread)."""
        for ip in list(self.windows):
            self._end(ip, reopen=False)


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


class Sandbox:
    """An embedded Kafka cluster. Use as a context manager, or start() / stop()."""

    def __init__(self, brokers: int | None = None, port_base: int | None = None,
                 racks: list[str] | None = None, host: str | None = None,
                 cluster_id: str | None = None, configs: dict[str, str] | None = None,
                 data_dir: str | None = None, mode: str | None = None,
                 controllers: int | None = None, serve_control: bool = False,
                 hosts: list[str] | None = None, listeners: list[str] | None = None,
                 sasl_mechanisms: list[str] | None = None, users: dict[str, str] | None = None,
                 tls_dir: str | None = None, reauth_ms: int | None = None, ssl_client_auth: str = "none",
                 oauth_jwks: dict | str | None = None, oauth_options: dict[str, str] | None = None,
                 kerberos_keytab: str | None = None, kerberos_principal: str | None = None,
                 authorizer: bool = False, super_users: list[str] | None = None,
                 allow_everyone_if_no_acl_found: bool = False, kafka_version: str | None = None,
                 seed_apis: bool = False, dynamic_quorum: bool = False):
        """`brokers` (default 3). `mode`: "kraft" (the default: `controllers` voters of their own,
        default 1, with ids 100, 101..., see `controller_id_base`) or "zk" (the controller is a
        broker). Ports: free ones, or from `port_base`: brokers first, then controllers, then the
        control listener. `host`: the listen address (default 127.0.0.1). `serve_control`: serve
        the control endpoint (`sandbox.control`) for other processes. A cluster kept in
        `data_dir` comes back as it was: `brokers`, `mode`, `controllers`, `port_base` and `host`
        must match it (persist.StateError otherwise). `dynamic_quorum`: the controllers form a
        dynamic quorum (kraft.version 1, KIP-853: `kafka-storage format --initial-controllers`),
        whose voters AddRaftVoter and RemoveRaftVoter change (`add_controller` starts a new
        controller to add); without it a static one (kraft.version 0), as Kafka's default format.

        Security (see docs/security.md): `listeners`, names from LISTENERS (default one
        PLAINTEXT), each on its own port per broker (the first on the broker's port; `bootstrap_for`
        gives each one's list); `sasl_mechanisms` the SASL listeners enable (default PLAIN,
        SCRAM-SHA-256, SCRAM-SHA-512); `users` name -> password for PLAIN and SCRAM; `tls_dir` where
        the CA (`ca.pem`, for clients) and broker certificate are kept or made (default a new
        temporary directory); `ssl_client_auth` (none, requested, required) for the SSL listener;
        `reauth_ms`: connections.max.reauth.ms (KIP-368). `authorizer`: check ACLs as Kafka's
        StandardAuthorizer does, `super_users` ("User:admin") bypassing them
        (`allow_everyone_if_no_acl_found`: a resource without ACLs is open).

        Kafka's behaviour (`kafka_shell.protocol.definitions`): `kafka_version` the release the sandbox
        follows, its API versions and configs ("4.4", the default, or "3.9"; zk mode implies and
        needs 3.9); `configs` its static broker configs (server.properties: `--broker-config`);
        `seed_apis` also serves the seeds' APIs no Kafka release has (KAFKA-20098's
        GetReplicaLogInfo and designated ElectLeaders v3)."""
        self.listeners = list(listeners or [PLAINTEXT])
        unknown = [n for n in self.listeners if n not in LISTENERS]
        if unknown or not self.listeners or len(set(self.listeners)) != len(self.listeners):
            raise ValueError(f"bad listeners {','.join(self.listeners)}: name each of "
                             f"{', '.join(LISTENERS)} at most once")
        self.sasl_mechanisms = list(sasl_mechanisms or ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
        unsupported = [m for m in self.sasl_mechanisms if m not in security.SERVER_MECHANISMS]
        if unsupported:
            raise ValueError(f"unsupported SASL mechanism {unsupported[0]}: use "
                             f"{', '.join(security.SERVER_MECHANISMS)}")
        if ssl_client_auth not in tls.CLIENT_AUTH:
            raise ValueError(f"bad ssl.client.auth {ssl_client_auth!r}: use {', '.join(tls.CLIENT_AUTH)}")
        self.ssl_client_auth = ssl_client_auth
        if mode is not None and mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}: use kraft or zk")
        if mode == ZK and (controllers is not None or dynamic_quorum):
            raise ValueError("a zk-mode sandbox has no controller quorum (its controller is a broker)")
        saved = journal.recover(data_dir) if data_dir else None  # first: damage refuses before any write
        self.tls_dir: str | None = None
        if any(n.endswith("SSL") for n in self.listeners):
            import tempfile
            # With --data-dir the CA is kept there, so clients keep trusting it across restarts.
            default = str(Path(data_dir) / "tls") if data_dir else tempfile.mkdtemp(prefix="kafka-sandbox-tls-")
            self.tls_dir = str(tls.ensure_certificates(tls_dir or default))
        self._tls_contexts: dict[str, ssl.SSLContext] = {}
        self.users: dict[str, str] = {}
        if saved is not None:
            persist.check_arguments(saved[0], Path(data_dir) / persist.STATE_FILE,  # type: ignore[arg-type]
                                    brokers, mode, controllers, port_base, host)
        brokers = 3 if brokers is None else brokers
        mode = KRAFT if mode is None else mode
        controllers = 1 if controllers is None else controllers
        if brokers < 1:
            raise ValueError("a sandbox needs at least one broker")
        if racks and len(racks) not in (1, brokers):
            raise ValueError(f"--rack needs one rack or {brokers} racks, got {len(racks)}")
        if hosts and len(hosts) != brokers:
            raise ValueError(f"--hosts needs {brokers} host names (one per broker), got {len(hosts)}")
        if mode == KRAFT and controllers < 1:
            raise ValueError("a KRaft sandbox needs at least one controller")
        voters = controllers if mode == KRAFT else 0
        base = controller_id_base(brokers)
        listen = host or "127.0.0.1"
        self.cluster = Cluster(
            cluster_id=cluster_id or _cluster_id(),
            brokers={
                i: Broker(id=i, host=listen, port=(port_base + i - 1) if port_base else 0,
                          rack=(racks[(i - 1) % len(racks)] if racks else None),
                          host_name=hosts[i - 1] if hosts else f"broker-{i}.sandbox")
                for i in range(1, brokers + 1)
            },
            mode=mode,
            controllers={
                base + k: Controller(id=base + k, host=listen,
                                     port=(port_base + brokers + k) if port_base else 0)
                for k in range(voters)
            },
        )
        # SASL logins: OAUTHBEARER takes signed tokens checked against the JWK set `oauth_jwks` (a
        # dict or a JSON file), else unsecured ones; `oauth_options` holds Kafka's settings for it
        # by name (sandbox/oauthbearer.py). GSSAPI logs in as the broker with `kerberos_keytab` and
        # `kerberos_principal` (else any key of the keytab): sandbox/kerberos.py.
        self.oauth_jwks, self.oauth_options = oauth_jwks, dict(oauth_options or {})
        self.kerberos_keytab, self.kerberos_principal = kerberos_keytab, kerberos_principal
        if oauth_jwks is not None or oauth_options:
            from kafka_shell.sandbox.oauthbearer import validator
            validator(oauth_jwks, self.oauth_options)  # bad settings fail here, not at a login
        self.data_dir = data_dir
        self.journal: journal.Journal | None = None
        self._journal_seq = 0
        if saved is not None:
            # A kept cluster comes back as it was (its mode, nodes, ports and racks).
            self.cluster, self._journal_seq = saved
            nodes: list[Broker | Controller] = [*self.cluster.brokers.values(),
                                                *self.cluster.controllers.values()]
            for n in nodes:
                n.host = host or n.host
        self.cluster.kafka_version = self._kafka_version(kafka_version)
        self.seed_apis = seed_apis
        self.cluster.static_configs = self._static_configs(configs or {}, reauth_ms)
        if saved is None:
            self._bootstrap_configs()
            if dynamic_quorum:
                features.finalized(self.cluster)[quorum.KRAFT_VERSION] = quorum.DYNAMIC_LEVEL
        for user, password in (users or {}).items():
            security.add_user(self, user, password)
        self.handlers = handlers.load()
        self.authorizer = Authorizer(super_users, allow_everyone_if_no_acl_found) if authorizer else None
        self._servers = {i: _BrokerServer(self, b, self.listeners[0]) for i, b in self.cluster.brokers.items()}
        self._listener_servers = {i: self._extra_listeners(b, port_base) for i, b in self.cluster.brokers.items()}
        self._controller_servers = {i: _BrokerServer(self, c) for i, c in self.cluster.controllers.items()}
        self._control_server: _BrokerServer | None = None
        if serve_control:
            c = self.cluster
            # Where it was (a kept cluster), else after the brokers and controllers.
            control_port = c.control_port if c.control_port is not None else \
                (port_base + len(c.brokers) + len(c.controllers)) if port_base else 0
            nodes_host = next(iter(c.brokers.values())).host  # served where the nodes are
            self._control_server = _BrokerServer(self, control.ControlNode(host=nodes_host,
                                                                           port=control_port))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._background: set[asyncio.Task] = set()
        self.closed_connections = _ClosedConnections()
        # Replication's catch-up ticker runs on the loop (a plain function: snapshots deep-copy extras).
        self.cluster.extras["spawn"] = lambda coro: self.spawn(coro)

    # -- lifecycle ----------------------------------------------------------------------------

    def _kafka_version(self, wanted: str | None) -> str:
        """The release to follow: `wanted`, else 3.9 for zk mode (Kafka 4.0 removed ZooKeeper), else 4.4."""
        zk = not self.cluster.kraft
        version = definitions.check_release(wanted) if wanted else definitions.ZK_RELEASE if zk else definitions.DEFAULT_RELEASE
        if zk and not releases.release(version).has_zookeeper:
            raise ValueError(f"Kafka {version} has no ZooKeeper mode (4.0 removed it): use --kafka-version "
                             f"{definitions.ZK_RELEASE} with --mode zk, or drop --mode zk")
        return version

    def _static_configs(self, given: dict[str, str], reauth_ms: int | None) -> dict[str, str]:
        """The static broker configs, checked as Kafka checks server.properties (a bad value stops
        it); a kept cluster's older state may hold some among its dynamic ones."""
        static = {k: v for k, v in self.cluster.cluster_configs.items() if configs.is_static(self.cluster, k)}
        for key in static:
            del self.cluster.cluster_configs[key]
        if reauth_ms is not None:
            static["connections.max.reauth.ms"] = str(int(reauth_ms))
        for key, value in given.items():
            configs.check_static(self.cluster, key, value)
            static[key] = value
        return static

    def _bootstrap_configs(self) -> None:
        """What a new cluster's metadata holds before any request: with ELR (Kafka 4.x KRaft), the
        cluster-wide min.insync.replicas Kafka's controller writes at bootstrap."""
        if configs.elr_enabled(self.cluster):
            self.cluster.cluster_configs.setdefault(
                configs.MIN_ISR, configs.broker_value(self.cluster, None, configs.MIN_ISR) or "1")

    def _all_servers(self) -> list[_BrokerServer]:
        servers = [*self._servers.values(), *self._controller_servers.values()]
        servers += [s for extra in self._listener_servers.values() for s in extra]
        return servers + ([self._control_server] if self._control_server else [])

    def _extra_listeners(self, b: Broker, port_base: int | None = None) -> list[_BrokerServer]:
        """The servers of a broker's listeners after the first. From `port_base` their ports
        follow the brokers', controllers' and control listener's, listener by listener."""
        servers = []
        for k, name in enumerate(self.listeners[1:]):
            server = _BrokerServer(self, b, name)
            if port_base and not b.listener_ports.get(name):
                c = self.cluster
                server.port = port_base + len(c.brokers) + len(c.controllers) + 1 + k * len(c.brokers) + b.id - 1
            servers.append(server)
        return servers

    def _broker_servers(self, broker_id: int) -> list[_BrokerServer]:
        return [self._servers[broker_id], *self._listener_servers.get(broker_id, [])]

    def tls_context(self, listener: str) -> ssl.SSLContext:
        """The TLS context of an SSL or SASL_SSL listener (client certificates asked for on
        the SSL listener only, as ssl.client.auth applies there)."""
        ctx = self._tls_contexts.get(listener)
        if ctx is None:
            assert self.tls_dir is not None
            auth = self.ssl_client_auth if listener == "SSL" else "none"
            ctx = self._tls_contexts[listener] = tls.server_context(self.tls_dir, auth)
        return ctx

    def bootstrap_for(self, listener: str) -> str:
        """host:port,... of the brokers' `listener`."""
        if listener not in self.listeners:
            raise ValueError(f"the sandbox has no {listener} listener (it has {', '.join(self.listeners)})")
        if listener == self.listeners[0]:
            return self.bootstrap
        return ",".join(f"{b.host}:{b.listener_ports[listener]}" for b in self.cluster.brokers.values())

    def start(self) -> Sandbox:
        lock = journal.lock(self.data_dir) if self.data_dir else None
        servers = self._all_servers()
        socks: list[socket.socket] = []
        try:
            # Bind every port up front, in this thread, so a taken port fails start() at once.
            for server in servers:
                socks.append(_bind(server.broker.host, server.port))
                server.port = socks[-1].getsockname()[1]
            if self._control_server is not None:
                self.cluster.control_port = self._control_server.broker.port
            if lock is not None and self.data_dir:
                self.journal = journal.Journal.open(self.cluster, self.data_dir, self._journal_seq, lock)
        except BaseException:
            for sock in socks:
                sock.close()
            if lock is not None:
                os.close(lock)
            raise
        ready = threading.Event()
        loop = self._loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(loop)
            for server, sock in zip(servers, socks):
                loop.run_until_complete(server.listen(sock))
            replication.elect_controller(self.cluster)
            transactions.start(self.cluster)   # loads the transaction log, aborts timed-out transactions
            cleaner.start(self.cluster)        # log retention and compaction
            loop.call_soon(self._resume)
            if self.journal is not None:
                self.spawn(self.journal.run_periodic())
            ready.set()
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="kafka-sandbox", daemon=True)
        self._thread.start()
        ready.wait()
        return self

    def _resume(self) -> None:
        """What a --data-dir brought back goes on: group members' sessions, reassignments."""
        groups.Coordinator(self.cluster, self.spawn).resume()
        consumer_groups.Coordinator(self.cluster).resume()
        share_groups.Coordinator(self.cluster).resume()
        replication.settle(self.cluster)

    def stop(self) -> None:
        if self._loop is None:
            return

        async def shutdown() -> None:
            for t in list(self._background):
                t.cancel()
            servers = self._all_servers()
            tasks = [t for s in servers for t in s.connections.values()]
            tasks += list(self._background)
            for s in servers:
                await s.close()
            # Let the cancelled tasks unwind before the loop stops.
            await asyncio.gather(*tasks, return_exceptions=True)
            self.closed_connections.flush()

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(5)
        if self.journal is not None:
            # Served no more: write the whole state (no time limit: a big state takes a while).
            asyncio.run_coroutine_threadsafe(self.journal.close(), self._loop).result()
            self.journal = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)  # type: ignore[union-attr]
        self._loop.close()
        self._loop = None

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{b.host}:{b.port}" for b in self.cluster.brokers.values())

    @property
    def mode(self) -> str:
        return self.cluster.mode

    @property
    def controller_ids(self) -> list[int]:
        """The KRaft voters' ids (none in zk mode)."""
        return sorted(self.cluster.controllers)

    @property
    def active_controller(self) -> int:
        """The active controller's id (a broker's in zk mode), -1 when there is none."""
        return self.cluster.controller_id

    @property
    def controller_epoch(self) -> int:
        return self.cluster.controller_epoch

    @property
    def bootstrap_controllers(self) -> str:
        """host:port,... of the controller listeners ("" in zk mode)."""
        return ",".join(f"{c.host}:{c.port}" for c in self.cluster.controllers.values())

    @property
    def control_address(self) -> str | None:
        """host:port of the control endpoint, when served (`serve_control=True`)."""
        if self._control_server is None:
            return None
        return f"{self._control_server.broker.host}:{self._control_server.broker.port}"

    def status(self) -> dict:
        """The cluster's nodes and controller as plain data (the shell's `sandbox status`)."""
        def go() -> dict:
            c = self.cluster
            def failures(n: Broker | Controller) -> dict[str, str]:
                return {codec.api_name(k): _error_name(v) for k, v in n.failures.items()}

            return {
                "mode": c.mode, "kafka_version": c.kafka_version, "seed_apis": self.seed_apis,
                "cluster_id": c.cluster_id, "active_controller": c.controller_id,
                "controller_epoch": c.controller_epoch, "bootstrap": self.bootstrap,
                "bootstrap_controllers": self.bootstrap_controllers, "control": self.control_address,
                "brokers": [{"id": b.id, "host": b.host, "port": b.port, "rack": b.rack,
                             "alive": b.alive, "fenced": b.fenced, "delay_ms": b.delay_ms,
                             "failures": failures(b)} for b in c.brokers.values()],
                "controllers": [{**self._controller_info(n), "delay_ms": n.delay_ms, "failures": failures(n)}
                                for n in c.controllers.values()],
                "kraft_version": quorum.kraft_version(c) if c.kraft else None,
                "controller_changes": [dict(e) for e in replication.controller_changes(c)],
            }
        return self.call(go)  # type: ignore[return-value]

    def principals(self) -> list[tuple[str, str]]:
        """(listener, principal) of each open client connection to the brokers, in no order."""
        def go() -> list[tuple[str, str]]:
            return [(server.listener, conn.principal)
                    for i in self.cluster.brokers for server in self._broker_servers(i)
                    for conn in server.connections]
        return self.call(go)  # type: ignore[return-value]

    def address(self, node_id: int) -> tuple[str, int]:
        """host, port of a broker's listener, or of a KRaft controller's CONTROLLER listener."""
        self._check_node(node_id)
        b = self.cluster.node(node_id)
        return b.host, b.port  # type: ignore[union-attr]

    def call(self, fn: Callable, *args: object) -> object:
        """Run fn(*args) in the loop thread (awaiting it if it is a coroutine) and return its result."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("Sandbox.call from the loop thread would deadlock")

        async def run() -> object:
            result = fn(*args)
            if asyncio.iscoroutine(result):
                result = await result
            if self.journal is not None:
                await self.journal.sync()  # a fault injected or a state set is kept like a request's
            return result

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(30)  # type: ignore[arg-type]

    def spawn(self, coro: Awaitable[object]) -> asyncio.Task:
        """Start a background task on the loop (loop thread only); cancelled at stop()."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # -- fault injection ---------------------------------------------------------------------

    def stop_broker(self, broker_id: int) -> None:
        self._check_broker(broker_id)

        async def go() -> None:
            b = self.cluster.brokers[broker_id]
            if not b.alive:
                return
            for server in self._broker_servers(broker_id):
                await server.close()
            b.alive = False
            replication.broker_stopped(self.cluster, broker_id)

        self.call(go)

    def start_broker(self, broker_id: int) -> None:
        self._check_broker(broker_id)

        async def go() -> None:
            b = self.cluster.brokers[broker_id]
            if b.alive:
                return
            for server in self._broker_servers(broker_id):
                await server.listen()
            b.alive = True
            b.registered = True  # a starting broker registers (again)
            b.epoch += 1
            replication.broker_started(self.cluster, broker_id)

        self.call(go)

    def replace_broker(self, broker_id: int, host_name: str | None = None, lose_disk: bool = False,
                       mapping_topic: str = MAPPING_TOPIC) -> tuple[int, str]:
        """Broker `broker_id`'s machine is repaired and starts again, on `host_name` (default: its
        own). With its disk it keeps its id (broker.id / meta.properties). With a lost disk and
        no id configured it takes one by KIP-426's startup procedure (the mapping, else the one
        missing id, else a new id), its replicas empty until they catch up from the leaders.
        Then, as the KIP's broker does, it records its host in the mapping topic if that exists.
        Returns the id it took and why ("meta.properties", "mapping", "only missing id")."""
        self._check_broker(broker_id)
        self.stop_broker(broker_id)
        host = host_name or self.cluster.brokers[broker_id].host_name or f"broker-{broker_id}.sandbox"

        async def go() -> tuple[int, str]:
            if not lose_disk:
                chosen, reason = broker_id, "meta.properties"
            else:
                choice = identity.startup_choice(self.cluster, host, mapping_topic)
                if choice.broker_id is None:
                    raise ValueError(f"several ids are missing ({', '.join(map(str, choice.candidates))}): "
                                     f"a broker on {host} without an id needs a human decision (KIP-426); "
                                     "give it one with --keep-id or start the broker you mean")
                if choice.broker_id not in self.cluster.brokers:
                    # A new id (KIP-426): a new broker starts; broker_id stays missing until a human
                    # reassigns its partitions, as on a real cluster.
                    self._check_new_broker_id(choice.broker_id)
                    return choice.broker_id, choice.reason
                if self.cluster.brokers[choice.broker_id].alive:
                    raise ValueError(f"a broker on {host} would take id {choice.broker_id}, which is live")
                chosen, reason = choice.broker_id, choice.reason
                identity.lose_disk(self.cluster, chosen)
            self.cluster.brokers[chosen].host_name = host
            self.cluster.changed()
            return chosen, reason

        answer: tuple[int, str] = self.call(go)  # type: ignore[assignment]
        chosen, reason = answer
        if chosen == broker_id or self.call(lambda: chosen in self.cluster.brokers):
            self.start_broker(chosen)
        else:
            self.add_broker(chosen, host, rack=self.cluster.brokers[broker_id].rack)
        if self.call(lambda: mapping_topic in self.cluster.topics):
            self._record_host(mapping_topic, host, chosen)
        return chosen, reason

    def add_broker(self, broker_id: int | None = None, host_name: str | None = None,
                   rack: str | None = None) -> int:
        """Start a new broker (in KRaft mode a broker, never a voter) with its own listener on the
        nodes' address and a free port, registered with the controller (fenced while a KRaft
        cluster has no active controller). It holds no replicas until partitions are reassigned
        to it. `broker_id` defaults to the highest broker id + 1. A --data-dir keeps it (its
        port too), so a restart with --brokers must count it. Returns its id."""
        async def go() -> int:
            c = self.cluster
            new_id = max(c.brokers) + 1 if broker_id is None else broker_id
            self._check_new_broker_id(new_id)
            listen = next(iter(c.brokers.values())).host
            b = Broker(id=new_id, host=listen, port=0, rack=rack,
                       host_name=host_name or f"broker-{new_id}.sandbox", fenced=not c.controller_available)
            server = _BrokerServer(self, b, self.listeners[0])
            await server.listen()
            c.brokers[new_id] = b
            self._servers[new_id] = server
            self._listener_servers[new_id] = self._extra_listeners(b)
            for extra in self._listener_servers[new_id]:
                await extra.listen()
            replication.broker_started(c, new_id)
            return new_id

        return self.call(go)  # type: ignore[return-value]

    def add_controller(self, controller_id: int | None = None, directory_id: str | None = None) -> dict:
        """Start a new KRaft controller (`kafka-storage format --no-initial-controllers`, then
        start): it follows the quorum as an observer until AddRaftVoter makes it a voter.
        `controller_id` defaults to the highest controller id + 1, `directory_id` (a UUID, or a
        Kafka Uuid in base64) to one of its own. A --data-dir keeps it, so a restart with
        --controllers must count it. Returns its id, directory id (as Kafka prints it), host and
        port."""
        if not self.cluster.kraft:
            raise ValueError("a zk-mode sandbox has no controller quorum (its controller is a broker)")
        directory = quorum.parse_directory_id(directory_id) if directory_id else None

        async def go() -> dict:
            c = self.cluster
            new_id = max(c.controllers) + 1 if controller_id is None else controller_id
            if new_id < 0 or c.node(new_id) is not None:
                raise ValueError(f"cannot add controller {new_id}: the id is taken (or negative)")
            if directory is not None and any(quorum.directory_of(c, n) == directory for n in c.controllers.values()):
                raise ValueError(f"cannot add controller {new_id}: directory id {directory_id} is taken")
            node = Controller(id=new_id, host=next(iter(c.controllers.values())).host, port=0,
                              directory_id=directory or uuid.uuid4(), voter=False)
            server = _BrokerServer(self, node)
            await server.listen()
            c.controllers[new_id] = node
            self._controller_servers[new_id] = server
            c.changed()   # its registration in the metadata log
            return self._controller_info(node)

        return self.call(go)  # type: ignore[return-value]

    def _controller_info(self, c: Controller) -> dict:
        return {"id": c.id, "directory_id": quorum.kafka_uuid(quorum.directory_of(self.cluster, c)),
                "host": c.host, "port": c.port, "voter": c.voter, "alive": c.alive}

    def _check_new_broker_id(self, broker_id: int) -> None:
        if broker_id < 0 or self.cluster.node(broker_id) is not None:
            raise ValueError(f"cannot add broker {broker_id}: the id is taken (or negative)")

    def _record_host(self, topic: str, host: str, broker_id: int) -> None:
        """Write host -> id to the mapping topic with a real producer, as a starting broker would."""
        from confluent_kafka import Producer
        failures: list[str] = []
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "log_level": 0})
        producer.produce(topic, key=host.encode(), value=mapping_value(broker_id), partition=0,
                         on_delivery=lambda error, _msg: failures.append(error.str()) if error else None)
        if producer.flush(10) or failures:
            raise ValueError(f"broker {broker_id} could not record {host} in {topic}: "
                             f"{failures[0] if failures else 'not acknowledged'}")

    def kill_controller(self) -> int:
        """The active controller resigns (is killed and restarts): another candidate takes over
        (a voter in KRaft mode, a broker in zk mode), a lone one comes back at once with a higher
        epoch. Returns the new active controller's id."""
        return self.call(replication.move_controller, self.cluster)  # type: ignore[return-value]

    def stop_controller(self, controller_id: int) -> None:
        """Stop a KRaft voter: its listener closes; if it was active another live voter takes
        over (epoch + 1), and with none left there is no active controller (-1)."""
        self._check_controller(controller_id)

        async def go() -> None:
            c = self.cluster.controllers[controller_id]
            if not c.alive:
                return
            await self._controller_servers[controller_id].close()
            c.alive = False
            replication.controller_stopped(self.cluster, controller_id)

        self.call(go)

    def start_controller(self, controller_id: int) -> None:
        """Start a stopped voter; a quorum without a leader elects it at once."""
        self._check_controller(controller_id)

        async def go() -> None:
            c = self.cluster.controllers[controller_id]
            if c.alive:
                return
            await self._controller_servers[controller_id].listen()
            c.alive = True
            replication.controller_started(self.cluster, controller_id)

        self.call(go)

    def add_acls(self, *bindings: AclBinding) -> None:
        """Create ACL bindings directly (as a super user would with CreateAcls): how a test or an
        operator grants the first permissions when no principal can yet."""
        def go() -> None:
            store = acl_store(self.cluster)
            for b in bindings:
                problem = binding_problem(b)
                if problem:
                    raise ValueError(problem)
                if b not in store:
                    store.append(b)
            self.cluster.changed()
        self.call(go)

    def delay(self, broker_id: int, ms: int) -> None:
        """Make a broker (or a controller) answer every request `ms` later."""
        self._check_node(broker_id)
        self.call(setattr, self.cluster.node(broker_id), "delay_ms", int(ms))

    def fail(self, broker_id: int, api: int | str, error: int | str) -> None:
        """Make broker answer every request of `api` with `error` (names or numbers)."""
        self._check_node(broker_id)
        key = api_key_of(api)
        code = error_code_of(error)
        self.call(self.cluster.node(broker_id).failures.__setitem__, key, code)  # type: ignore[union-attr]

    def heal(self) -> None:
        """Remove every delay and injected error (stopped brokers stay stopped)."""
        def go() -> None:
            nodes: list[Broker | Controller] = [*self.cluster.brokers.values(),
                                                *self.cluster.controllers.values()]
            for b in nodes:
                b.delay_ms = 0
                b.failures.clear()
        self.call(go)

    def set_log_end_offset(self, topic: str, partition: int, broker_id: int, offset: int,
                           epoch: int | None = None) -> None:
        """Set one replica's log end offset (and the leader epoch of its last write): the setup
        of unclean-recovery scenarios, where the replicas of an offline partition differ."""
        self._check_broker(broker_id)

        def go() -> None:
            p = self.cluster.partition(topic, partition)
            if p is None:
                raise ValueError(f"no partition {topic}-{partition} in the sandbox")
            if broker_id not in p.replicas:
                raise ValueError(f"broker {broker_id} holds no replica of {topic}-{partition}")
            if offset < 0:
                raise ValueError("a log end offset cannot be negative")
            p.leo[broker_id] = int(offset)
            if epoch is not None:
                p.replica_epoch[broker_id] = int(epoch)
            replication.settle(self.cluster)  # an online partition's followers re-sync

        self.call(go)

    def set_replication_rate(self, bytes_per_second: int | None) -> None:
        """Out-of-sync replicas catch up at this rate per follower broker (None: at once)."""
        def go() -> None:
            if bytes_per_second is None:
                self.cluster.extras.pop(replication.REPLICATION_RATE_KEY, None)
            else:
                self.cluster.extras[replication.REPLICATION_RATE_KEY] = int(bytes_per_second)
            replication.settle(self.cluster)
        self.call(go)

    def _check_broker(self, broker_id: int) -> None:
        if broker_id not in self.cluster.brokers:
            ids = ", ".join(map(str, self.cluster.brokers))
            raise ValueError(f"no broker {broker_id} in the sandbox (brokers: {ids})")

    def _check_controller(self, controller_id: int) -> None:
        if controller_id not in self.cluster.controllers:
            if not self.cluster.kraft:
                raise ValueError("a zk-mode sandbox has no controller quorum (its controller is a "
                                 "broker: use kill-controller or stop-broker)")
            ids = ", ".join(map(str, self.cluster.controllers))
            raise ValueError(f"no controller {controller_id} in the sandbox (controllers: {ids})")

    def _check_node(self, node_id: int) -> None:
        if self.cluster.node(node_id) is None:
            ids = ", ".join(map(str, [*self.cluster.brokers, *self.cluster.controllers]))
            raise ValueError(f"no broker or controller {node_id} in the sandbox (nodes: {ids})")

    # -- request dispatch (loop thread) -------------------------------------------------------

    def listener_kind(self, node: Broker | Controller) -> str:
        if isinstance(node, Controller):
            return definitions.CONTROLLER
        return definitions.BROKER if self.cluster.kraft else definitions.ZK_BROKER

    def served_apis(self, node: Broker | Controller) -> dict[int, range]:
        """What a node's listener lists in ApiVersions: api key -> versions (sandbox.apis)."""
        return apis.listed(self.cluster.kafka_version, self.listener_kind(node), self.seed_apis, self.handlers)

    async def dispatch(self, broker: Node, body: bytes, principal: str = ANONYMOUS,
                       listener: str = PLAINTEXT, client_host: str = "127.0.0.1",
                       token_authenticated: bool = False) -> bytes | None:
        api_key, version, correlation_id = codec.peek_header(body)
        if api_key == control.SANDBOX_CONTROL_KEY and self._control_server is not None:
            return await control.serve(self, body, correlation_id)
        if isinstance(broker, control.ControlNode):
            raise codec.ProtocolError("the control listener serves only the sandbox control API")
        api = self.handlers.get(api_key)
        listed, accepted = apis.versions(self.cluster.kafka_version, self.listener_kind(broker), api_key,
                                         api.versions, self.seed_apis) if api is not None else (None, None)
        if api is None or listed is None or accepted is None:
            # Kafka closes the connection on an API key it does not know (or that this
            # listener does not serve).
            raise codec.ProtocolError(f"unknown api key {api_key}")
        if version not in accepted:
            if api_key == API_VERSIONS_KEY:
                # Answer in v0 so any client can read it, then it retries with a version we list.
                return self._api_versions_v0_error(correlation_id, listed)
            raise codec.ProtocolError(f"unsupported {codec.api_name(api_key)} v{version}")
        header, request = codec.decode_request(body)
        if broker.delay_ms:
            await asyncio.sleep(broker.delay_ms / 1000)
        ctx = RequestContext(self, broker, header, request, api_key, version, principal=principal,
                             listener=listener, client_host=client_host, token_authenticated=token_authenticated)
        if self.cluster.kraft and isinstance(broker, Broker) and api_key in FORWARDED_APIS:
            ctx.forwarded = await self._await_controller(request)
        result = api.handler(ctx)
        if asyncio.iscoroutine(result):
            result = await result
        if self.journal is not None:
            await self.journal.sync()  # what this answer acknowledges is on disk first
        if result is None:
            return None  # e.g. Produce with acks=0
        if ctx.forwarded is False:
            # Kafka's ForwardingManager.onTimeout: the request's error response, REQUEST_TIMED_OUT.
            result = _with_error(result, Error.request_timed_out)
        injected = broker.failures.get(api_key)
        if injected is not None:
            result = _with_error(result, injected)
        cls = codec.response_schema(api_key, version)
        return codec.encode_response(codec.build(cls, result), correlation_id)

    async def _await_controller(self, request: object) -> bool:
        """Wait, as a KRaft broker's forwarding does, for an active controller; False when none
        came within the request's own timeout (at most FORWARD_TIMEOUT_S)."""
        if self.cluster.controller_available:
            return True
        timeout = getattr(request, "timeout", None)
        wait_s = FORWARD_TIMEOUT_S
        if timeout is not None:
            seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout / 1000
            wait_s = min(wait_s, max(seconds, 0.0))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while not self.cluster.controller_available:
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(min(FORWARD_POLL_S, max(deadline - loop.time(), 0.0)))
        return True

    def _api_versions_v0_error(self, correlation_id: int, served: range) -> bytes:
        cls = codec.response_schema(API_VERSIONS_KEY, 0)
        entity = codec.build(cls, {
            "error_code": ErrorCode.unsupported_version,
            "api_keys": [{"api_key": API_VERSIONS_KEY, "min_version": served.start,
                          "max_version": served.stop - 1}],
        })
        return codec.encode_response(entity, correlation_id)


def _with_error(tree: object, code: int) -> object:
    """The response with every error_code in it set to `code` (Kafka's getErrorResponse does the
    same: the error on every element the request named)."""
    if isinstance(tree, dict):
        out = {k: _with_error(v, code) for k, v in tree.items()}
        if "error_code" in out or not any(isinstance(v, (list, dict)) for v in tree.values()):
            out["error_code"] = code
        return out
    if isinstance(tree, list):
        return [_with_error(v, code) for v in tree]
    return tree


def controller_id_base(brokers: int) -> int:
    """The first KRaft controller id: 100, or the next power of ten above the broker ids when
    there are 100 brokers or more (1000 for 100-999 brokers), so the ids never collide."""
    base = CONTROLLER_ID_BASE
    while base <= brokers:
        base *= 10
    return base


def _error_name(code: int) -> str:
    try:
        return Error(code).name.upper()
    except ValueError:
        return str(code)


def _cluster_id() -> str:
    import base64
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def api_key_of(api: int | str) -> int:
    """An API key from a number or a name like `Metadata`, `metadata` or `CREATE_TOPICS`."""
    if isinstance(api, int) or str(api).isdigit():
        return int(api)
    wanted = str(api).replace("_", "").replace("-", "").lower()
    for key in handlers.HANDLERS:
        if codec.api_name(key).lower() == wanted:
            return key
    raise ValueError(f"unknown API {api!r}: use a name such as Metadata or CreateTopics, or a key")


def error_code_of(error: int | str) -> int:
    """An error code from a number or a name like `NOT_CONTROLLER` / `not_controller`."""
    if isinstance(error, int) or str(error).lstrip("-").isdigit():
        return int(error)
    try:
        return int(ErrorCode[str(error).lower()])
    except KeyError:
        raise ValueError(f"unknown error {error!r}: use a Kafka error name such as NOT_CONTROLLER") from None
