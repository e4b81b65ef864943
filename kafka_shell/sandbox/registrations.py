"""The cluster's nodes as its controller knows them, after Kafka's ClusterControlManager: each
broker registers (RegisterBrokerRecord: its listeners, rack and a new broker epoch) at every
start, is fenced and unfenced (BrokerRegistrationChangeRecord) and unregistered
(UnregisterBrokerRecord); each KRaft controller registers its CONTROLLER listener
(RegisterControllerRecord) and can be unregistered (UnregisterControllerRecord).

A node's process being up (`alive`) and the faults injected into it are the running server's,
not the metadata's: they change without records and are not kept.
"""

from __future__ import annotations

from kafka_shell.sandbox.model import Broker, ClusterState, Controller
from kafka_shell.sandbox.records import (BrokerRegistrationChangeRecord, Endpoint, RegisterBrokerRecord,
                                         RegisterControllerRecord, Record, ReplayError, UnregisterBrokerRecord,
                                         UnregisterControllerRecord)

CONTROLLER_LISTENER = "CONTROLLER"


def broker_registration(cluster: ClusterState, b: Broker, *, epoch: int | None = None, host: str | None = None,
                        port: int | None = None, listener_ports: dict[str, int] | None = None,
                        fenced: bool | None = None, host_name: str | None = None) -> RegisterBrokerRecord:
    """The broker's registration as it stands, but for what is given (a new epoch at a start,
    the ports it bound, the machine it runs on)."""
    host = b.host if host is None else host
    ports = b.listener_ports if listener_ports is None else listener_ports
    end_points = (Endpoint(cluster.runtime.first_listener, host, b.port if port is None else port),
                  *(Endpoint(name, host, p) for name, p in ports.items()))
    return RegisterBrokerRecord(b.id, b.epoch if epoch is None else epoch, end_points, b.rack,
                                b.fenced if fenced is None else fenced, host_name or b.host_name, tuple(b.log_dirs))


def controller_registration(c: Controller, host: str | None = None, port: int | None = None) -> RegisterControllerRecord:
    return RegisterControllerRecord(c.id, (Endpoint(CONTROLLER_LISTENER, host or c.host, c.port if port is None else port),),
                                    c.directory_id)


def fencing(b: Broker, fenced: bool) -> BrokerRegistrationChangeRecord:
    return BrokerRegistrationChangeRecord(b.id, b.epoch, fenced)


# -- replay ------------------------------------------------------------------------------------


def replay_register_broker(cluster: ClusterState, record: RegisterBrokerRecord) -> None:
    if record.broker_id in cluster.controllers:
        raise ReplayError(f"registers broker {record.broker_id}, whose id a controller has")
    if not record.end_points:
        raise ReplayError(f"registers broker {record.broker_id} without a listener")
    first, *others = record.end_points
    b = cluster.brokers.get(record.broker_id)
    if b is None:
        b = cluster.brokers[record.broker_id] = Broker(id=record.broker_id, host=first.host, port=first.port)
    b.host, b.port = first.host, first.port
    b.listener_ports = {e.name: e.port for e in others}
    b.rack, b.host_name, b.epoch, b.fenced = record.rack, record.host_name, record.broker_epoch, record.fenced
    b.log_dirs = list(record.log_dirs)
    b.registered = True


def replay_unregister_broker(cluster: ClusterState, record: UnregisterBrokerRecord) -> None:
    b = _broker(cluster, record.broker_id)
    b.registered, b.fenced = False, True


def replay_registration_change(cluster: ClusterState, record: BrokerRegistrationChangeRecord) -> None:
    b = _broker(cluster, record.broker_id)
    if record.fenced is not None:
        b.fenced = record.fenced


def replay_register_controller(cluster: ClusterState, record: RegisterControllerRecord) -> None:
    if record.controller_id in cluster.brokers:
        raise ReplayError(f"registers controller {record.controller_id}, whose id a broker has")
    if len(record.end_points) != 1:
        raise ReplayError(f"registers controller {record.controller_id} without its one CONTROLLER listener")
    (endpoint,) = record.end_points
    c = cluster.controllers.get(record.controller_id)
    if c is None:
        # A new controller follows the quorum as an observer until a VotersRecord makes it a voter.
        c = cluster.controllers[record.controller_id] = Controller(record.controller_id, endpoint.host, endpoint.port,
                                                                   voter=False)
    c.host, c.port, c.directory_id, c.registered = endpoint.host, endpoint.port, record.directory_id, True


def replay_unregister_controller(cluster: ClusterState, record: UnregisterControllerRecord) -> None:
    c = cluster.controllers.get(record.controller_id)
    if c is None:
        raise ReplayError(f"unregisters controller {record.controller_id}, which never registered")
    c.registered = False


def _broker(cluster: ClusterState, broker_id: int) -> Broker:
    b = cluster.brokers.get(broker_id)
    if b is None:
        raise ReplayError(f"names broker {broker_id}, which never registered")
    return b


def snapshot(cluster: ClusterState) -> list[Record]:
    out: list[Record] = []
    for c in cluster.controllers.values():
        out.append(controller_registration(c))
        if not c.registered:
            out.append(UnregisterControllerRecord(c.id))
    for b in cluster.brokers.values():
        out.append(broker_registration(cluster, b))
        if not b.registered:
            out.append(UnregisterBrokerRecord(b.id, b.epoch))
    return out


REPLAY = {RegisterBrokerRecord: replay_register_broker, UnregisterBrokerRecord: replay_unregister_broker,
          BrokerRegistrationChangeRecord: replay_registration_change,
          RegisterControllerRecord: replay_register_controller, UnregisterControllerRecord: replay_unregister_controller}
