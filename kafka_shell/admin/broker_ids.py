"""Broker identity after a lost disk or a replaced machine (KIP-426), read from the cluster: the
ids replica sets name that no live broker holds (`missing`), and the KIP's host -> id mapping,
kept in the cluster itself in a compacted topic (`__broker_hosts` by default; key the host name,
value `{"version": 0, "broker.id": N}`): read, judged (live, missing or garbage), written, and
the id a broker starting without one should take (`suggest`, kafka_shell/protocol/broker_identity.py's
rule, which the sandbox applies too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from kafka_shell.admin import cluster, configs, records, topics
from kafka_shell.admin.cluster import Registrations
from kafka_shell.admin.topics import NewTopic
from kafka_shell.protocol.broker_identity import Choice, apply_record, choose_id, mapping_value

if TYPE_CHECKING:
    from kafka_shell.base.answers import AdminError
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.connection.metadata import ClusterSnapshot, PartitionInfo

# The state of a mapping entry (KIP-426): its id is live on its host, held by no live broker, or
# live on another host (garbage).
LIVE, MISSING, GARBAGE = "live", "missing", "garbage"


# -- missing ids -------------------------------------------------------------------------------


class LostId(NamedTuple):
    """An id replica sets name that no live broker holds: `fenced` (registered, stopped) or not
    registered, the host it last had (the mapping's, else its fenced registration's), and the
    partitions naming it."""
    broker_id: int
    fenced: bool
    host: str | None
    partitions: list[PartitionInfo]


class Lost(NamedTuple):
    """`missing`: the lost ids (none: every id in a replica set is live), the registrations and
    each concerned topic's min.insync.replicas, for `loss_counts`."""
    ids: list[LostId]
    regs: Registrations
    min_isr: dict[str, int]


def missing(conn: ConnectionManager, mapping_topic: str) -> Lost:
    """From one fresh read (Metadata for the replica sets, DescribeCluster with fenced brokers for
    the registrations)."""
    snap = conn.read()
    regs = cluster.registrations(conn, snap)
    lost: dict[int, list[PartitionInfo]] = {}   # id -> partitions naming it
    for topic in snap.topics.values():
        for p in topic.partitions:
            for r in p.replicas:
                if r not in regs.live:
                    lost.setdefault(r, []).append(p)
    if not lost:
        return Lost([], regs, {})
    hosts = last_hosts(conn, snap, mapping_topic, regs)
    settings = configs.topic_configs(conn, sorted({p.topic for ps in lost.values() for p in ps}), [configs.MIN_ISR])
    return Lost([LostId(b, b in regs.fenced, hosts.get(b), lost[b]) for b in sorted(lost)], regs,
                {name: c.min_isr for name, c in settings.items()})


def loss_counts(parts: list[PartitionInfo], regs: Registrations, min_isr: dict[str, int]) -> list[int]:
    """How many of `parts` are under-replicated, under min ISR, offline (no live leader)."""
    return [sum(len(p.isr) < len(p.replicas) for p in parts),
            sum(len(p.isr) < min_isr.get(p.topic, 1) for p in parts),
            sum(p.leader < 0 or p.leader not in regs.live for p in parts)]


def last_hosts(conn: ConnectionManager, snap: ClusterSnapshot, mapping_topic: str,
               regs: Registrations) -> dict[int, str]:
    """id -> the host it last had: the mapping's entry, else a fenced registration's host."""
    hosts: dict[int, str] = dict(regs.fenced)
    for host, broker_id in sorted(read_mapping(conn, mapping_topic, snap).items()):
        hosts[broker_id] = host
    return hosts


# -- the mapping topic -------------------------------------------------------------------------


def read_mapping(conn: ConnectionManager, topic: str, snap: ClusterSnapshot) -> dict[str, int]:
    """host -> id, the latest value per key of every partition up to its end (a tombstone or
    an unreadable value removes the key)."""
    mapping: dict[str, int] = {}
    records.read_to_end(conn, snap, topic, lambda key, value: apply_record(mapping, key, value),
                        what=f'the mapping topic "{topic}"')
    return mapping


def mapping_state(broker_id: int, host: str, live_hosts: dict[int, str]) -> str:
    """KIP-426: an entry is garbage when its id is live on another host; missing when no live
    broker holds its id."""
    if broker_id not in live_hosts:
        return MISSING
    return LIVE if live_hosts[broker_id] == host else GARBAGE


def live_host_names(conn: ConnectionManager, regs: Registrations) -> dict[int, str]:
    """id -> the machine name of each live broker: its `host.name` config where the broker
    tells it (the sandbox's --hosts), else the host of its registration."""
    return {**regs.live, **configs.host_names(conn, sorted(regs.live))}


class Identity(NamedTuple):
    """One fresh read: the snapshot, the registrations, the live brokers' host names, the mapping."""
    snap: ClusterSnapshot
    regs: Registrations
    live_hosts: dict[int, str]
    mapping: dict[str, int]

    def changes(self) -> dict[str, int]:
        """host -> id for every live broker whose entry is absent or different."""
        return {host: b for b, host in sorted(self.live_hosts.items()) if self.mapping.get(host) != b}

    def garbage(self) -> dict[str, int]:
        """The garbage entries (host g -> N while N is live on host h != g)."""
        return {host: b for host, b in sorted(self.mapping.items())
                if mapping_state(b, host, self.live_hosts) == GARBAGE}

    def suggest(self, host: str) -> Choice:
        """KIP-426's procedure for a broker starting on `host` without an id (no broker.id in its
        config, no meta.properties): the mapping's id for the host unless a live broker holds it;
        else the one missing id; several missing ids need a human; none: a new id."""
        missing_ids = {r for t in self.snap.topics.values() for p in t.partitions for r in p.replicas
                       if r not in self.regs.live} | set(self.regs.fenced)
        return choose_id(host, self.mapping, set(self.regs.live), missing_ids, set(self.regs.fenced))


def current(conn: ConnectionManager, topic: str) -> Identity:
    snap = conn.read()
    regs = cluster.registrations(conn, snap)
    return Identity(snap, regs, live_host_names(conn, regs), read_mapping(conn, topic, snap))


def mapping_replication(brokers: int) -> int:
    """The mapping topic's replication factor: 3, or the broker count when fewer."""
    return max(1, min(3, brokers))


def create_mapping_topic(conn: ConnectionManager, topic: str, brokers: int) -> AdminError | None:
    """Compacted, one partition (the mapping is small and read whole); why it was not created
    (None: created, or there already)."""
    new = NewTopic(topic, 1, mapping_replication(brokers), configs=(("cleanup.policy", "compact"),))
    (outcome,) = topics.create(conn, [new], validate_only=False)
    return outcome.error if outcome.error is not None and not outcome.exists else None


def write(conn: ConnectionManager, topic: str, entries: dict[str, int | None]) -> records.Produced:
    """Write host -> id entries (None: a tombstone, which removes the host), acknowledged by all
    in-sync replicas."""
    return records.produce(conn, topic, [(host.encode(), None if b is None else mapping_value(b))
                                         for host, b in entries.items()],
                           acks="all", partition=0, idempotent=False)
