"""Real Apache Kafka clusters for the tests, from the jars `.ci/kafka-dist` resolves from Maven
Central (versions pinned in `.ci/kafka-versions`).

`RealKafka` starts one cluster on free 127.0.0.1 ports: `java -cp 'libs/*'`, `kafka.tools.StorageTool
format` for each KRaft node, then `kafka.Kafka` (ZooKeeper's own `QuorumPeerMain` first in zk
mode), small heaps, each node's log in its directory (kept, and printed, when a start fails).
Every process it starts dies with the test process (PR_SET_PDEATHSIG), and `stop()` ends them.

The session fixtures in conftest.py start each kind of cluster once and share it; a test that
breaks one (kills a broker) calls `restore()` (or uses the `restored` context manager) so the
next test finds it whole.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 120.0


def pinned_versions() -> dict[str, str]:
    """{"KAFKA_4": "4.4.0", "KAFKA_3": "3.9.2"}: the one place the versions are pinned."""
    pins = {}
    for line in (REPO / ".ci" / "kafka-versions").read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.startswith("#"):
            pins[key.strip()] = value.strip()
    return pins


KAFKA_4 = pinned_versions()["KAFKA_4"]
KAFKA_3 = pinned_versions()["KAFKA_3"]


def kafka_libs(version: str) -> Path:
    """The directory of Kafka `version`'s jars (resolved once, then cached outside the repo)."""
    if shutil.which("java") is None:
        raise RuntimeError("java is not on the PATH: run bash .ci/bootstrap")
    done = subprocess.run([str(REPO / ".ci" / "kafka-dist"), version], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f".ci/kafka-dist {version} failed: {done.stderr.strip()[-2000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def kafka_uuid() -> str:
    """A Kafka Uuid as its tools print it: 16 random bytes, URL-safe base64 without padding;
    never one that starts with "-" (Kafka's Uuid.randomUuid draws again: a command line would
    take it for an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def _ephemeral_ports() -> range:
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999
    return range(low, high + 1)


EPHEMERAL = _ephemeral_ports()


def free_port() -> int:
    """A free 127.0.0.1 port below the kernel's ephemeral range: a node keeps its port across a
    restart, and a port from that range could meanwhile become the local port of any outgoing
    connection (then the restarted node fails with "Address already in use")."""
    for _ in range(1000):
        port = random.randrange(10000, EPHEMERAL.start) if EPHEMERAL.start > 11000 else random.randrange(1024, 65536)
        if port in EPHEMERAL:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


def _die_with_parent() -> None:
    """In the child: SIGKILL when the test process dies, so no JVM outlives a killed pytest."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


# PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not the process: a node
# started from a short-lived thread (a test's worker thread) would be killed with it. So every
# process is forked by this one thread, which lives as long as the test process.
_SPAWNER = ThreadPoolExecutor(1, thread_name_prefix="real-kafka-spawner")


def _spawn(cmd: list[str], **kwargs) -> subprocess.Popen:
    return _SPAWNER.submit(subprocess.Popen, cmd, preexec_fn=_die_with_parent, **kwargs).result()


@dataclass
class Node:
    """One process: a KRaft controller, a broker (or both, `roles`), or ZooKeeper."""
    node_id: int
    roles: str              # "controller", "broker", "broker,controller" or "zookeeper"
    directory: Path
    port: int               # its client-facing listener (the CONTROLLER listener of a controller)
    controller_port: int | None = None   # a combined node's CONTROLLER listener
    directory_id: str = field(default_factory=kafka_uuid)
    proc: subprocess.Popen | None = None
    down: bool = False      # stopped or killed on purpose (start_node / restore bring it back)
    extra_ports: dict[str, int] = field(default_factory=dict)   # listener name -> port
    joining: bool = False   # a controller formatted to join a dynamic quorum (not an initial voter)

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def log(self) -> Path:
        return self.directory / "logs" / "server.log"


# What kafka-server-start.sh and kafka-run-class.sh give the JVM (KAFKA_HEAP_OPTS and
# KAFKA_JVM_PERFORMANCE_OPTS): a broker as operators run it, whose JIT compiles hot code fully.
# The harness's own options (a small heap, the serial collector, the first JIT tier only) start
# it faster for tests but make it answer large requests slower.
KAFKA_SCRIPT_JVM = ["-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                    "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15"]


class RealKafka:
    """A real Kafka cluster on loopback.

    mode "kraft": `controllers` controller nodes (ids 100, 101, ...) and `brokers` broker nodes
    (ids 1..N); `dynamic_quorum` formats with `--initial-controllers` (kraft.version 1, KIP-853:
    voters can be added and removed) instead of the static `controller.quorum.voters`;
    `combined` runs one node with both roles (id 1). mode "zk" (3.9 only): ZooKeeper and
    `brokers` brokers. `broker_configs` are added to every broker's server.properties;
    `listeners` (name -> security protocol) adds client listeners beside `primary_listener`
    (PLAINTEXT unless named there), the one on each broker's `port`, which `bootstrap` lists and
    brokers talk to each other on; `client_config` is how the readiness check's client connects
    to it (see `secured`).
    """

    def __init__(self, version: str = KAFKA_4, mode: str = "kraft", controllers: int = 1, brokers: int = 3,
                 *, dynamic_quorum: bool = False, combined: bool = False, racks: list[str] | None = None,
                 broker_configs: dict[str, str] | None = None, controller_configs: dict[str, str] | None = None,
                 listeners: dict[str, str] | None = None, primary_listener: str = "PLAINTEXT",
                 controller_protocol: str = "PLAINTEXT",
                 scram_users: list[str] | None = None, client_config: dict[str, str] | None = None,
                 heap: str = "320m", root: Path | None = None, log_dirs: int = 1, kafka_jvm: bool = False):
        if mode not in ("kraft", "zk"):
            raise ValueError(f"mode must be kraft or zk, not {mode}")
        if mode == "zk" and int(version.split(".")[0]) >= 4:
            raise ValueError("Kafka 4.x has no ZooKeeper mode: use KAFKA_3")
        self.version, self.mode, self.heap = version, mode, heap
        self.kafka_jvm = kafka_jvm   # the JVM options Kafka's own start script gives (bench/), not the harness's
        self.dynamic_quorum, self.combined = dynamic_quorum, combined
        self.racks = racks
        self.log_dirs = log_dirs    # log dirs per broker: data, data-2, ... (KIP-1066 cordons them one by one)
        self.broker_configs = dict(broker_configs or {})
        self.controller_configs = dict(controller_configs or {})
        self.listeners = dict(listeners or {})
        self.listeners.setdefault(primary_listener, "PLAINTEXT")
        self.primary_listener, self.controller_protocol = primary_listener, controller_protocol
        self.client_config = dict(client_config or {})   # how wait_ready's client logs in
        self.tls_dir: Path | None = None   # where a secured node's CA and certificates are
        self.scram_users = list(scram_users or [])   # kafka-storage format --add-scram entries
        self.cluster_id = kafka_uuid()
        self.root = Path(root) if root else Path(os.environ.get("TMPDIR", "/tmp")) / f"real-kafka-{os.getpid()}-{os.urandom(3).hex()}"
        self.libs: Path | None = None
        self.nodes: dict[int, Node] = {}
        if mode == "zk":
            self.nodes[0] = Node(0, "zookeeper", self.root / "zookeeper", free_port())
            for i in range(1, brokers + 1):
                self.nodes[i] = Node(i, "broker", self.root / f"broker-{i}", free_port())
        elif combined:
            self.nodes[1] = Node(1, "broker,controller", self.root / "node-1", free_port(), controller_port=free_port())
        else:
            for i in range(controllers):
                self.nodes[100 + i] = Node(100 + i, "controller", self.root / f"controller-{100 + i}", free_port())
            for i in range(1, brokers + 1):
                self.nodes[i] = Node(i, "broker", self.root / f"broker-{i}", free_port())
        for node in self.nodes.values():
            if node.is_broker:
                node.extra_ports = {name: free_port() for name in self.listeners if name != primary_listener}

    # -- addresses ----------------------------------------------------------------------------

    @property
    def brokers(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.is_broker]

    @property
    def controllers(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.is_controller]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.brokers)

    def bootstrap_for(self, listener: str) -> str:
        """The bootstrap of a listener (a `listeners` name)."""
        if listener == self.primary_listener:
            return self.bootstrap
        return ",".join(f"127.0.0.1:{n.extra_ports[listener]}" for n in self.brokers)

    @property
    def bootstrap_controllers(self) -> str:
        return ",".join(f"127.0.0.1:{self._controller_port(n)}" for n in self.controllers)

    @staticmethod
    def _controller_port(node: Node) -> int:
        return node.controller_port if node.controller_port is not None else node.port

    def _voters(self) -> str:
        return ",".join(f"{n.node_id}@127.0.0.1:{self._controller_port(n)}" for n in self.controllers)

    # -- configuration ------------------------------------------------------------------------

    def _java(self, main: str, *args: str, node: Node | None = None, heap: str | None = None) -> list[str]:
        assert self.libs is not None
        props = []
        if node is not None:
            logs = node.directory / "logs"
            props = [f"-Dkafka.logs.dir={logs}"]
            if int(self.version.split(".")[0]) >= 4:
                props.append(f"-Dlog4j2.configurationFile={node.directory / 'log4j2.properties'}")
            else:
                props.append(f"-Dlog4j.configuration=file:{node.directory / 'log4j.properties'}")
        jvm = KAFKA_SCRIPT_JVM if self.kafka_jvm and heap is None else [
            f"-Xmx{heap or self.heap}", "-Xms32m", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
        return ["java", *jvm, "-XX:-UsePerfData", "-Djava.awt.headless=true",
                "-Djava.net.preferIPv4Stack=true", *props, "-cp", f"{self.libs}/*", main, *args]

    def broker_log_dirs(self, node_id: int) -> list[str]:
        """The log dirs of a broker, as its log.dirs lists them."""
        base = self.nodes[node_id].directory
        return [str(base / "data")] + [str(base / f"data-{i}") for i in range(2, self.log_dirs + 1)]

    def _server_properties(self, node: Node) -> dict[str, str]:
        if self.mode == "zk":
            props = {"broker.id": str(node.node_id), "zookeeper.connect": f"127.0.0.1:{self.nodes[0].port}",
                     "zookeeper.session.timeout.ms": "6000"}
        else:
            props = {"process.roles": node.roles, "node.id": str(node.node_id),
                     "controller.listener.names": "CONTROLLER"}
            if self.dynamic_quorum:
                props["controller.quorum.bootstrap.servers"] = self.bootstrap_controllers
            else:
                props["controller.quorum.voters"] = self._voters()
        # No leader moves on a timer (the controller checks every 300 s): tests see only the
        # moves they cause, as on the sandbox, where it is off by default. Every node gets it:
        # the active controller acts on it (a KRaft controller, or any broker in ZooKeeper mode),
        # and a suite outlasting 300 s saw __consumer_offsets' leaders, and the groups'
        # coordinators with them, move back under its scenarios when only brokers had it.
        props["auto.leader.rebalance.enable"] = "false"
        names, protocols = [], {"CONTROLLER": self.controller_protocol}
        if node.is_broker:
            for name, protocol in self.listeners.items():
                port = node.port if name == self.primary_listener else node.extra_ports[name]
                names.append(f"{name}://127.0.0.1:{port}")
                protocols[name] = protocol
            props["advertised.listeners"] = ",".join(names)
            props["inter.broker.listener.name"] = self.primary_listener
            broker_count = len(self.brokers)
            replication = str(min(3, broker_count))
            props.update({
                "num.partitions": "1", "group.initial.rebalance.delay.ms": "0",
                "offsets.topic.replication.factor": replication, "offsets.topic.num.partitions": "5",
                "transaction.state.log.replication.factor": replication,
                "transaction.state.log.min.isr": str(min(2, broker_count)),
                "transaction.state.log.num.partitions": "5",
                "log.dirs": ",".join(self.broker_log_dirs(node.node_id)),
            })
            if self.mode == "kraft":
                props.update({"broker.heartbeat.interval.ms": "500", "broker.session.timeout.ms": "4000",
                              # A broker gives up its first registration after 60 s by default: on a
                              # loaded machine a quorum starting beside it can take longer.
                              "initial.broker.registration.timeout.ms": str(int(START_TIMEOUT_S * 1000))})
            if int(self.version.split(".")[0]) >= 4:
                props.update({"share.coordinator.state.topic.replication.factor": replication,
                              "share.coordinator.state.topic.min.isr": str(min(2, broker_count)),
                              "share.coordinator.state.topic.num.partitions": "5",
                              "group.coordinator.rebalance.protocols": "classic,consumer,share,streams"})
            if self.racks:
                props["broker.rack"] = self.racks[(node.node_id - 1) % len(self.racks)]
            props.update(self.broker_configs)
        if node.is_controller:
            names.append(f"CONTROLLER://127.0.0.1:{self._controller_port(node)}")
            props["metadata.log.dir"] = str(node.directory / "metadata")
            if not node.is_broker:
                props["log.dirs"] = str(node.directory / "metadata")
            props.update(self.controller_configs)
        props["listeners"] = ",".join(names)
        if self.mode == "kraft":
            props["listener.security.protocol.map"] = ",".join(f"{k}:{v}" for k, v in protocols.items())
        elif set(self.listeners) != {"PLAINTEXT"}:
            protocols.pop("CONTROLLER")
            props["listener.security.protocol.map"] = ",".join(f"{k}:{v}" for k, v in protocols.items())
        return props

    def server_properties(self, node_id: int) -> dict[str, str]:
        """The server.properties a node runs with."""
        return self._server_properties(self.nodes[node_id])

    def _write_node_files(self, node: Node) -> None:
        node.directory.mkdir(parents=True, exist_ok=True)
        (node.directory / "logs").mkdir(exist_ok=True)
        logs = node.directory / "logs"
        if node.roles == "zookeeper":
            (node.directory / "zookeeper.properties").write_text(
                f"dataDir={node.directory / 'data'}\nclientPort={node.port}\nclientPortAddress=127.0.0.1\n"
                "tickTime=500\nmaxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=*\n")
        else:
            props = self._server_properties(node)
            (node.directory / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (node.directory / "log4j2.properties").write_text(
            "status = warn\n"
            "appender.file.type = File\nappender.file.name = file\n"
            f"appender.file.fileName = {logs}/server.log\n"
            "appender.file.layout.type = PatternLayout\nappender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\nrootLogger.appenderRef.file.ref = file\n")
        (node.directory / "log4j.properties").write_text(
            "log4j.rootLogger=INFO, file\nlog4j.appender.file=org.apache.log4j.FileAppender\n"
            f"log4j.appender.file.File={logs}/server.log\n"
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n")

    def _format_command(self, node: Node) -> list[str]:
        args = ["format", "--config", str(node.directory / "server.properties"), "--cluster-id", self.cluster_id,
                "--ignore-formatted"]
        if self.dynamic_quorum and node.is_controller and not node.joining:
            initial = ",".join(f"{c.node_id}@127.0.0.1:{self._controller_port(c)}:{c.directory_id}"
                               for c in self.controllers)
            args += ["--initial-controllers", initial]
        elif self.dynamic_quorum and int(self.version.split(".")[0]) >= 4:
            args += ["--no-initial-controllers"]
        for entry in self.scram_users:
            args += ["--add-scram", entry]
        return self._java("kafka.tools.StorageTool", *args, node=node, heap="128m")

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> RealKafka:
        self.libs = kafka_libs(self.version)
        self.root.mkdir(parents=True, exist_ok=True)
        for node in self.nodes.values():
            self._write_node_files(node)
        if self.mode == "kraft":
            formats = [(n, _spawn(self._format_command(n), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
                       for n in self.nodes.values()]
            for node, proc in formats:
                out, _ = proc.communicate(timeout=START_TIMEOUT_S)
                if proc.returncode != 0:
                    raise RuntimeError(f"kafka-storage format of node {node.node_id} failed: {out.strip()[-2000:]}")
        else:
            self.start_node(0, wait=False)
            self._wait_port(self.nodes[0])
        for node in self.nodes.values():
            if node.roles != "zookeeper":
                self.start_node(node.node_id, wait=False)
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def start_node(self, node_id: int, wait: bool = True) -> None:
        node = self.nodes[node_id]
        if node.alive:
            return
        if node.roles == "zookeeper":
            cmd = self._java("org.apache.zookeeper.server.quorum.QuorumPeerMain",
                             str(node.directory / "zookeeper.properties"), node=node, heap="128m")
        else:
            cmd = self._java("kafka.Kafka", str(node.directory / "server.properties"), node=node)
        node.down = False
        out = open(node.directory / "logs" / "stdout.log", "ab")
        node.proc = _spawn(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        out.close()
        if wait:
            self.wait_ready()

    def add_controller(self, node_id: int) -> Node:
        """A new controller of a dynamic quorum (KIP-853), formatted with --no-initial-controllers
        and started: it follows the quorum as an observer until AddRaftVoter makes it a voter.
        Its `directory_id` is the one the format wrote (meta.properties)."""
        if not self.dynamic_quorum or node_id in self.nodes:
            raise ValueError(f"cannot add controller {node_id}: needs a dynamic quorum and a new id")
        node = Node(node_id, "controller", self.root / f"controller-{node_id}", free_port(), joining=True)
        self.nodes[node_id] = node
        self._write_node_files(node)
        proc = _spawn(self._format_command(node), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out, _ = proc.communicate(timeout=START_TIMEOUT_S)
        if proc.returncode != 0:
            del self.nodes[node_id]
            raise RuntimeError(f"kafka-storage format of node {node_id} failed: {out.strip()[-2000:]}")
        meta = (node.directory / "metadata" / "meta.properties").read_text()
        node.directory_id = re.search(r"^directory\.id=(\S+)$", meta, re.M).group(1)  # type: ignore[union-attr]
        self.start_node(node_id, wait=False)
        self._wait_port(node)
        return node

    def forget(self, node_id: int) -> None:
        """Kill a node and drop it from the cluster for good (a controller removed from the quorum)."""
        self.kill(node_id)
        del self.nodes[node_id]

    def kill(self, node_id: int) -> None:
        """kill -9 one node (it stays down until `start_node` or `restore`)."""
        node = self.nodes[node_id]
        node.down = True
        if node.proc is not None and node.proc.poll() is None:
            node.proc.kill()
            node.proc.wait(timeout=30)

    def stop_node(self, node_id: int, timeout_s: float = 60.0) -> None:
        """A clean shutdown (SIGTERM: controlled shutdown of a broker), kill -9 after `timeout_s`."""
        node = self.nodes[node_id]
        node.down = True
        if node.proc is not None and node.proc.poll() is None:
            node.proc.terminate()
            try:
                node.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                node.proc.kill()
                node.proc.wait(timeout=30)

    @contextlib.contextmanager
    def paused(self, node_id: int) -> Iterator[Node]:
        """SIGSTOP one node's JVM (a hung broker: its port accepts, nothing answers) for the
        block; SIGCONT afterwards, whatever happened."""
        node = self.nodes[node_id]
        assert node.proc is not None and node.alive, f"node {node_id} is not running"
        node.proc.send_signal(signal.SIGSTOP)
        try:
            yield node
        finally:
            if node.proc.poll() is None:
                node.proc.send_signal(signal.SIGCONT)

    def restore(self) -> None:
        """Start every node that is down and wait until the cluster serves again."""
        for node in self.nodes.values():
            if not node.alive:
                self.start_node(node.node_id, wait=False)
        self.wait_ready()

    @contextlib.contextmanager
    def restored(self) -> Iterator[RealKafka]:
        """For a test that breaks the cluster: restore it afterwards, whatever happened."""
        try:
            yield self
        finally:
            self.restore()

    def stop(self) -> None:
        """Every node killed at once (kill -9): nothing of a test cluster needs a clean shutdown,
        and brokers' controlled shutdowns one after another take half a minute."""
        for node in self.nodes.values():
            self.kill(node.node_id)

    def __enter__(self) -> RealKafka:
        try:
            return self.start()
        except BaseException:
            self.stop()   # nothing of a cluster that did not come up is left running
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- readiness ----------------------------------------------------------------------------

    def _wait_port(self, node: Node, deadline: float | None = None) -> None:
        deadline = deadline or time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", node.port), timeout=1).close()
                return
            except OSError:
                if node.proc is not None and node.proc.poll() is not None:
                    raise RuntimeError(f"node {node.node_id} exited with {node.proc.returncode}\n{self.tail(node)}") from None
                if time.monotonic() > deadline:
                    raise RuntimeError(f"node {node.node_id} did not listen on {node.port}\n{self.tail(node)}") from None
                time.sleep(0.1)

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Every node that is not down on purpose listens, and Metadata lists exactly the brokers
        among them (registered and unfenced)."""
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout_s
        up = [n for n in self.nodes.values() if not n.down]
        for node in up:
            self._wait_port(node, deadline)
        want = {n.node_id for n in up if n.is_broker}
        bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in up if n.is_broker)
        admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0, "logger": _QUIET, **self.client_config})
        seen: set[int] = set()
        while time.monotonic() < deadline:
            try:
                seen = set(admin.list_topics(timeout=5).brokers)
            except Exception:  # noqa: BLE001 - not up yet: ask again until the deadline
                seen = set()
            if seen == want:
                return
            time.sleep(0.2)
        raise RuntimeError(f"brokers {sorted(want - seen)} did not register within {timeout_s:.0f} s\n"
                           + "\n".join(self.tail(n) for n in self.nodes.values()))

    def tail(self, node: Node, lines: int = 30) -> str:
        text = ""
        for path in (node.log, node.directory / "logs" / "stdout.log"):
            if path.exists():
                text += f"--- {path}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) + "\n"
        return text


# -- the secured node -------------------------------------------------------------------------

SECURED_USERS = {"admin": "admin-secret", "alice": "alice-secret"}   # admin is the super user
SECURED_LISTENERS = {"SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL", "SSL": "SSL"}
SECURED_MECHANISMS = ["PLAIN", "SCRAM-SHA-512"]
SUPER_USERS = ["User:admin", "User:CN=admin"]   # admin by SASL, and by its TLS certificate
# delegation.token.secret.key of the secured node (and of the sandbox compared with it): tokens on.
SECURED_TOKEN_SECRET = "kafka-shell-token-secret"


def secured(tls_dir: Path, version: str = KAFKA_4, users: dict[str, str] | None = None,
            root: Path | None = None) -> RealKafka:
    """One combined 4.x node (id 1) with no PLAINTEXT client listener: SASL_PLAINTEXT (PLAIN,
    SCRAM-SHA-512; brokers talk to each other here, as admin over PLAIN), SASL_SSL, and SSL that
    requires a client certificate, so no client is User:ANONYMOUS. StandardAuthorizer with the
    super users admin (SASL) and CN=admin (its certificate); every other user needs ACLs.
    Delegation tokens are on (SECURED_TOKEN_SECRET). The CONTROLLER listener (loopback) is
    SASL_PLAINTEXT as admin too: with PLAINTEXT there the node's own registration would come as
    User:ANONYMOUS and need it as a super user.

    TLS: the CA and the broker certificate of kafka_shell.sandbox.tls in `tls_dir` (a sandbox
    given the same directory uses the same ones), as PEM key and trust stores; client
    certificates `admin.pem`/`admin.key` (CN=admin) and `alice.pem`/`alice.key` (CN=alice) are
    issued there. PLAIN users come from the JAAS config, SCRAM credentials (SHA-256 and -512, as
    the sandbox keeps them) from `kafka-storage format --add-scram`."""
    from kafka_shell.sandbox import tls

    users = dict(users or SECURED_USERS)
    tls_dir = tls.ensure_certificates(tls_dir)
    keystore = tls_dir / "broker-keystore.pem"
    # The key, then the chain: the broker's certificate and the CA's, as the sandbox's TLS sends it.
    keystore.write_bytes(b"".join((tls_dir / name).read_bytes() for name in (tls.BROKER_KEY_FILE, tls.BROKER_CERT_FILE, tls.CA_FILE)))
    keystore.chmod(0o600)
    for user in users:
        tls.issue_certificate(tls_dir, f"CN={user}", user)
    admin_password = users["admin"]
    plain = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
             f'username="admin" password="{admin_password}" '
             + " ".join(f'user_{name}="{password}"' for name, password in users.items()) + ";")
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    configs = {
        "sasl.enabled.mechanisms": ",".join(SECURED_MECHANISMS),
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": plain,
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(tls_dir / tls.CA_FILE),
        "listener.name.ssl.ssl.client.auth": "required",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": ";".join(SUPER_USERS),
        "delegation.token.secret.key": SECURED_TOKEN_SECRET,
    }
    for listener in ("sasl_plaintext", "sasl_ssl"):
        configs[f"listener.name.{listener}.plain.sasl.jaas.config"] = plain
        configs[f"listener.name.{listener}.scram-sha-512.sasl.jaas.config"] = scram
    scram_users = [f"{mechanism}=[name={name},password={password}]"
                   for name, password in users.items() for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")]
    cluster = RealKafka(version, combined=True, listeners=SECURED_LISTENERS, primary_listener="SASL_PLAINTEXT",
                     controller_protocol="SASL_PLAINTEXT", broker_configs=configs, controller_configs=configs,
                     scram_users=scram_users, root=root,
                     client_config={"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                                    "sasl.username": "admin", "sasl.password": admin_password})
    cluster.tls_dir = tls_dir
    return cluster


class _QuietLogger:
    """librdkafka's log lines stay out of the test output while a cluster starts."""

    def log(self, *args, **kwargs) -> None:
        pass

    def __getattr__(self, name):
        return self.log


_QUIET = _QuietLogger()


@contextlib.contextmanager
def started(make: Callable[[], RealKafka], tries: int = 2) -> Iterator[RealKafka]:
    """A cluster `make` gives, started; made again (fresh ports and directories) and started once
    more when it does not come up: on a loaded machine a KRaft broker may fail to register with a
    dynamic quorum that is still forming ("the RPC got timed out before it could be sent")."""
    for attempt in range(1, tries + 1):
        try:
            cluster = make().__enter__()
        except RuntimeError:
            if attempt == tries:
                raise
            continue
        try:
            yield cluster
        finally:
            cluster.stop()
        return
