"""The sandbox's listeners: one `NodeServer` per node and listener (a broker's, a controller's
CONTROLLER listener, the control endpoint), each accepting `Connection`s that frame requests and
serve them one at a time, in order, with Kafka's socket-server limits from the broker configs:
socket.request.max.bytes, queued.max.request.bytes (`RequestMemory`, shared by the whole
sandbox), max.connections, max.connections.per.ip and connections.max.idle.ms.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import socket
import time
import weakref
from typing import TYPE_CHECKING

from kafka_shell.protocol import codec
from kafka_shell.sandbox import configs, share_groups, tls
from kafka_shell.sandbox.authenticator import SaslAuthenticator
from kafka_shell.sandbox.config import PLAINTEXT
from kafka_shell.sandbox.dispatch import ANONYMOUS, Node, dispatch
from kafka_shell.sandbox.model import Broker

if TYPE_CHECKING:
    from kafka_shell.sandbox.server import Sandbox

log = logging.getLogger("kafka_shell.sandbox")


class RequestMemory:
    """queued.max.request.bytes for the whole sandbox process: the bytes of requests being read
    or waiting for their answer. Counted as they arrive (a declared 100 MiB frame holds what has
    come so far), so a few large partial frames cannot starve everyone else. While the total is
    at or over the limit, a connection that holds more than the request it is being served for
    stops reading (like Kafka's memory pool muting channels) until the total drops."""

    def __init__(self, sandbox: Sandbox):
        self.sandbox = weakref.ref(sandbox)  # a strong one would keep the sandbox in `_memory` for good
        self.used = 0
        self.paused: set[Connection] = set()

    def limit(self) -> int:
        sandbox = self.sandbox()
        return -1 if sandbox is None else config_int(sandbox, None, "queued.max.request.bytes")

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


_memory: weakref.WeakKeyDictionary[Sandbox, RequestMemory] = weakref.WeakKeyDictionary()


def request_memory(sandbox: Sandbox) -> RequestMemory:
    memory = _memory.get(sandbox)
    if memory is None:
        memory = _memory[sandbox] = RequestMemory(sandbox)
    return memory


def config_int(sandbox: Sandbox, broker_id: int | None, key: str) -> int:
    return int(configs.broker_value(sandbox.cluster, broker_id, key) or -1)


class Connection(asyncio.Protocol):
    """One client connection: frames its bytes into requests and serves them one at a time, in
    order, on its own task. The task is cancelled when the client leaves, so nothing (a
    long-polling Fetch, an acks=all Produce) keeps waiting for a client that is gone."""

    def __init__(self, server: NodeServer, ip: str):
        self.server = server
        self.ip = ip
        self.principal = ANONYMOUS  # until SASL or a TLS client certificate says who it is
        self.sasl = server.authenticator()  # None on a listener without SASL
        self.closing = False  # close once the answers written so far are sent
        self.ended = False    # close() ran
        self.memory = request_memory(server.sandbox)
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
            max_bytes = config_int(self.server.sandbox, self.server.broker.id, "socket.request.max.bytes")
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
                        response = await dispatch(
                            self.server.sandbox, self.server.broker, body, self.principal, self.server.listener, self.ip,
                            token_authenticated=self.sasl is not None and self.sasl.token_authenticated,
                            connection=self)
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
        """Drop the connection and whatever it holds, and end its task (idempotent). Also for a
        connection whose transport never came (a TLS handshake cut short by a stop): its task
        waits for requests and must end inside the loop, not be collected pending."""
        if self.ended:
            return
        self.ended = True
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
        share_groups.connection_closed(self.server.sandbox.cluster, self)
        if self.task is not asyncio.current_task():
            self.task.cancel()


class NodeServer:
    """The listening socket and open connections of one node: a broker, a controller (its
    CONTROLLER listener) or the control endpoint, with Kafka's socket-server limits read from
    the broker configs: socket.request.max.bytes, queued.max.request.bytes (shared by the whole
    sandbox), max.connections, max.connections.per.ip and connections.max.idle.ms."""

    def __init__(self, sandbox: Sandbox, broker: Node, listener: str = PLAINTEXT):
        self.sandbox = sandbox
        self.broker = broker
        # A broker's first listener is on broker.port, the others on broker.listener_ports: the
        # registered ports, where this server binds (0: a free one; the node then registers it).
        self.listener = listener
        self.primary = not isinstance(broker, Broker) or listener == sandbox.listeners[0]
        self.port = broker.listener_ports.get(listener, 0) if isinstance(broker, Broker) and not self.primary \
            else broker.port
        self.sock: socket.socket | None = None
        self.connections: dict[Connection, asyncio.Task] = {}
        self.per_ip: collections.Counter[str] = collections.Counter()
        self._tasks: list[asyncio.Task] = []

    @property
    def tls(self) -> bool:
        return isinstance(self.broker, Broker) and self.listener.endswith("SSL")

    def authenticator(self) -> SaslAuthenticator | None:
        if not isinstance(self.broker, Broker) or not self.listener.startswith("SASL"):
            return None
        return SaslAuthenticator(self.sandbox, self.broker.id, self.sandbox.sasl_mechanisms)

    async def listen(self, sock: socket.socket | None = None) -> None:
        if sock is None:
            sock = bind(self.broker.host, self.port)
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

    def forget(self, conn: Connection) -> None:
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
            conn = Connection(self, address[0])
            self.connections[conn] = conn.task
            self.per_ip[conn.ip] += 1
            if self.tls:
                # The TLS handshake runs beside the accept loop: a slow client holds up no one.
                self.sandbox.spawn(self._connect(conn, client))
            else:
                await self._connect(conn, client)

    async def _connect(self, conn: Connection, client: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.connect_accepted_socket(lambda: conn, client,
                                               ssl=self.sandbox.tls_context(self.listener) if self.tls else None)
        except OSError as exc:
            if self.tls:
                log.info("broker %d: TLS handshake with %s failed: %s", self.broker.id, conn.ip, exc)
            conn.close()
            client.close()

    def _refusal(self, ip: str) -> str | None:
        """Why a new connection from `ip` is over a limit, or None."""
        total = config_int(self.sandbox, self.broker.id, "max.connections")
        if len(self.connections) >= total:
            return f"max.connections ({total}) reached"
        per_ip = config_int(self.sandbox, self.broker.id, "max.connections.per.ip")
        if self.per_ip[ip] >= per_ip:
            return f"max.connections.per.ip ({per_ip}) reached"
        return None

    async def _expire_idle(self) -> None:
        """connections.max.idle.ms: close connections with no request in service and no bytes
        in or out for longer than that (a negative value turns it off, as in Kafka). Also close
        connections that stopped reading (queued.max.request.bytes) whose client has left."""
        loop = asyncio.get_running_loop()
        while True:
            idle_s = config_int(self.sandbox, self.broker.id, "connections.max.idle.ms") / 1000
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


class ClosedConnections:
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


def bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock
