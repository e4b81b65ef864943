"""The balance planner: pure code on plain data (no I/O), so it can be tested and benchmarked
alone. `plan(layout)` proposes new replica lists that meet the goals below, moving as little
data as it can, and says how far each goal was from met before and after, and the lower bound
of what any plan must move.

Goals, in Cruise Control's order of priority (a lower goal never undoes a higher one: a move
is taken only when no higher goal gets worse by it):

1. rack: each partition's replicas spread over racks (at most ceil(RF / racks) in a rack and
   min(RF, racks) racks covered), when every broker has a rack;
2. replicas: replicas per broker within one of the mean;
3. leaders: leaders per broker within one of the mean; this moves no data (the replica order
   changes, then a preferred election), so it is planned last without touching the others;
4. disk: bytes per broker within `disk_threshold` of the mean (of its share of the disk space
   when every broker tells it);
4b. log_dirs: on each broker with two or more log dirs, bytes per dir within `disk_threshold` of
   the dir's share of the broker's bytes (by the size of each dir's volume when every dir tells
   it; Cruise Control's intra-broker disk goal); planned once the replicas are
   placed, by choosing the dir of each replica that arrives and moving replicas between the dirs
   of their broker (AlterReplicaLogDirs), so no higher goal can get worse by it;
5. bytes_in: bytes written per second per broker within `rate_threshold` of the mean (when the
   layout carries rates: `balance --sample`);
6. topics: no broker holds a crowd of one topic's replicas (`topic_bounds`).

And what no plan may break: a drained broker ends with no replica and leads nothing
(decommissioning); a cordoned broker (every log dir cordoned, KIP-1066) or a broker that is
down takes no new replica; a replica never moves onto a broker that holds that partition. Kafka
4.4 refuses any reassignment whose target names a cordoned broker, a reorder included: a
partition with a replica on a cordoned broker changes only by moving that replica off.

The means count the brokers that stay (live and not drained); a cordoned broker below the
mean is left there (it cannot take more) and the others share the rest.

Lower bound: each broker must shed at least its replicas above the replicas goal's ceiling,
its bytes above the disk goal's ceiling, and every replica when drained; per broker the most of
these, summed, and never less than the replicas the rack rule forces to move. A plan whose
moves all go from brokers above a ceiling to brokers below theirs moves exactly that.
"""

from __future__ import annotations

import bisect
import gc
import heapq
import math
import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from kafka_shell.admin.assignment_plan import balance_leaders, rack_penalty

Key = tuple[str, int]

RACK, REPLICAS, LEADERS, DISK, BYTES_IN, TOPICS = "rack", "replicas", "leaders", "disk", "bytes_in", "topics"
LOG_DIRS = "log_dirs"
GOALS = (RACK, REPLICAS, LEADERS, DISK, LOG_DIRS, BYTES_IN, TOPICS)
TITLES = {RACK: "replicas rack-aware", REPLICAS: "replicas per broker", LEADERS: "leaders per broker",
          DISK: "bytes per broker", LOG_DIRS: "bytes per log dir", BYTES_IN: "bytes in per broker",
          TOPICS: "replicas of each topic spread"}
# The goals whose measure is the spread of a value per broker or dir (the others count partitions or topics).
SPREAD_GOALS = (REPLICAS, LEADERS, DISK, LOG_DIRS, BYTES_IN)
MIN_BYTES_SLACK = 1 << 20      # the disk goal never asks brokers closer than this
MIN_RATE_SLACK = 1024.0        # nor the bytes-in goal closer than 1 KiB/s
EPS = 1e-9


# Why a layout cannot be balanced (BalanceError.reason).
UNKNOWN_GOAL = "unknown goal"       # `goal` is not one of GOALS
UNKNOWN_BROKER = "unknown broker"   # a replica names `broker`, which the layout lacks
NO_MEMBERS = "no members"           # no broker may hold replicas (every one is down or drained)


class BalanceError(ValueError):
    """The layout cannot be balanced as asked: why (one of the reasons above) and the facts of
    it; the line people read is made above the admin layer (declarations.failure_lines)."""

    def __init__(self, reason: str, goal: str = "", broker: int = -1):
        super().__init__(reason)
        self.reason, self.goal, self.broker = reason, goal, broker


# What a plan could not do, and why (Plan.notes); the lines people read are made above the admin
# layer (declarations.failure_lines.balance_note).
class NoRack(NamedTuple):
    """The rack goal is not judged: these brokers have no rack while others do."""
    brokers: tuple[int, ...]


class LeaderKept(NamedTuple):
    """A partition stays led by a broker that may not lead: a replica of it is on a cordoned broker
    (`cordoned`: Kafka refuses the reorder), else no other replica is in sync and may lead."""
    key: Key
    broker: int
    cordoned: bool


class ReplicaKept(NamedTuple):
    """A partition keeps its replica on a drained broker: another of its replicas is on a cordoned
    broker (`cordoned`: Kafka refuses the move), else no other broker may take it."""
    key: Key
    broker: int
    cordoned: bool


class GoalUnmet(NamedTuple):
    """A goal asked for is not met after the plan; `dirs_kept`: the log_dirs goal only placed the
    replicas that arrive (Options.place_dirs_only)."""
    goal: str
    dirs_kept: bool = False


class DirsUnknown(NamedTuple):
    """The log_dirs goal leaves out a broker: it did not tell the log dir of each replica it holds."""
    broker: int


Note = NoRack | LeaderKept | ReplicaKept | GoalUnmet | DirsUnknown


@dataclass(frozen=True)
class Broker:
    id: int
    rack: str | None = None
    capacity: int | None = None     # bytes of the volumes of its log dirs, when it tells
    live: bool = True
    cordoned: bool = False          # every log dir cordoned (KIP-1066): takes no new replica
    drained: bool = False           # decommissioning: keeps no replica and leads nothing
    leads: bool = True              # False: leads nothing (drain-broker without --replicas)
    log_dirs: tuple[str, ...] = ()  # its log dirs, when it described them (the log_dirs goal)
    dir_sizes: tuple[int, ...] = () # the bytes of each one's volume, when every one tells it
    cordoned_dirs: frozenset[str] = frozenset()   # those of them cordoned: take no new replica

    @property
    def member(self) -> bool:
        """Counted in the means: a broker that stays."""
        return self.live and not self.drained

    @property
    def takes(self) -> bool:
        """May receive new replicas."""
        return self.member and not self.cordoned

    @property
    def may_lead(self) -> bool:
        return self.member and self.leads


@dataclass
class Layout:
    """What the planner plans from: the brokers and, per partition (parallel lists), its replicas
    (the first is the preferred leader), its size, and optionally its leader now, the replicas a
    preferred election may pick (its ISR), and the bytes written to it per second."""
    brokers: dict[int, Broker]
    keys: list[Key]
    replicas: list[list[int]]
    sizes: list[int]
    leaders: list[int] | None = None
    isr: list[tuple[int, ...]] | None = None
    rates: list[float] | None = None
    dirs: list[dict[int, str]] | None = None    # per partition: broker -> the log dir of its replica there


@dataclass(frozen=True)
class Options:
    goals: tuple[str, ...] = GOALS          # the goals to plan for (a subset of GOALS)
    disk_threshold: float = 0.10
    rate_threshold: float = 0.10
    leaders_only: bool = False              # move no replica: only reorder (leaders goal)
    drain_only: bool = False                # only take leadership off the brokers that may not lead
    # The log_dirs goal only chooses the dir of each replica a move brings; the replicas a broker
    # keeps stay in their dir (drain-broker: a drain moves what it must, and unbalances no dir).
    place_dirs_only: bool = False


@dataclass(frozen=True)
class GoalStatus:
    """One goal before and after the plan. `measure` names what `before` and `after` count:
    for the spread goals the largest distance from the target as a fraction of the mean (0.25:
    25%), else the partitions or topics that break the goal. `applies` is False when the goal
    cannot be judged (no racks, no rates) or was not asked for; `met_*` say whether it holds."""
    goal: str
    title: str
    measure: str
    before: float
    after: float
    met_before: bool
    met_after: bool
    target: str
    applies: bool = True


@dataclass(frozen=True)
class Change:
    """One partition's replicas before and after (same set: only the order, i.e. the leader)."""
    key: Key
    before: tuple[int, ...]
    after: tuple[int, ...]
    size: int

    @property
    def adding(self) -> list[int]:
        return [b for b in self.after if b not in self.before]

    @property
    def removing(self) -> list[int]:
        return [b for b in self.before if b not in self.after]

    @property
    def bytes(self) -> int:
        """What the new replicas copy from the leader."""
        return self.size * len(self.adding)

    @property
    def reorder_only(self) -> bool:
        return not self.adding and not self.removing


@dataclass(frozen=True)
class DirMove:
    """One replica's log dir on its broker: `before` None for a replica the plan brings to the
    broker (its dir is chosen, nothing more is copied); else a move between two dirs of the
    broker, which copies the replica once more on that broker."""
    key: Key
    broker: int
    before: str | None
    after: str
    size: int

    @property
    def bytes(self) -> int:
        return self.size if self.before is not None else 0


@dataclass(frozen=True)
class Plan:
    changes: list[Change]
    goals: list[GoalStatus]
    bound_replicas: int                 # the fewest replicas any plan meeting the goals moves
    bound_bytes: int                    # ... and the fewest bytes
    leader_changes: int                 # partitions whose leader after the elections is another broker
    notes: list[Note] = field(default_factory=list)  # what could not be met, and why
    dir_moves: list[DirMove] = field(default_factory=list)   # the log_dirs goal's (replicas keep their broker)

    @property
    def moved_dir_bytes(self) -> int:
        """What the moves between the log dirs of a broker copy."""
        return sum(m.bytes for m in self.dir_moves)

    @property
    def moved_replicas(self) -> int:
        return sum(len(c.adding) for c in self.changes)

    @property
    def moved_bytes(self) -> int:
        return sum(c.bytes for c in self.changes)

    def proposed(self) -> dict[Key, list[int]]:
        return {c.key: list(c.after) for c in self.changes}

    def current(self) -> dict[Key, list[int]]:
        return {c.key: list(c.before) for c in self.changes}

    def goal(self, name: str) -> GoalStatus:
        return next(g for g in self.goals if g.goal == name)


def plan(layout: Layout, options: Options | None = None) -> Plan:
    options = options or Options()
    unknown = [g for g in options.goals if g not in GOALS]
    if unknown:
        raise BalanceError(UNKNOWN_GOAL, goal=unknown[0])
    # A plan allocates millions of small objects and frees few: the cyclic collector's passes
    # over them would cost more than the plan itself (3x on a million partitions).
    collecting = gc.isenabled()
    gc.disable()
    try:
        b = _Balancer(layout, options)
        before = b.measure(planned=False)
        bound = b.lower_bound()
        if not options.leaders_only and not options.drain_only:
            b.evacuate()
            b.repair_racks()
            b.balance_counts()
            b.balance_values(DISK)
            b.balance_values(BYTES_IN)
            b.spread_topics()
        if options.drain_only:
            b.drain_leaders()
        else:
            b.balance_leaders()
        after = b.measure(planned=True)
        dirs = _DirGoal(layout, options)
        dir_moves: list[DirMove] = []
        if dirs.applies:
            before[LOG_DIRS] = dirs.measure(layout.replicas, dirs.now)
            placed = dirs.now if options.leaders_only or options.drain_only else \
                dirs.plan(b.reps, move_kept=not options.place_dirs_only)
            after[LOG_DIRS] = dirs.measure(b.reps, placed)
            dir_moves = dirs.moves(b.reps, placed)
        result = b.result(before, after, bound)
        return Plan(result.changes, result.goals, result.bound_replicas, result.bound_bytes, result.leader_changes,
                    result.notes + dirs.notes(), dir_moves)
    finally:
        if collecting:
            gc.enable()


def measure(layout: Layout, options: Options | None = None) -> list[GoalStatus]:
    """Each goal as the layout stands (before == after): how far it is from met, without planning."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        b = _Balancer(layout, options or Options())
        now = b.measure(planned=False)
        dirs = _DirGoal(layout, options or Options())
        if dirs.applies:
            now[LOG_DIRS] = dirs.measure(layout.replicas, dirs.now)
        return b.result(now, now, (0, 0)).goals
    finally:
        if collecting:
            gc.enable()


# -- targets and distances ------------------------------------------------------------------------


def _dev(x: float, lo: float, hi: float) -> float:
    """How far x is outside [lo, hi]."""
    return x - hi if x > hi else lo - x if x < lo else 0.0


def share(values: dict[int, float], members: list[int], can_take: set[int],
          weights: dict[int, float] | None = None, arriving: float = 0.0) -> dict[int, float]:
    """Each member's fair share of what the members hold plus what is `arriving` (by `weights`,
    else even); a member that cannot take more and holds less than its share keeps what it
    holds, and the rest share the remainder (repeated until no such member is left)."""
    total = sum(values.get(b, 0.0) for b in members) + arriving
    fixed: dict[int, float] = {}
    while True:
        free = [b for b in members if b not in fixed]
        weight = {b: (weights[b] if weights else 1.0) for b in free}
        mass = sum(weight.values())
        rest = total - sum(fixed.values())
        target = {b: rest * weight[b] / mass if mass else 0.0 for b in free}
        newly = {b: values.get(b, 0.0) for b in free if b not in can_take and values.get(b, 0.0) < target[b] - EPS}
        if not newly:
            return {**target, **fixed}
        fixed.update(newly)


def count_bounds(values: dict[int, float], members: list[int], can_take: set[int],
                 arriving: float = 0.0) -> dict[int, tuple[int, int]]:
    """(low, high) per member for a count goal: within one of the fair share."""
    target = share(values, members, can_take, arriving=arriving)
    return {b: (math.floor(target[b] + EPS), math.ceil(target[b] - EPS)) for b in members}


def value_bounds(values: dict[int, float], members: list[int], can_take: set[int], weights: dict[int, float] | None,
                 threshold: float, floor: float, arriving: float = 0.0) -> dict[int, tuple[float, float]]:
    """(low, high) per member for a value goal: within `threshold` of the fair share (never
    closer than `floor`)."""
    target = share(values, members, can_take, weights, arriving)
    out = {}
    for b in members:
        slack = max(threshold * target[b], floor)
        out[b] = (target[b] - slack, target[b] + slack)
    return out


def topic_bounds(replicas: int, brokers: int) -> tuple[int, int]:
    """(low, high) replicas of one topic per broker. As Cruise Control's topic goal does by
    default, only a topic crowded onto a few brokers breaks it: no broker may hold more than
    twice the topic's mean, or two more than it for a small topic (a topic of 3,000 replicas on
    300 brokers: at most 20 on a broker; 90 on 12 brokers: at most 15; 9 on 12: at most 2)."""
    mean = replicas / brokers
    return 0, math.ceil(mean + max(2.0, mean) - EPS)


# -- the planner ----------------------------------------------------------------------------------


class _Balancer:
    def __init__(self, layout: Layout, options: Options):
        self.layout = layout
        self.options = options
        self.goals = set(options.goals)
        self.brokers = layout.brokers
        # The layout's own lists until a partition changes (move() copies it then): a million
        # partitions need not be copied to move a few thousand.
        self.reps = list(layout.replicas)
        self.size = layout.sizes
        self.rate = layout.rates
        self.notes: list[Note] = []
        known = set(self.brokers)
        for r in self.reps:
            if not known.issuperset(r):
                raise BalanceError(UNKNOWN_BROKER, broker=min(set(r) - known))
        self.members = sorted(b for b, x in self.brokers.items() if x.member)
        if not self.members:
            raise BalanceError(NO_MEMBERS)
        self.takers = {b for b in self.members if self.brokers[b].takes}
        self.drained = {b for b, x in self.brokers.items() if x.drained}
        self.cordoned = {b for b, x in self.brokers.items() if x.cordoned}
        # Racks: the goal applies when every broker that stays has one, and there are two or more.
        racks = {b: self.brokers[b].rack for b in self.members}
        self.rack_aware = RACK in self.goals and all(racks.values()) and len(set(racks.values())) > 1
        if RACK in self.goals and not all(racks.values()) and any(racks.values()):
            self.notes.append(NoRack(tuple(sorted(b for b, r in racks.items() if not r))))
        self.rack_of = {b: (x.rack if self.rack_aware else None) for b, x in self.brokers.items()}
        self.n_racks = len({racks[b] for b in self.members}) if self.rack_aware else 1
        self.rack_list = sorted({self.rack_of[b] for b in self.members}, key=str)
        topic_ids: dict[str, int] = {}
        self.topic = [topic_ids.setdefault(t, len(topic_ids)) for t, _ in layout.keys]
        self.use_topics = TOPICS in self.goals
        self.amount: dict[str, list] = {DISK: self.size, BYTES_IN: self.rate or []}
        self._off_rack: list[int] | None = None   # the partitions off-rack before the plan
        # Indexes built when first asked for, kept current by move().
        self._sorted: dict[tuple[str, int], list[tuple[float, int]]] = {}
        self._topic_on: dict[int, dict[int, set[int]]] = {}
        self._count_state()

    # -- state ------------------------------------------------------------------------------------

    def _count_state(self) -> None:
        """Per broker its partitions, replicas, bytes, bytes in and replicas of each topic, from
        one pass over the replicas (the sums are made per broker, in C)."""
        lists: dict[int, list[int]] = {b: [] for b in self.brokers}
        for i, r in enumerate(self.reps):
            for b in r:
                lists[b].append(i)
        self.on = on = {b: set(x) for b, x in lists.items()}
        self.load: Counter = Counter({b: len(x) for b, x in on.items()})
        self.bytes: dict[int, float] = {b: float(sum(map(self.size.__getitem__, x))) for b, x in on.items()}
        self.rates: dict[int, float] = dict.fromkeys(self.brokers, 0.0)
        if self.rate is not None:
            self.rates = {b: float(sum(map(self.rate.__getitem__, x))) for b, x in on.items()}
        self.tcount: dict[int, Counter] = {b: Counter() for b in self.brokers}
        if self.use_topics:
            self.tcount = {b: Counter(map(self.topic.__getitem__, x)) for b, x in on.items()}
        self._targets()

    def _targets(self) -> None:
        """The bounds every goal judges against, fixed for the whole plan: moves change where
        replicas are, not how many there are. Replicas on a broker that is down (and not
        drained) stay there and count for no one; a drained broker's arrive at the members."""
        members, takers, drained = self.members, self.takers, self.drained

        def held(values: dict[int, float]) -> tuple[dict[int, float], float]:
            return {b: values[b] for b in members}, sum(values[b] for b in drained)

        counts, extra = held({b: float(self.load[b]) for b in self.brokers})
        self.count_bound = count_bounds(counts, members, takers, extra)
        caps = {b: self.brokers[b].capacity for b in members}
        weights = {b: float(c) for b, c in caps.items() if c} if all(caps.values()) else None
        values, extra = held(self.bytes)
        self.disk_bound = value_bounds(values, members, takers, weights, self.options.disk_threshold, MIN_BYTES_SLACK, extra)
        self.rate_bound: dict[int, tuple[float, float]] = {}
        if self.rate is not None:
            values, extra = held(self.rates)
            self.rate_bound = value_bounds(values, members, takers, None, self.options.rate_threshold, MIN_RATE_SLACK, extra)
        self.topic_bound: dict[int, tuple[int, int]] = {}
        self.topic_mean: dict[int, float] = {}
        if self.use_topics:
            gone = {b for b, x in self.brokers.items() if not x.live and not x.drained}
            per_topic: Counter = Counter()
            for b, of_topic in self.tcount.items():
                if b not in gone:
                    per_topic.update(of_topic)
            n = len(members)
            self.topic_bound = {t: topic_bounds(c, n) for t, c in per_topic.items()}
            self.topic_mean = {t: c / n for t, c in per_topic.items()}

    def sorted_on(self, goal: str, b: int) -> list[tuple[float, int]]:
        """(amount, partition) of the replicas on b, by the amount of a value goal."""
        got = self._sorted.get((goal, b))
        if got is None:
            amount = self.amount[goal]
            got = self._sorted[(goal, b)] = sorted((amount[i], i) for i in self.on[b])
        return got

    def topic_on(self, t: int, b: int) -> set[int]:
        """The partitions of topic t with a replica on b (b's are grouped by topic once)."""
        groups = self._topic_on.get(b)
        if groups is None:
            groups = self._topic_on[b] = {}
            topic = self.topic
            for i in self.on[b]:
                groups.setdefault(topic[i], set()).add(i)
        return groups.setdefault(t, set())

    def move(self, i: int, s: int, d: int) -> None:
        reps = self.reps[i]
        if reps is self.layout.replicas[i]:
            reps = self.reps[i] = list(reps)
        reps[reps.index(s)] = d
        self.load[s] -= 1
        self.load[d] += 1
        size = self.size[i]
        self.bytes[s] -= size
        self.bytes[d] += size
        if self.rate is not None:
            self.rates[s] -= self.rate[i]
            self.rates[d] += self.rate[i]
        if self.use_topics:
            topic = self.topic[i]
            self.tcount[s][topic] -= 1
            self.tcount[d][topic] += 1
            for b, add in ((s, False), (d, True)):
                groups = self._topic_on.get(b)
                if groups is not None:
                    got = groups.setdefault(topic, set())
                    (got.add if add else got.discard)(i)
        self.on[s].discard(i)
        self.on[d].add(i)
        for goal, amount in self.amount.items():
            for b, add in ((s, False), (d, True)):
                lst = self._sorted.get((goal, b))
                if lst is not None:
                    entry = (amount[i], i)
                    if add:
                        bisect.insort(lst, entry)
                    else:
                        lst.pop(bisect.bisect_left(lst, entry))

    # -- what a move changes (partition i: s -> d) ------------------------------------------------

    def off_rack(self, reps: list[int]) -> int:
        """The rack penalty of a replica list (0 at once in the common case: a rack each)."""
        rack = self.rack_of
        racks = {rack[b] for b in reps}
        if len(racks) == len(reps):
            return 0
        return rack_penalty(Counter(rack[b] for b in reps), self.n_racks)

    def changed(self) -> list[int]:
        """The partitions the plan changed so far (move() copies a list before changing it)."""
        original = self.layout.replicas
        return [i for i, r in enumerate(self.reps) if r is not original[i]]

    def off_rack_before(self) -> list[int]:
        """The partitions that break the rack rule as the layout stands (one pass, kept)."""
        if self._off_rack is None:
            self._off_rack = [i for i, reps in enumerate(self.layout.replicas) if self.off_rack(reps)] \
                if self.rack_aware else []
        return self._off_rack

    def d_rack(self, i: int, s: int, d: int) -> int:
        """The change of partition i's rack penalty (assignment_plan.rack_penalty) by s -> d."""
        if not self.rack_aware:
            return 0
        rack = self.rack_of
        return self._d_rack_to(self.reps[i], rack[s], rack[d])

    def _d_rack_to(self, reps: list[int], rs: object, rd: object) -> int:
        if rs == rd:
            return 0
        rack = self.rack_of
        size = len(reps)
        cap = -(-size // self.n_racks)
        cs = cd = 0
        for b in reps:
            r = rack[b]
            if r == rs:
                cs += 1
            elif r == rd:
                cd += 1
        covered = len({rack[b] for b in reps})
        want = min(size, self.n_racks)
        over = (max(0, cs - 1 - cap) - max(0, cs - cap)) + (max(0, cd + 1 - cap) - max(0, cd - cap))
        after = covered - (cs == 1) + (cd == 0)
        return over + max(0, want - after) - max(0, want - covered)

    def _d_member(self, b: int, x: float, delta: float, bounds: dict) -> float:
        if b in self.drained:
            return -abs(delta) if delta < 0 else abs(delta)   # a drained broker is best empty
        lo, hi = bounds.get(b, (0, math.inf))
        return _dev(x + delta, lo, hi) - _dev(x, lo, hi)

    def d_count(self, s: int, d: int) -> float:
        if REPLICAS not in self.goals:
            return 0.0
        return self._d_member(s, self.load[s], -1, self.count_bound) + self._d_member(d, self.load[d], 1, self.count_bound)

    def d_value(self, goal: str, s: int, d: int, amount: float) -> float:
        if goal not in self.goals or not amount:
            return 0.0
        values, bounds = (self.bytes, self.disk_bound) if goal == DISK else (self.rates, self.rate_bound)
        if not bounds:
            return 0.0
        return self._d_member(s, values[s], -amount, bounds) + self._d_member(d, values[d], amount, bounds)

    def d_topic(self, t: int, s: int, d: int) -> int:
        if not self.use_topics:
            return 0
        lo, hi = self.topic_bound[t]
        cs, cd = self.tcount[s][t], self.tcount[d][t]
        out = int(_dev(cs - 1, lo, hi) - _dev(cs, lo, hi)) if s in self.count_bound else -1
        if d in self.count_bound:
            out += int(_dev(cd + 1, lo, hi) - _dev(cd, lo, hi))
        return out

    def deltas(self, i: int, s: int, d: int) -> tuple[float, float, float, float, int]:
        """Each goal's change by moving partition i's replica from s to d: (rack, replicas, disk,
        bytes in, topics)."""
        return (self.d_rack(i, s, d), self.d_count(s, d), self.d_value(DISK, s, d, self.size[i]),
                self.d_value(BYTES_IN, s, d, self.rate[i] if self.rate is not None else 0.0),
                self.d_topic(self.topic[i], s, d))

    def allowed(self, i: int, s: int, d: int) -> bool:
        return d in self.takers and d not in self.reps[i] and d != s and not self.pinned(i, s)

    def pinned(self, i: int, leaving: int | None = None) -> bool:
        """Whether Kafka would refuse any new target for partition i that keeps all its replicas
        but `leaving`: one of them is on a cordoned broker."""
        return bool(self.cordoned) and any(b in self.cordoned for b in self.reps[i] if b != leaving)

    @staticmethod
    def keeps(deltas: tuple[float, ...], upto: int) -> bool:
        """Whether the goals before position `upto` of `deltas` stay as good."""
        return all(x <= EPS for x in deltas[:upto])

    # -- the hard constraints ---------------------------------------------------------------------

    def evacuate(self) -> None:
        """Every replica on a drained broker moves off: poured into the brokers with room as the
        replicas goal sees it (balance_counts), the rest each to the best broker that may take it."""
        if not self.drained:
            return
        bound = self.count_bound
        room = {d: bound[d][1] - self.load[d] for d in self.takers if self.load[d] < bound[d][1]}
        if room:
            self._pour({s: self.load[s] for s in self.drained}, room, {d for d in room if self.load[d] < bound[d][0]})
        takers = sorted(self.takers)
        for s in sorted(self.drained):
            for i in sorted(self.on[s]):
                reps = self.reps[i]
                best = None if self.pinned(i, s) else \
                    min(((self.deltas(i, s, d), self.load[d], d) for d in takers if d not in reps), default=None)
                if best is not None:   # what stays is said by result()
                    self.move(i, s, best[2])

    def repair_racks(self) -> None:
        """Partitions that break the rack rule: the move that mends it, the best for the other goals."""
        if not self.rack_aware:
            return
        takers = sorted(self.takers)
        for i in sorted(set(self.off_rack_before()) | set(self.changed())):
            while self.off_rack(reps := self.reps[i]):
                # A broker that is down keeps its replicas (it may be restarting): others move.
                options = [(self.deltas(i, s, d), self.load[d], s, d) for s in reps for d in takers
                           if d not in reps and self.brokers[s].live and not self.pinned(i, s) and self.d_rack(i, s, d) < 0]
                if not options:
                    break
                best = min(options)
                self.move(i, best[2], best[3])

    # -- replicas per broker ----------------------------------------------------------------------

    def balance_counts(self) -> None:
        """Replicas from brokers above their ceiling to brokers below it (the ones below their
        floor first), then from those above their floor to those still below theirs. A move is
        taken only when the rack rule stays as good."""
        if REPLICAS not in self.goals:
            return
        bound = self.count_bound
        for phase in (0, 1):
            if phase == 0:
                sources = {s: self.load[s] - bound[s][1] for s in self.members if self.load[s] > bound[s][1]}
                room = {d: bound[d][1] - self.load[d] for d in self.takers if self.load[d] < bound[d][1]}
                urgent = {d for d in room if self.load[d] < bound[d][0]}
            else:
                room = {d: bound[d][0] - self.load[d] for d in self.takers if self.load[d] < bound[d][0]}
                sources = {s: self.load[s] - bound[s][0] for s in self.members if self.load[s] > bound[s][0]}
                urgent = set(room)
            if sources and room:
                self._pour(sources, room, urgent)

    def _pour(self, sources: dict[int, int], room: dict[int, int], urgent: set[int]) -> None:
        """Move up to sources[s] replicas off each source into brokers with room. Each source
        sheds replicas of the size that brings its bytes to its share (the smallest when its
        bytes are not above it), of a topic it holds too much of when it can; each goes to a
        receiver of a rack it may go to that needs it most: below its floor, short of the
        topic, fewest bytes."""
        receivers: dict[object, list[int]] = {}
        for d in sorted(room, key=lambda d: (d not in urgent, self.load[d], d)):
            receivers.setdefault(self.rack_of[d], []).append(d)
        mid = {b: (lo + hi) / 2 for b, (lo, hi) in self.disk_bound.items()}
        shed = self._bytes_to_shed(sources, room) if DISK in self.goals else {}
        size = self.size
        for s in sorted(sources, key=lambda s: (-sources[s], s)):
            need = sources[s]
            cands = self._candidates(s, need)
            every = len(cands) == self.load[s] or bool(self.cordoned)
            stash: list[tuple[int, int, int]] = []   # of topics s cannot spare: tried once the rest ran out
            relaxed = False
            while need > 0 and any(receivers.values()):
                ideal = max(0.0, shed.get(s, 0.0)) / need
                picked = self._pick(cands, ideal, s, receivers, urgent, mid, None if relaxed else stash) if cands else None
                if picked is None:
                    if stash:
                        cands, stash, relaxed = sorted(stash), [], True
                    elif not every:
                        cands, every, relaxed = self._candidates(s, self.load[s]), True, False   # the sample ran out
                    else:
                        break
                    continue
                k, i, d = picked
                cands.pop(k)
                self.move(i, s, d)
                if s in shed:
                    shed[s] -= size[i]
                need -= 1
                room[d] -= 1
                group = receivers[self.rack_of[d]]
                if room[d] <= 0:
                    group.remove(d)
                    urgent.discard(d)
                elif d in urgent and self.load[d] >= self.count_bound[d][0]:
                    urgent.discard(d)
                    group.remove(d)
                    group.append(d)
            sources[s] = need

    def _candidates(self, s: int, need: int) -> list[tuple[int, int, int]]:
        """(size, scatter, partition) of replicas on s to choose `need` from, by size: every one, or
        for a broker that sheds a few of many, a sample of 16 per replica to shed (enough to find
        sizes and topics that fit, without sorting 10,000s)."""
        parts = [i for i in self.on[s] if not self.pinned(i, s)] if self.cordoned else list(self.on[s])
        wanted = max(64, 16 * need)
        if wanted < len(parts):   # a random sample (seeded: the same plan each run), not a stride,
            parts = random.Random(s).sample(parts, wanted)   # which would offer one topic at a time
        size = self.size
        # Equal sizes in a scattered order, not by index (which would offer one topic at a time).
        return sorted((size[i], (i * 2654435761) & 0xFFFFFFFF, i) for i in parts)

    def _bytes_to_shed(self, sources: dict[int, int], room: dict[int, int]) -> dict[int, float]:
        """The bytes each source should send with its replicas: what takes it below its disk
        ceiling, and more, spread by what each can spare, while the receivers need more to
        reach their floor."""
        bound, values = self.disk_bound, self.bytes
        must = {s: max(0.0, values[s] - bound[s][1]) for s in sources if s in bound}
        can = {s: max(must[s], values[s] - bound[s][0]) for s in must}
        wanted = sum(max(0.0, bound[d][0] - values[d]) for d in room if d in bound)
        extra = max(0.0, wanted - sum(must.values()))
        spare = sum(can[s] - must[s] for s in must)
        part = min(1.0, extra / spare) if spare > EPS else 0.0
        return {s: must[s] + (can[s] - must[s]) * part for s in must}

    def _pick(self, cands: list[tuple[int, int, int]], ideal: float, s: int, receivers: dict[object, list[int]],
              urgent: set[int], mid: dict[int, float], stash: list | None) -> tuple[int, int, int] | None:
        """(index in cands, partition, receiver) of the next replica to move off s: the nearest
        in size to `ideal` of a topic that both s and the receiver keep within one of its mean
        (so topics stay spread), else the nearest s can spare. Candidates no receiver can take are
        dropped (receivers only fill up); with a `stash`, those of a topic s cannot spare go
        there (s only loses replicas), so that no later pick looks at them again."""
        topic, tcount, tmean, use_topics = self.topic, self.tcount, self.topic_mean, self.use_topics
        rs = self.rack_of[s]
        k = bisect.bisect_left(cands, (ideal, -1, -1))
        lo, hi = k - 1, k
        dropped: list[int] = []
        fallback = None
        for looked_at in range(len(cands)):
            if looked_at >= 24 and fallback is not None:   # the nearest two dozen had no better one
                break
            if hi < len(cands) and (lo < 0 or cands[hi][0] - ideal <= ideal - cands[lo][0]):
                pos = hi
                hi += 1
            elif lo >= 0:
                pos = lo
                lo -= 1
            else:
                break
            i = cands[pos][2]
            t = topic[i]
            mean_t = tmean[t] if use_topics else 0.0
            if stash is not None and use_topics and tcount[s][t] - 1 < mean_t - 1:
                stash.append(cands[pos])   # s keeps within one of the topic's mean
                dropped.append(pos)
                continue
            reps = self.reps[i]
            best = None
            looked = 0
            for r in self._racks_for(reps, rs):
                for d in receivers.get(r, ()):
                    if d in reps:
                        continue
                    key = (d not in urgent, use_topics and tcount[d][t] + 1 > mean_t + 1, self.bytes[d] - mid.get(d, 0.0))
                    if best is None or key < best[0]:
                        best = (key, d)
                    looked += 1
                    if looked >= 4:
                        break
            if best is None:
                dropped.append(pos)
                continue
            if not best[0][1]:
                fallback = (pos, i, best[1])
                break
            if fallback is None:
                fallback = (pos, i, best[1])
        for pos in sorted(dropped, reverse=True):
            del cands[pos]
        if fallback is None:
            return None
        pos, i, d = fallback
        return pos - sum(1 for x in dropped if x < pos), i, d

    def _racks_for(self, reps: list[int], rs: object) -> list[object]:
        """The racks a replica of `reps` on rack rs may move to, keeping the rack rule: its own,
        and when the replicas are each on a rack of their own, the racks they leave free."""
        if not self.rack_aware:
            return [rs]
        rack = self.rack_of
        used = {rack[b] for b in reps}
        if len(used) == len(reps):
            return [rs, *(r for r in self.rack_list if r not in used)]
        return [r for r in self.rack_list if r == rs or self._d_rack_to(reps, rs, r) <= 0]

    # -- bytes and bytes in per broker ------------------------------------------------------------

    def balance_values(self, goal: str) -> None:
        """Bytes (or bytes in) from brokers above their ceiling to brokers below their floor:
        one replica when the replicas goal allows it, else a swap with a smaller replica of the
        other broker. Each step moves the fewest bytes that bring the two within their bounds
        (or as close as one replica can), and leaves every higher goal as good."""
        if goal not in self.goals or (goal == BYTES_IN and self.rate is None):
            return
        values, bounds = (self.bytes, self.disk_bound) if goal == DISK else (self.rates, self.rate_bound)
        for _ in range(len(self.reps) + 100):
            step = self._next_value_step(goal, values, bounds)
            if step is None:
                return
            for i, a, b in step:
                self.move(i, a, b)

    def _next_value_step(self, goal: str, values: dict[int, float], bounds: dict) -> list[tuple[int, int, int]] | None:
        mid = {b: (lo + hi) / 2 for b, (lo, hi) in bounds.items()}
        over = sorted((b for b in self.members if values[b] > bounds[b][1] + EPS), key=lambda b: bounds[b][1] - values[b])
        under = sorted((b for b in self.takers if values[b] < bounds[b][0] - EPS), key=lambda b: values[b] - bounds[b][0])
        if not over and not under:
            return None
        light = sorted(self.takers, key=lambda d: values[d] - mid[d])[:16]
        heavy = sorted(self.members, key=lambda s: mid[s] - values[s])[:16]
        pairs = [(s, d) for s in over[:4] for d in light if d != s] + [(s, d) for d in under[:4] for s in heavy if s != d]
        for s, d in dict.fromkeys(pairs):
            step = self._value_step(goal, s, d, values, bounds)
            if step:
                return step
        return None

    def _value_step(self, goal: str, s: int, d: int, values: dict[int, float], bounds: dict) -> list | None:
        """The move (or swap) from s to d that helps `goal` with the fewest bytes; one the
        topics goal does not mind, if there is one among the nearest."""
        need = max(values[s] - bounds[s][1], bounds[d][0] - values[d], EPS)
        pos = 2 if goal == DISK else 3
        mine = self.sorted_on(goal, s)
        fallback = None
        if self.d_count(s, d) <= EPS:   # the replicas goal allows a single move between them
            k = bisect.bisect_left(mine, (need, -1))
            for amt, i in [*mine[k:k + 64], *reversed(mine[max(0, k - 64):k])]:
                if amt <= EPS or not self.allowed(i, s, d):
                    continue
                deltas = self.deltas(i, s, d)
                if deltas[pos] < -EPS and self.keeps(deltas, pos):
                    if deltas[4] <= 0:
                        return [(i, s, d)]
                    fallback = fallback or [(i, s, d)]
            if fallback:
                return fallback
        # A swap keeps the replica counts: i (s -> d) against a smaller j (d -> s).
        theirs = self.sorted_on(goal, d)
        amount = self.amount[goal]
        for amt_i, i in reversed(mine[-24:]):
            if not self.allowed(i, s, d) or self.d_rack(i, s, d) > 0:
                continue
            k = bisect.bisect_left(theirs, (amt_i - need, -1))
            for amt_j, j in [*theirs[k:k + 16], *reversed(theirs[max(0, k - 16):k])]:
                if j == i or amt_j >= amt_i or not self.allowed(j, d, s) or self.d_rack(j, d, s) > 0:
                    continue
                if self._swap_keeps(goal, i, j, s, d, values, bounds, amount):
                    if self.topic[i] == self.topic[j] or \
                            self.d_topic(self.topic[i], s, d) + self.d_topic(self.topic[j], d, s) <= 0:
                        return [(i, s, d), (j, d, s)]
                    fallback = fallback or [(i, s, d), (j, d, s)]
        return fallback

    def _swap_keeps(self, goal: str, i: int, j: int, s: int, d: int, values, bounds, amount) -> bool:
        """Whether swapping i (s -> d) with j (d -> s) brings `goal` closer (and keeps the disk
        goal for bytes in)."""
        if _swap_gain(values, bounds, s, d, amount[i] - amount[j]) >= -EPS:
            return False
        return goal == DISK or DISK not in self.goals or \
            _swap_gain(self.bytes, self.disk_bound, s, d, self.size[i] - self.size[j]) <= EPS

    # -- each topic's spread ----------------------------------------------------------------------

    def spread_topics(self) -> None:
        """Each topic's replicas from brokers holding more than its ceiling, and to brokers holding
        fewer than its floor: a move when every higher goal stays as good, else a swap with a
        replica of another topic coming back."""
        if not self.use_topics:
            return
        for _ in range(4):   # a move can open the way for one tried before it
            wrong = self._topics_off()
            if not wrong or not self._spread_pass(wrong):
                return

    def _topics_off(self) -> list[tuple[int, int, bool]]:
        """(topic, broker, above its ceiling) for each broker outside a topic's bounds."""
        wrong = []
        for b in self.members:
            counts = self.tcount[b]
            for t, (lo, hi) in self.topic_bound.items():
                c = counts.get(t, 0)
                if c > hi or (c < lo and b in self.takers):
                    wrong.append((t, b, c > hi))
        return sorted(wrong)

    def _spread_pass(self, wrong: list[tuple[int, int, bool]]) -> bool:
        """One pass over the topics off their bounds; whether anything moved."""
        bound, tcount, rack_of = self.topic_bound, self.tcount, self.rack_of
        takers = sorted(self.takers)
        moved = False
        for t, b, above in wrong:
            lo, hi = bound[t]
            while tcount[b][t] > hi if above else tcount[b][t] < lo:
                # Brokers of the same rack first: with a replica in every rack, only they can swap.
                if above:
                    dests = sorted((d for d in takers if tcount[d][t] < hi),
                                   key=lambda d: (rack_of[d] != rack_of[b], tcount[d][t], self.load[d]))
                    tries = [(b, dests)]
                else:
                    srcs = sorted((x for x in self.members if tcount[x][t] > lo),
                                  key=lambda x: (rack_of[x] != rack_of[b], -tcount[x][t], -self.load[x]))
                    tries = [(x, [b]) for x in srcs[:8]]
                step = None
                for s, dests in tries:
                    mine = heapq.nsmallest(8, self.topic_on(t, s), key=self.size.__getitem__)
                    step = self._topic_step(mine, s, dests)
                    if step:
                        break
                if step is None:
                    break
                for i, x, y in step:
                    self.move(i, x, y)
                moved = True
        return moved

    def _topic_step(self, mine: list[int], s: int, dests: list[int]) -> list | None:
        """A move of one of `mine` (s -> a broker of `dests`) that no higher goal minds, else a
        swap with a replica of another topic coming back, as near its size as can be (so the
        bytes per broker stay)."""
        swaps = []
        for i in mine:
            reps = self.reps[i]
            tried = 0
            for d in dests:
                if d in reps or self.d_rack(i, s, d) > 0:
                    continue
                deltas = self.deltas(i, s, d)
                if deltas[4] < 0 and self.keeps(deltas, 4):
                    return [(i, s, d)]
                swaps.append((i, d))
                tried += 1
                if tried >= 8:
                    break
        for i, d in swaps[:16]:
            theirs = self.sorted_on(DISK, d)
            k = bisect.bisect_left(theirs, (self.size[i], -1))
            for _, j in [*theirs[k:k + 32], *reversed(theirs[max(0, k - 32):k])]:
                if j == i or s in self.reps[j] or self.topic[j] == self.topic[i]:
                    continue
                if self._topic_swap_ok(i, j, s, d):
                    return [(i, s, d), (j, d, s)]
        return None

    def _topic_swap_ok(self, i: int, j: int, s: int, d: int) -> bool:
        if self.d_rack(j, d, s) > 0:
            return False
        if self.d_topic(self.topic[i], s, d) + self.d_topic(self.topic[j], d, s) >= 0:
            return False
        if DISK in self.goals and _swap_gain(self.bytes, self.disk_bound, s, d, self.size[i] - self.size[j]) > EPS:
            return False
        if BYTES_IN in self.goals and self.rate is not None and \
                _swap_gain(self.rates, self.rate_bound, s, d, self.rate[i] - self.rate[j]) > EPS:
            return False
        return True

    # -- leaders ----------------------------------------------------------------------------------

    def balance_leaders(self) -> None:
        if LEADERS not in self.goals:
            return
        brokers = self.leading()
        isr, original = self.layout.isr, self.layout.replicas
        every = len(brokers) == len(self.brokers)
        if every and isr is None and not self.cordoned:
            balance_leaders(self.reps, brokers, on=self.on)
            return
        ok = set(brokers)
        # An unmoved partition: a preferred election picks only a replica in its ISR. One with a
        # replica on a cordoned broker cannot be reordered at all (Kafka refuses the target).
        allowed = [reps[:1] if self.pinned(i) else
                   [b for b in reps if b in ok and (isr is None or reps != original[i] or b in isr[i])]
                   for i, reps in enumerate(self.reps)]
        balance_leaders(self.reps, brokers, allowed.__getitem__, on=self.on)

    def leading(self) -> list[int]:
        """The brokers leadership is shared by: those that stay, may lead and hold a replica."""
        return [b for b in self.members if self.brokers[b].may_lead and self.load[b] > 0]

    def drain_leaders(self) -> None:
        """Only the partitions a broker that may not lead leads (or would after an election) get
        another first replica: the one in sync that leads fewest so far (a maintenance drain
        changes nothing else)."""
        isr = self.layout.isr
        leaders = self.layout.leaders or [r[0] if r else -1 for r in self.reps]
        led = Counter(r[0] for r in self.reps if r)
        for i, reps in enumerate(self.reps):
            if not reps or (self.brokers[reps[0]].may_lead and self.brokers[leaders[i]].may_lead if leaders[i] >= 0
                            else self.brokers[reps[0]].may_lead):
                continue
            options = [b for b in reps if self.brokers[b].may_lead and (isr is None or b in isr[i])]
            if not options or self.pinned(i):
                self.notes.append(LeaderKept(self.layout.keys[i], reps[0], cordoned=bool(options)))
                continue
            new = min(options, key=lambda b: (led[b], b))
            led[reps[0]] -= 1
            led[new] += 1
            self.reps[i] = [new, *(b for b in reps if b != new)]

    # -- measures ---------------------------------------------------------------------------------

    def lower_bound(self) -> tuple[int, int]:
        """(replicas, bytes) any plan meeting the replica-moving goals must move (module docstring)."""
        if self.options.leaders_only or self.options.drain_only:
            return 0, 0
        need_count: dict[int, int] = {}
        need_bytes: dict[int, float] = {}
        for b in self.brokers:
            if b in self.drained:
                need_count[b], need_bytes[b] = self.load[b], self.bytes[b]
            elif b in self.count_bound:
                if REPLICAS in self.goals:
                    need_count[b] = max(0, self.load[b] - self.count_bound[b][1])
                if DISK in self.goals:
                    need_bytes[b] = max(0.0, self.bytes[b] - self.disk_bound[b][1])
        small, largest = self._extremes(need_count, need_bytes)
        replicas = sum(max(need_count.get(b, 0), largest.get(b, 0)) for b in set(need_count) | set(need_bytes))
        data = sum(max(small.get(b, 0), need_bytes.get(b, 0.0)) for b in set(need_count) | set(need_bytes))
        # What the brokers below their floors must receive bounds it too.
        if REPLICAS in self.goals:
            replicas = max(replicas, sum(max(0, self.count_bound[b][0] - self.load[b]) for b in self.takers))
        if DISK in self.goals:
            data = max(data, sum(max(0.0, self.disk_bound[b][0] - self.bytes[b]) for b in self.takers))
        if self.rack_aware:
            forced = forced_bytes = 0
            for i in self.off_rack_before():
                pen = self.off_rack(self.reps[i])
                forced += pen
                forced_bytes += pen * self.size[i]
            replicas, data = max(replicas, forced), max(data, forced_bytes)
        return replicas, int(math.ceil(data - EPS))

    def _extremes(self, count: dict[int, int], excess: dict[int, float]) -> tuple[dict[int, float], dict[int, int]]:
        """Per broker, the bytes of its `count[b]` smallest replicas, and how many of its largest
        reach `excess[b]` bytes: one walk over the partitions by size (from each end), which stops
        once every broker has what it needs (a few hundred of a broker's 10,000s, usually)."""
        order = sorted(range(len(self.reps)), key=self.size.__getitem__)
        small: dict[int, float] = {}
        left = {b: k for b, k in count.items() if k > 0}
        for i in order:
            if not left:
                break
            for b in self.reps[i]:
                if b in left:
                    small[b] = small.get(b, 0.0) + self.size[i]
                    left[b] -= 1
                    if not left[b]:
                        del left[b]
        largest: dict[int, int] = {}
        short = {b: x for b, x in excess.items() if x > EPS}
        for i in reversed(order):
            if not short:
                break
            for b in self.reps[i]:
                if b in short:
                    largest[b] = largest.get(b, 0) + 1
                    short[b] -= self.size[i]
                    if short[b] <= EPS:
                        del short[b]
        return small, largest

    def measure(self, planned: bool) -> dict[str, tuple[float, bool]]:
        """Per goal that can be judged: (its skew or violations, met). Leaders are the layout's
        leaders before the plan (`planned` False), the first replicas after it."""
        out: dict[str, tuple[float, bool]] = {}
        if self.rack_aware:
            if planned:   # only what was off-rack, or what the plan changed, can be off-rack now
                maybe = set(self.off_rack_before()) | set(self.changed())
                bad = sum(1 for i in maybe if self.off_rack(self.reps[i]))
            else:
                bad = len(self.off_rack_before())
            out[RACK] = (bad, bad == 0)
        out[REPLICAS] = self._spread({b: float(self.load[b]) for b in self.brokers}, self.count_bound)
        now = self.layout.leaders if not planned and self.layout.leaders is not None else [r[0] if r else -1 for r in self.reps]
        led = Counter(now)
        leading = self.leading()
        if leading:
            bound = count_bounds({b: float(led[b]) for b in leading}, leading, set(leading),
                                 arriving=sum(n for b, n in led.items() if b >= 0 and b not in leading))
            out[LEADERS] = self._spread({b: float(led[b]) for b in self.brokers}, bound,
                                        forbidden={b for b in self.brokers if not self.brokers[b].may_lead})
        out[DISK] = self._spread(self.bytes, self.disk_bound)
        if self.rate is not None:
            out[BYTES_IN] = self._spread(self.rates, self.rate_bound)
        if self.use_topics:
            bad = len({t for t, _, _ in self._topics_off()})
            out[TOPICS] = (bad, not bad)
        return out

    def _spread(self, values: dict[int, float], bounds: dict, forbidden: set[int] | None = None) -> tuple[float, bool]:
        """(the largest distance from a broker's target over the mean, met) for a per-broker
        value; a drained broker (or one that may not lead, for `forbidden`) should hold none."""
        held = sum(values.get(b, 0.0) for b in self.brokers if b in bounds or b in self.drained or (forbidden and b in forbidden))
        mean = held / len(self.members)
        worst = 0.0
        met = True
        for b in self.brokers:
            x = values.get(b, 0.0)
            if b in self.drained or (forbidden and b in forbidden):
                if x > EPS:
                    met = False
                    worst = max(worst, x / mean if mean else 1.0)
                continue
            if b not in bounds:
                continue
            lo, hi = bounds[b]
            if x > hi + EPS or x < lo - EPS:
                met = False
            worst = max(worst, abs(x - (lo + hi) / 2) / mean if mean else 0.0)
        return worst, met

    def result(self, before: dict, after: dict, bound: tuple[int, int]) -> Plan:
        layout = self.layout
        changes = [Change(layout.keys[i], tuple(old), tuple(new), self.size[i])
                   for i, (old, new) in enumerate(zip(layout.replicas, self.reps)) if old != new]
        leaders_now = layout.leaders if layout.leaders is not None else [r[0] if r else -1 for r in layout.replicas]
        leader_changes = sum(1 for i, new in enumerate(self.reps) if new and new[0] != leaders_now[i])
        statuses = []
        for g in GOALS:
            judged = g in self.goals and g in before and g in after
            b, a = before.get(g, (0.0, True)), after.get(g, (0.0, True))
            statuses.append(GoalStatus(g, TITLES[g], _MEASURES[g], b[0], a[0], b[1], a[1], self._target(g), applies=judged))
        notes = list(self.notes)   # a goal not judged (no racks, no rates) says so in its status
        notes += [ReplicaKept(layout.keys[i], b, self.pinned(i, b)) for b in sorted(self.drained)
                  for i in sorted(self.on[b])]
        notes += [GoalUnmet(st.goal, st.goal == LOG_DIRS and self.options.place_dirs_only)
                  for st in statuses if st.applies and not st.met_after]
        return Plan(changes, statuses, bound[0], bound[1], leader_changes, notes)

    def _target(self, goal: str) -> str:
        if goal == RACK:
            return "no partition off-rack"
        if goal in (REPLICAS, LEADERS):
            return "within one of the mean"
        if goal == DISK:
            return f"within {self.options.disk_threshold:.0%} of the mean (or 1 MiB)"
        if goal == LOG_DIRS:
            return f"within {self.options.disk_threshold:.0%} of the dir's share of its broker's bytes (or 1 MiB)"
        if goal == BYTES_IN:
            return f"within {self.options.rate_threshold:.0%} of the mean"
        return "no broker over twice a topic's mean (or mean + 2)"


class _DirGoal:
    """The log_dirs goal, on the brokers (that stay) with two or more log dirs and a known dir for
    each replica they hold: per broker the bytes of each dir within `disk_threshold` of its share
    of the broker's bytes (cordoned dirs take nothing new: one below its share keeps what it
    holds). A placement is (partition index, broker) -> dir."""

    def __init__(self, layout: Layout, options: Options):
        self.layout, self.options = layout, options
        self.now: dict[tuple[int, int], str] = {}
        several = {b: x for b, x in layout.brokers.items() if x.member and len(x.log_dirs) > 1}
        unknown: set[int] = set()
        for i, reps in enumerate(layout.replicas if several else ()):
            where = layout.dirs[i] if layout.dirs is not None else {}
            for b in reps:
                if b in several:
                    d = where.get(b)
                    if d in several[b].log_dirs:
                        self.now[(i, b)] = d
                    else:
                        unknown.add(b)
        self.brokers = {b: x for b, x in several.items() if b not in unknown}
        self.unknown = sorted(unknown)
        self.applies = LOG_DIRS in options.goals and bool(self.brokers)

    def _values(self, reps: list[list[int]], placed: dict[tuple[int, int], str]) -> dict[int, dict[int, float]]:
        """Per broker the bytes per dir (by the dir's index in its log dirs)."""
        out = {b: dict.fromkeys(range(len(x.log_dirs)), 0.0) for b, x in self.brokers.items()}
        index = {b: {d: k for k, d in enumerate(x.log_dirs)} for b, x in self.brokers.items()}
        for i, r in enumerate(reps):
            for b in r:
                if b in out and (i, b) in placed:
                    out[b][index[b][placed[(i, b)]]] += self.layout.sizes[i]
        return out

    def _bounds(self, b: int, values: dict[int, float], arriving: float = 0.0) -> dict[int, tuple[float, float]]:
        x = self.brokers[b]
        takers = {k for k, d in enumerate(x.log_dirs) if d not in x.cordoned_dirs}
        told = len(x.dir_sizes) == len(x.log_dirs) and all(x.dir_sizes)
        weights = {k: float(size) for k, size in enumerate(x.dir_sizes)} if told else None
        return value_bounds(values, list(values), takers, weights, self.options.disk_threshold, MIN_BYTES_SLACK,
                            arriving)

    def measure(self, reps: list[list[int]], placed: dict[tuple[int, int], str]) -> tuple[float, bool]:
        """(the largest distance of a dir from its share, over the broker's mean per dir; met)."""
        worst, met = 0.0, True
        for b, values in self._values(reps, placed).items():
            bounds = self._bounds(b, values)
            mean = sum(values.values()) / len(values)
            for k, v in values.items():
                lo, hi = bounds[k]
                met &= lo - EPS <= v <= hi + EPS
                worst = max(worst, abs(v - (lo + hi) / 2) / mean if mean else 0.0)
        return worst, met

    def plan(self, reps: list[list[int]], move_kept: bool = True) -> dict[tuple[int, int], str]:
        """Where each replica goes: the replicas a broker keeps stay in their dir unless a move
        between its dirs helps (and `move_kept`); those the plan brings go, largest first, to the
        dir with the most room; then, while some dir is over its share, its replica that best
        fills the emptiest dir moves there (only a move that brings both closer to their shares)."""
        placed = {k: d for k, d in self.now.items() if k[1] in reps[k[0]]}
        sizes = self.layout.sizes
        on: dict[int, list[int]] = {b: [] for b in self.brokers}
        for i, r in enumerate(reps):
            for b in r:
                if b in on:
                    on[b].append(i)
        for b, x in self.brokers.items():
            held = on[b]
            arriving = sorted((i for i in held if (i, b) not in placed), key=lambda i: -sizes[i])
            values = dict.fromkeys(range(len(x.log_dirs)), 0.0)
            mine: dict[int, list[int]] = {k: [] for k in values}
            index = {d: k for k, d in enumerate(x.log_dirs)}
            for i in held:
                if (i, b) in placed:
                    k = index[placed[(i, b)]]
                    values[k] += sizes[i]
                    mine[k].append(i)
            bounds = self._bounds(b, values, float(sum(sizes[i] for i in arriving)))
            takers = [k for k, d in enumerate(x.log_dirs) if d not in x.cordoned_dirs] or list(values)
            for i in arriving:
                k = max(takers, key=lambda k: (bounds[k][1] - values[k], -k))
                values[k] += sizes[i]
                mine[k].append(i)
                placed[(i, b)] = x.log_dirs[k]
            for _ in range(len(held) if move_kept else 0):
                s = max(values, key=lambda k: (values[k] - bounds[k][1], -k))
                d = max(takers, key=lambda k: (bounds[k][0] - values[k], bounds[k][1] - values[k], -k))
                if s == d or values[s] <= bounds[s][1] + EPS:
                    break
                gains = [(_swap_gain(values, bounds, s, d, sizes[i]), -sizes[i], i) for i in mine[s] if sizes[i] > 0]
                best = min(gains, default=None)
                if best is None or best[0] >= -EPS:
                    break
                i = best[2]
                mine[s].remove(i)
                mine[d].append(i)
                values[s] -= sizes[i]
                values[d] += sizes[i]
                placed[(i, b)] = x.log_dirs[d]
        return placed

    def moves(self, reps: list[list[int]], placed: dict[tuple[int, int], str]) -> list[DirMove]:
        """The dirs the plan sets: moves of kept replicas, and the dirs of arriving ones."""
        keys, sizes = self.layout.keys, self.layout.sizes
        out = [DirMove(keys[i], b, self.now.get((i, b)), d, sizes[i]) for (i, b), d in sorted(placed.items())
               if self.now.get((i, b)) != d]
        return sorted(out, key=lambda m: (m.key, m.broker))

    def notes(self) -> list[Note]:
        return [DirsUnknown(b) for b in self.unknown] if self.applies else []


def _swap_gain(values: dict[int, float], bounds: dict, s: int, d: int, net: float) -> float:
    """How a value goal's distance at s and d changes when `net` moves from s to d (< 0: better)."""
    now = _dev(values[s], *bounds[s]) + _dev(values[d], *bounds[d])
    return _dev(values[s] - net, *bounds[s]) + _dev(values[d] + net, *bounds[d]) - now


_MEASURES = {RACK: "partitions off-rack", REPLICAS: "skew", LEADERS: "skew", DISK: "skew", LOG_DIRS: "skew",
             BYTES_IN: "skew", TOPICS: "topics not spread"}


def layout_from(assignment: dict[Key, list[int]], brokers: Iterable[Broker], sizes: dict[Key, int] | None = None,
                leaders: dict[Key, int] | None = None, rates: dict[Key, float] | None = None) -> Layout:
    """A Layout from an assignment and per-partition facts (tests and the bench)."""
    keys = sorted(assignment)
    return Layout({b.id: b for b in brokers}, keys, [list(assignment[k]) for k in keys],
                  [int((sizes or {}).get(k, 0)) for k in keys],
                  leaders=[(leaders or {}).get(k, assignment[k][0]) for k in keys] if leaders is not None else None,
                  rates=[float(rates.get(k, 0.0)) for k in keys] if rates is not None else None)
