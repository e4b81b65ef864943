"""The sandbox: N brokers in one process, each on its own loopback port, served by one asyncio
loop on a background thread. In KRaft mode (the default) a quorum of controllers with their own
node ids and CONTROLLER listeners runs beside them; in zk mode the controller is a broker.

Python callers (tests, the shell's `sandbox` commands) use `Sandbox`; every state change runs in
the loop thread through `Sandbox.call`, so handlers never see concurrent mutation. What it is
started with is a `SandboxConfig` (sandbox/config.py); its listeners are sandbox/listeners.py,
requests are served by sandbox/dispatch.py, and its fault API is sandbox/faults.py.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import ssl
import tempfile
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar, overload

from kafka_shell.protocol import codec, definitions
from kafka_shell.protocol.definitions import releases
from kafka_shell.sandbox import (cleaner, configs, consumer_groups, control, classic_groups, directories, handlers, journal,
                                 persist, propagation, quorum, registrations, replay, replication, security, share_groups,
                                 streams_groups, tls, transactions)
from kafka_shell.sandbox.authorizer import Authorizer
from kafka_shell.sandbox.config import LISTENERS, PLAINTEXT, SandboxConfig
from kafka_shell.sandbox.dispatch import error_name
from kafka_shell.sandbox.faults import FaultControls
from kafka_shell.sandbox.handlers import features
from kafka_shell.sandbox.listeners import ClosedConnections, NodeServer, bind
from kafka_shell.sandbox.model import Broker, ClusterState, Controller
from kafka_shell.sandbox.records import (BROKER_RESOURCE, ConfigRecord, Endpoint, Record, RegisterBrokerRecord,
                                         RegisterControllerRecord, VotersRecord)
from kafka_shell.sandbox.registrations import CONTROLLER_LISTENER

__all__ = ["LISTENERS", "PLAINTEXT", "Sandbox", "SandboxConfig", "controller_id_base"]

T = TypeVar("T")
CONTROLLER_ID_BASE = 100


class Sandbox(FaultControls):
    """An embedded Kafka cluster. Use as a context manager, or start() / stop(). Made from a
    `SandboxConfig`, or from its fields as keywords: `Sandbox(brokers=3, mode="zk")`."""

    def __init__(self, config: SandboxConfig | None = None, **options: Any):
        self.config = config = config if config is not None else SandboxConfig(**options)
        self.listeners, self.sasl_mechanisms = config.listener_names, config.mechanisms
        self.ssl_client_auth = config.ssl_client_auth
        self.data_dir = data_dir = config.data_dir
        saved = journal.recover(data_dir) if data_dir else None  # first: damage refuses before any write
        self.tls_dir: str | None = None
        if any(n.endswith("SSL") for n in self.listeners):
            # With --data-dir the CA is kept there, so clients keep trusting it across restarts.
            default = str(Path(data_dir) / "tls") if data_dir else tempfile.mkdtemp(prefix="kafka-sandbox-tls-")
            self.tls_dir = str(tls.ensure_certificates(config.tls_dir or default))
        self._tls_contexts: dict[str, ssl.SSLContext] = {}
        self.users: dict[str, str] = {}
        if saved is not None and data_dir:
            persist.check_arguments(saved[0], Path(data_dir) / persist.STATE_FILE, config.brokers, config.mode,
                                    config.controllers, config.port_base, config.host, config.log_dirs_per_broker)
        shape = config.shape()
        # A kept cluster comes back as it was (its mode, nodes, ports and racks).
        self.cluster, self._journal_seq = saved if saved is not None else (_new_cluster(config, *shape), 0)
        self.cluster.runtime.first_listener = self.listeners[0]
        if saved is not None and config.host:   # its nodes serve where --listen says
            replay.apply_all(self.cluster, [
                *(registrations.broker_registration(self.cluster, b, host=config.host) for b in self.cluster.brokers.values()),
                *(registrations.controller_registration(c, host=config.host) for c in self.cluster.controllers.values())])
        # SASL logins (sandbox/oauthbearer.py, sandbox/kerberos.py).
        self.oauth_jwks, self.oauth_options = config.oauth_jwks, dict(config.oauth_options or {})
        self.kerberos_keytab, self.kerberos_principal = config.kerberos_keytab, config.kerberos_principal
        self.journal: journal.Journal | None = None
        self.cluster.kafka_version = self._kafka_version(config.kafka_version)
        self.seed_apis = config.seed_apis
        self.cluster.static_configs = self._static_configs(config.configs or {}, config.reauth_ms)
        if saved is None:
            replay.apply_all(self.cluster, features.bootstrap_records(self.cluster, config.dynamic_quorum))
            self._bootstrap_configs()
        for user, password in (config.users or {}).items():
            security.add_user(self, user, password)
        self.handlers = handlers.load()
        self.authorizer = Authorizer(config.super_users, config.allow_everyone_if_no_acl_found) \
            if config.authorizer else None
        port_base = config.port_base
        self._servers = {i: NodeServer(self, b, self.listeners[0]) for i, b in self.cluster.brokers.items()}
        self._listener_servers = {i: self._extra_listeners(b, port_base) for i, b in self.cluster.brokers.items()}
        self._controller_servers = {i: NodeServer(self, c) for i, c in self.cluster.controllers.items()}
        self.control_server: NodeServer | None = None
        if config.serve_control:
            c = self.cluster
            # Where it was (a kept cluster), else after the brokers and controllers.
            control_port = c.control_port if c.control_port is not None else \
                (port_base + len(c.brokers) + len(c.controllers)) if port_base else 0
            nodes_host = next(iter(c.brokers.values())).host  # served where the nodes are
            self.control_server = NodeServer(self, control.ControlNode(host=nodes_host, port=control_port))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._background: set[asyncio.Task] = set()
        self.closed_connections = ClosedConnections()
        self.cluster.runtime.spawn = self.spawn   # background work of the modules (replication, cleaner...)

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
        dynamic = self.cluster.cluster_configs
        static = {k: v for k, v in dynamic.items() if configs.is_static(self.cluster, k)}
        replay.apply_all(self.cluster, configs.config_records(BROKER_RESOURCE, "", dynamic,
                                                              {k: v for k, v in dynamic.items() if k not in static}))
        if reauth_ms is not None:
            static["connections.max.reauth.ms"] = str(int(reauth_ms))
        for key, value in given.items():
            configs.check_static(self.cluster, key, value)
            static[key] = value
        return static

    def _bootstrap_configs(self) -> None:
        """What a new cluster's metadata holds before any request: with ELR (Kafka 4.x KRaft), the
        cluster-wide min.insync.replicas Kafka's controller writes at bootstrap."""
        if configs.elr_enabled(self.cluster) and configs.MIN_ISR not in self.cluster.cluster_configs:
            replay.apply(self.cluster, ConfigRecord(BROKER_RESOURCE, "", configs.MIN_ISR,
                                                    configs.broker_value(self.cluster, None, configs.MIN_ISR) or "1"))

    def _all_servers(self) -> list[NodeServer]:
        servers = [*self._servers.values(), *self._controller_servers.values()]
        servers += [s for extra in self._listener_servers.values() for s in extra]
        return servers + ([self.control_server] if self.control_server else [])

    def _extra_listeners(self, b: Broker, port_base: int | None = None) -> list[NodeServer]:
        """The servers of a broker's listeners after the first. From `port_base` their ports
        follow the brokers', controllers' and control listener's, listener by listener."""
        servers = []
        for k, name in enumerate(self.listeners[1:]):
            server = NodeServer(self, b, name)
            if port_base and not b.listener_ports.get(name):
                c = self.cluster
                server.port = port_base + len(c.brokers) + len(c.controllers) + 1 + k * len(c.brokers) + b.id - 1
            servers.append(server)
        return servers

    def _node_server(self, node: Broker | Controller, listener: str = PLAINTEXT) -> NodeServer:
        return NodeServer(self, node, listener)

    def _broker_servers(self, broker_id: int) -> list[NodeServer]:
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
                socks.append(bind(server.broker.host, server.port))
                server.port = socks[-1].getsockname()[1]
            if self.control_server is not None:
                self.cluster.control_port = self.control_server.port
            self._register_nodes()
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

    def _register_nodes(self) -> None:
        """Every node registers as it starts, on the ports it bound; a broker with a new epoch."""
        c = self.cluster
        records: list[Record] = []
        for i, b in c.brokers.items():
            first, *others = self._broker_servers(i)
            records.append(registrations.broker_registration(
                c, b, epoch=b.epoch + 1, port=first.port, listener_ports={s.listener: s.port for s in others}))
        records += [registrations.controller_registration(n, port=self._controller_servers[i].port)
                    for i, n in c.controllers.items()]
        replay.apply_all(c, records)

    def _resume(self) -> None:
        """What a --data-dir brought back goes on: group members' sessions, reassignments."""
        classic_groups.Coordinator(self.cluster, self.spawn).resume()
        consumer_groups.Coordinator(self.cluster).resume()
        share_groups.Coordinator(self.cluster).resume()
        streams_groups.Coordinator(self.cluster).resume()
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

        async def sweep() -> None:
            # Whatever task is left ends inside the loop: one collected while pending would be
            # logged ("Task was destroyed but it is pending!") and run its cleanup with no loop.
            left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in left:
                t.cancel()
            await asyncio.gather(*left, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(sweep(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)
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
        if self.control_server is None:
            return None
        return f"{self.control_server.broker.host}:{self.control_server.port}"

    def status(self) -> dict:
        """The cluster's nodes and controller as plain data (the shell's `sandbox status`)."""
        def go() -> dict:
            c = self.cluster
            def failures(n: Broker | Controller) -> dict[str, str]:
                return {codec.api_name(k): error_name(v) for k, v in n.failures.items()}

            lags = propagation.lags(c)

            return {
                "mode": c.mode, "kafka_version": c.kafka_version, "seed_apis": self.seed_apis,
                "cluster_id": c.cluster_id, "active_controller": c.controller_id,
                "controller_epoch": c.controller_epoch, "bootstrap": self.bootstrap,
                "bootstrap_controllers": self.bootstrap_controllers, "control": self.control_address,
                "brokers": [{"id": b.id, "host": b.host, "port": b.port, "rack": b.rack,
                             "alive": b.alive, "fenced": b.fenced, "delay_ms": b.delay_ms,
                             "metadata_lag_ms": lags.get(b.id, 0), "failures": failures(b)}
                            for b in c.brokers.values()],
                "controllers": [{**self._controller_info(n), "delay_ms": n.delay_ms, "failures": failures(n)}
                                for n in c.controllers.values()],
                "kraft_version": quorum.kraft_version(c) if c.kraft else None,
                "controller_changes": [dict(e) for e in replication.controller_changes(c)],
            }
        return self.call(go)

    def principals(self) -> list[tuple[str, str]]:
        """(listener, principal) of each open client connection to the brokers, in no order."""
        def go() -> list[tuple[str, str]]:
            return [(server.listener, conn.principal)
                    for i in self.cluster.brokers for server in self._broker_servers(i)
                    for conn in server.connections]
        return self.call(go)

    def address(self, node_id: int) -> tuple[str, int]:
        """host, port of a broker's listener, or of a KRaft controller's CONTROLLER listener."""
        b = self._node(node_id)
        return b.host, b.port

    @overload
    def call(self, fn: Callable[..., Coroutine[Any, Any, T]], *args: object) -> T: ...

    @overload
    def call(self, fn: Callable[..., T], *args: object) -> T: ...

    def call(self, fn: Callable[..., Any], *args: object) -> Any:
        """Run fn(*args) in the loop thread (awaiting it if it is a coroutine) and return its result."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("Sandbox.call from the loop thread would deadlock")
        assert self._loop is not None, "the sandbox is not running"

        async def run() -> object:
            result = fn(*args)
            if asyncio.iscoroutine(result):
                result = await result
            propagation.observe(self.cluster)
            if self.journal is not None:
                await self.journal.sync()  # a fault injected or a state set is kept like a request's
            return result

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(30)

    def spawn(self, coro: Awaitable[object]) -> asyncio.Task:
        """Start a background task on the loop (loop thread only); cancelled at stop()."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task


def _new_cluster(config: SandboxConfig, brokers: int, mode: str, voters: int) -> ClusterState:
    """A new cluster's nodes: brokers 1..N, controllers from `controller_id_base`, on free ports
    or from `port_base` (each registers again with the ports it bound when it starts: a broker's
    first epoch is 1)."""
    base, listen, port_base, racks, hosts = (controller_id_base(brokers), config.host or "127.0.0.1",
                                             config.port_base, config.racks, config.hosts)
    cluster = ClusterState(cluster_id=config.cluster_id or _cluster_id(), brokers={}, mode=mode)
    controllers = [base + k for k in range(voters)]
    records: list[Record] = [
        RegisterControllerRecord(i, (Endpoint(CONTROLLER_LISTENER, listen, port_base + brokers + k if port_base else 0),))
        for k, i in enumerate(controllers)]
    if controllers:
        records.append(VotersRecord(tuple(controllers)))
    records += [RegisterBrokerRecord(i, 0, (Endpoint(config.listener_names[0], listen, port_base + i - 1 if port_base else 0),),
                                     racks[(i - 1) % len(racks)] if racks else None,
                                     host_name=hosts[i - 1] if hosts else f"broker-{i}.sandbox",
                                     log_dirs=directories.new_dirs(i, config.log_dirs_per_broker or 1))
                for i in range(1, brokers + 1)]
    replay.apply_all(cluster, records)
    return cluster


def controller_id_base(brokers: int) -> int:
    """The first KRaft controller id: 100, or the next power of ten above the broker ids when
    there are 100 brokers or more (1000 for 100-999 brokers), so the ids never collide."""
    base = CONTROLLER_ID_BASE
    while base <= brokers:
        base *= 10
    return base


def _cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
