"""The minimal-movement reassignment planner: pure code on plain data (no I/O), so it can be
tested and benchmarked alone.

An assignment maps (topic, partition) to its replica list (the first replica is the preferred
leader). `plan()` changes as few replicas as it can to reach:

- every replica on a broker of the given list (replicas on other brokers move);
- the replication factor asked for, per topic (alter-topic --replication-factor);
- one replica per rack where racks allow (at most ceil(RF / racks) replicas in a rack, and
  min(RF, racks) racks covered), unless rack awareness is off;
- replicas per broker within one of the mean (floor or ceil), then preferred leaders per broker
  within one of the mean, which costs no data movement (only the replica order changes).

Steps, each moving one replica at a time to the least-loaded broker that keeps the rack rule:
change replication factors, evacuate brokers not in the list, repair rack spread, move replicas
from the most- to the least-loaded broker while they differ by two or more, then balance
leaders (direct swaps, then augmenting paths). Without racks, the balancing step moves exactly
`lower_bound()` replicas.

Kafka's own generator (AdminUtils.assignReplicasToBrokers), which re-places every partition
from a random start, is replayed in tests/kafka_generator.py: the tests and the bench count its
moves as the comparison.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable

Key = tuple[str, int]
Assignment = dict[Key, list[int]]


# Why a plan cannot be made (PlanError.reason).
NO_SUCH_TOPIC = "no such topic"            # `topic` (of a fresh read: reassignments.generate)
NO_BROKERS = "no brokers"                  # the broker list is empty
PARTIAL_RACKS = "partial racks"            # `brokers` have no rack while others do (Kafka refuses that too)
FACTOR_ABOVE_BROKERS = "factor above brokers"   # `topic`'s `factor` is more than the `brokers` of the list
FACTOR_BELOW_ONE = "factor below one"      # `topic`'s `factor`


class PlanError(ValueError):
    """The plan cannot be made: why (one of the reasons above) and the facts of it; the line
    people read is made above the admin layer (declarations.failure_lines.plan_line)."""

    def __init__(self, reason: str, topic: str = "", factor: int = 0, brokers: tuple[int, ...] = ()):
        super().__init__(reason)
        self.reason, self.topic, self.factor, self.brokers = reason, topic, factor, brokers


def rack_map(brokers: Iterable[int], racks: dict[int, str | None], rack_aware: bool) -> dict[int, str] | None:
    """The racks to plan with: None when rack awareness is off or no broker has a rack.
    Kafka refuses a rack-aware plan when only some brokers have a rack; so do we."""
    if not rack_aware:
        return None
    brokers = list(brokers)
    missing = [b for b in brokers if not racks.get(b)]
    if len(missing) == len(brokers):
        return None
    if missing:
        raise PlanError(PARTIAL_RACKS, brokers=tuple(sorted(missing)))
    return {b: racks[b] for b in brokers}  # type: ignore[misc]


def moved(current: Assignment, proposed: Assignment) -> int:
    """Replicas placed on a broker that did not hold them (each is one copy of the partition)."""
    return sum(len(set(r) - set(current.get(k, ()))) for k, r in proposed.items())


def rack_penalty(counts: Counter, n_racks: int) -> int:
    """How far one partition's replicas, counted per rack, are from the rack rule: at most
    ceil(RF / racks) in a rack and min(RF, racks) racks covered. 0 when the rule holds."""
    size = sum(counts.values())
    cap = -(-size // n_racks)
    return (sum(max(0, c - cap) for c in counts.values())
            + max(0, min(size, n_racks) - sum(1 for c in counts.values() if c)))


def lower_bound(current: Assignment, brokers: Iterable[int], replication_factor: dict[str, int] | None = None) -> int:
    """The fewest replica moves any plan with replicas per broker within one of the mean needs
    (racks ignored): the replicas the under-filled brokers must receive."""
    brokers = sorted(set(brokers))
    rf = replication_factor or {}
    total = sum(rf.get(t, len(r)) for (t, _), r in current.items())
    load = Counter(b for r in current.values() for b in r)
    counts = sorted((load[b] for b in brokers), reverse=True)
    base, extra = divmod(total, len(brokers))
    return sum(max(0, base + (i < extra) - c) for i, c in enumerate(counts))


def plan(current: Assignment, brokers: Iterable[int], racks: dict[int, str] | None = None,
         replication_factor: dict[str, int] | None = None) -> Assignment:
    """The proposed assignment for every partition of `current` (see the module docstring).
    `racks` maps every broker of the list to its rack (None: rack unaware)."""
    brokers = sorted(set(brokers))
    if not brokers:
        raise PlanError(NO_BROKERS)
    planner = _Planner(current, brokers, racks)
    rf = replication_factor or {}
    for topic in sorted({t for t, _ in current}):
        want = rf.get(topic, len(current[(topic, 0)] if (topic, 0) in current else
                                 next(r for (t, _), r in current.items() if t == topic)))
        if want > len(brokers):
            raise PlanError(FACTOR_ABOVE_BROKERS, topic, want, tuple(brokers))
        if want < 1:
            raise PlanError(FACTOR_BELOW_ONE, topic, want)
    planner.resize(rf)
    planner.evacuate()
    planner.repair_racks()
    planner.balance_replicas()
    planner.balance_leaders()
    return planner.result()


class _Planner:
    def __init__(self, current: Assignment, brokers: list[int], racks: dict[int, str] | None):
        self.keys = sorted(current)
        self.reps = [list(current[k]) for k in self.keys]
        self.brokers = brokers
        self.target = set(brokers)
        self.racks = racks
        self.n_racks = len(set(racks[b] for b in brokers)) if racks else 1
        self.load = Counter({b: 0 for b in brokers})
        self.on: dict[int, set[int]] = {b: set() for b in brokers}
        for i, reps in enumerate(self.reps):
            for b in reps:
                self.load[b] += 1
                self.on.setdefault(b, set()).add(i)

    # -- rack rule -------------------------------------------------------------------------------

    def rack(self, broker: int) -> object:
        return self.racks.get(broker, ("no rack", broker)) if self.racks else None

    def penalty(self, reps: list[int]) -> int:
        """0 when the replicas are spread over racks as well as racks allow; more is worse."""
        if not self.racks:
            return 0
        return self._spread_penalty(Counter(self.rack(b) for b in reps))

    def _spread_penalty(self, counts: Counter) -> int:
        return rack_penalty(counts, self.n_racks)

    def _with(self, reps: list[int], old: int | None, new: int | None) -> list[int]:
        out = [b for b in reps if b != old]
        return out + [new] if new is not None else out

    # -- moves ------------------------------------------------------------------------------------

    def _replace(self, i: int, old: int | None, new: int | None) -> None:
        """Swap replica `old` of partition i for `new` in its place (either may be None: add/drop)."""
        reps = self.reps[i]
        if old is not None:
            pos = reps.index(old)
            self.load[old] -= 1
            self.on[old].discard(i)
            if new is None:
                del reps[pos]
            else:
                reps[pos] = new
        else:
            reps.append(new)  # type: ignore[arg-type]
        if new is not None:
            self.load[new] += 1
            self.on[new].add(i)
        self._changed(i)

    def _changed(self, i: int) -> None:
        """Hook for the balancing step's index."""

    def _best_destination(self, i: int, leaving: int | None) -> int:
        reps = self.reps[i]
        base = self._with(reps, leaving, None)
        return min((b for b in self.brokers if b not in reps),
                   key=lambda b: (self.penalty(base + [b]), self.load[b], b))

    def resize(self, rf: dict[str, int]) -> None:
        for i, (topic, _) in enumerate(self.keys):
            want = rf.get(topic)
            if want is None:
                continue
            while len(self.reps[i]) > want:
                reps = self.reps[i]
                drop = min(reps, key=lambda b: (b in self.target, self.penalty(self._with(reps, b, None)),
                                                b == reps[0], -self.load[b], b))
                self._replace(i, drop, None)
            while len(self.reps[i]) < want:
                self._replace(i, None, self._best_destination(i, None))

    def evacuate(self) -> None:
        for i, reps in enumerate(self.reps):
            for b in [b for b in reps if b not in self.target]:
                self._replace(i, b, self._best_destination(i, b))

    def repair_racks(self) -> None:
        if not self.racks:
            return
        for i, reps in enumerate(self.reps):
            while (pen := self.penalty(reps)) > 0:
                options = [(self.penalty(self._with(reps, s, d)), -self.load[s], self.load[d], s, d)
                           for s in reps for d in self.brokers if d not in reps]
                best = min(options, default=None)
                if best is None or best[0] >= pen:
                    break
                self._replace(i, best[3], best[4])

    def balance_replicas(self) -> None:
        """Move one replica at a time from the most- to the least-loaded broker it can go to,
        while some broker holds two or more replicas more than another."""
        rack_keys = sorted({self.rack(b) for b in self.brokers}, key=str)
        # cand[s][rack]: partitions on s whose replica on s may move to a broker of that rack
        # without breaking the rack rule (kept current as partitions change).
        self.cand: dict[int, dict[object, set[int]]] = {b: {r: set() for r in rack_keys} for b in self.brokers}
        self._rack_keys = rack_keys
        for i in range(len(self.reps)):
            self._index(i)
        self._changed = self._reindex  # type: ignore[method-assign]
        while True:
            order = sorted(self.brokers, key=lambda b: (self.load[b], b))
            if self.load[order[-1]] - self.load[order[0]] < 2 or not self._move_one(order):
                return

    def _index(self, i: int) -> None:
        """Which racks the replicas of partition i may move to without breaking the rack rule."""
        reps = self.reps[i]
        counts = Counter(self.rack(b) for b in reps)
        pen = self._spread_penalty(counts) if self.racks else 0
        for s in reps:
            if s not in self.cand:
                continue
            for r in self._rack_keys:
                ok = True
                if self.racks:
                    counts[self.rack(s)] -= 1
                    counts[r] += 1
                    ok = self._spread_penalty(counts) <= pen
                    counts[r] -= 1
                    counts[self.rack(s)] += 1
                (self.cand[s][r].add if ok else self.cand[s][r].discard)(i)

    def _reindex(self, i: int) -> None:
        for s in self.cand:
            for r in self._rack_keys:
                self.cand[s][r].discard(i)
        self._index(i)

    def _move_one(self, order: list[int]) -> bool:
        for s in reversed(order):
            for d in order:
                if self.load[s] - self.load[d] < 2:
                    break
                for i in self.cand[s][self.rack(d)]:
                    if d not in self.reps[i]:
                        self._replace(i, s, d)
                        return True
        return False

    # -- leaders ----------------------------------------------------------------------------------

    def balance_leaders(self) -> None:
        balance_leaders(self.reps, self.brokers)

    def result(self) -> Assignment:
        return {k: list(r) for k, r in zip(self.keys, self.reps)}


def balance_leaders(reps: list[list[int]], brokers: list[int], may_lead=None,
                    on: dict[int, set[int]] | None = None) -> None:
    """Reorder the replicas of partitions (each changed list replaced, not mutated) so that their
    first replica, the preferred leader, spreads leadership over `brokers` within one of the
    mean, changing as few leaders as possible: direct shifts first (from brokers above the
    ceiling to the least-led replica; into brokers below the floor from their most-led
    replicas, through `on`, the partitions with a replica on each broker, when given), then
    augmenting paths. `may_lead(i)` gives the replicas that may lead partition i (default: all
    of them); a partition none of whose replicas may lead keeps its order."""
    allowed = reps if may_lead is None else [list(may_lead(i)) for i in range(len(reps))]
    led: dict[int, set[int]] = {b: set() for b in brokers}
    leader = []
    for i, r in enumerate(reps):
        b = r[0] if r else -1
        ok = allowed[i]
        if ok and b not in ok:   # led by a broker that may not lead it: its least-led allowed replica
            b = min((x for x in ok if x in led), key=lambda x: (len(led[x]), x), default=b)
        leader.append(b)
        if ok and b in led:
            led[b].add(i)
    low, extra = divmod(sum(len(s) for s in led.values()), len(brokers)) if brokers else (0, 0)
    high = low + (extra > 0)

    def shift(i: int, new: int) -> None:
        led[leader[i]].discard(i)
        led[new].add(i)
        leader[i] = new

    for x in brokers:
        if len(led[x]) > high:
            for i in sorted(led[x]):
                if len(led[x]) <= high:
                    break
                b = min((r for r in allowed[i] if r in led), key=lambda r: (len(led[r]), r), default=x)
                if len(led[b]) < high:
                    shift(i, b)
    if on is not None:
        for y in brokers:
            if len(led[y]) < low:
                for i in sorted(on.get(y, ())):
                    if len(led[y]) >= low:
                        break
                    x = leader[i]
                    if x != y and x in led and len(led[x]) > low and y in allowed[i]:
                        shift(i, y)
    _augment(brokers, allowed, leader, led, low, high)
    for i, b in enumerate(leader):
        r = reps[i]
        if r and r[0] != b and b in r:
            reps[i] = [b, *(x for x in r if x != b)]


def _augment(brokers: list[int], allowed: list[list[int]], leader: list[int], led: dict[int, set[int]],
             low: int, high: int) -> None:
    """Move leadership along paths over-full -> ... -> under-full, one leader change a step,
    until every broker is within [low, high] or no path is left. The search runs over brokers:
    `edges[x][y]` counts the partitions x leads that y may lead (kept current), so a path costs
    brokers squared, not every partition."""
    if all(low <= len(led[b]) <= high for b in brokers):
        return
    edges: dict[int, Counter] = {b: Counter() for b in brokers}
    for x, parts in led.items():
        count = edges[x]
        for i in parts:
            count.update(allowed[i])

    def shift(i: int, new: int) -> None:
        old = leader[i]
        led[old].discard(i)
        led[new].add(i)
        leader[i] = new
        edges[old].subtract(allowed[i])
        edges[new].update(allowed[i])

    def follow(path: list[tuple[int, int]]) -> None:
        for x, y in path:   # give one of x's partitions that y may lead to y
            shift(next(i for i in led[x] if y in allowed[i]), y)

    while True:
        over = [b for b in brokers if len(led[b]) > high]
        if over:
            path = _broker_path(over, lambda b: len(led[b]) < high, edges, led)
        else:
            under = {b for b in brokers if len(led[b]) < low}
            if not under:
                return
            path = _broker_path([b for b in brokers if len(led[b]) > low], under.__contains__, edges, led)
        if not path:
            break
        follow(path)
    # Some brokers cannot reach the mean (the replicas they may lead are too few): level the
    # rest, each step from the most-led broker to one that leads two or more fewer.
    for _ in range(len(allowed)):
        for x in sorted(brokers, key=lambda b: -len(led[b])):
            most = len(led[x])
            path = _broker_path([x], lambda b, most=most: len(led[b]) <= most - 2, edges, led)
            if path:
                follow(path)
                break
        else:
            return


def _broker_path(sources: list[int], is_sink, edges: dict[int, Counter], led: dict[int, set[int]]) -> list[tuple[int, int]]:
    """Breadth-first over "x leads a partition y may lead": the steps (x, y) from a source to a sink."""
    came: dict[int, int] = {}
    queue = deque(sources)
    seen = set(sources)
    while queue:
        x = queue.popleft()
        for y, n in edges[x].items():
            if n <= 0 or y in seen or y not in led:
                continue
            came[y] = x
            seen.add(y)
            if is_sink(y):
                path, node = [], y
                while node in came:
                    path.append((came[node], node))
                    node = came[node]
                return path[::-1]
            queue.append(y)
    return []
