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


class PlanError(ValueError):
    """The plan cannot be made (a replication factor above the broker count, partial racks)."""


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
        raise PlanError(f"Brokers {','.join(map(str, sorted(missing)))} have no rack while others do: "
                        "give every broker a rack, or use --disable-rack-aware")
    return {b: racks[b] for b in brokers}  # type: ignore[misc]


def moved(current: Assignment, proposed: Assignment) -> int:
    """Replicas placed on a broker that did not hold them (each is one copy of the partition)."""
    return sum(len(set(r) - set(current.get(k, ()))) for k, r in proposed.items())


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
        raise PlanError("The broker list is empty: give the brokers to place replicas on")
    planner = _Planner(current, brokers, racks)
    rf = replication_factor or {}
    for topic in sorted({t for t, _ in current}):
        want = rf.get(topic, len(current[(topic, 0)] if (topic, 0) in current else
                                 next(r for (t, _), r in current.items() if t == topic)))
        if want > len(brokers):
            raise PlanError(f'Replication factor {want} of topic "{topic}" is larger than the '
                            f"{len(brokers)} broker(s) to place it on: use {len(brokers)} or fewer")
        if want < 1:
            raise PlanError(f'Replication factor of topic "{topic}" must be at least 1')
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
        size = sum(counts.values())
        cap = -(-size // self.n_racks)
        return (sum(max(0, c - cap) for c in counts.values())
                + max(0, min(size, self.n_racks) - sum(1 for c in counts.values() if c)))

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
        """Pick each partition's preferred leader among its replicas so that leaders per broker
        are within one of the mean, changing as few leaders as possible."""
        leader = [reps[0] for reps in self.reps]
        led: dict[int, set[int]] = {b: set() for b in self.brokers}
        for i, b in enumerate(leader):
            led[b].add(i)
        low, extra = divmod(len(self.reps), len(self.brokers))
        high = low + (extra > 0)

        def shift(path: list[tuple[int, int]]) -> None:
            for i, new in path:
                led[leader[i]].discard(i)
                led[new].add(i)
                leader[i] = new

        # Direct swaps first: a partition led by an over-full broker goes to its least-led replica.
        for i in range(len(self.reps)):
            if len(led[leader[i]]) > high:
                b = min(self.reps[i], key=lambda r: (len(led[r]), r))
                if len(led[b]) < high:
                    shift([(i, b)])
        # Then augmenting paths: over-full -> ... -> under-full, one leader change per step.
        while True:
            over = [b for b in self.brokers if len(led[b]) > high]
            under = [b for b in self.brokers if len(led[b]) < low]
            if over:
                path = self._leader_path(over, lambda b: len(led[b]) < high, leader, led)
            elif under:
                path = self._leader_path([b for b in self.brokers if len(led[b]) > low],
                                         lambda b, under=under: b in under, leader, led)
            else:
                break
            if not path:
                break
            shift(path)
        for i, b in enumerate(leader):
            reps = self.reps[i]
            if reps[0] != b:
                reps.remove(b)
                reps.insert(0, b)

    def _leader_path(self, sources: list[int], is_sink, leader: list[int], led) -> list[tuple[int, int]]:
        """Breadth-first over "broker x leads partition i, which has replica y": the leader
        changes [(partition, new leader), ...] that move one leadership from a source to a sink."""
        came: dict[int, tuple[int, int] | None] = {s: None for s in sources}
        queue = deque(sources)
        while queue:
            x = queue.popleft()
            for i in led[x]:
                for y in self.reps[i]:
                    if y in came:
                        continue
                    came[y] = (i, x)
                    if is_sink(y):
                        path, node = [], y
                        while came[node] is not None:
                            i2, prev = came[node]  # type: ignore[misc]
                            path.append((i2, node))
                            node = prev
                        return path
                    queue.append(y)
        return []

    def result(self) -> Assignment:
        return {k: list(r) for k, r in zip(self.keys, self.reps)}
