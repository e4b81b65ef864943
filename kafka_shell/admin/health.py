"""A cluster's health as read now, in one pass within one deadline: its brokers (live, fenced, ids
replicas name that no broker has, cordoned ones), the metadata quorum, each partition's class
(kafka-topics' filters, and KIP-966's ELR), topics that allow unclean elections, the balance
goals, hanging transactions, reassignments in progress and consumer lag.

Each part is read in turn while the deadline lasts; a part that fails, that is read without some
targets, or that the deadline leaves unread is named in `unread` with why, as a value (the answer
is then partial), and what the others read stands. Facts only: which of them matter, and how much,
and the words, are the command's business.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_shell.base.answers import AdminError
from kafka_shell.protocol.codes import ApiKey
from kafka_shell.base.deadline import Deadline
from kafka_shell.base.errors import ShellError
from kafka_shell.connection.metadata import KRAFT

from kafka_shell.admin import balance, cluster, configs, groups, load, offsets, quorum, reassignments, topics, transactions

if TYPE_CHECKING:
    from kafka_shell.connection.manager import ConnectionManager
    from kafka_shell.connection.metadata import ClusterSnapshot

Key = tuple[str, int]
UNCLEAN = "unclean.leader.election.enable"
QUORUM_BEHIND_MS = 10_000     # a voter behind the leader that last caught up longer ago than this lags
HANGING_AFTER_MS = 15 * 60_000   # Kafka's default transaction.max.timeout.ms (find-hanging's default)


TIMED_OUT = "timed out"        # the deadline ran out before the part was read
NO_METADATA = "no metadata"   # the cluster's metadata could not be read, so the part was not


@dataclass(frozen=True)
class Unread:
    """Why a part is not read whole: `reason` (TIMED_OUT, NO_METADATA: not read at all); the
    `failure` that stopped its read (an error that says itself); or `without`, the targets it was
    read without, by what each was asked (balance: brokers -> their log dirs' errors; transactions:
    partitions, brokers and transactional ids; lag: brokers that did not list their groups)."""
    reason: str = ""
    failure: Exception | None = None
    without: Mapping[Any, AdminError] = field(default_factory=dict)


@dataclass
class Facts:
    snapshot: ClusterSnapshot | None = None
    fenced: dict[int, str] = field(default_factory=dict)       # registered but fenced: id -> host
    missing: list[int] = field(default_factory=list)           # ids replicas name that no broker has
    quorum_leader: int | None = None                           # None: not KRaft, or not read
    quorum_lagging: dict[int, int] = field(default_factory=dict)   # voter -> records behind the leader
    quorum_read: bool = False
    partitions: dict[str, list[Key]] = field(default_factory=dict)  # class (topics.health_classes) -> keys
    elr_only: list[Key] = field(default_factory=list)          # no leader; clean candidates only in the ELR
    unclean: list[str] = field(default_factory=list)           # topics with unclean.leader.election.enable
    goals: list[balance.GoalStatus] = field(default_factory=list)
    cordoned: list[int] = field(default_factory=list)          # brokers whose every log dir is cordoned
    leaders: dict[int, int] = field(default_factory=dict)      # broker -> partitions it leads
    replicas: dict[int, int] = field(default_factory=dict)     # broker -> replicas it holds
    hanging: list[tuple[Key, transactions.Producer]] = field(default_factory=list)   # partition, its hanging producer
    moving: int = 0                                             # partitions being reassigned
    lag: dict[str, int] = field(default_factory=dict)           # group -> total lag
    unread: dict[str, Unread] = field(default_factory=dict)     # part -> why it was not read whole

    @property
    def partial(self) -> bool:
        return bool(self.unread)


PARTS = ("brokers", "quorum", "partitions", "configs", "balance", "transactions", "reassignments", "lag")


def read(conn: ConnectionManager, deadline: Deadline, skip: tuple[str, ...] = ()) -> Facts:
    """Every part of `PARTS` not in `skip`, in order, while the deadline lasts."""
    facts = Facts()
    steps: list[tuple[str, Callable[[], Unread | None]]] = [
        ("brokers", lambda: _brokers(conn, facts)),
        ("quorum", lambda: _quorum(conn, facts)),
        ("partitions", lambda: _partitions(conn, facts)),
        ("configs", lambda: _configs(conn, facts)),
        ("balance", lambda: _balance(conn, facts)),
        ("transactions", lambda: _transactions(conn, facts)),
        ("reassignments", lambda: _reassignments(conn, facts)),
        ("lag", lambda: _lag(conn, facts)),
    ]
    for name, step in steps:
        if name in skip:
            continue
        if deadline.expired:
            facts.unread[name] = Unread(TIMED_OUT)
            continue
        if facts.snapshot is None and name != "brokers":
            facts.unread[name] = Unread(NO_METADATA)
            continue
        try:
            why = step()
        except ShellError as exc:
            why = Unread(failure=exc)
        if why is not None:
            facts.unread[name] = why
    return facts


def _brokers(conn: ConnectionManager, facts: Facts) -> None:
    snap = conn.read(controller=conn.mode == KRAFT)
    facts.snapshot = snap
    regs = cluster.registrations(conn, snap)
    facts.fenced = dict(regs.fenced)
    named = {b for t in snap.topics.values() for p in t.partitions for b in p.replicas}
    known = set(snap.brokers) | set(regs.live) | set(regs.fenced)
    facts.missing = sorted(named - known)
    for t in snap.topics.values():
        for p in t.partitions:
            for b in p.replicas:
                facts.replicas[b] = facts.replicas.get(b, 0) + 1
            if p.leader >= 0:
                facts.leaders[p.leader] = facts.leaders.get(p.leader, 0) + 1


def _quorum(conn: ConnectionManager, facts: Facts) -> None:
    if conn.mode != KRAFT:
        return
    q = quorum.describe(conn)
    facts.quorum_read = True
    leader = q.leader
    facts.quorum_leader = q.leader_id if q.leader_id >= 0 else None
    if leader is None:
        return
    now = int(time.time() * 1000)
    for v in q.voters:
        behind = leader.log_end_offset - v.log_end_offset
        caught_up = v.last_caught_up_timestamp
        if v.replica_id != q.leader_id and behind > 0 and (caught_up < 0 or now - caught_up > QUORUM_BEHIND_MS):
            facts.quorum_lagging[v.replica_id] = behind


def _partitions(conn: ConnectionManager, facts: Facts) -> None:
    snap = facts.snapshot
    assert snap is not None
    names = sorted(snap.topics)
    settings = configs.topic_configs(conn, names, [configs.MIN_ISR, UNCLEAN]) if names else {}
    moving = reassignments.moving(conn)
    classes: dict[str, list[Key]] = {}
    offline = []
    for name in names:
        t = snap.topics[name]
        min_isr = settings[name].min_isr if name in settings else 1
        for p in t.partitions:
            key = (name, p.partition)
            move = moving.get(key)
            for cls, yes in topics.health_classes(p, snap.brokers, min_isr, move.adding if move else ()).items():
                if yes:
                    classes.setdefault(cls, []).append(key)
            if p.leader < 0 or p.leader not in snap.brokers:
                offline.append(t)
    facts.partitions = classes
    facts.unclean = sorted(n for n, c in settings.items() if (c.overrides.get(UNCLEAN) or "").lower() == "true")
    if offline:
        wanted = list({t.name: t for t in offline}.values())
        elr = topics.eligible_leaders(conn, wanted)
        down = set(classes.get("unavailable_partitions", []))
        facts.elr_only = sorted(k for k, (eligible, _) in elr.items() if k in down and eligible)


def _configs(conn: ConnectionManager, facts: Facts) -> None:
    """The cluster-wide default of unclean elections: on, every topic without an override allows them."""
    default = configs.value_of(conn, configs.BROKERS, "", UNCLEAN)
    if (default or "").lower() == "true" and facts.snapshot is not None:
        facts.unclean = sorted(set(facts.unclean) | set(facts.snapshot.topics))


def _balance(conn: ConnectionManager, facts: Facts) -> Unread | None:
    found = load.read(conn, None)
    facts.cordoned = sorted(found.cordoned)
    facts.goals = balance.measure(found.layout, balance.Options())
    return Unread(without=dict(sorted(found.missing.items()))) if found.missing else None


def _transactions(conn: ConnectionManager, facts: Facts) -> Unread | None:
    snap = facts.snapshot
    assert snap is not None
    keys = transactions.partitions_to_search(snap, None, None, None)
    if not keys or not conn.supports(ApiKey.DESCRIBE_PRODUCERS):
        return None
    found = transactions.find_hanging(conn, snap, keys, None, HANGING_AFTER_MS)
    facts.hanging = [(key, p) for key, producers in sorted(found.rows.items()) for p in producers]
    without: dict[Any, AdminError] = {**found.errors, **found.unlisted, **found.undescribed}
    return Unread(without=without) if without else None


def _reassignments(conn: ConnectionManager, facts: Facts) -> None:
    facts.moving = len(reassignments.moving(conn))


def read_lag(conn: ConnectionManager, facts: Facts) -> Unread | None:
    """Read the consumer lag again (a later sample for `growing`); not None: the brokers that did
    not list their groups."""
    return _lag(conn, facts)


def _lag(conn: ConnectionManager, facts: Facts) -> Unread | None:
    """Each consumer group's total lag (committed offsets against the log ends)."""
    snap = facts.snapshot
    assert snap is not None
    listed = groups.list_groups(conn)
    ids = [g.group_id for g in listed.groups if g.group_type in ("classic", "consumer") and g.protocol_type in ("consumer", "")]
    if ids:
        committed = offsets.committed(conn, ids, wait_for_coordinators=False).rows
        keys = sorted({k for held in committed.values() for k in held if k[0] in snap.topics})
        ends = offsets.log_offsets(conn, snap, keys, offsets.LATEST).rows if keys else {}
        for gid, held in committed.items():
            facts.lag[gid] = sum(max(0, ends[k].offset - o) for k, o in held.items() if k in ends)
    return Unread(without=dict(listed.errors)) if listed.errors else None


def growing(history: list[dict[str, int]], rounds: int = 3) -> list[str]:
    """Groups whose lag rose at each of the last `rounds` reads (and is above 0)."""
    if len(history) < rounds:
        return []
    last = history[-rounds:]
    return sorted(g for g in last[-1] if all(g in h for h in last) and last[-1][g] > 0
                  and all(b[g] > a[g] for a, b in zip(last, last[1:])))

