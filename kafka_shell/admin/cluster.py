"""The cluster as a whole: its brokers, their registrations (DescribeCluster), the active
controller (and waiting for a given one to be it), the API versions a broker has, and whether a
node's listener answers."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.protocol.authorization import is_authorization_error
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.base.deadline import Deadline
from kafka_shell.base.errors import KafkaCallError
from kafka_shell.protocol.codec import api_name

from kafka_shell.admin.errors import response_error
from kafka_shell.connection.metadata import KRAFT

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.connection.metadata import ClusterSnapshot, ControllerInfo

FENCED_BROKERS_VERSION = 2   # DescribeCluster lists fenced brokers from v2 (KIP-1073)


def read_maybe_controller(conn: ConnectionManager, topics: list[str] | None = None
                          ) -> tuple[ClusterSnapshot, KafkaCallError | None, bool]:
    """A fresh read with the active controller when the principal may learn it (KRaft:
    DescribeQuorum needs DESCRIBE on the cluster) and the quorum answers: (the read, None,
    False). Else the read without it (whose controller is not to be shown), the error that kept
    it, and whether that leaves the answer partial: the quorum did not answer (True), or the
    principal may not see it (False)."""
    try:
        return conn.read(topics, controller=True), None, False
    except KafkaCallError as exc:
        return conn.read(topics), exc, not is_authorization_error(exc.code)


def cluster_id(conn: ConnectionManager) -> str | None:
    """The cluster's id now: from Metadata, or from the controllers when only they were given."""
    return conn.controllers().cluster_id if conn.controllers_only else conn.read([]).cluster_id


@dataclass(frozen=True)
class Absent:
    """Ids asked for that the cluster does not have live: `fenced` (registered but fenced: the
    cluster's state, not a wrong id) and `unknown` (not in the cluster), beside the `live` ids;
    `role` "broker", or "controller" when only controllers were given."""
    role: str
    live: tuple[int, ...]
    fenced: tuple[int, ...] = ()
    unknown: tuple[int, ...] = ()


def absent(conn: ConnectionManager, ids: list[int]) -> Absent | None:
    """The broker ids of `ids` the cluster does not have live, from a fresh read of its brokers
    (for a caller to fail at once rather than let a request to them wait for a timeout); None:
    every one is live."""
    if conn.controllers_only:
        known = {b.broker_id for b in conn.controllers().brokers}
        fenced: list[int] = []
    else:
        snap = conn.read([])
        known = set(snap.brokers)
        fenced = [b for b in ids if b not in known and b in registrations(conn, snap).fenced]
    unknown = [b for b in ids if b not in known and b not in fenced]
    if not fenced and not unknown:
        return None
    return Absent("controller" if conn.controllers_only else "broker", tuple(sorted(known)), tuple(fenced),
                  tuple(unknown))


def active_controller(conn: ConnectionManager) -> ControllerInfo | None:
    """The active controller now, by the cluster's own rules; None when there is none."""
    controller = conn.controller()
    return controller if controller.id >= 0 else None


@dataclass(frozen=True)
class ApiVersion:
    name: str
    key: int
    min_version: int
    max_version: int


def api_versions(conn: ConnectionManager, broker_id: int | None = None) -> list[ApiVersion]:
    """The APIs a broker (default: any live broker) serves, by key."""
    return [ApiVersion(api_name(key), key, r.start, r.stop - 1)
            for key, r in sorted(conn.api_versions(broker_id).items())]


@dataclass(frozen=True)
class Registrations:
    """Who holds which id now: live (registered, unfenced) and fenced brokers, id -> host."""
    live: dict[int, str]
    fenced: dict[int, str]
    known: bool = True   # False: the cluster cannot tell (no DescribeCluster v2): live = Metadata's


def registrations(conn: ConnectionManager, snap: ClusterSnapshot) -> Registrations:
    """DescribeCluster with fenced brokers (KIP-1073, v2): a stopped KRaft broker stays
    registered but fenced. Where the cluster cannot tell, the Metadata brokers are the live ones."""
    if not conn.supports(ApiKey.DESCRIBE_CLUSTER, FENCED_BROKERS_VERSION):
        return Registrations({b.id: b.host for b in snap.brokers.values()}, {}, known=False)
    conn.debug("DescribeCluster request (include_fenced_brokers)")
    answer = conn.any_broker_request(ApiKey.DESCRIBE_CLUSTER, {"include_cluster_authorized_operations": False,
                                                               "include_fenced_brokers": True},
                                     version=FENCED_BROKERS_VERSION)
    if answer.error_code:
        raise response_error(ApiKey.DESCRIBE_CLUSTER, answer.error_code, answer.error_message)
    live: dict[int, str] = {}
    fenced: dict[int, str] = {}
    for b in answer.brokers:
        (fenced if b.is_fenced else live)[b.broker_id] = b.host
    return Registrations(live, fenced)


@dataclass(frozen=True)
class BrokerStates:
    """Each broker as one read and the registrations show it: the replicas and leaders it holds,
    the ids the controller fenced, and the ids that are offline (replicas name them, or the
    controller fenced them, but the metadata lacks them)."""
    replicas: Counter[int]
    leaders: Counter[int]
    fenced: set[int]
    offline: set[int]
    registrations: Registrations | None   # None: not asked (ZooKeeper mode)

    def is_fenced(self, broker: int) -> bool | None:
        """True or False for a registered broker; None when unregistered or the cluster cannot tell."""
        regs = self.registrations
        if regs is None or not regs.known:
            return None
        return broker in self.fenced if broker in self.fenced or broker in regs.live else None

    def fenced_host(self, broker: int) -> str | None:
        return self.registrations.fenced.get(broker) if self.registrations else None


def broker_states(conn: ConnectionManager, snap: ClusterSnapshot) -> BrokerStates:
    """`snap`'s load per broker, with the registrations of a KRaft cluster (DescribeCluster)."""
    replicas: Counter[int] = Counter()
    leaders: Counter[int] = Counter()
    for t in snap.topics.values():
        for p in t.partitions:
            replicas.update(p.replicas)
            if p.leader >= 0:
                leaders[p.leader] += 1
    registered = registrations(conn, snap) if snap.controller.mode == KRAFT else None
    fenced = set(registered.fenced) if registered is not None and registered.known else set()
    offline = (set(replicas) | fenced) - set(snap.brokers)
    return BrokerStates(replicas, leaders, fenced, offline, registered)


def answers(conn: ConnectionManager, host: str, port: int) -> bool:
    """Whether a listener at host:port answers (connects, logs in, serves ApiVersions)."""
    return conn.probe(host, port)


class NotActive(NamedTuple):
    """`wait_until_active` gave up: `wanted` was not the active controller after `timeout_ms`;
    `active` was."""
    wanted: int
    active: ControllerInfo
    timeout_ms: int


def wait_until_active(conn: ConnectionManager, wanted: int, timeout_ms: int, poll_s: float = 0.1
                      ) -> ControllerInfo | NotActive:
    """The active controller once it is `wanted`, asked every `poll_s` within `timeout_ms`."""
    deadline = Deadline(timeout_ms / 1000)
    now = conn.controller()
    while now.id != wanted:
        if deadline.expired:
            return NotActive(wanted, now, timeout_ms)
        deadline.pause(poll_s)
        now = conn.controller()
    return now


def unregister(conn: ConnectionManager, broker_id: int) -> None:
    """UnregisterBroker (KRaft, at the controller): the broker's registration goes; a running
    broker registers again at once with a new epoch, as Kafka's heartbeat makes it."""
    conn.require(ApiKey.UNREGISTER_BROKER, "Unregistering a broker (KRaft)")
    conn.debug(f"UnregisterBroker request: broker {broker_id}")
    answer = conn.controller_request(ApiKey.UNREGISTER_BROKER, {"broker_id": broker_id}, mutation=True)
    if answer.error_code:
        raise response_error(ApiKey.UNREGISTER_BROKER, answer.error_code, answer.error_message,
                             entity=f"broker {broker_id}")


def require_controller_unregistration(conn: ConnectionManager) -> None:
    """Fail up front, before anything changes, on a cluster without UnregisterController."""
    conn.require(ApiKey.UNREGISTER_CONTROLLER, "Unregistering a controller (KIP-1312, Kafka 4.4)")


def unregister_controller(conn: ConnectionManager, controller_id: int) -> None:
    """UnregisterController (KIP-1312, Kafka 4.4; brokers forward it to the active controller):
    the controller's registration goes, as a stopped and removed controller's should; a running
    one registers again at once. The active controller refuses to unregister itself."""
    require_controller_unregistration(conn)
    conn.debug(f"UnregisterController request: controller {controller_id}")
    answer = conn.controller_request(ApiKey.UNREGISTER_CONTROLLER, {"controller_id": controller_id}, mutation=True)
    if answer.error_code:
        raise response_error(ApiKey.UNREGISTER_CONTROLLER, answer.error_code, answer.error_message,
                             entity=f"controller {controller_id}")


@dataclass(frozen=True)
class Controller:
    """A registered controller (DescribeCluster of the controllers, KIP-919)."""
    id: int
    host: str
    port: int
    rack: str | None


def controllers(conn: ConnectionManager) -> tuple[str, int, list[Controller]]:
    """(cluster id, active controller id, every registered controller), asked of a controller
    listener (needs --bootstrap-controller)."""
    answer = conn.controllers()
    return answer.cluster_id, answer.controller_id, [Controller(b.broker_id, b.host, b.port, b.rack)
                                                     for b in sorted(answer.brokers, key=lambda b: b.broker_id)]
