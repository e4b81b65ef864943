"""The sandbox's fault API, the base of `Sandbox`: stop and start brokers and controllers, kill
the active controller, replace a broker (KIP-426, a lost disk), add brokers and controllers,
delays, metadata lags and injected errors, replica log ends, the replication rate, the first ACLs. Each
method returns once the cluster is as it says (the work runs in the loop thread, `call`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from kafka_shell.protocol.broker_identity import MAPPING_TOPIC, mapping_value
from kafka_shell.sandbox import identity, log, propagation, quorum, registrations, replay, replication
from kafka_shell.sandbox import authorizer
from kafka_shell.sandbox.authorizer import AclBinding, binding_problem
from kafka_shell.sandbox.config import PLAINTEXT
from kafka_shell.sandbox.dispatch import api_key_of, error_code_of
from kafka_shell.sandbox.listeners import NodeServer, bind
from kafka_shell.sandbox.model import Broker, ClusterState, Controller
from kafka_shell.sandbox.records import Endpoint, RegisterBrokerRecord, RegisterControllerRecord
from kafka_shell.sandbox.registrations import CONTROLLER_LISTENER


class FaultControls:
    """What the fault API needs of the sandbox is declared here; `Sandbox` provides it."""
    cluster: ClusterState
    listeners: list[str]
    _servers: dict[int, NodeServer]
    _listener_servers: dict[int, list[NodeServer]]
    _controller_servers: dict[int, NodeServer]

    def call(self, fn: Callable[..., Any], *args: object) -> Any:
        raise NotImplementedError

    @property
    def bootstrap(self) -> str:
        raise NotImplementedError

    def _broker_servers(self, broker_id: int) -> list[NodeServer]:
        raise NotImplementedError

    def _node_server(self, node: Broker | Controller, listener: str = PLAINTEXT) -> NodeServer:
        raise NotImplementedError

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
            # A starting broker registers (again), with a new epoch.
            replay.apply(self.cluster, registrations.broker_registration(self.cluster, b, epoch=b.epoch + 1))
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
            replay.apply(self.cluster, registrations.broker_registration(
                self.cluster, self.cluster.brokers[chosen], host_name=host))
            return chosen, reason

        chosen, reason = self.call(go)
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
            host = next(iter(c.brokers.values())).host
            socks = [bind(host, 0) for _ in self.listeners]   # free ports, which it registers
            ports = [sock.getsockname()[1] for sock in socks]
            replay.apply(c, RegisterBrokerRecord(
                new_id, 1, tuple(Endpoint(name, host, port) for name, port in zip(self.listeners, ports)), rack,
                fenced=not c.controller_available, host_name=host_name or f"broker-{new_id}.sandbox"))
            b = c.brokers[new_id]
            servers = [self._node_server(b, name) for name in self.listeners]
            for server, sock in zip(servers, socks):
                await server.listen(sock)
            self._servers[new_id], self._listener_servers[new_id] = servers[0], servers[1:]
            replication.broker_started(c, new_id)
            return new_id

        return self.call(go)

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
            host = next(iter(c.controllers.values())).host
            sock = bind(host, 0)
            replay.apply(c, RegisterControllerRecord(new_id, (Endpoint(CONTROLLER_LISTENER, host, sock.getsockname()[1]),),
                                                     directory or uuid.uuid4()))   # an observer until made a voter
            node = c.controllers[new_id]
            server = self._node_server(node)
            await server.listen(sock)
            self._controller_servers[new_id] = server
            return self._controller_info(node)

        return self.call(go)

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
        return self.call(replication.move_controller, self.cluster)

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
            replay.apply(self.cluster, registrations.controller_registration(c))   # a starting controller registers (again)
            replication.controller_started(self.cluster, controller_id)

        self.call(go)

    def add_acls(self, *bindings: AclBinding) -> None:
        """Create ACL bindings directly (as a super user would with CreateAcls): how a test or an
        operator grants the first permissions when no principal can yet."""
        def go() -> None:
            for b in bindings:
                problem = binding_problem(b)
                if problem:
                    raise ValueError(problem)
            replay.apply_all(self.cluster, authorizer.creations(self.cluster, list(bindings)))
        self.call(go)

    def delay(self, broker_id: int, ms: int) -> None:
        """Make a broker (or a controller) answer every request `ms` later."""
        self._check_node(broker_id)
        self.call(setattr, self.cluster.node(broker_id), "delay_ms", int(ms))

    def lag_metadata(self, broker_id: int, ms: int) -> None:
        """Make a broker's metadata `ms` behind the controller: its Metadata, DescribeCluster and
        DescribeTopicPartitions answers show each later change that much later, as Kafka's
        propagation does (0: at once)."""
        self._check_broker(broker_id)
        self.call(propagation.set_lag, self.cluster, broker_id, int(ms))

    def fail(self, broker_id: int, api: int | str, error: int | str) -> None:
        """Make broker answer every request of `api` with `error` (names or numbers)."""
        node = self._node(broker_id)
        key = api_key_of(api)
        code = error_code_of(error)
        self.call(node.failures.__setitem__, key, code)

    def heal(self) -> None:
        """Remove every delay, metadata lag and injected error (stopped brokers stay stopped)."""
        def go() -> None:
            propagation.clear(self.cluster)
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
            log.set_replica_end(self.cluster, p, broker_id, int(offset), None if epoch is None else int(epoch))
            replication.settle(self.cluster)  # an online partition's followers re-sync

        self.call(go)

    def set_replication_rate(self, bytes_per_second: int | None) -> None:
        """Out-of-sync replicas catch up at this rate per follower broker (None: at once)."""
        def go() -> None:
            self.cluster.runtime.replication_rate = None if bytes_per_second is None else int(bytes_per_second)
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
        self._node(node_id)

    def _node(self, node_id: int) -> Broker | Controller:
        node = self.cluster.node(node_id)
        if node is None:
            ids = ", ".join(map(str, [*self.cluster.brokers, *self.cluster.controllers]))
            raise ValueError(f"no broker or controller {node_id} in the sandbox (nodes: {ids})")
        return node
