"""The sandbox: N brokers in one process, each on its own loopback port, served by one asyncio
loop on a background thread.

Python callers (tests, the shell's `sandbox` commands) use `Sandbox`; every state change runs in
the loop thread through `Sandbox.call`, so handlers never see concurrent mutation.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import struct
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from kafka_shell import protocol
from kafka_shell.sandbox import handlers, journal, persist, replication
from kafka_shell.sandbox.model import Broker, Cluster

log = logging.getLogger("kafka_shell.sandbox")

API_VERSIONS_KEY = 18


@dataclass
class RequestContext:
    sandbox: Sandbox
    broker: Broker
    header: object
    request: object
    api_key: int
    version: int

    @property
    def cluster(self) -> Cluster:
        return self.sandbox.cluster

    @property
    def is_controller(self) -> bool:
        return self.broker.id == self.cluster.controller_id


class _BrokerServer:
    """The listening socket and open connections of one broker."""

    def __init__(self, sandbox: Sandbox, broker: Broker):
        self.sandbox = sandbox
        self.broker = broker
        self.server: asyncio.base_events.Server | None = None
        self.connections: dict[asyncio.StreamWriter, asyncio.Task] = {}

    async def listen(self, sock: socket.socket | None = None) -> None:
        if sock is None:
            sock = _bind(self.broker.host, self.broker.port)
        self.server = await asyncio.start_server(self._serve, sock=sock, limit=2**20)
        self.broker.port = sock.getsockname()[1]

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        # Drop every connection and cancel its task (a long-polling Fetch may be waiting in it).
        for writer, task in list(self.connections.items()):
            writer.transport.abort()
            task.cancel()
        self.connections.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections[writer] = asyncio.current_task()  # type: ignore[assignment]
        try:
            while True:
                head = await reader.readexactly(4)
                (size,) = struct.unpack(">i", head)
                if size < 8 or size > protocol.MAX_FRAME:
                    raise protocol.ProtocolError(f"frame size {size} out of bounds")
                body = await reader.readexactly(size)
                response = await self.sandbox.dispatch(self.broker, body)
                if response is not None:
                    writer.write(response)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:
            # close() cancels connections (a long-polling Fetch may be waiting). Ending normally
            # keeps asyncio's stream callback, which calls task.exception(), from logging it.
            pass
        except protocol.ProtocolError as exc:
            log.info("broker %d closes a connection: %s", self.broker.id, exc)
        finally:
            self.connections.pop(writer, None)
            writer.transport.abort()


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


class Sandbox:
    """An embedded Kafka cluster. Use as a context manager, or start() / stop()."""

    def __init__(self, brokers: int | None = None, port_base: int | None = None,
                 racks: list[str] | None = None, host: str | None = None,
                 cluster_id: str | None = None, configs: dict[str, str] | None = None,
                 data_dir: str | None = None):
        """`brokers` (default 3), `port_base` and `host` (the listen address, default 127.0.0.1)
        must match the cluster kept in `data_dir`, if any (persist.StateError otherwise)."""
        saved = journal.recover(data_dir) if data_dir else None
        if saved is not None:
            persist.check_arguments(saved[0], Path(data_dir) / persist.STATE_FILE,  # type: ignore[arg-type]
                                    brokers, port_base, host)
        brokers = 3 if brokers is None else brokers
        if brokers < 1:
            raise ValueError("a sandbox needs at least one broker")
        if racks and len(racks) not in (1, brokers):
            raise ValueError(f"--racks needs one rack or {brokers} racks, got {len(racks)}")
        self.cluster = Cluster(
            cluster_id=cluster_id or _cluster_id(),
            brokers={
                i: Broker(id=i, host=host or "127.0.0.1", port=(port_base + i - 1) if port_base else 0,
                          rack=(racks[(i - 1) % len(racks)] if racks else None))
                for i in range(1, brokers + 1)
            },
            cluster_configs=dict(configs or {}),
        )
        self.data_dir = data_dir
        self.journal: journal.Journal | None = None
        self._journal_seq = 0
        if saved is not None:
            # A kept cluster comes back as it was (its brokers, ports and racks).
            self.cluster, self._journal_seq = saved
            for b in self.cluster.brokers.values():
                b.host = host or b.host
        self.handlers = handlers.load()
        self._servers = {i: _BrokerServer(self, b) for i, b in self.cluster.brokers.items()}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._background: set[asyncio.Task] = set()
        # Replication's catch-up ticker runs on the loop (a plain function: snapshots deep-copy extras).
        self.cluster.extras["spawn"] = lambda coro: self.spawn(coro)

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Sandbox:
        lock = journal.lock(self.data_dir) if self.data_dir else None
        socks: dict[int, socket.socket] = {}
        try:
            # Bind every port up front, in this thread, so a taken port fails start() at once.
            for i, b in self.cluster.brokers.items():
                socks[i] = _bind(b.host, b.port)
                b.port = socks[i].getsockname()[1]
            if lock is not None and self.data_dir:
                self.journal = journal.Journal.open(self.cluster, self.data_dir, self._journal_seq, lock)
        except BaseException:
            for s in socks.values():
                s.close()
            if lock is not None:
                os.close(lock)
            raise
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            for i, s in socks.items():
                self._loop.run_until_complete(self._servers[i].listen(s))
            replication.elect_controller(self.cluster)
            if self.journal is not None:
                self.spawn(self.journal.run_periodic())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="kafka-sandbox", daemon=True)
        self._thread.start()
        ready.wait()
        return self

    def stop(self) -> None:
        if self._loop is None:
            return

        async def shutdown() -> None:
            for t in list(self._background):
                t.cancel()
            tasks = [t for s in self._servers.values() for t in s.connections.values()]
            tasks += list(self._background)
            for s in self._servers.values():
                await s.close()
            # Let the cancelled tasks unwind before the loop stops.
            await asyncio.gather(*tasks, return_exceptions=True)

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

    def address(self, broker_id: int) -> tuple[str, int]:
        b = self.cluster.brokers[broker_id]
        return b.host, b.port

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

    def spawn(self, coro: object) -> asyncio.Task:
        """Start a background task on the loop (loop thread only); cancelled at stop()."""
        task = asyncio.ensure_future(coro)  # type: ignore[arg-type]
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
            await self._servers[broker_id].close()
            b.alive = False
            b.fenced = True
            replication.broker_stopped(self.cluster, broker_id)

        self.call(go)

    def start_broker(self, broker_id: int) -> None:
        self._check_broker(broker_id)

        async def go() -> None:
            b = self.cluster.brokers[broker_id]
            if b.alive:
                return
            await self._servers[broker_id].listen()
            b.alive = True
            b.fenced = False
            b.epoch += 1
            replication.broker_started(self.cluster, broker_id)

        self.call(go)

    def kill_controller(self) -> int:
        """The active controller resigns; another live broker takes over. Returns the new id."""
        return self.call(replication.move_controller, self.cluster)  # type: ignore[return-value]

    def delay(self, broker_id: int, ms: int) -> None:
        self._check_broker(broker_id)
        self.call(setattr, self.cluster.brokers[broker_id], "delay_ms", int(ms))

    def fail(self, broker_id: int, api: int | str, error: int | str) -> None:
        """Make broker answer every request of `api` with `error` (names or numbers)."""
        self._check_broker(broker_id)
        key = api_key_of(api)
        code = error_code_of(error)
        self.call(self.cluster.brokers[broker_id].failures.__setitem__, key, code)

    def heal(self) -> None:
        """Remove every delay and injected error (stopped brokers stay stopped)."""
        def go() -> None:
            for b in self.cluster.brokers.values():
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

    # -- request dispatch (loop thread) -------------------------------------------------------

    async def dispatch(self, broker: Broker, body: bytes) -> bytes | None:
        api_key, version, correlation_id = protocol.peek_header(body)
        api = self.handlers.get(api_key)
        if api is None:
            # Kafka closes the connection on an API key it does not know.
            raise protocol.ProtocolError(f"unknown api key {api_key}")
        if version not in api.versions:
            if api_key == API_VERSIONS_KEY:
                # Answer in v0 so any client can read it, then it retries with a version we list.
                return self._api_versions_v0_error(correlation_id)
            raise protocol.ProtocolError(f"unsupported {protocol.api_name(api_key)} v{version}")
        header, request = protocol.decode_request(body)
        if broker.delay_ms:
            await asyncio.sleep(broker.delay_ms / 1000)
        ctx = RequestContext(self, broker, header, request, api_key, version)
        result = api.handler(ctx)
        if asyncio.iscoroutine(result):
            result = await result
        if self.journal is not None:
            await self.journal.sync()  # what this answer acknowledges is on disk first
        if result is None:
            return None  # e.g. Produce with acks=0
        injected = broker.failures.get(api_key)
        if injected is not None:
            result = _with_error(result, injected)
        cls = protocol.response_schema(api_key, version)
        return protocol.encode_response(protocol.build(cls, result), correlation_id)

    def _api_versions_v0_error(self, correlation_id: int) -> bytes:
        cls = protocol.response_schema(API_VERSIONS_KEY, 0)
        served = self.handlers[API_VERSIONS_KEY].versions
        entity = protocol.build(cls, {
            "error_code": ErrorCode.unsupported_version,
            "api_keys": [{"api_key": API_VERSIONS_KEY, "min_version": served.start,
                          "max_version": served.stop - 1}],
        })
        return protocol.encode_response(entity, correlation_id)


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


def _cluster_id() -> str:
    import base64
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def api_key_of(api: int | str) -> int:
    """An API key from a number or a name like `Metadata`, `metadata` or `CREATE_TOPICS`."""
    if isinstance(api, int) or str(api).isdigit():
        return int(api)
    wanted = str(api).replace("_", "").replace("-", "").lower()
    for key in handlers.HANDLERS:
        if protocol.api_name(key).lower() == wanted:
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
